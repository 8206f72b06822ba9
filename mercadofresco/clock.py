"""One virtual clock for moto, the gateway model, the poller and the simulations.

Time in the workbook never waits on the wall clock. `VirtualClock` freezes
Python's time with time_machine (so moto's visibility timeouts, SentTimestamp
and TTL comparisons all read it) and moves it only when asked: advancing two
minutes is instant. Notebook 00 introduces it.

`ClockedEnvironment` is a simpy environment that moves the clock to each
event's instant, so a simpy process can call moto at the right virtual time.
`Task` and `together` let ordinary code (a Lambda handler, a charge) run beside
other code in that environment: each piece runs alone until it waits, so every
DynamoDB write and every charge lands at the virtual instant it belongs to, and
the interleaving is the same on every run. `Stopwatch` only adds up waits, for
work whose timing nobody else needs to see. `meanwhile` lets something happen
at an instant while other code moves the clock (a message that reaches a queue
while a runbook waits).

Against a server this clock cannot reach (another process, AWS) it keeps a
real pace instead (`realtime`): every `advance` waits that long for real,
within a budget, or refuses before waiting. Every movement of time in the
package goes through `advance`, so one check covers them all.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import simpy
import time_machine

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _, moment
from mercadofresco.runtime import realtime

MADRID = ZoneInfo("Europe/Madrid")

# Friday 16 October 2026, 19:14 in Madrid: the gateway's latency spike of exercise 1.
LESSON_START = dt.datetime(2026, 10, 16, 19, 14, tzinfo=MADRID)


class ClockError(MercadoFrescoError):
    """The clock was used in a way that would break virtual time."""


class Waiter(Protocol):
    """Whoever waits for a slow call: the shared clock, or one invocation's stopwatch."""

    def now(self) -> dt.datetime: ...

    def wait(self, seconds: float) -> None: ...


