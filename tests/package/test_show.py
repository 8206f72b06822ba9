import math

from mercadofresco.lessons import show
from mercadofresco.lessons.delivery import experiments, figures


def typed(slider, value):
    """Where a log slider puts a value typed in its readout: on its nearest step (seen in the browser)."""
    steps = round((math.log10(value) - slider.min) / slider.step)
    return 10 ** (slider.min + steps * slider.step)


def test_table_is_aligned_and_deterministic(capsys):
    show.table([{"a": 1, "b": 0.5}, {"a": 22, "b": "x"}])  # outside a kernel, display() prints the text form
    assert capsys.readouterr().out.splitlines() == [" a  b", "--  ---", " 1  0.5", "22  x"]


def test_a_table_separates_thousands_and_puts_units_in_its_headers():
    rows = [{"pedido_id": "PED-0001", "oldest_wait_min": 115.5, "empty_receives": 12_960_000, "after_40_s": 3}]
    text = repr(show.Table(rows)).splitlines()
    assert text[0].split("  ") == ["pedido_id", "oldest wait (min)", "empty receives", "after 40 s"]
    assert text[2].split() == ["PED-0001", "115.5", "12,960,000", "3"]  # a moment ("after 40 s") keeps its words
    assert show.cell(5_472_000.0) == "5,472,000" and show.cell(float("nan")) == "-" and show.cell(True) == "True"
    assert show.header("max_calls_per_s") == "max calls (/s)" and show.header("in_dlq") == "in DLQ"


def test_a_table_is_html_for_jupyter_and_the_same_html_each_time():
    rows = [{"cap": "none", "processed": 40000}, {"cap": "pool 150", "processed": 39999}]
    html = show.Table(rows)._repr_html_()
    assert html == show.Table(rows)._repr_html_()  # nbval compares it: no random id
    assert "<table" in html and "<td" in html and ">40,000</td>" in html and "white-space: nowrap" in html
    assert show.Table(rows).frame["processed"].sum() == 79999  # the rows, for a learner to sort or plot


def test_timeline_figure_has_a_lane_per_consumer(aws, clock):
    run = experiments.slow_gateway(aws, clock)
    figure = figures.timeline(run)
    labels = [tick.get_text() for tick in figure.axes[0].get_yticklabels()]
    assert labels == ["consumidor-1", "consumidor-2"]


def test_panel_names_the_control_the_learner_touched(aws, clock, capsys):
    import ipywidgets as widgets

    slider = widgets.IntSlider(value=5, min=0, max=10, description="orders (x100)")
    box = show.panel(
        lambda order_count: experiments.charges_per_order(aws, clock, order_count=order_count * 100),
        {"order_count": slider},
    )
    box.button.click()  # 500 orders: out of range
    # Without a kernel the Output widget cannot capture: what it shows goes to stdout.
    shown = "".join(item.get("text", "") for item in box.output.outputs) + capsys.readouterr().out
    assert "⚠ “orders (x100)” must be between 1 and 50; got 500" in shown
    assert "order_count" not in shown
    assert not box.button.disabled  # ready for the next try


def test_refusal_replaces_whole_names_only():
    import ipywidgets as widgets

    controls = {"rate": widgets.IntSlider(description="rate (/s)"), "key": widgets.Dropdown(description="")}
    message = show.refusal("rate must be at most 500; max_rate and rate_limit stay; key unknown", controls)
    assert message == "“rate (/s)” must be at most 500; max_rate and rate_limit stay; “key” unknown"


def test_a_redrive_without_failures_draws_its_axis_from_zero():
    from mercadofresco.lessons.dlq import figures
    from mercadofresco.sims import mass_redrive

    paced = mass_redrive.run_mass_redrive(mass_redrive.MassRedriveConfig(release="paced", max_concurrency=40))
    assert paced.summary()["failed_attempts"] == 0
    right = figures.mass_redrive([paced]).axes[1]
    assert right.get_ylim() == (0, 1)


def test_an_integer_log_slider_passes_a_whole_number():
    slider = show.log_slider("lock (s)", 60, 1, 86_399, integer=True)
    assert (slider.base**slider.min, round(slider.base**slider.max)) == (1, 86_399)
    seen = []
    box = show.panel(lambda lock_seconds: seen.append(lock_seconds), {"lock_seconds": slider})
    slider.value = typed(slider, 600)  # what typing 600 in the readout sends: 600.0something, the nearest step
    assert slider.value != 600
    box.button.click()
    assert seen == [600] and type(seen[0]) is int
    cap = show.log_slider("cap (ms)", 2000, 1, 3600)
    cap.value = typed(cap, 3)
    assert show.value_of(cap) == 3.0


def test_a_panel_says_when_its_kernel_is_gone():
    """The notice shows only under JupyterLab's mark for a widget whose kernel is gone (tests/browser proves it)."""
    import ipywidgets as widgets

    box = show.panel(lambda n: None, {"n": widgets.IntSlider(description="n")})
    assert box.children[0] is box.gone and "mf-panel-gone" in box.gone._dom_classes
    assert show.GONE in box.gone.value and "Run → Run All Cells" in show.GONE
    assert ".mf-panel > .mf-panel-gone {display: none}" in box.gone.value
    assert ".mf-panel.jupyter-widgets-disconnected > .mf-panel-gone {display: block" in box.gone.value
    assert box.children[1].layout.width == show.WIDE  # a slider gets a track a learner can aim at
