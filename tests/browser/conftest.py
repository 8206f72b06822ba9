"""The browser suite: one JupyterLab server, one headless Chromium, every notebook and lab checked once.

The notebooks run two at a time (the machine has two cores), in a thread that tests/conftest.py starts with the
session's first test (`STARTED_EARLY`, as for the strict nbval runs): the whole set runs while the other tests
do, filling the CPU they leave idle, and the tests that read its reports come last (tests/conftest.py's order).
Without Debian's chromium the suite is skipped with the reason, except in CI (CI=true), where it fails; so is the
accessibility pass without axe-core (.ci/run installs it from npm).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests import scheduling
from tests.browser.lab import CHROMIUM, ROOT, LabServer, axe_missing, chromium_missing

ARTIFACTS = ROOT / "tests" / "browser" / "artifacts"  # screenshots; not committed (.gitignore)
CONCURRENT_NOTEBOOKS = 2


def learner_notebooks() -> list[str]:
    """Every lesson notebook and every lab, found on disk: a notebook added later is checked too."""
    found = sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("labs/*.ipynb"))
    return [str(path.relative_to(ROOT)) for path in found]


def _needed(reason: str | None, what: str) -> None:
    """Skip with `reason` when something the test needs is missing; in CI (CI=true), fail."""
    if reason and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} cannot run in CI: {reason}")
    if reason:
        pytest.skip(f"{what} skipped: {reason}")


@pytest.fixture(scope="session")
def browser_ready() -> None:
    _needed(chromium_missing(), "the browser suite")


@pytest.fixture(scope="session")
def axe_ready(browser_ready) -> None:
    _needed(axe_missing(), "the accessibility pass")


@pytest.fixture(scope="session")
def lab_server(browser_ready, tmp_path_factory) -> LabServer:
    server = LabServer(tmp_path_factory.mktemp("jupyterlab")).start()
    yield server
    server.stop()


async def run_all(server: LabServer, paths: list[str], interactions: dict, workers: int = CONCURRENT_NOTEBOOKS) -> dict:
    from playwright.async_api import async_playwright

    from tests.browser.driver import check_notebook

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seconds = json.loads((ROOT / "mercadofresco" / "lessons" / "course_times.json").read_text())["seconds"]
    waiting: asyncio.Queue = asyncio.Queue()
    # The longest first, two workers taking the next as each finishes: neither waits long for the other at the end.
    for path in sorted(paths, key=lambda path: -seconds.get(Path(path).name, 5.0)):
        waiting.put_nowait(path)
    reports = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)

        async def worker() -> None:
            # One page a worker, each notebook opened in the JupyterLab already there (1-2 s instead of the 5-6 s of
            # loading JupyterLab again, measured). A context of its own for each page: JupyterLab's window resolver
            # coordinates the tabs of one origin through localStorage, and two tabs opening at once in a shared
            # context can both claim a name ("Window name candidate ... already exists", seen once in CI). After a
            # notebook with a problem, or one the page could not close, the next one gets a new page: what went
            # wrong there cannot reach its report.
            context = page = None
            try:
                while not waiting.empty():
                    path = waiting.get_nowait()
                    in_open_page = page is not None
                    if page is None:
                        context = await browser.new_context(viewport={"width": 1400, "height": 1000})
                        page = await context.new_page()
                    interaction = interactions.get(Path(path).stem)
                    report = await check_notebook(
                        page, server.url, server.token, ROOT, path, interaction, ARTIFACTS, in_open_page
                    )
                    reports.append(report)
                    if report.problems or not report.closed:
                        await context.close()
                        context = page = None
            finally:
                if context is not None:
                    await context.close()

        await asyncio.gather(*(worker() for _ in range(workers)))
        await browser.close()
    return {report.path: report for report in reports}


class WholeSet(scheduling.InThread):
    """One run of every notebook in the browser, in a thread with a JupyterLab server of its own.

    Started early (tests/conftest.py) or by the first test that needs it; `result()` waits for its reports.
    """

    def __init__(self) -> None:
        super().__init__(self._run_all, "the browser suite's run of every notebook")
        self.server: LabServer | None = None

    def start(self, folder: Path, after: Iterable = ()) -> None:
        if self.thread is None and chromium_missing() is None:
            self.server = LabServer(folder / "browser-suite")  # here, not in the thread: stop() may need it
            super().start(folder, after)

    def _run_all(self, folder: Path) -> dict:
        from tests.browser.panels import LESSON_PANELS

        try:
            self.server.start()
            return asyncio.run(run_all(self.server, learner_notebooks(), LESSON_PANELS))
        finally:
            self.server.stop()

    def result(self, folder: Path) -> dict:
        self.start(folder)
        if self.thread is None:
            raise RuntimeError(f"the browser suite cannot run: {chromium_missing()}")
        return super().result(folder)

    def stop(self) -> None:
        """A session cut short: stop the server (its kernels go with it); the run then ends on its own."""
        if self.thread is not None and self.thread.is_alive():
            self.server.stop()
            self.thread.join(timeout=30)


WHOLE_SET = WholeSet()  # test_browser.py names it STARTED_EARLY


@pytest.fixture(scope="session")
def reports(browser_ready, tmp_path_factory) -> dict:
    """Every notebook's report, from one run of the whole set."""
    return WHOLE_SET.result(tmp_path_factory.mktemp("browser-suite"))