class VirtualClock:
    """A frozen clock that moves only through `advance` and `advance_to`.

    `pace` says whether it moves instantly (`realtime.VIRTUAL`) or at the
    wall clock's pace; by default `start` reads it from MERCADOFRESCO_MODE.
    """

    def __init__(self, start: dt.datetime = LESSON_START, pace: realtime.Pace | None = None) -> None:
        if start.tzinfo is None:
            raise ClockError(_("start must carry a time zone, e.g. {example}").format(example="clock.MADRID"))
        self.start_at = start
        self.pace = pace
        self._traveller: time_machine.travel | None = None
        self._coordinates: time_machine.Coordinates | None = None
        self._keeper: realtime.RealTimeKeeper | None = None
        self._running = False
        self._meanwhile: list[tuple[dt.datetime, Callable[[], object]]] = []

    # -- life cycle ---------------------------------------------------------
    def start(self) -> VirtualClock:
        """Freeze Python's time at `start_at`; from now on only this clock moves it."""
        if self._running:
            raise ClockError(_("this clock is already running"))
        # Travel to the UTC instant: time_machine would otherwise change the process TZ.
        self._traveller = time_machine.travel(self.start_at.astimezone(dt.UTC), tick=False)
        self._coordinates = self._traveller.start()
        self._running = True
        if self.pace is None:
            self.pace = realtime.pace_from_env(self.now())
        if self.pace.real:
            self._keeper = realtime.RealTimeKeeper(self.pace)
            if self.pace.follows_wall:  # AWS: Python keeps its real time, the clock just reads it
                self._traveller.stop()
                self._traveller = self._coordinates = None
                self.start_at = dt.datetime.now(dt.UTC).astimezone(MADRID)
            print(realtime.notice(self.pace), end="", file=self._keeper.out, flush=True)
        return self

    def stop(self) -> None:
        """Give Python its real time back."""
        if self._traveller is not None:
            self._traveller.stop()
        self._traveller = None
        self._coordinates = None
        self._keeper = None
        self._running = False

    def __enter__(self) -> VirtualClock:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """True between `start` and `stop`."""
        return self._running

    @property
    def real_time(self) -> bool:
        """True if waits take real time (the clock cannot reach the server's time)."""
        return self._keeper is not None

    # -- reading ------------------------------------------------------------
    def now(self) -> dt.datetime:
        """The current virtual instant, in Madrid time."""
        self._require_running()
        return dt.datetime.now(dt.UTC).astimezone(MADRID)

    def reading(self) -> str:
        """What a notebook prints once the clock runs: "virtual clock: Friday 16 October 2026, 19:14:00 CEST"."""
        return _("virtual clock: {moment}").format(moment=moment(self.now(), "%A %d %B %Y, %H:%M:%S %Z"))

    def timestamp(self) -> float:
        """The current virtual instant in epoch seconds (what DynamoDB items store)."""
        return self.now().timestamp()

    def seconds_since_start(self) -> float:
        """Virtual seconds elapsed since `start_at`: handy for plots."""
        return (self.now() - self.start_at).total_seconds()

    # -- moving -------------------------------------------------------------
    def advance(self, seconds: float) -> dt.datetime:
        """Move time forward by `seconds` and return the new instant.

        Instantly when virtual; with a real pace it first waits that long for
        real, or raises `realtime.RealTimeRefusedError` (before waiting) if the
        real-time budget cannot cover it. An interrupted wait leaves the clock
        where it was. What `meanwhile` set to happen on the way happens at its
        instant.
        """
        self._require_running()
        if seconds < 0:
            raise ClockError(_("the clock only moves forward; got {call}").format(call=f"advance({seconds})"))
        until = self.now() + dt.timedelta(seconds=seconds)
        while due := [event for event in self._meanwhile if event[0] <= until]:
            event = min(due, key=lambda pending: pending[0])
            self._meanwhile.remove(event)
            self._move(max(0.0, (event[0] - self.now()).total_seconds()))
            event[1]()
        return self._move(max(0.0, (until - self.now()).total_seconds()))

    def _move(self, seconds: float) -> dt.datetime:
        if self._keeper is not None and seconds > 0:
            self._keeper.wait(seconds, f"advancing the clock {seconds:g} s from {self.now():%a %H:%M:%S}")
        if self._coordinates is not None:
            self._coordinates.shift(seconds)
        return self.now()

    @contextlib.contextmanager
    def meanwhile(self, instant: dt.datetime, happening: Callable[[], object]) -> Iterator[None]:
        """Inside the block, `happening()` runs once, at `instant`, if some code moves the clock past it.

        Leaving the block forgets it if it has not happened: nothing set here outlives the block.
        """
        event = (instant, happening)
        self._meanwhile.append(event)
        try:
            yield
        finally:
            if event in self._meanwhile:
                self._meanwhile.remove(event)

    def advance_to(self, instant: dt.datetime) -> dt.datetime:
        """Move time forward to `instant` (no-op if it is already there)."""
        seconds = (instant - self.now()).total_seconds()
        if self.pace is not None and self.pace.follows_wall and seconds < -1:
            # The lesson's fixed instants (Monday 09:00) are in the past of the real calendar.
            raise realtime.RealTimeRefusedError(
                f"this experiment is set at {instant:%a %d %b %Y %H:%M}, an instant of the lesson's calendar that "
                f"real time in mode {self.pace.mode!r} cannot reach. Unset MERCADOFRESCO_MODE to run it in process.",
                -seconds,
                self._keeper.spent_seconds if self._keeper else 0.0,
                self.pace.budget_seconds,
            )
        return self.advance(max(0.0, seconds))

    def need(self, seconds: float, what: str) -> None:
        """Declare that an experiment is about to let `seconds` pass; refuse now if real time cannot cover it."""
        self._require_running()
        if self._keeper is not None:
            self._keeper.declare(seconds, what)

    def wait(self, seconds: float) -> None:
        """Wait `seconds` of virtual time: a single-threaded caller just moves the clock."""
        self.advance(seconds)

    def _require_running(self) -> None:
        if not self._running:
            raise ClockError(_("start the clock first: {start}").format(start="clock.VirtualClock().start()"))


