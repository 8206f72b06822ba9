"""The learner's save-then-check loop, from inside JupyterLab, on a wrong lab 1.

A learner who keys their charges on the SQS MessageId opens the lab, adds a cell and runs it, runs the lab's last
cell (`selfcheck.here`): it asks for a save, with a Save button; after the click it runs the saved
notebook in a fresh kernel and shows the failing public check with what it saw, then the hidden checks.
"""

from __future__ import annotations

import shutil

from tests.browser.conftest import ARTIFACTS
from tests.browser.driver import KERNEL_IDLE
from tests.browser.lab import CHROMIUM, ROOT
from tests.labs import lab_variants

FOLDER = ARTIFACTS / "loop"  # served by the test's JupyterLab (the repository root); not committed
CHECK_SECONDS = 180  # the saved lab in a fresh kernel, then the real grader on it


def test_a_learner_saves_then_checks_a_wrong_lab_from_its_last_cell(lab_server):
    from playwright.sync_api import sync_playwright

    shutil.rmtree(FOLDER, ignore_errors=True)
    FOLDER.mkdir(parents=True)
    path = lab_variants.write(lab_variants.variant("messageid_key"), FOLDER / "lab1_double_charge.ipynb")
    relative = path.relative_to(ROOT).as_posix()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 1366, "height": 768})  # a laptop's screen
        page.goto(f"{lab_server.url}/lab/workspaces/loop/tree/{relative}?token={lab_server.token}")
        page.wait_for_function(KERNEL_IDLE, timeout=60_000, polling=250)

        check = page.locator(".jp-Notebook .jp-CodeCell", has_text="selfcheck.here(")  # the lab's last cell
        check.locator(".jp-InputPrompt").click()  # select the check cell (command mode)
        page.keyboard.press("a")  # a new cell above it: the learner tries something and runs it
        page.keyboard.press("Enter")
        page.keyboard.type("nuevo = 'PED-2026-084417'")
        page.keyboard.press("Shift+Enter")  # runs it; the check cell is selected next
        page.wait_for_function(KERNEL_IDLE, timeout=30_000, polling=250)
        page.keyboard.press("Shift+Enter")  # runs the check cell before saving
        save = check.locator('button[data-commandlinker-command="docmanager:save"]')
        try:
            save.wait_for(timeout=30_000)
        except Exception:
            page.screenshot(path=str(FOLDER / "no-save-button.png"), full_page=True)
            raise AssertionError(f"no Save button; the check cell shows {check.inner_text()[-600:]!r}") from None
        assert "does not hold the cell you ran last (nuevo = 'PED-2026-084417')" in check.inner_text()

        save.click()
        for _ in range(100):  # the button saves through JupyterLab: the file on disk gets the new cell
            if "nuevo = 'PED-2026-084417'" in path.read_text():
                break
            page.wait_for_timeout(100)
        assert "nuevo = 'PED-2026-084417'" in path.read_text(), "the Save button did not save the notebook"
        check.locator(".jp-InputPrompt").click()
        page.keyboard.press("Shift+Enter")  # the same cell again, now that the file holds what ran
        output = check.locator(".jp-OutputArea")
        output.get_by_text("hidden checks, by the instructor's grader").wait_for(timeout=CHECK_SECONDS * 1000)
        page.wait_for_function(KERNEL_IDLE, timeout=CHECK_SECONDS * 1000, polling=250)
        text = output.inner_text()
        page.screenshot(path=str(FOLDER / "loop.png"), full_page=True)
        browser.close()
    assert "as saved" in text and "cell(s) failed" in text, text
    assert "✗ public check (d) failed (cell [" in text and "CheckFailed:" in text and "seen:" in text, text
    assert "hidden checks, by the instructor's grader" in text, text
    assert "Traceback" not in text and "WARNING" not in text, text
