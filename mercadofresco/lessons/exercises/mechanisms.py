"""Exercise 1 (a) and (e): what makes a run one of the two mechanisms, read from what the gateway and queue saw.

A run reproduces mechanism 1 when the gateway charged the order twice, each
charge in a delivery of its own, the first call still running when the queue
handed the message out again, and no call failed. It reproduces mechanism 2
when the message was handed out once and the second charge retried a first
call whose answer was lost (or came too late), inside that one delivery. The
FIFO run shows both of FIFO's sides: the re-send never entered the queue, and
the message whose answer was lost came back and was charged again.

What is read: the gateway's own notes (`RecordingGateway`: when each call
started and ended, how it ended) and the queue's deliveries (`Deliveries`:
when each message was handed out, by MessageId). The public checks record them
on the notebook's own clients (`SqsRecorder`); the instructor's checks, on
their own moto, from the requests it served.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mercadofresco import orders
from mercadofresco.i18n import _
from mercadofresco.models import gateway


@dataclass
class RecordingGateway(gateway.PaymentGateway):
    """The payment gateway, noting each call: the order, when it started and ended, how ("answered" or the error)."""

    notes: list[tuple[str, dt.datetime, dt.datetime, str]] = field(default_factory=list)

    def charge(self, pedido_id: str, importe: Decimal, **options: Any) -> gateway.Charge:
        clock = options.get("waiter") or self.clock
        started, how = clock.now(), "answered"
        try:
            return super().charge(pedido_id, importe, **options)
        except gateway.GatewayError as error:
            how = type(error).__name__
            raise
        finally:
            self.notes.append((pedido_id, started, clock.now(), how))

    def calls_for(self, pedido_id: str) -> list[tuple[dt.datetime, dt.datetime, str]]:
        return [(started, ended, how) for who, started, ended, how in self.notes if who == pedido_id]


@dataclass
class Deliveries:
    """What a queue did with one order's messages: the MessageIds sent for it, and each time one was handed out."""

    sent: list[str] = field(default_factory=list)
    handed: list[tuple[dt.datetime, str]] = field(default_factory=list)


def deliveries(calls: list[dict], pedido_id: str, fifo: bool) -> Deliveries:
    """The order's messages in `calls` (SendMessage and ReceiveMessage, as served: action, request, answer, at).

    `fifo` chooses the FIFO queues (names ending in .fifo) or the others.
    """
    found = Deliveries()
    for call in calls:
        request, answer = call.get("request"), call.get("answer")
        if not isinstance(request, dict) or not isinstance(answer, dict):
            continue
        queue_is_fifo = str(request.get("QueueUrl", "")).endswith(".fifo")
        if (
            call.get("action") == "SendMessage"
            and queue_is_fifo == fifo
            and _is_order(request.get("MessageBody"), pedido_id)
        ):
            found.sent.append(answer.get("MessageId"))
    for call in calls:
        answer = call.get("answer")
        if call.get("action") == "ReceiveMessage" and isinstance(answer, dict):
            for message in answer.get("Messages") or []:
                if isinstance(message, dict) and message.get("MessageId") in found.sent:
                    found.handed.append((call["at"], message["MessageId"]))
    return found


def _is_order(body: Any, pedido_id: str) -> bool:
    try:
        return orders.parse_order(str(body)).pedido_id == pedido_id
    except orders.MalformedOrderError:
        return False


@dataclass
class Run:
    """An experiment run again with notes taken: what it returned, the order's deliveries, the gateway's calls."""

    reported: Any
    seen: Deliveries
    calls: list[tuple[dt.datetime, dt.datetime, str]]
    charges: int
    visibility_seconds: int


# -- what each run must show (None: it shows it; otherwise why not) -------------------------------------------------
def not_visibility_mechanism(run: Run) -> str | None:
    """Why a run is not mechanism 1 (a call slower than the visibility timeout), or None."""
    seen, calls, charges = run.seen, run.calls, run.charges
    handed = [at for at, _ in seen.handed]
    if len(seen.sent) != 1:
        return _("{sent} messages of the order were sent; the incident had one").format(sent=len(seen.sent))
    if charges < 2 or len(handed) < 2:
        said = _("the order was charged {charges} time(s) and its message handed out {handed} time(s), not twice")
        return said.format(charges=charges, handed=len(handed))
    if any(how != "answered" for *_how, how in calls):
        return _("a call to the gateway failed: in this mechanism nothing fails, the gateway is only slow")
    (first_start, first_end, _how), (second_start, _end, _second) = calls[0], calls[1]
    if not handed[0] <= first_start < handed[1]:
        return _("the first charge was not made in the first delivery")
    if first_end <= handed[1]:
        return _("the message came back only after the first call had answered: nothing was slower than the visibility")
    if second_start < handed[1]:
        return _("the second charge came before the second delivery")
    return None


def not_sdk_retry_mechanism(run: Run) -> str | None:
    """Why a run is not mechanism 2 (the SDK retrying a call whose answer was lost), or None."""
    seen, calls, charges, visibility_seconds = run.seen, run.calls, run.charges, run.visibility_seconds
    handed = [at for at, _ in seen.handed]
    if len(seen.sent) != 1:
        return _("{sent} messages of the order were sent; the incident had one").format(sent=len(seen.sent))
    if charges < 2:
        return _("the order was charged {charges} time(s), not twice").format(charges=charges)
    if len(handed) != 1:
        return _("the message was handed out {handed} time(s), not once: the queue took part").format(
            handed=len(handed)
        )
    (first_start, first_end, how), (retry_start, _end, _how) = calls[0], calls[1]
    if first_start < handed[0]:
        return _("a charge came before the only delivery")
    if how not in ("ResponseLostError", "GatewayTimeoutError"):
        return _("the first call's answer reached the consumer: the second charge is not a retry of a lost answer")
    if not first_end <= retry_start < handed[0] + dt.timedelta(seconds=visibility_seconds):
        return _("the second charge is not a retry inside the same delivery")
    return None


