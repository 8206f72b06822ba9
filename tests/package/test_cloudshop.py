"""Class 210's CloudShop (notebook 18): the visibility-vs-batch checker, partial batch failure, emails, the DLQ."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mercadofresco.lessons.cloudshop import case, checklist, dead_letters
from mercadofresco.patterns import consumer_config

ROOT = Path(__file__).resolve().parents[2]
DAY = 86_400


def settings(visibility: float, timeout: float = 25, batch: int = 10, **extra) -> consumer_config.ConsumerSettings:
    return consumer_config.ConsumerSettings("inventario", visibility, timeout, batch, **extra)


# -- the checker -------------------------------------------------------------------------------
def test_class_210_before_breaks_visibility_vs_batch_and_after_keeps_every_rule():
    broken = {f.rule for f in consumer_config.problems(settings(30, partial_batch_response=False))}
    assert broken == {"visibility >= timeout x batch", "visibility >= 6 x timeout", "partial batch response"}
    for after in [settings(180, 30, 5, max_receive_count=3), settings(300), settings(600, 50, 10)]:
        assert consumer_config.problems(after) == []


def test_visibility_rule_holds_exactly_at_timeout_times_batch():
    assert consumer_config.problems(settings(250)) == []
    assert [f.rule for f in consumer_config.problems(settings(249))] == ["visibility >= timeout x batch"]
    assert consumer_config.minimum_visibility_seconds(25, 10) == 250
    assert consumer_config.minimum_visibility_seconds(30, 1) == 180  # 6 x timeout wins for a batch of 1


def test_require_safe_names_every_broken_rule():
    with pytest.raises(consumer_config.UnsafeConsumerSettingsError) as raised:
        consumer_config.require_safe(settings(30, partial_batch_response=False))
    assert len(raised.value.findings) == 3
    assert "25 s x 10 = 250 s" in str(raised.value)
    consumer_config.require_safe(settings(300))  # safe: no error


def test_key_ttl_must_outlive_the_dlq_retention():
    assert [f.rule for f in consumer_config.problems(settings(300, idempotency_ttl_seconds=DAY))] == [
        "key TTL > DLQ retention"
    ]
    assert consumer_config.problems(settings(300, idempotency_ttl_seconds=21 * DAY)) == []


def test_a_worker_that_short_polls_breaks_the_long_polling_rule_lambda_never_does():
    assert [f.rule for f in consumer_config.problems(settings(300, receive_wait_seconds=0))] == ["long polling"]
    assert consumer_config.problems(settings(300, receive_wait_seconds=20)) == []
    lambda_row = next(f for f in consumer_config.check(settings(300)) if f.rule == "long polling")
    assert lambda_row.ok and "long-polls by itself" in lambda_row.detail


def test_long_polling_cuts_the_empty_receives_of_an_idle_queue_twentyfold():
    short, long = consumer_config.idle_receives(0, pollers=5), consumer_config.idle_receives(20, pollers=5)
    assert short["empty_receives_a_month"] == 5 * 30 * DAY  # one a second a poller, the worker's pause
    assert long["empty_receives_a_month"] == 5 * 30 * DAY // 20
    assert (short["usd_a_month"], long["usd_a_month"]) == (5.18, 0.26)


def test_the_checklist_judges_settings_items_on_every_consumer_and_reports_missing_evidence():
    good, bad = settings(300), settings(30, partial_batch_response=False)
    rows = {row["item"]: row for row in checklist.run_checklist([good, bad], {"idempotent": (False, "ADD -1")})}
    assert rows["visibility covers the longest batch"]["verdict"] == "BROKEN"
    assert "1 of 2" in rows["visibility covers the longest batch"]["evidence"]
    assert rows["long polling on"]["verdict"] == "kept"
    assert rows["every operation with an effect is idempotent"]["verdict"] == "BROKEN"
    assert rows["an age alarm on the DLQ"] == {
        "item": "an age alarm on the DLQ",
        "verdict": "not checked here",
        "evidence": "no evidence passed in",
    }
    assert len(rows) == 15


def test_the_watch_alarms_are_defined_in_cloudwatch(aws):
    held = checklist.define_watch(aws, case.STOCK_QUEUE, case.STOCK_DLQ, "cloudshop-inventario")
    assert len(held) == 7
    by_alarm = {row["alarm"]: row for row in held}
    assert by_alarm["cloudshop-inventario-fallidos-antiguedad-1h"]["threshold"] == 3_600
    assert by_alarm["cloudshop-inventario-errores"]["metric"] == "AWS/Lambda Errors"


def committed_table(cell_id: str) -> str:
    """The text of the table a cell of notebook 18 shows, as committed."""
    notebook = json.loads((ROOT / "notebooks" / "18_cloudshop_case.ipynb").read_text())
    cell = next(cell for cell in notebook["cells"] if cell.get("id") == cell_id)
    return "".join(cell["outputs"][0]["data"]["text/plain"])


def table_rows(text: str) -> list[dict[str, str]]:
    """A table's text read back into rows: its columns are where the dashes under the header are."""
    header, dashes, *lines = text.splitlines()
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]
    spans[-1] = (spans[-1][0], None)  # the last column runs to the end of its line
    names = [header[start:end].strip() for start, end in spans]
    return [{name: line[start:end].strip() for name, (start, end) in zip(names, spans, strict=True)} for line in lines]


