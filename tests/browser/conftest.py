"""The browser suite: a JupyterLab server an edition, one headless Chromium, every notebook and lab checked once.

Each edition (editions.py) has its JupyterLab, started as its Makefile target starts it: English as `make start`,
Spanish as `make start-es` (JupyterLab's menus in Spanish), which runs notebooks/es/ and labs/es/. The notebooks
run two at a time (the machine has two cores), the same two workers over both editions, in a thread that
tests/conftest.py starts with the session's first test (`STARTED_EARLY`, as for the strict nbval runs): the whole
set runs while the other tests do, filling the CPU they leave idle, and the tests that read its reports come last
(tests/conftest.py's order). Without Debian's chromium the suite is skipped with the reason, except in CI
(CI=true), where it fails; so is the accessibility pass without axe-core (.ci/run installs it from npm).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests import scheduling
from tests.browser import editions
from tests.browser.lab import CHROMIUM, ROOT, LabServer, axe_missing, chromium_missing

ARTIFACTS = ROOT / "tests" / "browser" / "artifacts"  # screenshots; not committed (.gitignore)
CONCURRENT_NOTEBOOKS = 2


def learner_notebooks() -> list[str]:
    """Every lesson notebook and every lab of every edition, found on disk: a notebook added later is checked too."""
    return [path for edition in editions.EDITIONS.values() for path in edition.notebooks()]


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


@pytest.fixture(scope="session")
def lab_server_es(browser_ready, tmp_path_factory) -> LabServer:
    """JupyterLab as `make start-es` starts it: in Spanish."""
    server = LabServer(tmp_path_factory.mktemp("jupyterlab-es"), target=editions.EDITIONS["es"].target).start()
    yield server
    server.stop()


async def run_all(servers: dict[str, LabServer], paths: list[str], workers: int = CONCURRENT_NOTEBOOKS) -> dict:
    """Check `paths`, each in the JupyterLab of its edition (`servers`, by edition), with its edition's words and
    interactions (editions.py)."""
    from playwright.async_api import async_playwright

    from tests.browser.driver import check_notebook

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seconds = json.loads((ROOT / "mercadofresco" / "lessons" / "course_times.json").read_text())["seconds"]
    waiting: asyncio.Queue = asyncio.Queue()
    # The longest first, two workers taking the next as each finishes: neither waits long for the other at the end.
    # A notebook and its Spanish edition take as long (the same code): one after the other.
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
            # wrong there cannot reach its report. A worker keeps a page an edition (each edition's JupyterLab is a
            # server of its own), and takes the next notebook whatever its edition.
            pages: dict[str, tuple] = {}  # edition -> (context, page)
            try:
                while not waiting.empty():
                    path = waiting.get_nowait()
                    edition = editions.of(path)
                    server = servers[edition.name]
                    in_open_page = edition.name in pages
                    if not in_open_page:
                        context = await browser.new_context(viewport={"width": 1400, "height": 1000})
                        pages[edition.name] = (context, await context.new_page())
                    context, page = pages[edition.name]
                    interaction = edition.interactions.get(Path(path).stem)
                    report = await check_notebook(
                        page, server.url, server.token, ROOT, path, interaction, ARTIFACTS, in_open_page, edition.words
                    )
                    reports.append(report)
                    if report.problems or not report.closed:
                        await pages.pop(edition.name)[0].close()
            finally:
                for context, _page in pages.values():
                    await context.close()

        await asyncio.gather(*(worker() for _ in range(workers)))
        await browser.close()
    return {report.path: report for report in reports}


class WholeSet(scheduling.InThread):
    """One run of every notebook of every edition in the browser, in a thread with JupyterLab servers of its own (one
    an edition).

    Started early (tests/conftest.py) or by the first test that needs it; `result()` waits for its reports.
    """

    def __init__(self) -> None:
        super().__init__(self._run_all, "the browser suite's run of every notebook")
        self.servers: dict[str, LabServer] = {}

    def start(self, folder: Path, after: Iterable = ()) -> None:
        if self.thread is None and chromium_missing() is None:
            editions.derive_all()  # in the tests' thread, not in the whole set's (ast, editions.derive_all)
            self.servers = {  # here, not in the thread: stop() may need them
                name: LabServer(folder / f"browser-suite-{name}", target=edition.target)
                for name, edition in editions.EDITIONS.items()
            }
            super().start(folder, after)

    def _run_all(self, folder: Path) -> dict:
        try:
            for server in self.servers.values():
                server.start()
            return asyncio.run(run_all(self.servers, learner_notebooks()))
        finally:
            for server in self.servers.values():
                server.stop()

    def result(self, folder: Path) -> dict:
        self.start(folder)
        if self.thread is None:
            raise RuntimeError(f"the browser suite cannot run: {chromium_missing()}")
        return super().result(folder)

    def stop(self) -> None:
        """A session cut short: stop the servers (their kernels go with them); the run then ends on its own."""
        if self.thread is not None and self.thread.is_alive():
            for server in self.servers.values():
                server.stop()
            self.thread.join(timeout=30)


WHOLE_SET = WholeSet()  # test_browser.py names it STARTED_EARLY


@pytest.fixture(scope="session")
def reports(browser_ready, tmp_path_factory) -> dict:
    """Every notebook's report, from one run of the whole set."""
    return WHOLE_SET.result(tmp_path_factory.mktemp("browser-suite"))
