import pytest

from mercadofresco.lessons import keys_and_table, powertools_compare, show


def test_increment_drifts_assignment_does_not(aws):
    assert keys_and_table.stock_drift(aws, deliveries=3) == {
        "deliveries": 3,
        "expected": 39,
        "increment": 37,
        "assignment": 39,
    }
    with pytest.raises(ValueError, match="deliveries must be between 1 and 20; got 0"):
        keys_and_table.stock_drift(aws, deliveries=0)


def test_transient_is_retried_permanent_is_kept(aws, clock):
    unavailable, declined = keys_and_table.failure_kinds(aws, clock)
    assert (unavailable["receives"], unavailable["charges"], unavailable["estado"]) == (2, 1, "COMPLETADO")
    assert (declined["receives"], declined["charges"], declined["estado"]) == (1, 0, "FALLIDO")


@pytest.mark.parametrize(("ttl", "hours", "charges"), [(1, 0.5, 1), (1, 3, 2), (24, 20, 1), (24, 30, 2), (96, 80, 1)])
def test_ttl_decides_whether_a_late_duplicate_charges_again(aws, clock, ttl, hours, charges):
    assert keys_and_table.same_order_later(aws, clock, ttl, hours)["charges"] == charges


def test_monthly_cost_reproduces_the_lesson_under_stated_assumptions():
    assert keys_and_table.monthly_cost(24)["total_usd"] == pytest.approx(0.90)
    assert keys_and_table.monthly_cost(24 * 365)["storage_usd"] > 100 * keys_and_table.monthly_cost(24)["storage_usd"]


def test_widget_values_are_checked(aws, clock):
    with pytest.raises(ValueError, match="ttl_hours must be between 0 and 336"):
        keys_and_table.same_order_later(aws, clock, 0, 1)
    with pytest.raises(ValueError, match='design must be "two states" or "three states"'):
        keys_and_table.race(aws, clock, "one state")
    with pytest.raises(ValueError, match="copies must be between 2 and 200; got 1"):
        keys_and_table.parallel_duplicates(aws, clock, copies=1)


def test_powertools_side_by_side(aws, clock):
    ours, powertools = powertools_compare.behaviour_table(aws, clock)
    assert ours["50 parallel: charges"] == powertools["50 parallel: charges"] == 1
    assert ours["declined card: gateway calls"] == 1 and powertools["declined card: gateway calls"] == 2
    assert ours["states seen"] == "COMPLETADO" and powertools["states seen"] == "COMPLETED"


def test_the_powertools_table_can_take_our_race_from_the_lesson_test(aws, clock):
    race = keys_and_table.parallel_duplicates(aws, clock, copies=50)  # notebook 04 runs it just before
    assert powertools_compare.behaviour_table(aws, clock, ours=race) == powertools_compare.behaviour_table(aws, clock)
    keys_and_table.empty_table(aws)
    with pytest.raises(ValueError, match=r"run keys_and_table\.parallel_duplicates first"):
        powertools_compare.behaviour_table(aws, clock, ours=race)


def test_items_prints_typed_values(capsys):
    show.items([{"clave": {"S": "cobro:PED-2026-084417"}, "estado": {"S": "EN_CURSO"}, "expira_en": {"N": "5"}}])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["clave", "estado", "expira_en"]
    assert lines[2].split() == ["cobro:PED-2026-084417", "EN_CURSO", "5"]
