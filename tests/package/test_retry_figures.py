"""The figures of notebooks 05-09: each says what its run shows, and its series stay apart without colour."""

from mercadofresco.lessons import show
from mercadofresco.lessons.retry import experiments, figures
from mercadofresco.lessons.show.pictures import series
from mercadofresco.patterns import backoff, retry_layers
from mercadofresco.sims import recovery, storm
from tests.notebooks.colour_vision import problems


def apart(picture):
    """The picture's text alternative, once its series are known to stay apart for every reader."""
    assert problems(series(picture.figure)) == []
    assert repr(picture) == picture.alt
    return picture.alt


def test_backoff_waits_says_the_spread_at_the_last_attempt():
    strategies = {name: backoff.strategy(name, base=0.1, cap=5.0) for name in ("exponential", "full")}
    alt = apart(figures.backoff_waits(strategies, attempts=3))
    waits = figures.sample_waits(strategies["full"], 3, clients=100)[-1]
    assert "the cap (5 s) dashed. At attempt 3: " in alt
    assert f"exponential {strategies['exponential'].wait(3, None):g} s for every client" in alt
    assert f"full {round(min(waits), 2):g} to {round(max(waits), 2):g} s" in alt


def test_outage_arrivals_says_each_strategys_peak_and_last_call():
    def run(arrivals):
        return recovery.OutageRun(arrivals, sum(arrivals), 0, 0, 0.0, max(arrivals))

    runs = {"exponential": run([200, 0, 0, 300, 0, 0]), "mine": run([90, 160, 40, 10, 5, 0])}
    picture = figures.outage_arrivals(runs, outage_seconds=2, capacity=150, until=5)
    alt = apart(picture)
    assert "over the first 5 s; the gateway is down for the first 2 s (shaded) and serves 150 calls" in alt
    assert "exponential peaks at 300 calls/s, is above 150 for 2 s, its last call at 3 s" in alt
    assert "mine peaks at 160 calls/s, is above 150 for 1 s, its last call at 4 s" in alt
    assert len(picture.figure.axes) == len(runs)


def test_contention_names_the_cheapest_and_the_soonest_and_tells_a_strategy_from_its_reference():
    rows = [
        {"clients": n, "strategy": name, "calls": calls * n, "time_ms": ms * n}
        for n in (10, 50)
        for name, calls, ms in (("exponential", 4, 900), ("exponential (reference)", 4, 900), ("full", 2, 1_000))
    ]
    alt = apart(figures.contention(rows))  # the widget's exponential beside its own reference: two looks
    assert "against 10 and 50 clients. At 50 clients: exponential 200 calls in 45,000 ms;" in alt
    assert alt.endswith("Fewest calls: full; done soonest: exponential.")


def test_layers_marks_an_over_the_limit_bar_by_hatch_and_text_too():
    reports = {
        "lesson": retry_layers.worst_case(retry_layers.LESSON_LAYERS),
        "disciplined": retry_layers.worst_case([retry_layers.Layer("SDK", 2), retry_layers.Layer("workflow", 4)]),
    }
    picture = figures.layers(reports)
    alt = apart(picture)
    assert f"lesson: {reports['lesson']['formula']} = {reports['lesson']['per_order']}, over the limit" in alt
    assert "disciplined: 2 × 4 = 8, within the limit" in alt
    over, within = picture.figure.axes[0].patches
    assert (over.get_hatch(), within.get_hatch()) == ("//", "")
    texts = [text.get_text() for text in picture.figure.axes[0].texts]
    assert texts == [f" 5 × 4 × 4 = 80 > {retry_layers.WORST_CASE_LIMIT}", " 2 × 4 = 8 ≤ 15"]


def test_storm_says_its_peaks_its_dlq_and_when_the_gateway_fell_over():
    config = storm.StormConfig()
    rows = [
        storm.StormSample(10, 12.0, 1.0, 3, 0, 20, False),
        storm.StormSample(20, 180.5, 0.25, 400, 0, 40, True),
        storm.StormSample(30, 20.0, 1.0, 0, 7, 60, False),
    ]
    run = storm.StormRun(config, storm.Defences(), rows, 100, 93, 7, 900, [15.5, 22.0], 14.0, 30)
    alt = apart(figures.storm(run))
    assert alt.startswith("Retry storm, defences: none. Four panels over 30 s, latency 4 s from 60 to 360 s")
    assert "calls peak at 180.5/s; the success rate falls to 25%; the queue is deepest at 20 s, 400 orders" in alt
    assert "7 orders end in the DLQ (dashed); pollers go from 20 to 60" in alt
    assert alt.endswith("The gateway falls over at 15.5 and 22 s (dotted).")


def test_storm_outcomes_reads_each_combination_out():
    summaries = [
        {"defences": "none", "in_dlq": 1_624, "gateway_calls": 31_405},
        {"defences": "cap", "in_dlq": 0, "gateway_calls": 7_124},
    ]
    alt = apart(figures.storm_outcomes(summaries))
    assert alt.endswith("none: 1,624 in the DLQ, 31,405 calls; cap: 0 in the DLQ, 7,124 calls.")


def test_budgets_says_where_each_budget_grants_fewer_retries_than_wanted():
    rows = experiments.budget_comparison([0.05, 0.5, 1.0], calls=400)
    alt = apart(figures.budgets(rows))
    ours = [row["ours_retries"] for row in rows]
    short = next(row["failure_rate"] for row in rows if row["ours_retries"] < row["failed_calls"])
    assert f"retries in 400 calls against the share of calls failing ({show.numbers([0.05, 0.5, 1.0])})" in alt
    assert f"RetryBudget(ratio=0.1) grants at most {max(ours)}" in alt and f"fewer than wanted from {short:g}" in alt
    assert f"the retries wanted (dotted) rise to {max(row['failed_calls'] for row in rows):,}" in alt


def test_gateway_calls_counts_the_calls_while_down_and_names_each_line_at_its_end():
    from mercadofresco.lessons.breaker import figures as breaker_figures
    from mercadofresco.lessons.breaker import outage

    config = outage.OutageConfig()
    down = config.down_seconds
    per_process = outage.OutageRun("per_process", config, [{"second": s} for s in (0, 1, 2, down + 1)], 5)
    shared = outage.OutageRun("shared", config, [{"second": s} for s in (0, down + 1, down + 2)], 9)
    picture = breaker_figures.gateway_calls([per_process, shared], "20 counters vs one")
    alt = apart(picture)
    assert alt.startswith("Step chart: 20 counters vs one. Calls that reached the gateway, added up over time")
    assert f"the gateway is down for the first {down:g} s (shaded)" in alt
    assert "per_process: 3 calls while it was down, 1 after, 5 refused fast" in alt
    assert "shared: 1 call while it was down, 2 after, 9 refused fast" in alt
    assert {"per_process", "shared", "gateway down"} <= {text.get_text() for text in picture.figure.axes[0].texts}
