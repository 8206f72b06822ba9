"""The learner's JupyterLab in a real browser (headless Debian chromium through Playwright).

nbval proves the cells run; only a browser shows whether a widget draws, a slider changes anything,
or a diagram renders. These tests start JupyterLab as `make start` does and use it as a learner would.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.browser.conftest import ARTIFACTS, CONCURRENT_NOTEBOOKS, WHOLE_SET, learner_notebooks, run_all
from tests.browser.editions import EDITIONS
from tests.browser.lab import ROOT, LabServer
from tests.browser.panels import LESSON_PANELS

STARTED_EARLY = WHOLE_SET  # tests/conftest.py starts it with the session's first test

# What a notebook itself gets wrong, found by this suite and not yet fixed in the notebook: its test is expected to
# fail with this reason (strict: once the notebook is fixed the test passes, and this entry must go).
KNOWN_PROBLEMS: dict[str, str] = {}  # a notebook whose run shows a known problem -> why (a strict xfail)


def with_known_problems(paths: list[str]) -> list:
    return [
        pytest.param(path, marks=pytest.mark.xfail(strict=True, reason=KNOWN_PROBLEMS[path]))
        if path in KNOWN_PROBLEMS
        else path
        for path in paths
    ]


@pytest.mark.parametrize("path", with_known_problems(learner_notebooks()))
def test_notebook_runs_and_its_panels_answer(reports, path):
    report = reports[path]
    print(f"{path}: {report.seconds:.1f} s ({', '.join(report.steps)}); " + "; ".join(report.panels))
    assert not report.problems, f"{path}:\n  " + "\n  ".join(report.problems)


@pytest.mark.parametrize("path", learner_notebooks())
def test_notebook_has_no_serious_accessibility_findings(axe_ready, reports, path):
    """axe-core over the notebook's outputs and rendered markdown: no serious or critical finding (driver.py)."""
    report = reports[path]
    print(f"{path}: axe found {report.axe_counts or 'nothing'}")
    assert report.accessibility is not None, f"{path}: the run stopped before the accessibility pass: {report.problems}"
    assert not report.accessibility, f"{path}:\n  " + "\n  ".join(report.accessibility)


def test_every_lesson_panel_in_the_interaction_table_exists():
    stems = {path.split("/")[-1].removesuffix(".ipynb") for path in learner_notebooks()}
    assert set(LESSON_PANELS) <= stems, f"entries for missing notebooks: {set(LESSON_PANELS) - stems}"


def test_the_file_browser_shows_the_whole_repository(lab_server):
    """`make start` serves the repository root: labs/, the package and the README are one click away."""
    from playwright.sync_api import sync_playwright

    from tests.browser.lab import CHROMIUM

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        page.goto(f"{lab_server.url}/lab/workspaces/files?token={lab_server.token}")
        listing = page.locator(".jp-DirListing-content")
        listing.get_by_text("labs", exact=True).wait_for(timeout=60_000)
        names = set(page.locator(".jp-DirListing-itemName").all_inner_texts())
        assert {"labs", "notebooks", "mercadofresco", "README.md"} <= names, names
        listing.get_by_text("labs", exact=True).dblclick()
        listing.get_by_text("lab1_double_charge.ipynb").wait_for(timeout=30_000)
        news = page.get_by_text(re.compile("official Jupyter news"))
        assert news.count() == 0, "JupyterLab asks about news: the project's overrides.json was not read"
        browser.close()


def test_the_suite_fails_when_the_widget_extension_is_disabled(browser_ready, tmp_path):
    """With @jupyter-widgets/jupyterlab-manager disabled, the same checks must report the panels missing.

    One worker checks two notebooks: after the first one's problem the second is loaded in a new page, not opened in
    the page that saw it.
    """
    server = LabServer(tmp_path)
    server.disable_widgets()
    server.start()
    paths = ["notebooks/00_start_here.ipynb", "notebooks/01_delivery_guarantees.ipynb"]
    try:
        reports = asyncio.run(run_all({"en": server}, paths, workers=1))
    finally:
        server.stop()
    for path in paths:
        assert any("panel(s) in the notebook, 0 drawn as widgets" in p for p in reports[path].problems), path
    assert not reports[paths[1]].in_open_page, "the notebook after a problem was opened in the same page"
    assert ARTIFACTS.exists()


PROOF = ARTIFACTS / "accessibility" / "fails_the_accessibility_passes.ipynb"  # served; not committed
PROOF_CELLS = [
    ("markdown", "# A notebook made to fail the accessibility passes"),
    ("code", "%matplotlib inline\nimport matplotlib.pyplot as plt\n\nplt.plot([1, 2, 3])\nplt.show()"),
    ("code", "import ipywidgets as widgets\n\nwidgets.IntSlider()  # no description: its handle has no name"),
    (
        "code",
        "import time\n\nfrom mercadofresco.lessons import show\n\n\n"
        "def run(orders):\n"
        "    box.button.disabled = True  # what a panel must not do: a disabled button drops the keyboard's focus\n"
        "    time.sleep(0.5)\n"
        "    box.button.disabled = False\n"
        "    return f'{orders} orders'\n\n\n"
        "box = show.panel(run, {'orders': widgets.IntSlider(value=5, min=1, max=10, description='orders')})\n"
        "box",
    ),
    ("markdown", "**Next:** [00 · Start here](../../../../notebooks/00_start_here.ipynb)"),  # the suite's link check
]