def test_the_closing_tables_are_what_notebook_18_committed(aws, clock):
    """The before/after table and the checklist's evidence, built by the package from the notebook's own runs."""
    from mercadofresco.lessons.show.tables import Table
    from mercadofresco.sims import mass_redrive

    emails = [case.duplicate_emails(aws, clock, design, events=12, timeout_seconds=4) for design in case.EMAIL_DESIGNS]
    stock = {visibility: case.stock_discounts(aws, clock, visibility) for visibility in (30, 300)}
    letters = dead_letters.billing_dlq(seed=0)
    discovered = letters[0].sent_at + dead_letters.DISCOVERED_AFTER
    standard = {"max_concurrency": 1_000, "scaling": "standard"}
    hasty, hasty_standard, paced = (
        mass_redrive.run_mass_redrive(mass_redrive.MassRedriveConfig(**config))
        for config in ({}, standard, {**standard, "release": "paced", "max_concurrency": 40})
    )
    measured = checklist.Measured(
        emails=emails,
        stock=stock,
        letters=letters,
        kinds=dead_letters.breakdown(letters),
        expiring=dead_letters.expiring(letters, discovered, days=3),
        alarm_times=dead_letters.alarm_times(letters, discovered),
        hasty=hasty,
        hasty_standard=hasty_standard,
        paced=paced,
    )
    assert repr(Table(checklist.before_after(measured))) == committed_table("c032")
    assert measured.lost_in_48h() == 38_912  # what notebook 18's three failures read next
    watch = checklist.define_watch(aws, case.STOCK_QUEUE, case.STOCK_DLQ, "cloudshop-inventario")
    judged = {row["item"]: row for row in checklist.run_checklist([], checklist.evidence(measured, watch))}
    committed = table_rows(committed_table("i27-09"))
    by_evidence = [row for row in committed if not row["evidence"].startswith("settings checker:")]
    assert len(by_evidence) == sum(item.key not in checklist.RULES for item in checklist.CHECKLIST) == 11
    assert [judged[row["item"]] for row in by_evidence] == by_evidence


@pytest.mark.parametrize(
    "field, value", [("batch_size", 0), ("timeout_seconds", 0), ("visibility_timeout_seconds", -1)]
)
def test_bad_settings_name_the_setting(field, value):
    values = {"visibility_timeout_seconds": 300, "timeout_seconds": 25, "batch_size": 10, field: value}
    with pytest.raises(ValueError, match=field):
        consumer_config.ConsumerSettings("x", **values)


# -- partial batch failure ---------------------------------------------------------------------
def test_partial_batch_response_redelivers_only_the_bad_message(aws, clock):
    run = case.partial_batch(aws, clock, report_batch_item_failures=True)
    good = {p: n for p, n in run.receives.items() if p != case.BAD_MESSAGE}
    assert len(good) == 9 and set(good.values()) == {1}
    assert run.receives[case.BAD_MESSAGE] == 5  # maxReceiveCount 5, then the DLQ
    assert set(run.discounts.values()) == {1}
    assert run.in_dlq == 1


def test_a_handler_that_raises_on_one_bad_message_repeats_nine_good_ones(aws, clock):
    run = case.partial_batch(aws, clock, report_batch_item_failures=False, raises=True)
    assert set(run.discounts.values()) == {5}  # 45 discounts for 9 orders: 36 of them duplicates
    assert run.summary()["duplicated"] == 36
    assert run.in_dlq == 10  # the good ones end in the DLQ too


def test_without_report_batch_item_failures_a_returned_failure_is_not_read_and_the_bad_message_is_lost(aws, clock):
    """Issue 50: Lambda reads no batchItemFailures it was not told to; the invocation succeeded, the batch is gone."""
    run = case.partial_batch(aws, clock, report_batch_item_failures=False)
    assert set(run.discounts.values()) == {1} and run.summary()["duplicated"] == 0
    assert run.receives[case.BAD_MESSAGE] == 1  # deleted with the good ones
    assert run.in_dlq == 0  # never reaches the DLQ: lost in silence


# -- visibility and emails ---------------------------------------------------------------------
def test_visibility_below_the_batch_time_duplicates_stock_and_300_s_does_not(aws, clock):
    assert case.stock_discounts(aws, clock, 30).summary()["duplicated"] > 0
    assert case.stock_discounts(aws, clock, 300).summary()["duplicated"] == 0


