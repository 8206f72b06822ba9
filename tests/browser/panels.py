"""What each lesson panel must show when a learner uses it: the package's own numbers, before and after one change.

Every value below is what the package computes for those controls (the same call the panel makes); a
panel that ignores its control, draws nothing or draws the wrong thing fails. A notebook with no entry
here (a new one) still gets the generic checks: Run All, no errors, every panel renders and answers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Change:
    """One thing the learner does: `kind` is slider, text, dropdown or checkbox; `label` is what they read."""

    kind: str
    label: str
    value: object = None


@dataclass(frozen=True)
class Interaction:
    """Press the button, read `column` of the table's first row (or search the text); change; press; read again."""

    change: Change
    before: str
    after: str
    column: str | None = None  # a header as the table shows it (show.header); None: anywhere in the output's text
    figure: bool = True  # the result includes a figure, as the notebook's static default does
    button: str = "Run experiment"


LESSON_PANELS = {
    # the message is visible again only after the 120 s visibility timeout
    "00_start_here": Interaction(Change("slider", "wait (s)", 119), "True", "False", "visible again", figure=False),
    # five orders, latency 150 s: a visibility timeout of 200 s outlasts the call, so each order is charged once
    "01_delivery_guarantees": Interaction(Change("text", "visibility (s)", 200), "9", "5", "charges"),
    # MessageId misses the producer's re-send; the domain key catches it
    "02_idempotency": Interaction(Change("dropdown", "key", "cobro:{pedido_id}"), "2", "1", "charges"),
    # back after 30 h, the 24 h record has expired: charged again
    "03_idempotency_table": Interaction(Change("slider", "back after (h)", 30), "1", "2", "charges"),
    # a crash after the charge: the gateway's Idempotency-Key is the net that catches the retry
    "04_idempotent_consumer": Interaction(
        Change("checkbox", "send Idempotency-Key", True), "2", "1", "charges", figure=False
    ),
    # 50 clients: full jitter needs about half the calls of plain exponential backoff
    "05_backoff_jitter": Interaction(Change("dropdown", "strategy", "exponential"), "335.1", "634.9", "calls"),
    # a declined card is an answer, not a failure to retry
    "06_what_to_retry": Interaction(
        Change("dropdown", "error", "gateway 402 card declined"),
        "RETRY",
        "DO_NOT_RETRY",
        "verdict",
        figure=False,
        button="Classify",
    ),
    # SDK 5 x queue 4 x workflow 4 = 80 calls per order; SDK 2 gives 32
    "07_where_to_retry": Interaction(Change("slider", "SDK", 2), "80", "32", "per order", button="Compute"),
    # the concurrency cap alone keeps every order out of the DLQ in this model
    "08_retry_storm": Interaction(Change("checkbox", "concurrency cap (20)", True), "1,624", "0", "in DLQ"),
    # per-process breakers with threshold 5 open sooner: fewer calls reach the dead gateway
    "09_circuit_breaker": Interaction(Change("slider", "threshold", 5), "500", "200", "calls while down"),
    # the version-2 burst looks transient by its shape, but its content makes it poison
    "10_dead_letter_queues": Interaction(
        Change("dropdown", "incident", "rafaga-version-2"), "transient (burst)", "poison (burst)"
    ),
    # releasing all 41,200 at once with 40 consumers (the standard mapping's ramp) finishes sooner than pacing at 120/s
    "11_dlq_runbook": Interaction(Change("dropdown", "release", "all_at_once"), "5.8", "4.4", "minutes"),
}
