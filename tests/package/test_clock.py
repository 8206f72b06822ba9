import datetime as dt
import time

import pytest

from mercadofresco.clock import LESSON_START, ClockedEnvironment, ClockError, Stopwatch, Task, VirtualClock, together


def test_clock_starts_at_the_lesson_friday_in_madrid(clock):
    now = clock.now()
    assert now == LESSON_START
    assert now.strftime("%A %H:%M") == "Friday 19:14"
    assert now.utcoffset() == dt.timedelta(hours=2)  # CEST


def test_advance_moves_python_time_instantly(clock):
    real_start = time.perf_counter()
    before = time.time()
    clock.advance(3_600)
    assert time.time() - before == pytest.approx(3_600)
    assert dt.datetime.now(dt.UTC) == LESSON_START + dt.timedelta(hours=1)
    assert time.perf_counter() - real_start < 0.5  # no wall-clock wait


def test_time_stands_still_between_advances(clock):
    first = clock.now()
    sum(range(100_000))
    assert clock.now() == first


def test_clock_refuses_to_go_back_and_to_run_twice(clock):
    with pytest.raises(ClockError, match="only moves forward"):
        clock.advance(-1)
    with pytest.raises(ClockError, match="already running"):
        clock.start()


def test_stopped_clock_gives_real_time_back():
    clock = VirtualClock().start()
    clock.stop()
    assert dt.datetime.now(dt.UTC).year != 2026 or dt.datetime.now(dt.UTC) > LESSON_START
    with pytest.raises(ClockError, match="start the clock"):
        clock.now()


def test_start_needs_a_time_zone():
    with pytest.raises(ClockError, match="time zone"):
        VirtualClock(dt.datetime(2026, 10, 16, 19, 14))


def test_stopwatch_counts_its_own_waits_without_moving_the_clock(clock):
    watch = Stopwatch(clock)
    watch.wait(150)
    assert watch.elapsed_seconds == 150
    assert watch.now() == LESSON_START + dt.timedelta(seconds=150)
    assert clock.now() == LESSON_START


def test_clocked_environment_moves_the_clock_to_each_event(clock):
    env = ClockedEnvironment(clock)
    seen = []

    def process(env):
        for _ in range(3):
            yield env.timeout(60)
            seen.append(clock.seconds_since_start())

    env.process(process(env))
    env.run()
    assert seen == [60, 120, 180]


def test_together_runs_one_task_at_a_time_in_virtual_time_order(clock):
    log = []

    def work(name, waits):
        def run(task):
            for seconds in waits:
                log.append((clock.seconds_since_start(), name))
                task.wait(seconds)
            log.append((clock.seconds_since_start(), name))
            return name

        return run

    tasks = together(clock, [work("a", [1, 2]), work("b", [0.5, 0.5, 5])])
    assert [task.result for task in tasks] == ["a", "b"]
    assert log == [(0, "a"), (0, "b"), (0.5, "b"), (1, "a"), (1, "b"), (3, "a"), (6, "b")]
    assert clock.seconds_since_start() == 6


def test_a_task_error_is_kept_not_lost(clock):
    def broken(task):
        task.wait(1)
        raise RuntimeError("boom")

    (task,) = together(clock, [broken])
    assert isinstance(task.error, RuntimeError) and task.done


def test_a_stopped_task_raises_where_it_waits(clock):
    reached = []

    def slow(task):
        task.wait(10)
        reached.append("after the wait")

    task = Task(clock, slow)
    assert task.step() == 10
    task.stop(KeyboardInterrupt("stopped"))
    assert task.done and isinstance(task.error, KeyboardInterrupt) and reached == []


def test_meanwhile_happens_at_its_instant_inside_the_block_only(clock):
    seen = []
    soon = clock.now() + dt.timedelta(seconds=150)
    with clock.meanwhile(soon, lambda: seen.append(clock.now())):
        clock.advance(100)
        assert seen == []
        clock.advance(100)  # passes the instant: it happens there, then the clock goes on
    assert seen == [soon] and clock.now() == soon + dt.timedelta(seconds=50)
    with clock.meanwhile(clock.now() + dt.timedelta(seconds=10), lambda: seen.append("never")):
        pass  # nobody moved the clock in the block
    clock.advance(60)
    assert seen == [soon]