def not_fifo_run(run: Run) -> str | None:
    """Why a FIFO run does not show FIFO's two sides (a re-send dropped, a redelivery charged again), or None."""
    seen, calls, charges = run.seen, run.calls, run.charges
    entered = len({message_id for _, message_id in seen.handed})
    if len(seen.sent) < 2:
        return _("the order was sent {sent} time(s) to a FIFO queue, not twice").format(sent=len(seen.sent))
    if entered != 1:
        return _("{entered} copies of the order reached the FIFO queue").format(entered=entered)
    if len(seen.handed) < 2:
        return _("the FIFO queue never handed the order's message out again")
    if charges != 2:
        return _("the gateway charged the order {charges} time(s)").format(charges=charges)
    (first, _end, how), (second, _second_end, _second_how) = calls[0], calls[1]
    if not (seen.handed[0][0] <= first < seen.handed[1][0] and how != "answered" and second >= seen.handed[1][0]):
        return _("the two charges are not the first delivery's, whose answer was lost, and the redelivery's")
    return None


# -- the notebook's own run, recorded ------------------------------------------------------------------------
def run_again(experiment: Any, aws: Any, clock: Any, pedido_id: str, fifo: bool = False, prepare: Any = None) -> Run:
    """Run `experiment(aws, clock, provider)` once more on a gateway and a queue that take notes (the public checks).

    `prepare(provider)`, if given, sets the gateway up first (a lost answer, slow calls: see `ISOLATION`).
    """
    provider, calls = RecordingGateway(clock), []
    if prepare is not None:
        prepare(provider)
    requests: dict[int, dict] = {}

    def before(params: dict, context: dict, **_: Any) -> None:
        requests[id(context)] = dict(params)

    def after(parsed: dict, model: Any, context: dict, **_: Any) -> None:
        calls.append(
            {"action": model.name, "request": requests.pop(id(context), {}), "answer": parsed, "at": clock.now()}
        )

    aws.sqs.meta.events.register("before-parameter-build.sqs", before)
    aws.sqs.meta.events.register("after-call.sqs", after)
    try:
        reported = experiment(aws, clock, provider)
    finally:
        aws.sqs.meta.events.unregister("before-parameter-build.sqs", before)
        aws.sqs.meta.events.unregister("after-call.sqs", after)
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.orders.url, AttributeNames=["VisibilityTimeout"])
    visibility = int(attributes["Attributes"]["VisibilityTimeout"])
    seen = deliveries(calls, pedido_id, fifo)
    return Run(reported, seen, provider.calls_for(pedido_id), len(provider.charges_for(pedido_id)), visibility)


# -- the experiment isolates its mechanism, whatever the gateway does -------------------------------------------
def one_lost_answer(provider: gateway.PaymentGateway) -> None:
    """The gateway loses its first answer: mechanism 1's experiment must still call it once a delivery."""
    provider.fail_next(gateway.Fault.RESPONSE_LOST)


def slow_and_lossy(provider: gateway.PaymentGateway) -> None:
    """Each call takes 60 s, and two more answers are lost: mechanism 2's experiment keeps to one delivery (its
    4 calls take 240 s: longer than the incident's 120 s visibility, shorter than Lambda's default 300 s timeout)."""
    provider.set_latency(gateway.LatencyProfile(baseline_seconds=60))
    provider.fail_next(gateway.Fault.RESPONSE_LOST, times=2)


def not_one_call_a_delivery(run: Run) -> str | None:
    """Why a run of mechanism 1 is not isolated: a delivery called the gateway twice (the SDK retried), or None.

    Played with a gateway that loses one answer: with one SDK attempt, each delivery still calls it once.
    """
    seen, calls = run.seen, run.calls
    handed = [at for at, _ in seen.handed]
    for number, start in enumerate(handed):
        end = handed[number + 1] if number + 1 < len(handed) else None
        inside = [call for call in calls if call[0] >= start and (end is None or call[0] < end)]
        if len(inside) > 1:
            said = _("delivery {delivery} called the gateway {calls} times: the SDK retried (one attempt only)")
            return said.format(delivery=number + 1, calls=len(inside))
    return None


def not_retried_in_one_delivery(run: Run) -> str | None:
    """Why a run of mechanism 2 is not isolated, or None: played with a gateway that loses several answers in a row
    and takes 60 s a call, the incident's SDK (5 attempts) retries them all inside the one delivery."""
    seen, calls = run.seen, run.calls
    lost = sum(how == "ResponseLostError" for *_call, how in calls)
    if len(seen.handed) != 1:
        said = _("with slow calls the message was handed out {handed} times: the visibility was too short")
        return said.format(handed=len(seen.handed))
    if len(calls) != lost + 1 or calls[-1][2] != "answered":
        said = _("{lost} lost answers and {calls} calls: the SDK gave up before the incident's 5 attempts")
        return said.format(lost=lost, calls=len(calls))
    return None