def test_the_accessibility_passes_fail_a_figure_without_alt_an_unlabelled_slider_and_a_button_losing_focus(
    axe_ready, lab_server
):
    """The same driver on a notebook made to fail: a plain matplotlib figure (a PNG, no text alternative), an
    ipywidgets slider without a description, and a panel whose run disables its button."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    new = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    notebook.cells = [new[kind](source) for kind, source in PROOF_CELLS]
    PROOF.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, PROOF)
    relative = PROOF.relative_to(ROOT).as_posix()
    report = asyncio.run(run_all({"en": lab_server}, [relative], workers=1))[relative]
    print(f"{relative}: axe found {report.axe_counts}; {report.problems}")
    found = [line.split(" (")[0] for line in report.accessibility or []]
    assert "image-alt" in found, report.accessibility  # the figure
    assert report.axe_counts.get("aria-input-field-name (serious)") == 1, report.axe_counts  # the bare slider alone
    lost = [problem for problem in report.problems if problem.startswith("keyboard: after the run the focus is on")]
    assert lost, report.problems
    assert len(report.problems) == 1, report.problems  # the rest of the panel works


def test_after_the_first_notebook_of_each_worker_the_others_open_in_the_page_it_has(reports):
    """JupyterLab starts once a page: a notebook without problems closes and leaves the page to the next one. A
    worker has a page in each edition's JupyterLab."""
    loaded = sorted(path for path, report in reports.items() if not report.in_open_page)
    with_problems = sum(1 for report in reports.values() if report.problems)
    assert len(loaded) <= CONCURRENT_NOTEBOOKS * len(EDITIONS) + with_problems, f"loaded from their URL: {loaded}"


def test_the_browser_tests_come_last_and_those_reading_the_whole_sets_reports_at_the_very_end(request):
    """The whole set runs in a thread while the other tests do: nothing may wait for it before they are over
    (tests/conftest.py's order)."""
    here = Path(__file__).parent
    places = [
        0 if here not in item.path.parents else 2 if "reports" in item.fixturenames else 1
        for item in request.session.items
    ]  # 0 for the other tests, whatever their order (tests/conftest.py)
    assert places == sorted(places), "a test that is not a browser test comes after one that is, or a reader early"


def test_a_whole_set_whose_server_cannot_start_fails_its_readers_with_the_reason(monkeypatch, tmp_path):
    from tests.browser import conftest

    class NoServer(LabServer):
        def start(self, timeout: float = 90) -> LabServer:
            raise RuntimeError("jupyter lab did not answer in 90 s")

    monkeypatch.setattr(conftest, "chromium_missing", lambda: None)
    monkeypatch.setattr(conftest, "LabServer", NoServer)
    whole_set = conftest.WholeSet()
    with pytest.raises(RuntimeError, match=r"run of every notebook failed: .*did not answer in 90 s"):
        whole_set.result(tmp_path)
    whole_set.stop()  # over already: nothing to stop


def test_make_start_serves_the_root_with_the_project_settings():
    """No browser needed: the Makefile's arguments serve `.` and point at the shipped overrides (no news prompt)."""
    import json
    import os

    from tests.browser.lab import ROOT, make_start_arguments

    arguments = make_start_arguments()
    assert "--ServerApp.root_dir=." in arguments
    assert arguments[-1] == "notebooks/00_start_here.ipynb"
    assert "--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb" in arguments  # the printed URL opens 00
    assert ("--allow-root" in arguments) == (os.geteuid() == 0)
    settings = next(a.split("=", 1)[1] for a in arguments if a.startswith("--LabApp.app_settings_dir="))
    overrides = json.loads((ROOT / settings / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_the_url_jupyterlab_prints_opens_notebook_00(lab_server):
    """Without a local browser a learner copies the printed URL: it must open notebook 00, not the Launcher."""
    import urllib.request

    log = (lab_server.home / "server.log").read_text()
    printed = re.search(r"http://127\.0\.0\.1:\d+/\S+", log).group(0)
    assert "/lab/tree/notebooks/00_start_here.ipynb?token=" in printed, printed
    with urllib.request.urlopen(f"{lab_server.url}/?token={lab_server.token}") as answer:  # the bare address too
        assert answer.url.split("?")[0].endswith("/lab/tree/notebooks/00_start_here.ipynb")


def test_a_click_on_next_opens_the_next_notebook(lab_server):
    """The links at a notebook's end work as links in JupyterLab: a click on 00's Next opens 01 in a tab."""
    from playwright.sync_api import sync_playwright

    from tests.browser.driver import KERNEL_IDLE
    from tests.browser.lab import CHROMIUM

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(f"{lab_server.url}/lab/workspaces/next/tree/notebooks/00_start_here.ipynb?token={lab_server.token}")
        page.wait_for_function(KERNEL_IDLE, timeout=60_000, polling=250)
        nav = page.locator(".jp-Notebook .jp-MarkdownCell", has_text="Next:")
        nav.scroll_into_view_if_needed()
        nav.get_by_role("link").first.click()
        page.locator(".lm-TabBar-tabLabel", has_text="01_delivery_guarantees.ipynb").wait_for(timeout=30_000)
        browser.close()


def test_the_suites_jupyterlab_never_saves_the_repositorys_notebooks(lab_server):
    """The suite clears outputs and runs notebooks in place: an autosave would write them back changed."""
    import json
    import urllib.request

    url = f"{lab_server.url}/lab/api/settings/@jupyterlab/docmanager-extension:plugin?token={lab_server.token}"
    with urllib.request.urlopen(url) as answer:
        assert json.loads(answer.read())["settings"]["autosave"] is False  # what the page reads on load