class Stopwatch:
    """The time one piece of work spends, counted on top of the instant it started.

    Work that runs beside other work (a Lambda invocation among several) cannot
    move the shared clock while it waits, or it would move everybody's. It adds
    its waits here instead, and whoever runs it (the poller) lets that much
    virtual time pass before acting on its result.
    """

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.started_at = clock.now()
        self.elapsed_seconds = 0.0

    def wait(self, seconds: float) -> None:
        """Spend `seconds` of this work's own time."""
        if seconds < 0:
            raise ClockError(_("cannot wait a negative time; got {call}").format(call=f"wait({seconds})"))
        self.elapsed_seconds += seconds

    def now(self) -> dt.datetime:
        """The instant this work has reached."""
        return self.started_at + dt.timedelta(seconds=self.elapsed_seconds)


class ClockedEnvironment(simpy.Environment):
    """A simpy environment whose `env.now` (seconds) drives a `VirtualClock`.

    Before each event is processed the clock is moved to that event's instant,
    so a process that calls moto sees the right virtual time.
    """

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(initial_time=0)
        self.clock = clock
        self.origin = clock.now()

    def step(self) -> None:
        """Move the clock to the next event, then process it."""
        next_time = self.peek()
        if next_time != float("inf"):
            self.clock.advance_to(self.origin + dt.timedelta(seconds=next_time))
        super().step()


class Task:
    """One piece of work that runs beside others in a ClockedEnvironment.

    Its code runs in a thread of its own, but never at the same time as any
    other code: `wait(seconds)` hands control back to the simpy loop, which lets
    that much virtual time pass (other tasks run meanwhile) and then resumes it.
    So a moto call or a charge happens at the virtual instant it belongs to, and
    the order of events is the same on every run.
    """

    def __init__(self, clock: VirtualClock, work: Callable[[Task], Any]) -> None:
        self.clock = clock
        self.work = work
        self.started_at = clock.now()
        self.elapsed_seconds = 0.0
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False
        self._requested = 0.0
        self._stop_with: BaseException | None = None
        self._to_task = threading.Semaphore(0)
        self._to_loop = threading.Semaphore(0)
        self._thread: threading.Thread | None = None

    def now(self) -> dt.datetime:
        """The shared clock: while this task runs, the loop has moved it to this task's instant."""
        return self.clock.now()

    def wait(self, seconds: float) -> None:
        """Called by the work: let `seconds` of virtual time pass while other tasks run."""
        if seconds < 0:
            raise ClockError(_("cannot wait a negative time; got {call}").format(call=f"wait({seconds})"))
        self.elapsed_seconds += seconds
        self._requested = seconds
        self._to_loop.release()
        self._to_task.acquire()
        if self._stop_with is not None:
            raise self._stop_with

    def step(self) -> float | None:
        """Called by the loop: run the work until it waits (return the seconds asked) or ends (None)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, daemon=True)
            self._thread.start()
        else:
            self._to_task.release()
        self._to_loop.acquire()
        return None if self.done else self._requested

    def stop(self, error: BaseException) -> None:
        """Called by the loop: end a waiting task by raising `error` where it waits."""
        if not self.done and self._thread is not None:
            self._stop_with = error
            self.step()

    def _main(self) -> None:
        try:
            self.result = self.work(self)
        except BaseException as exc:  # handed to whoever runs the task, never lost
            self.error = exc
        finally:
            self.done = True
            self._to_loop.release()


def run_task(env: ClockedEnvironment, task: Task):
    """A simpy process that runs `task`, letting virtual time pass at each of its waits."""
    seconds = task.step()
    while seconds is not None:
        yield env.timeout(seconds)
        seconds = task.step()


def together(clock: VirtualClock, work: list[Callable[[Task], Any]]) -> list[Task]:
    """Start every piece of `work` at the same virtual instant and run them to the end; return the tasks.

    Each piece gets its Task as a waiter (`task.wait`, `task.now`). Read each
    task's `result`, or its `error` if it raised.
    """
    env = ClockedEnvironment(clock)
    tasks = [Task(clock, piece) for piece in work]
    for task in tasks:
        env.process(run_task(env, task))
    env.run()
    return tasks
