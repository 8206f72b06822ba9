"""Section 14: the Friday buffer, the connection limit and throttling toward a third party, as models that can fail."""

import pytest
import simpy

from mercadofresco.sims import buffer, connections, lambda_scaling, mass_redrive, throttle

LESSON_PEAK = 1_200


@pytest.mark.parametrize("seed", range(5))
def test_the_lesson_profile_peaks_within_ten_percent_of_1200_near_20h(seed):
    result = buffer.run_friday(buffer.FridayConfig(), seed)
    assert abs(result.peak["depth"] - LESSON_PEAK) <= 0.10 * LESSON_PEAK
    assert 19.5 <= result.peak["hour"] <= 20.0
    assert result.refused == 0 and result.processed == result.arrived  # the queue loses nothing


def test_with_arrivals_stopping_at_20h_the_queue_is_empty_near_22h():
    drained = buffer.run_friday(buffer.FridayConfig(), seed=0).drained_at()
    assert drained is not None and 21.75 <= drained <= 22.25


def test_real_evening_traffic_drains_after_midnight():
    drained = buffer.run_friday(buffer.FridayConfig(profile=buffer.EVENING_PROFILE), seed=0).drained_at()
    assert drained is not None and drained > 24


def test_without_a_queue_more_than_the_average_excess_is_refused():
    result = buffer.run_friday(buffer.FridayConfig(buffered=False), seed=0)
    assert result.refused > 4 * 300  # bursts refuse more than the mean excess of 300/h
    assert result.processed + result.refused == result.arrived


def test_sizing_rule_and_drain_arithmetic():
    assert buffer.queue_needed(4, 300) == 1_200
    assert buffer.drain_hours(1_200, 600, 0) == 2
    assert buffer.drain_hours(1_200, 600, 600) == float("inf")


def test_consumers_as_fast_as_the_peak_keep_the_queue_short():
    result = buffer.run_friday(buffer.FridayConfig(consumer_rate_per_hour=1_400), seed=0)
    assert result.peak["depth"] < 200


def test_bad_settings_name_the_setting_and_its_range():
    with pytest.raises(ValueError, match="consumers must be between 1 and 1000"):
        buffer.FridayConfig(consumers=0)
    with pytest.raises(ValueError, match="cap must be one of"):
        connections.ConnectionConfig(cap="proxy")
    with pytest.raises(ValueError, match="rate_limit_per_second must be between"):
        throttle.ThrottleConfig(rate_limit_per_second=0)


def test_without_a_cap_the_database_is_asked_for_more_than_200_connections_and_refuses():
    result = connections.run_connections(connections.ConnectionConfig(cap="none"))
    assert result.peak_demand > 200
    assert result.peak_invocations > 200
    assert result.refused_invocations > 0 and result.shop_refused > 0  # the shop fails too
    assert max(row["db_connections"] for row in result.rows) <= 200  # the database itself never goes past it


@pytest.mark.parametrize("cap", ["maximum_concurrency", "reserved_concurrency", "pool"])
def test_each_defence_keeps_the_connections_asked_within_200(cap):
    result = connections.run_connections(connections.ConnectionConfig(cap=cap, cap_value=150))
    assert result.peak_demand <= 200
    assert result.refused_invocations == 0 and result.shop_refused == 0
    assert result.processed == result.config.backlog and result.in_dlq == 0


def test_reserved_concurrency_alone_throttles_and_spends_receives():
    reserved = connections.run_connections(connections.ConnectionConfig(cap="reserved_concurrency"))
    maximum = connections.run_connections(connections.ConnectionConfig(cap="maximum_concurrency"))
    assert reserved.throttled_invocations > 0 and maximum.throttled_invocations == 0
    assert reserved.finished_seconds > maximum.finished_seconds


def test_a_cap_above_the_database_limit_does_not_protect_it():
    result = connections.run_connections(connections.ConnectionConfig(cap="maximum_concurrency", cap_value=300))
    assert result.peak_demand > 200 and result.refused_invocations > 0


def test_our_own_rate_limit_below_the_erp_capacity_delivers_everything_with_no_errors():
    limited = throttle.run_throttle(throttle.ThrottleConfig(rate_limit_per_second=15))
    flat_out = throttle.run_throttle(throttle.ThrottleConfig())
    assert limited.delivered == limited.config.notices and limited.erp_errors == 0 and limited.collapses == 0
    assert flat_out.collapses > 0 and flat_out.in_dlq > 0
    assert limited.finished_seconds < flat_out.finished_seconds  # slowly on purpose is also sooner


def test_a_map_max_concurrency_caps_calls_in_flight_not_calls_a_second():
    from mercadofresco.lessons.backpressure import experiments

    assert throttle.concurrency_for_rate(15, 0.2) == 3 and throttle.rate_for_concurrency(15, 0.2) == 75
    flat_out, rate, max_concurrency_15, max_concurrency_3 = experiments.throttle_limits(15)
    assert flat_out["in_dlq"] > 0
    assert max_concurrency_15["max_calls_per_s"] == 75 and max_concurrency_15["erp_collapses"] >= 1
    assert max_concurrency_15["erp_errors"] > 0
    assert (max_concurrency_3["erp_errors"], rate["erp_errors"]) == (0, 0)
    assert max_concurrency_3["delivered"] == rate["delivered"] == 1_500


def test_the_depth_alarm_watches_the_orders_queue():
    from mercadofresco import world
    from mercadofresco.lessons.backpressure import experiments

    assert dict(experiments.DEPTH_ALARM.dimensions)["QueueName"] == world.ORDERS_QUEUE


