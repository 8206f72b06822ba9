"""Real time where the virtual clock cannot reach: the clock's pace, its budget and its refusals.

The virtual clock moves time instantly by patching this Python process's time
(time_machine). moto in this process, or a moto server running in a thread of
this process, reads that time. A server in another process (`moto_server`,
LocalStack) or AWS keeps its own, real time: advancing the clock two minutes
changes nothing it sees, and a message never comes back after its visibility
timeout. Against those the clock keeps a *real pace*: `advance(120)` waits two
real minutes (the clock still shows the lesson's instants, so every computed
number reads the same as in process), within a budget of real time per
notebook. A wait that would go past the budget is refused before it starts
with `RealTimeRefusedError`, which says how to run the experiment in process.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import N_, _, moment, number
from mercadofresco.runtime import settings
from mercadofresco.runtime.settings import DEFAULT_BUDGET_SECONDS, MAX_BUDGET_SECONDS, is_real_aws_endpoint

BUDGET_VARIABLE = settings.REAL_TIME_BUDGET
ANNOUNCE_SECONDS = 5.0  # a single wait this long or longer says so before it starts
PROGRESS_SECONDS = 10.0  # how often a long wait reports how far it got
STEP_SECONDS = 0.25  # a wait sleeps in steps this short, so an interrupt stops it at once
# Work between two waits (a few API calls) counts toward the next wait up to this much, so a loop of short
# waits does not drift behind; more would let the server see less time pass than the clock says.
CREDIT_SECONDS = 0.1
SAME_CLOCK_SECONDS = 2.0  # a server whose Date is this close to the virtual clock reads our time


class RealTimeRefusedError(MercadoFrescoError):
    """A wait would take more real time than the budget has left; nothing waited."""

    def __init__(self, message: str, seconds: float, spent_seconds: float, budget_seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds
        self.spent_seconds = spent_seconds
        self.budget_seconds = budget_seconds


@dataclass(frozen=True)
class Pace:
    """How the clock moves: instantly (virtual) or at the wall clock's pace, and the real time it may spend.

    `follows_wall` (AWS) drops the lesson's calendar altogether: the clock shows
    the real time, because AWS checks each request's signature time and
    really deletes items whose TTL has passed.
    """

    real: bool = False
    mode: str = "memory"
    where: str = N_("moto in this process")  # shown through _(): the endpoints' own are said as they are made
    budget_seconds: float = DEFAULT_BUDGET_SECONDS
    follows_wall: bool = False

    def __post_init__(self) -> None:
        check_range(BUDGET_VARIABLE, self.budget_seconds, 0, MAX_BUDGET_SECONDS)
        if self.follows_wall and not self.real:
            raise ValueError("a pace that follows the wall clock is a real pace: pass real=True")


VIRTUAL = Pace()


def pace_from_env(virtual_now: dt.datetime) -> Pace:
    """The pace MERCADOFRESCO_MODE / _ENDPOINT_URL / _REAL_TIME_BUDGET_SECONDS ask for.

    Call it while the virtual clock is running (at `virtual_now`): an endpoint
    is asked for its time, and one that answers with the virtual clock's
    instant runs in this process, so the clock stays virtual.
    """
    current = settings.read()
    if current.mode not in ("endpoint", "aws"):  # memory, or a wrong mode that world.build refuses by name
        return VIRTUAL
    budget = current.real_time_budget_seconds
    if current.mode == "aws":
        return Pace(True, "aws", _("real AWS"), budget, follows_wall=True)
    url = current.endpoint_url or ""
    if url and not is_real_aws_endpoint(url) and reads_this_process_time(url, virtual_now):  # never ask AWS itself
        return Pace(False, "endpoint", _("a moto server in this process ({url})").format(url=url), budget)
    return Pace(True, "endpoint", _("the endpoint {url}").format(url=url or _("(no URL set)")), budget)


def reads_this_process_time(url: str, virtual_now: dt.datetime) -> bool:
    """True if the server at `url` answers with our virtual time in its Date header (it runs in this process).

    A server in a thread of this process (moto's ThreadedMotoServer) stamps its
    answers with the patched time; any other server stamps them with its own.
    False if the server cannot be reached or the virtual time is too close to
    the real one to tell them apart.
    """
    import email.utils  # imported here: only the endpoint mode asks a server for its time
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            stamped = response.headers.get("Date")
    except urllib.error.HTTPError as error:  # an error page carries a Date all the same
        stamped = error.headers.get("Date")
    except (OSError, ValueError):
        return False
    if not stamped:
        return False
    server_time = email.utils.parsedate_to_datetime(stamped)
    real_now = dt.datetime.fromtimestamp(wall_time(), dt.UTC)
    if abs((virtual_now - real_now).total_seconds()) < 60:
        return False
    return abs((server_time - virtual_now).total_seconds()) <= SAME_CLOCK_SECONDS


def wall_time() -> float:
    """The real epoch seconds, even while time_machine holds Python's time still."""
    import time_machine  # imported here: only a real pace needs it, and clock imports it anyway

    hatch = time_machine.escape_hatch
    return hatch.time.time() if hatch.is_travelling() else time.time()


def notice(pace: Pace) -> str:
    """What a notebook's first cell says when its clock keeps a real pace."""
    if not pace.real:
        return ""
    calendar = (
        _("The clock shows the real time (AWS checks it), not the lesson's Friday 16 October 2026.")
        if pace.follows_wall
        else _("The clock still shows the lesson's instants; the server sees the same spans pass, for real.")
    )
    said = _(
        "mode {mode}: {where} keeps its own, real time, which the virtual clock cannot move.\n"
        "  Every wait is real: {advance} takes two minutes. {calendar}\n"
        "  Real-time budget for this notebook: {budget} ({variable}). Before an experiment of many waits starts, it "
        "is rehearsed here in an instant and says the real time it needs;\n"
        "  one that does not fit the budget left (the 4-day retention, the Monday DLQ incidents, a sweep of "
        "latencies) stops with {error} before it waits.\n"
        "  Unset {mode_variable} to run everything in this process, instantly.\n"
    )
    return "[mercadofresco] " + said.format(
        mode=repr(pace.mode),
        where=_(pace.where),
        advance="clock.advance(120)",
        calendar=calendar,
        budget=_span(pace.budget_seconds),
        variable=BUDGET_VARIABLE,
        error="RealTimeRefusedError",
        mode_variable="MERCADOFRESCO_MODE",
    )


class RealTimeKeeper:
    """Spends real time for a clock with a real pace: checks the budget, waits, reports progress."""

    def __init__(self, pace: Pace, out: TextIO | None = None) -> None:
        if not pace.real:
            raise ValueError("a virtual pace spends no real time")
        self.pace = pace
        self.out = out or sys.stderr
        self.spent_seconds = 0.0
        self._paced_until = time.monotonic()
        self._reported = 0.0
        self._event = threading.Event()  # never set: its wait(timeout) is an interruptible sleep

    def check(self, seconds: float, what: str) -> None:
        """Refuse, before any waiting, if `seconds` more of real time would go past the budget."""
        if self.spent_seconds + seconds <= self.pace.budget_seconds:
            return
        left = max(0.0, self.pace.budget_seconds - self.spent_seconds)
        spent = (
            _("{spent} of real time were already spent (this cell may have stopped halfway)").format(
                spent=_span(self.spent_seconds)
            )
            if self.spent_seconds
            else _("nothing has waited yet")
        )
        said = _(
            "{what} would take {seconds} of real time in mode {mode} against {where}, and this notebook's real-time "
            "budget has {left} left of {budget}: this step did not wait; {spent}. To run it in this process, "
            "instantly, unset {mode_variable} (and restart the kernel); to wait for real, raise {variable}."
        )
        raise RealTimeRefusedError(
            said.format(
                what=what,
                seconds=_span(seconds),
                mode=repr(self.pace.mode),
                where=_(self.pace.where),
                left=_span(left),
                budget=_span(self.pace.budget_seconds),
                spent=spent,
                mode_variable="MERCADOFRESCO_MODE",
                variable=BUDGET_VARIABLE,
            ),
            seconds,
            self.spent_seconds,
            self.pace.budget_seconds,
        )

    def declare(self, seconds: float, what: str) -> None:
        """An experiment about to let `seconds` pass: refuse now if they do not fit, else say what it will take."""
        self.check(seconds, what)
        left = self.pace.budget_seconds - self.spent_seconds
        said = _("{what} needs about {seconds} of real time ({left} of the budget left)")
        self._say(said.format(what=what, seconds=_span(seconds), left=_span(left)))

    def wait(self, seconds: float, what: str) -> None:
        """Let `seconds` of real time pass, counting up to CREDIT_SECONDS of the work done since the last wait."""
        self.check(seconds, what)
        now = time.monotonic()
        target = max(self._paced_until, now - CREDIT_SECONDS) + seconds
        if target > now:
            self._sleep_until(target, what)
        self._paced_until = max(target, now)
        self.spent_seconds += seconds
        if self.spent_seconds - self._reported >= 30:
            self._reported = self.spent_seconds
            said = _("real time spent so far: {spent} of {budget}")
            self._say(said.format(spent=_span(self.spent_seconds), budget=_span(self.pace.budget_seconds)))

    def _sleep_until(self, target: float, what: str) -> None:
        total = target - time.monotonic()
        loud = total >= ANNOUNCE_SECONDS
        if loud:
            until = moment(dt.datetime.fromtimestamp(wall_time() + total), "%H:%M:%S")
            said = _("{what}: waiting {seconds} of real time (until about {until} wall time)")
            self._say(said.format(what=what, seconds=_span(total), until=until))
        next_report = time.monotonic() + PROGRESS_SECONDS
        try:
            while (left := target - time.monotonic()) > 0:
                self._event.wait(min(STEP_SECONDS, left))
                if loud and time.monotonic() >= next_report and left > 1:
                    next_report += PROGRESS_SECONDS
                    self._say(f"  … {number(total - left, '.0f')}/{number(total, '.0f')} s")
        except KeyboardInterrupt:
            said = _(
                "{what}: wait interrupted after {seconds}; the clock stays where it was. A message being processed "
                "is not lost: it comes back after its visibility timeout. {close} (or the end of the kernel) deletes "
                "what this run created."
            )
            waited = _span(total - max(0.0, target - time.monotonic()))
            self._say(said.format(what=what, seconds=waited, close="World.close()"))
            raise

    def _say(self, line: str) -> None:
        print(f"[mercadofresco] {line}", file=self.out, flush=True)


def _span(seconds: float) -> str:
    """120 → "120 s", 7.74869 → "7.7 s", 900 → "15 min", 17160 → "4.8 h", 345600 → "4.0 days"."""
    if seconds < 600:
        return number(seconds, ".0f" if seconds >= 100 or seconds == int(seconds) else ".1f") + " s"
    if seconds < 3_600:
        return number(seconds / 60, ".0f") + " min"
    if seconds < 172_800:
        return number(seconds / 3600, ".1f") + " h"
    return _("{days} days").format(days=number(seconds / 86_400, ".1f"))
