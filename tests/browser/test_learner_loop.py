"""The learner's save-then-check loop, from inside JupyterLab, on a wrong lab 1, in each edition.

A learner who keys their charges on the SQS MessageId opens the lab, adds a cell and runs it, runs the lab's last
cell (`selfcheck.here`): it asks for a save, with a Save button; after the click it runs the saved
notebook in a fresh kernel and shows the failing public check with what it saw, then the hidden checks.

The Spanish learner does it in the Spanish JupyterLab (`make start-es`) on the Spanish lab, kept in a labs/es/ folder
as theirs is: the kernel and selfcheck speak Spanish there. What the page must say is the package's sentences, in
the edition's words (`editions.sentence`: the English template, its translation from the package's catalog).
"""

from __future__ import annotations

import re
import shutil

import nbformat
import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.driver import KERNEL_IDLE
from tests.browser.editions import collapsed, sentence
from tests.browser.lab import CHROMIUM, ROOT
from tests.labs import lab_variants

FOLDERS = {  # served by the test's JupyterLab (the repository root); not committed
    "en": ARTIFACTS / "loop",
    "es": ARTIFACTS / "loop-es" / "labs" / "es",  # a kernel started in labs/es/ speaks Spanish (mercadofresco.i18n)
}
SERVERS = {"en": "lab_server", "es": "lab_server_es"}  # the fixtures of conftest.py
SOLUTIONS = {"en": None, "es": ROOT / "solutions" / "es" / "lab1_double_charge.ipynb"}  # None: lab_variants' own
CHECK_SECONDS = 180  # the saved lab in a fresh kernel, then the real grader on it
RAN = "nuevo = 'PED-2026-084417'"  # the cell the learner adds and runs


@pytest.mark.parametrize("language", ["en", "es"])
def test_a_learner_saves_then_checks_a_wrong_lab_from_its_last_cell(request, language):
    from playwright.sync_api import sync_playwright

    server = request.getfixturevalue(SERVERS[language])
    folder = FOLDERS[language]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    solution = SOLUTIONS[language] and nbformat.read(SOLUTIONS[language], as_version=4)
    wrong = lab_variants.edited(lab_variants.EDITS["messageid_key"], "messageid_key", solution)
    path = lab_variants.write(wrong, folder / "lab1_double_charge.ipynb")
    relative = path.relative_to(ROOT).as_posix()
    hidden_head = sentence(language, "hidden checks, by the instructor's grader (you have the whole repository)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 1366, "height": 768})  # a laptop's screen
        page.goto(f"{server.url}/lab/workspaces/loop-{language}/tree/{relative}?token={server.token}")
        page.wait_for_function(KERNEL_IDLE, timeout=60_000, polling=250)

        check = page.locator(".jp-Notebook .jp-CodeCell", has_text="selfcheck.here(")  # the lab's last cell
        check.locator(".jp-InputPrompt").click()  # select the check cell (command mode)
        page.keyboard.press("a")  # a new cell above it: the learner tries something and runs it
        page.keyboard.press("Enter")
        page.keyboard.type(RAN)
        page.keyboard.press("Shift+Enter")  # runs it; the check cell is selected next
        page.wait_for_function(KERNEL_IDLE, timeout=30_000, polling=250)
        page.keyboard.press("Shift+Enter")  # runs the check cell before saving
        save = check.locator('button[data-commandlinker-command="docmanager:save"]')
        try:
            save.wait_for(timeout=30_000)
        except Exception:
            page.screenshot(path=str(folder / "no-save-button.png"), full_page=True)
            raise AssertionError(f"no Save button; the check cell shows {check.inner_text()[-600:]!r}") from None
        unsaved = "⚠ The saved file does not hold the cell you ran last ({cell}): the check reads the saved file."
        asked = collapsed(check.inner_text())
        assert sentence(language, unsaved, cell=RAN).search(asked), asked

        save.click()
        for _ in range(100):  # the button saves through JupyterLab: the file on disk gets the new cell
            if RAN in path.read_text():
                break
            page.wait_for_timeout(100)
        assert RAN in path.read_text(), "the Save button did not save the notebook"
        check.locator(".jp-InputPrompt").click()
        page.keyboard.press("Shift+Enter")  # the same cell again, now that the file holds what ran
        output = check.locator(".jp-OutputArea")
        output.get_by_text(hidden_head).wait_for(timeout=CHECK_SECONDS * 1000)
        page.wait_for_function(KERNEL_IDLE, timeout=CHECK_SECONDS * 1000, polling=250)
        text = output.inner_text()
        page.screenshot(path=str(folder / "loop.png"), full_page=True)
        browser.close()
    shown = collapsed(text)
    number, failed = re.compile(r"\d+"), re.escape("✗ ")
    said = {  # what the package says, in the edition's words
        "checking": sentence(
            language, "checking {name} as saved, in a fresh kernel, as the grader will…", name=path.name
        ),
        "failed": re.compile(failed + sentence(
            language, "{count} cell(s) failed: fix them from the first one down (cell numbers as after Run All).",
            count=number,
        ).pattern),
        "check (d) failed": re.compile(failed + sentence(
            language, "<b>{name}</b> failed ({where})",
            name=sentence(language, "public check {part}", part="(d)"),
            where=sentence(language, "cell [{number}]", number=number),
        ).pattern),
        "seen": sentence(language, "{hint} (seen: {seen})"),
        "hidden": hidden_head,
    }  # fmt: skip
    missing = [what for what, pattern in said.items() if not pattern.search(shown)]
    assert not missing, f"{missing} not said as the package says them in {language}: {text}"
    assert "CheckFailed:" in text, text
    assert "Traceback" not in text and "WARNING" not in text, text