def test_holding_parallelism_alarms_and_loses_nothing_while_adding_pollers_fills_the_dlq():
    from mercadofresco.lessons.backpressure import experiments

    held, added = experiments.upstream_vs_downstream(seed=0).values()
    assert experiments.first_alarm_second(held) is not None and held.in_dlq == 0
    assert added.in_dlq > 0 and len(added.collapses) > 0


def test_a_pool_as_large_as_the_database_leaves_nothing_for_the_shop():
    result = connections.run_connections(connections.ConnectionConfig(cap="pool", cap_value=200))
    assert result.refused_invocations == 0  # the pool's invocations retry their way in
    assert result.shop_refused > 0  # but the shop's queries find the database full


def _scaled(limit: int, waiting: list[bool], running: list[float], until: float) -> simpy.Environment:
    env = simpy.Environment()
    scaler = lambda_scaling.scale(
        env,
        lambda_scaling.MODES["standard"],
        limit,
        lambda: waiting[0],
        lambda: len(running),
        lambda: running.append(env.now),
    )
    env.process(scaler)
    env.run(until=until)
    return env


def test_one_scaler_starts_at_5_adds_300_a_minute_while_messages_wait_and_never_passes_its_limit():
    waiting, running = [True], []
    env = _scaled(limit=40, waiting=waiting, running=running, until=3.5)
    assert [running.count(second) for second in (0, 1, 2, 3)] == [5, 5, 5, 5]  # 5, then 300 a minute = 5 a second
    env.run(until=60)
    assert len(running) == 40  # the limit (the mapping's MaximumConcurrency here)
    waiting[0] = False
    del running[30:]  # ten invocations end; nothing waits, so none is added and no budget is saved
    env.run(until=90)
    assert len(running) == 30
    waiting[0] = True
    env.run(until=90.5)
    assert len(running) == 35  # messages again: one second's five, not a burst of what was saved
    env.run(until=91.5)
    assert len(running) == 40


def test_the_ceiling_of_the_mode_holds_whatever_the_limit():
    running = []
    _scaled(limit=5_000, waiting=[True], running=running, until=600)
    assert len(running) == lambda_scaling.MODES["standard"].ceiling == 1_000


def test_both_models_scale_with_the_same_scaler():
    standard = lambda_scaling.MODES["standard"]
    assert connections.ConnectionConfig().scaling == standard
    hasty = mass_redrive.run_mass_redrive(mass_redrive.MassRedriveConfig(max_concurrency=1_000, scaling="standard"))
    assert hasty.peak_at(40) <= standard.concurrency_after(40)  # 205 at most after 40 s


def test_each_backpressure_figure_says_its_numbers_and_reads_without_colour():
    from mercadofresco.lessons.backpressure import figures
    from mercadofresco.lessons.show.pictures import series
    from mercadofresco.sims import storm
    from tests.notebooks.colour_vision import problems

    config = buffer.FridayConfig(profile=(buffer.Segment(20, 22, 900),))
    depths = (0, 300, 150, 0, 0)  # one sample every half hour, 20:00 to 22:00
    evening = buffer.FridayResult(config, arrived=1_800, processed=1_800)
    evening.rows = [
        {"hour": 20 + i / 2, "depth": d, "oldest_minutes": d / 10, "arriving_per_hour": 900.0}
        for i, d in enumerate(depths)
    ]
    friday = figures.friday({"bursts": evening, "steady": evening}, "a short Friday")
    assert "against the consumers' 600/h (top)" in friday.alt and "20:00 to 22:00" in friday.alt
    assert "bursts: 1,800 arrived, the queue peaks at 300 messages at 20:30, the oldest waits up to 30 min, " in (
        friday.alt
    )
    assert "empty again at 21:30" in friday.alt

    def asked(cap: str, values: tuple[int, ...]) -> connections.ConnectionResult:
        result = connections.ConnectionResult(connections.ConnectionConfig(cap=cap), peak_demand=max(values))
        result.rows = [{"second": 5 * i, "connections_asked": v} for i, v in enumerate(values)]
        result.finished_seconds = 60
        return result

    limits = figures.connections([asked("none", (0, 150, 250, 0)), asked("pool", (0, 150, 150, 0))])
    assert limits.alt.startswith("Connections asked of aurora-mf-escritor, a line per defence, over the seconds")
    assert "the limit of 200 connections" in limits.alt
    title = "Connections asked of aurora-mf-escritor (limit 200)"
    titled = figures.connections([asked("none", (0, 150, 250, 0))], title)
    assert titled.alt.startswith(f"{title}. A line per defence over the seconds") and titled.alt.count(title) == 1
    assert "none: at most 250, above the limit from 10 s, done in 1 min" in limits.alt
    assert "pool 150: at most 150, never above the limit" in limits.alt

    def stormy(depths: tuple[int, ...], in_dlq: int) -> storm.StormRun:
        rows = [storm.StormSample(10 * (i + 1), 10.0, 1.0, d, 0, 20, False) for i, d in enumerate(depths)]
        return storm.StormRun(storm.StormConfig(), storm.Defences(), rows, 100, 100 - in_dlq, in_dlq, 0, [], None, 0)

    runs = {"hold": stormy((10, 600, 700, 0), 0), "add pollers": stormy((10, 400, 0, 0), 37)}
    answers = figures.upstream_downstream(runs, 500)
    assert "hold: the queue peaks at 700 orders, above the alarm from 20 s to 30 s, and 0 orders" in answers.alt
    assert "add pollers: the queue peaks at 400 orders, never above the alarm, and 37 orders end in the DLQ" in (
        answers.alt
    )
    for picture in (friday, limits, answers):
        assert problems(series(picture.figure)) == [], picture.alt
