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
    picture = figures.timeline(run)
    labels = [tick.get_text() for tick in picture.figure.axes[0].get_yticklabels()]
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
    assert box.status.value == "⚠ “orders (x100)” must be between 1 and 50; got 500"  # announced, not only shown


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
    right = figures.mass_redrive([paced]).figure.axes[1]
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


def test_a_table_has_headers_a_screen_reader_uses_and_a_region_the_keyboard_reaches():
    rows = [{"pedido_id": "PED-0001", "charges": 2}, {"pedido_id": "PED-0002", "charges": 1}]
    html = show.Table(rows, caption="Charges per order")._repr_html_()
    assert '<th scope="col" style="text-align: left; vertical-align: bottom">pedido_id</th>' in html
    assert '<th scope="row" style="text-align: left; white-space: nowrap">PED-0001</th>' in html  # names its row
    assert "<caption>Charges per order</caption>" in html
    assert '<div class="mf-table" role="region" tabindex="0" aria-label="Charges per order"' in html
    # Without a caption: its columns, size and first row, so two tables of one notebook with the same columns differ.
    assert 'aria-label="Table of pedido_id, charges (2 rows, first PED-0001)"' in show.Table(rows)._repr_html_()
    # A first column of numbers, or of values that repeat, names no row: no row headers then.
    for first in ([5, 6], ["incident", "incident"]):
        plain = show.Table([{"case": value, "charges": 2} for value in first])._repr_html_()
        assert 'scope="row"' not in plain and "(2 rows)" in plain


def test_a_panel_keeps_its_button_and_announces_what_the_run_showed():
    import ipywidgets as widgets

    from mercadofresco.lessons.show import panels

    classes = []
    slider = widgets.IntSlider(value=5, min=0, max=900, description="wait (s)")

    def run(wait):
        classes.append(list(box.button._dom_classes))
        show.table([{"orders_sent": wait, "charges": wait, "in_dlq": 0}])

    box = show.panel(run, {"wait": slider})
    assert slider.tooltip == "in seconds, from 0 to 900"  # its unit and range, for a screen reader too
    assert "mf-panel-status" in box.status._dom_classes and box.status.value == ""
    box.button.click()
    assert classes == [[show.RUNNING]]  # marked while it runs, never disabled
    assert show.RUNNING not in box.button._dom_classes and not box.button.disabled
    assert box.status.value == "Done: orders sent 5, charges 5, in DLQ 0"
    box.button.click()  # a press that arrives within QUEUED_SECONDS of a run's end was made during it: dropped
    assert len(classes) == 1 and panels.QUEUED_SECONDS > 0


def test_a_panel_announces_a_pictures_text_and_a_tables_size():
    from mercadofresco.lessons.show import panels

    rows = [{"a": 1}, {"a": 2}]
    assert panels.summary(None) == "the result is below."
    assert panels.summary(show.Table(rows)) == "a table of 2 rows"
    assert panels.summary(show.Table(rows, caption="Two rows")) == "Two rows"
    assert panels.summary("(no caveat)", [show.Table(rows[:1])]) == "a 1; (no caveat)"


def test_a_panel_refuses_a_control_without_a_label_and_describes_numbers():
    import ipywidgets as widgets
    import pytest

    from mercadofresco.lessons.show import controls

    with pytest.raises(ValueError, match="'key' has no description"):
        show.panel(lambda key: None, {"key": widgets.Dropdown(options=["a", "b"])})
    assert controls.describe(widgets.IntSlider(min=1, max=500, description="rate (/s)")) == "per second, from 1 to 500"
    assert controls.describe(widgets.BoundedIntText(min=1, max=10_000_000, description="orders")) == (
        "from 1 to 10,000,000"
    )
    assert controls.describe(widgets.IntText(description="visibility (s)")) == "in seconds"
    assert controls.describe(widgets.Checkbox(description="concurrency cap (20)")) == ""  # a count, not a unit
    log = show.log_slider("cap (ms)", 2000, 1, 3600)
    assert log.tooltip == "in milliseconds, from 1 to 3,600, on a log scale" and controls.LOG in log._dom_classes