def test_only_the_key_marked_before_waiting_stops_duplicate_emails(aws, clock):
    direct, queue_key, marked = (
        case.duplicate_emails(aws, clock, design, events=30, timeout_seconds=5) for design in case.EMAIL_DESIGNS
    )
    assert direct["duplicates"] > 0
    assert queue_key["duplicates"] > 0  # the key alone does not cover an effect made before it completes
    assert marked["timeouts"] > 0 and marked["duplicates"] == 0


# -- the DLQ of 41,200 -------------------------------------------------------------------------
def test_every_dead_letter_is_classified_as_class_210_counts_them():
    rows = dead_letters.breakdown(dead_letters.billing_dlq(seed=3))
    assert {row["kind"]: row["messages"] for row in rows} == dead_letters.CLASS_210


def test_the_outage_expires_within_two_days_of_discovery_and_the_alarms_fire_on_day_0():
    letters = dead_letters.billing_dlq(counts={"transient": 400, "poison": 20, "data": 5})
    discovered = letters[0].sent_at + dead_letters.DISCOVERED_AFTER
    rows = dead_letters.expiring(letters, discovered, days=2)
    assert sum(row["of_them_transient"] for row in rows) == 400
    fired = dead_letters.alarm_instants(letters, discovered)
    assert [(when - letters[0].sent_at).total_seconds() for when in fired.values()] == [300, 3_900, 7 * DAY + 300]
    assert dead_letters.miss_probability(41_200, 120, 10) == pytest.approx(0.971, abs=0.001)


def test_moto_stops_delivering_a_message_after_14_days(aws, clock):
    letters = dead_letters.billing_dlq(counts={"transient": 50, "poison": 0, "data": 0})
    rows = dead_letters.retention_on_moto(aws, clock, letters, sample=5)
    assert [row["still_in_the_dlq"] for row in rows] == [5, 0]


def test_a_24_hour_key_lets_a_day_13_redrive_send_again_and_21_days_does_not(aws, clock):
    assert dead_letters.key_after(aws, clock, ttl_days=1, days_later=13)["emails_sent"] == 2
    assert dead_letters.key_after(aws, clock, ttl_days=21, days_later=13)["emails_sent"] == 1


def test_the_dlq_bodies_are_the_producers_bodies():
    from decimal import Decimal

    from mercadofresco import orders

    for importe in (Decimal("48.20"), Decimal("-9.00")):
        expected = orders.order_body(orders.Order("PED-2026-084417", importe))
        assert dead_letters.order_body("PED-2026-084417", importe) == expected


def test_each_cloudshop_figure_says_its_numbers_and_reads_without_colour():
    from mercadofresco.lessons.cloudshop import figures
    from mercadofresco.lessons.show.pictures import series
    from tests.notebooks.colour_vision import problems

    timeline = [
        {"seconds": seconds, "consumer": consumer, "event": "received", "pedido_id": pedido, "detail": ""}
        for seconds, consumer in ((0.0, "consumidor-1"), (31.0, "consumidor-2"))
        for pedido in ("PED-2026-600000", "PED-2026-600001", "PED-2026-600002")
    ]
    run = case.StockRun(discounts={}, receives={row["pedido_id"]: 2 for row in timeline}, in_dlq=0, timeline=timeline)
    receives = figures.stock_receives(run, 30)
    assert "A row per order (3 orders)" in receives.alt
    assert "6 receives: 3 by consumidor-1 at 0 s; 3 by consumidor-2 at 31 s. Each order was received 2 times." in (
        receives.alt
    )
    letters = dead_letters.billing_dlq(counts={"transient": 400, "poison": 20, "data": 5})
    discovered = letters[0].sent_at + dead_letters.DISCOVERED_AFTER
    clock = figures.dlq_clock(letters, discovered, dead_letters.alarm_instants(letters, discovered))
    assert "425 in all: transient 400 on day 0, poison 20 on" in clock.alt
    assert f"discovered {discovered:%d %b %H:%M}; retention deletes " in clock.alt
    for note in clock.figure.axes[0].texts:  # dark ink on a white box, over the bars and the dashed lines
        assert note.get_color() == "black" and note.get_bbox_patch().get_facecolor()[:3] == (1, 1, 1), note
    letters = dead_letters.billing_dlq(seed=0)  # notebook 18's: data on day 0 and 6 to 13 is a sliver on the log bars
    discovered = letters[0].sent_at + dead_letters.DISCOVERED_AFTER
    clock = figures.dlq_clock(letters, discovered, dead_letters.alarm_instants(letters, discovered))
    assert "transient 38,900 on day 0, poison 2,180 on days 6 to 13, data 120, seen on days 1 to 5 (the other 75, " in (
        clock.alt
    )
    assert figures._days([0, 6, 7, 8]) == "days 0 and 6 to 8" and figures._days([12, 13]) == "days 12 and 13"
    for picture in (receives, clock):
        assert problems(series(picture.figure)) == [], picture.alt
