"""Ordering (section 12): the three questions, the group key, one FIFO group is serial, and versions beat reordering."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mercadofresco.lessons.ordering import experiments, stock_queue
from mercadofresco.patterns import ordering
from mercadofresco.patterns.ordering import Kind

# -- the three questions ---------------------------------------------------------------------


def test_class_210_minus_one_unit_needs_no_order_but_stock_equals_4_does():
    minus_one = ordering.sold("SKU-0042")
    assert minus_one.label == "−1 unit"
    assert not ordering.three_questions(minus_one, minus_one).needs_order
    set_four = ordering.recounted("SKU-0042", 4)
    assert set_four.label == "stock = 4"
    answer = ordering.three_questions(set_four, ordering.recounted("SKU-0042", 7))
    assert answer.needs_order and answer.same_data and answer.order_changes_result
    assert ordering.three_questions(minus_one, set_four).needs_order  # a sale and a recount do not commute


def test_different_data_never_needs_order_and_the_same_value_twice_does_not_either():
    answer = ordering.three_questions(ordering.recounted("SKU-0042", 4), ordering.recounted("SKU-0043", 7))
    assert not answer.same_data and not answer.needs_order
    assert not ordering.three_questions(
        ordering.recounted("SKU-0042", 4), ordering.recounted("SKU-0042", 4)
    ).needs_order


amounts = st.integers(min_value=-20, max_value=20)


@settings(max_examples=50, deadline=None)
@given(amounts, amounts, st.integers(min_value=0, max_value=100))
def test_relative_operations_commute_and_different_absolute_ones_do_not(a, b, value):
    relative = ordering.three_questions(
        ordering.Operation("SKU-0042", Kind.RELATIVE, a), ordering.Operation("SKU-0042", Kind.RELATIVE, b), value
    )
    assert not relative.needs_order
    absolute = ordering.three_questions(
        ordering.Operation("SKU-0042", Kind.ABSOLUTE, a), ordering.Operation("SKU-0042", Kind.ABSOLUTE, b), value
    )
    assert absolute.needs_order == (a != b)


# -- the group key ---------------------------------------------------------------------------


def test_the_group_is_the_sku_for_stock_and_the_pedido_id_for_an_order_life_cycle():
    assert ordering.message_group_id({"tipo": "StockVendido", "sku": "SKU-0042", "pedido_id": "x"}) == "SKU-0042"
    for tipo in ordering.LIFE_CYCLE:
        assert ordering.message_group_id({"tipo": tipo, "pedido_id": "PED-2026-084417"}) == "PED-2026-084417"


def test_an_event_without_a_group_key_is_refused_by_name():
    with pytest.raises(ordering.UnknownEventError, match="tipo must be one of"):
        ordering.message_group_id({"tipo": "CarritoAbandonado"})
    with pytest.raises(ordering.UnknownEventError, match="needs 'sku'"):
        ordering.message_group_id({"tipo": "StockRecontado"})


def test_a_setting_out_of_range_names_the_setting():
    with pytest.raises(ValueError, match="consumers must be between 1 and 50; got 51"):
        stock_queue.OrderingConfig(consumers=51)
    with pytest.raises(ValueError, match="groups must be between 1 and 12; got 13"):
        stock_queue.OrderingConfig(groups=13, skus=12)


# -- the version-conditional write -------------------------------------------------------------
# sku SKU-0042 recounted four times (versions 1-4), the second update delivered twice.
UPDATES = [(1, 30), (2, 12), (2, 12), (3, 8), (4, 4)]
NEWEST = (4, 4)


@pytest.fixture
def stock_table(aws):
    ordering.create_stock_table(aws.dynamodb)
    return ordering.StockTable(aws.dynamodb)


def _apply_all(table, updates, conditional):
    table.dynamodb.delete_item(TableName=table.table_name, Key={"sku": {"S": "SKU-0042"}})
    for version, stock in updates:
        if conditional:
            table.put_if_newer("SKU-0042", stock, version)
        else:
            experiments.put_without_version_check(table, "SKU-0042", stock, version)
    item = table.get("SKU-0042")
    return item.version, item.stock


def test_the_version_conditional_write_ends_in_the_newest_state_for_every_arrival_order(stock_table):
    @settings(max_examples=40, deadline=None)
    @given(order=st.permutations(UPDATES))
    def ends_newest(order):  # one moto world for all the examples; each example starts from no item
        assert _apply_all(stock_table, order, conditional=True) == NEWEST

    ends_newest()


def test_every_permutation_ends_newest_with_versions_and_some_do_not_without(stock_table):
    orders = sorted(set(itertools.permutations(UPDATES)))
    assert all(_apply_all(stock_table, order, conditional=True) == NEWEST for order in orders)
    plain = [_apply_all(stock_table, order, conditional=False) for order in orders]
    assert any(state != NEWEST for state in plain)  # the unconditional write keeps whatever came last
    assert plain[orders.index(tuple(reversed(UPDATES)))] == (1, 30)


def test_a_stale_update_is_discarded_not_raised(stock_table):
    assert stock_table.put_if_newer("SKU-0099", 4, 2)
    assert not stock_table.put_if_newer("SKU-0099", 30, 1)
    assert not stock_table.put_if_newer("SKU-0099", 30, 2)  # the same version again: a duplicate, not newer
    assert stock_table.get("SKU-0099") == ordering.StockItem("SKU-0099", 4, 2)


# -- FIFO groups on moto -------------------------------------------------------------------------


def test_moto_holds_a_fifo_group_while_one_of_its_messages_is_in_flight(aws, clock):
    rows = experiments.group_hold_probe(aws, clock)
    assert [row["moto gives"] for row in rows[:4]] == [row["AWS gives"] for row in rows[:4]]
    # moto 5.2.5 redelivers a timed-out batch of one group last-first (AWS keeps the group's order).
    # If this starts failing, moto was fixed: update notebook 12's text.
    assert rows[4]["moto gives"] == "SKU-0042 v3" != rows[4]["AWS gives"]


def test_one_fifo_group_is_processed_serially_whatever_the_consumers(aws, clock):
    config = stock_queue.OrderingConfig(groups=1, skus=50, consumers=10, messages=12, jitter=0.5)
    run = stock_queue.run_ordering(aws, clock, config)
    assert len(run.applied) == 12
    assert run.most_in_flight == 1 and run.most_in_flight_per_group == 1
    assert run.out_of_order == 0 and run.wrong_skus == 0


def test_sku_groups_run_in_parallel_but_keep_each_sku_serial(aws, clock):
    config = stock_queue.OrderingConfig(groups=8, skus=8, consumers=8, messages=20, absolute_share=0.5, jitter=0.5)
    run = stock_queue.run_ordering(aws, clock, config)
    assert run.most_in_flight >= 4  # several groups at once
    assert run.most_in_flight_per_group == 1  # never two of one sku
    assert run.out_of_order == 0 and run.wrong_skus == 0


def test_a_standard_queue_reorders_and_only_absolute_updates_suffer(aws, clock):
    rows = experiments.mix_matters(aws, clock, shares=(0.0, 1.0))
    relative, absolute = rows
    assert relative["max_in_flight_per_group"] > 1 and relative["out_of_order"] > 0
    assert relative["wrong_skus"] == 0  # "−1 unit" commutes: late, but harmless
    assert absolute["out_of_order"] > 0 and absolute["wrong_skus"] > 0


def test_throughput_one_group_is_flat_sku_groups_scale(aws, clock):
    runs = experiments.throughput(aws, clock, consumer_counts=(1, 10))
    rates = {(run.config.label(), run.config.consumers): run.per_minute for run in runs}
    assert rates[("FIFO, 1 group", 1)] == rates[("FIFO, 1 group", 10)] == 60
    assert rates[("FIFO, group = sku", 10)] == 10 * rates[("FIFO, group = sku", 1)] == 600


def test_versions_fix_what_reordering_breaks_on_the_same_schedule(aws, clock):
    put, conditional = experiments.versioned_updates(aws, clock)
    assert put["out_of_order"] == conditional["out_of_order"] > 0  # the same reordering in both runs
    assert put["skus_not_newest"] > 0
    assert conditional["skus_not_newest"] == 0
    assert conditional["stale_discarded"] == conditional["out_of_order"]


def test_the_widget_refuses_more_groups_than_skus_by_name(aws, clock):
    with pytest.raises(ValueError, match="groups must be between 1 and 8; got 9"):
        experiments.compare_setups(aws, clock, groups=9, skus=8)


def test_the_figures_draw_a_lane_per_consumer_and_a_bar_per_setup(aws, clock):
    from mercadofresco.lessons.ordering import figures

    run = stock_queue.run_ordering(aws, clock, stock_queue.OrderingConfig(groups=1, skus=4, consumers=2, messages=3))
    lanes = figures.lanes([run]).figure
    assert [tick.get_text() for tick in lanes.axes[0].get_yticklabels()] == ["c1", "c2"]
    assert len(lanes.axes[0].patches) == 3  # one bar per message
    rows = [run.summary(), {**run.summary(), "setup": "standard queue"}]
    assert [tick.get_text() for tick in figures.setups(rows).figure.axes[0].get_yticklabels()] == [
        "FIFO, 1 group",
        "standard queue",
    ]


def test_each_ordering_figure_says_its_numbers_and_reads_without_colour(aws, clock):
    from mercadofresco.lessons.ordering import figures
    from mercadofresco.lessons.show.pictures import series
    from tests.notebooks.colour_vision import problems

    one, per_sku = (
        stock_queue.run_ordering(aws, clock, stock_queue.OrderingConfig(groups=g, skus=4, consumers=2, messages=4))
        for g in (1, 4)
    )
    pictures = {"throughput": figures.throughput([one, per_sku]), "lanes": figures.lanes([one, per_sku])}
    rows = [one.summary(), {**per_sku.summary(), "out_of_order": 2, "wrong_skus": 1}]
    pictures["setups"] = figures.setups(rows)
    assert (
        f"FIFO, 1 group: {one.per_minute:,g}; FIFO, group = sku: {per_sku.per_minute:,g}." in pictures["throughput"].alt
    )
    for run in (one, per_sku):  # each panel: its messages, its groups, the consumers that worked, the most at once
        groups = len({row["grupo"] for row in run.applied})
        assert f"{len(run.applied)} messages of {groups} group" in pictures["lanes"].alt
        assert f"in {run.seconds:g} s" in pictures["lanes"].alt
        assert f"at most {run.most_in_flight} at once" in pictures["lanes"].alt
    lanes = pictures["lanes"].figure.axes[0]
    assert {text.get_text() for text in lanes.texts} == {"grupo-0000"}  # the group written on each bar
    assert f"FIFO, group = sku: {per_sku.per_minute:,g} a minute, 2 late, 1 wrong." in pictures["setups"].alt
    for name, picture in pictures.items():
        assert problems(series(picture.figure)) == [], name
