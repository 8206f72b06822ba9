"""The browser suite: one JupyterLab server, one headless Chromium, every notebook and lab checked once.

The notebooks run two at a time (the machine has two cores); each test then reads its notebook's report.
Without Debian's chromium the suite is skipped with the reason, except in CI (CI=true), where it fails.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from lab import CHROMIUM, ROOT, LabServer, chromium_missing

ARTIFACTS = ROOT / "tests" / "browser" / "artifacts"  # screenshots; not committed (.gitignore)
CONCURRENT_NOTEBOOKS = 2


def learner_notebooks() -> list[str]:
    """Every lesson notebook and every lab, found on disk: a notebook added later is checked too."""
    found = sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("labs/*.ipynb"))
    return [str(path.relative_to(ROOT)) for path in found]


@pytest.fixture(scope="session")
def browser_ready() -> None:
    reason = chromium_missing()
    if reason and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the browser suite cannot run in CI: {reason}")
    if reason:
        pytest.skip(f"browser suite skipped: {reason}")


@pytest.fixture(scope="session")
def lab_server(browser_ready, tmp_path_factory) -> LabServer:
    server = LabServer(tmp_path_factory.mktemp("jupyterlab")).start()
    yield server
    server.stop()


async def run_all(server: LabServer, paths: list[str], interactions: dict, workers: int = CONCURRENT_NOTEBOOKS) -> dict:
    from driver import check_notebook
    from playwright.async_api import async_playwright

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


@pytest.fixture(scope="session")
def reports(lab_server) -> dict:
    """Every notebook's report, from one run of the whole set."""
    from panels import LESSON_PANELS

    return asyncio.run(run_all(lab_server, learner_notebooks(), LESSON_PANELS))
