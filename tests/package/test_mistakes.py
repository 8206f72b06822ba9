"""Section 17's mistakes (notebook 17): each wrong version measured worse than the right one; the self-check."""

from __future__ import annotations

import json
from pathlib import Path

from mercadofresco.lessons import mistakes, quiz

ROOT = Path(__file__).resolve().parents[2]
RIGHT = {1: "c", 2: "b", 3: "d", 4: "80", 5: "250", 6: "b"}


def test_a_lock_without_expiry_blocks_the_order_for_the_whole_ttl(aws, clock):
    wrong = mistakes.lock_blocks_for(aws, clock, lock_expires=False)
    right = mistakes.lock_blocks_for(aws, clock, lock_expires=True)
    assert wrong["blocked_seconds"] == 24 * 3600 - 1 and right["blocked_seconds"] == 60
    assert all(row["refused_1s_before"] and row["taken_1s_after"] for row in (wrong, right))


def test_retrying_a_402_wastes_calls_and_only_the_429_deserves_a_retry(clock):
    rows = {
        (row["classifier"], row["error"][:3]): row
        for name in mistakes.CLASSIFIERS
        for row in mistakes.declined_and_throttled(clock, name)
    }
    assert rows[("retry everything", "402")]["wasted_calls"] == 4
    assert rows[("classify", "402")]["wasted_calls"] == 0
    assert rows[("classify", "429")]["outcome"] == "charged"
    assert rows[("classify", "429")]["seconds_to_answer"] >= 7  # waited for Retry-After
    assert rows[("never retry 4xx", "429")]["outcome"].startswith("gave up")


def test_inspecting_by_deleting_loses_what_was_read(aws, clock):
    assert mistakes.inspect_by_deleting(aws, clock, deleting=True)["lost"] == 10
    assert mistakes.inspect_by_deleting(aws, clock, deleting=False)["lost"] == 0


def test_one_message_group_serialises_four_consumers(aws, clock):
    one = mistakes.ordering_cost(aws, clock, one_group=True, order_count=8)
    many = mistakes.ordering_cost(aws, clock, one_group=False, order_count=8)
    assert one["seconds_to_drain"] >= 3 * many["seconds_to_drain"]


def test_the_dual_write_loses_events_and_committing_them_with_the_order_loses_none():
    dual, together = mistakes.dual_write(order_count=9_000, crash_probability=1 / 900, seed=1)
    assert dual["events_missing"] > 0 and dual["events_duplicated"] == 0
    assert together["events_missing"] == 0


def test_redriving_before_the_fix_sends_everything_back(aws, clock):
    before, after = mistakes.redrive_before_fix(aws, clock, count=5)
    assert before["left_in_dlq"] == 5 and before["charges"] == 0
    assert after["left_in_dlq"] == 0 and after["charges"] == 5


def test_the_table_without_ttl_keeps_growing():
    assert mistakes.table_growth(36, None)["live_records"] == 3 * mistakes.table_growth(12, None)["live_records"]
    assert mistakes.table_growth(36, 24)["live_records"] == mistakes.table_growth(12, 24)["live_records"]


def test_the_self_check_says_right_wrong_or_not_answered():
    assert {row["verdict"] for row in quiz.check_answers(RIGHT)} == {"right"}
    rows = quiz.check_answers({1: "a", 4: " 80 "})
    assert [row["verdict"] for row in rows] == ["wrong: look again", "not answered", "not answered", "right"] + [
        "not answered"
    ] * 2


def test_the_committed_notebook_does_not_show_the_answers():
    notebook = json.loads((ROOT / "notebooks" / "17_common_mistakes.ipynb").read_text())
    cell = next(c for c in notebook["cells"] if "check_answers(answers)" in "".join(c["source"]))
    shown = "".join(  # a print is a stream; a table is display data, whose text says what its HTML says
        "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
        for output in cell["outputs"]
    )
    assert "not answered" in shown and "right" not in shown
