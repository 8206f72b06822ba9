"""Section 1's figures: every processing draws its bar, the axis fits the run, and the text alternative says it."""

from mercadofresco.lessons import show
from mercadofresco.lessons.delivery import experiments, figures
from mercadofresco.lessons.show.pictures import series
from tests.notebooks.colour_vision import problems


def bars_of(picture):
    """The timeline's bars: one rectangle per processing."""
    return list(picture.figure.axes[0].containers[0])


def test_each_receive_ends_with_its_own_processing():
    """A batch of two ends together; a receive at the instant its consumer deleted the last one starts anew."""
    rows = [
        (0, "consumidor-1", "received", "receive #1"),
        (0, "consumidor-1", "received", "receive #1"),
        (0, "consumidor-2", "received", "receive #1"),
        (30, "consumidor-1", "failed", ""),
        (30, "consumidor-1", "deleted", ""),
        (40, "consumidor-2", "deleted", ""),
        (40, "consumidor-2", "received", "receive #2"),
        (90, "consumidor-2", "crashed", "after_charge"),
    ]
    timeline = [{"seconds": s, "consumer": c, "event": e, "detail": d} for s, c, e, d in rows]
    spans = [(one["consumer"], one["start"], one["end"]) for one in figures.processings(timeline)]
    assert spans == [
        ("consumidor-1", 0, 30),
        ("consumidor-1", 0, 30),
        ("consumidor-2", 0, 40),
        ("consumidor-2", 40, 90),
    ]


def test_several_messages_per_consumer_draw_one_bar_per_processing(aws, clock):
    latency = 150
    run = experiments.charges_per_order(aws, clock, 120, latency, 180, order_count=5, consumers=2)
    receives = [row for row in run.timeline if row["event"] == "received"]
    assert min(sum(row["consumer"] == c for row in receives) for c in ("consumidor-1", "consumidor-2")) > 1
    picture = figures.timeline(run)
    bars = bars_of(picture)
    assert len(bars) == len(receives)
    assert sorted(bar.get_x() for bar in bars) == sorted(row["seconds"] for row in receives)
    assert {bar.get_width() for bar in bars} == {latency}  # each consumer is busy for the whole call, every time
    assert f"{len(receives)} receives" in picture.alt and f"the longest {latency} s" in picture.alt
    assert problems(series(picture.figure)) == []


def test_the_slow_gateway_timeline_says_its_charges_and_redelivery(aws, clock):
    run = experiments.slow_gateway(aws, clock)
    picture = figures.timeline(run, "two consumers, two charges")
    charged = sorted(run.charge_seconds())
    redeliveries = sum(row["detail"] == "receive #2" for row in run.timeline)
    assert picture.alt.startswith("Timeline: two consumers, two charges. One lane per consumer")
    assert f"{len(charged)} charges for 1 order, at {show.numbers(charged, 's')}" in picture.alt
    assert f"{redeliveries} of them a redelivery" in picture.alt
    left, right = picture.figure.axes[0].get_xlim()
    assert left < 0 < max(row["seconds"] for row in run.timeline) <= right
    assert repr(picture) == picture.alt and problems(series(picture.figure)) == []
    ax = picture.figure.axes[0]
    notes = [text for text in ax.texts if "€ charged" in text.get_text()]
    assert notes and {text.get_color() for text in notes} == {figures.INK}  # 7.6:1 on white, not DARK_ORANGE's 3.4:1
    assert any(line.get_color() == figures.DARK_ORANGE and line.get_linestyle() == "--" for line in ax.lines)


def test_a_run_that_never_redelivers_gets_an_axis_from_zero(aws, clock):
    run = experiments.slow_gateway(aws, clock, gateway_latency_seconds=0.24)
    assert [row["detail"] for row in run.timeline if row["event"] == "received"] == ["receive #1"]
    picture = figures.timeline(run)
    left, right = picture.figure.axes[0].get_xlim()
    assert -1 < left < 0 and right >= figures.SHORTEST_AXIS_SECONDS
    assert "1 receive, none of them a redelivery" in picture.alt and "the longest 0.24 s" in picture.alt


def test_the_latency_sweep_says_where_each_line_leaves_one_charge():
    curves = {
        "incident": [{"latency_seconds": s, "charges_per_order": c} for s, c in [(20, 1), (150, 2), (250, 4)]],
        "tuned": [{"latency_seconds": s, "charges_per_order": c} for s, c in [(20, 1), (150, 1), (250, 1)]],
    }
    picture = figures.latency_sweep(curves, "tuning moves the problem")
    assert picture.alt.startswith("Line chart: tuning moves the problem. Charges per order against gateway latency")
    assert "incident: 1, 2 and 4 charges per order, above 1 from 150 s" in picture.alt
    assert "tuned: 1, 1 and 1 charges per order, never above 1" in picture.alt
    assert problems(series(picture.figure)) == []
