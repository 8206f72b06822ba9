from mercadofresco.lessons import delivery, show


def test_table_is_aligned_and_deterministic(capsys):
    show.table([{"a": 1, "b": 0.5}, {"a": 22, "b": "x"}])
    assert capsys.readouterr().out.splitlines() == ["a   b", "--  ---", "1   0.5", "22  x"]


def test_timeline_figure_has_a_lane_per_consumer(mf, reloj):
    run = delivery.slow_gateway(mf, reloj)
    figure = show.timeline(run)
    labels = [tick.get_text() for tick in figure.axes[0].get_yticklabels()]
    assert labels == ["consumidor-1", "consumidor-2"]


def test_panel_turns_a_value_error_into_a_message(mf, reloj, capsys):
    import ipywidgets as widgets

    slider = widgets.IntSlider(value=5, min=0, max=10)
    box = show.panel(
        lambda order_count: delivery.charges_per_order(mf, reloj, order_count=order_count * 100),
        {"order_count": slider},
    )
    button, output = box.children[1], box.children[2]
    button.click()  # 500 orders: out of range
    # Without a kernel the Output widget cannot capture: what it shows goes to stdout.
    shown = "".join(item.get("text", "") for item in output.outputs) + capsys.readouterr().out
    assert "order_count must be between 1 and 50; got 500" in shown
