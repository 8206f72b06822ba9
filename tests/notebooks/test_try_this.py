"""Every value a notebook's "try this" asks of its panel can be set with the panel's controls (issue 23, part 5).

The values are read from each item's `<!-- try: ... -->` comment (tests/notebooks/try_this.py says the convention); the
controls are built from the notebook's own panel cell. The browser suite sets the same values in the page.
"""

import math
from pathlib import Path

import pytest

from mercadofresco import i18n
from tests.notebooks.try_this import Ask, parse, problem, scenarios
from tests.notebooks.try_this import controls as panel_controls

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("notebooks/es/*.ipynb")])
# Notebooks with a panel whose "try this" asks nothing of it, and why.
ASKS_NOTHING = {
    "06_what_to_retry": "its items ask for code (gateway.spike_at, botocore's codes, budget_comparison)",
}


def has_panel(path: Path) -> bool:
    return "show.panel(" in path.read_text()


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if has_panel(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_value_a_try_this_asks_can_be_set(path):
    found = scenarios(path)
    if path.stem in ASKS_NOTHING:
        assert not found, f"{path.stem} declares values now: take it out of ASKS_NOTHING"
        return
    assert found, f"{path.name}: no <!-- try: label = value --> in its try this; which values does it ask?"
    edition = "es" if path.parent.name == "es" else "en"  # the panel as its kernel builds it, in its language
    with i18n.speaking(edition), panel_controls(path) as controls:
        problems = [
            f"{scenario.item[:60]!r}: {why}"
            for scenario in found
            for ask in scenario.asks
            if (why := problem(controls[ask.label], ask.value))
        ]
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


def test_notebooks_without_a_panel_declare_nothing():
    for path in NOTEBOOKS:
        if not has_panel(path):
            assert not scenarios(path), f"{path.name} asks values of a panel it does not have"


def old_notebook_01():
    """Notebook 01's controls before this check: a 0.001 floor and 43,200 s on one slider."""
    import ipywidgets as widgets

    return {
        "latency (s)": widgets.FloatSlider(value=150, min=0.001, max=900, step=0.001, description="latency (s)"),
        "visibility (s)": widgets.IntSlider(value=120, min=0, max=43200, description="visibility (s)"),
    }


def test_the_check_fails_the_controls_the_issue_found():
    old = old_notebook_01()
    assert problem(old["latency (s)"], 0) == "'latency (s)' reaches 0.001 to 900, not 0"
    assert "one pixel moves it 144" in problem(old["visibility (s)"], 150)
    assert problem(old["visibility (s)"], 0) is None  # the end of a slider is easy to reach


def test_the_check_knows_steps_log_scales_text_boxes_and_choices():
    import ipywidgets as widgets

    from mercadofresco.lessons import show

    cap = widgets.IntSlider(value=150, min=2, max=1000, step=10, description="cap value")
    assert problem(cap, 192) is None
    assert problem(cap, 191) == "'cap value' moves in steps of 10 from 2: 191 is between two"
    lock = show.log_slider("lock (s)", 60, 1, 86_399, integer=True)
    assert problem(lock, 600) is None
    assert problem(lock, 0) == "'lock (s)' reaches 1 to 86399, not 0"
    assert problem(lock, 1.5) == "'lock (s)' takes whole numbers, not 1.5"
    assert "one pixel changes it by" in problem(show.log_slider("x", 1, 1e-6, 1e6), 5)  # 12 decades
    # 1,000 steps, as show.log_slider first had: typing 600 showed 602 in the browser
    top = math.log10(86_399)
    coarse = widgets.FloatLogSlider(value=60, min=0, max=top, step=top / 1000, description="coarse")
    coarse.add_class(show.INTEGER)
    assert problem(coarse, 600).endswith("which the panel passes on as 602")
    assert problem(widgets.FloatText(description="latency (s)"), 0) is None  # typed; the package refuses it
    assert problem(widgets.BoundedIntText(min=1, max=10, description="n"), 0) == "'n' reaches 1 to 10, not 0"
    assert problem(widgets.Dropdown(options=["a", "b"], description="d"), "c") == "'d' offers ['a', 'b'], not 'c'"
    assert problem(widgets.Checkbox(description="c"), 1) == "'c' is a checkbox: ask true or false, not 1"


def test_a_comment_reads_labels_with_equals_signs_strings_and_refusals():
    assert parse(' share of "stock = N" = 0; crash at = "after_lock" ') == (
        Ask('share of "stock = N"', 0),
        Ask("crash at", "after_lock"),
    )
    assert parse("latency (s) = 0 refused") == (Ask("latency (s)", 0, refused=True),)
    with pytest.raises(ValueError, match="not `label = value`"):
        parse("visibility (s) 0")


def test_a_scenario_names_its_item_without_the_comment(tmp_path):
    import json

    notebook = tmp_path / "n.ipynb"
    source = "### Try this\n\n1. Set it to 0. <!-- try: x = 0 --> <!-- try: x = 1 -->\n\n## Next\n<!-- try: y = 2 -->"
    notebook.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": source}]}))
    found = scenarios(notebook)
    assert [(s.item, s.asks) for s in found] == [
        ("1. Set it to 0.", (Ask("x", 0),)),
        ("1. Set it to 0.", (Ask("x", 1),)),
    ]


def test_building_a_panel_leaves_no_clock_or_world_running():
    """Notebook 10's dropdown runs `clock = VirtualClock().start()` and builds a world: both stop when it is done."""
    import time

    from moto.core.models import MockAWS

    with panel_controls(ROOT / "notebooks/10_dead_letter_queues.ipynb") as controls:
        assert controls["incident"].options  # built from the seeded DLQs
        clock, aws = controls.names["clock"], controls.names["aws"]
        lesson_time = clock.timestamp()
        assert clock.running and MockAWS._nested_count == 1 and abs(time.time() - lesson_time) < 1
    assert not clock.running and aws._mock is None and MockAWS._nested_count == 0
    assert abs(time.time() - lesson_time) > 3_600  # the real time is back, not the lesson's Friday evening
