"""Open a notebook in JupyterLab, Run All, and check what the learner would see; use each panel once.

Everything here goes through the page as a person would: the menus, the widgets' own controls, the text
and images on screen. It returns the problems it saw instead of raising, so one run can check many notebooks.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mercadofresco.lessons.show.controls import LOG
from tests.browser.editions import ENGLISH, Words
from tests.browser.lab import AXE
from tests.browser.panels import Change, Interaction
from tests.notebooks.try_this import TRACK_PIXELS, Scenario, scenarios

RUN_SECONDS = 120  # Run All of one notebook, kernel start included
PANEL_SECONDS = 60  # one press of a panel's button
WIDGET_ERROR = "Error displaying widget"

KERNEL_IDLE = (
    """() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.getAttribute('data-status') === 'idle'"""
)

# The kernel has been idle for `ms` milliseconds on end. ipywidgets keeps one state update in flight a widget and
# holds the next until the kernel goes idle, while a button's click is sent at once: a click right after two
# changes to one slider can reach the kernel before the second change (CI saw latency 0 run as the old value).
KERNEL_SETTLED = """(ms) => {
  const idle = document.querySelector('.jp-Notebook-ExecutionIndicator')?.getAttribute('data-status') === 'idle';
  const now = performance.now();
  if (!idle) { window.mfIdleSince = null; return false; }
  window.mfIdleSince ??= now;
  return now - window.mfIdleSince >= ms;
}"""

# Run All is over when the kernel is idle and no code cell waits ("[*]") — after the first one has run.
RUN_FINISHED = """() => {
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
  const status = document.querySelector('.jp-Notebook-ExecutionIndicator')?.getAttribute('data-status');
  return prompts.length > 0 && /^\\[\\d+\\]:$/.test(prompts[0]) && !prompts.includes('[*]:') && status === 'idle';
}"""


@dataclass
class Report:
    """What one notebook showed: the problems found, what each panel did, and how long it took."""

    path: str
    problems: list[str] = field(default_factory=list)
    panels: list[str] = field(default_factory=list)
    seconds: float = 0.0
    steps: list[str] = field(default_factory=list)  # when each stage finished, in seconds from the start
    closed: bool = False  # the page holds no notebook any more: the next one may open in it
    in_open_page: bool = False  # opened in the JupyterLab the page already had, not loaded from its URL
    accessibility: list[str] | None = None  # axe's serious and critical findings; None: axe did not run
    axe_counts: dict[str, int] = field(default_factory=dict)  # "rule (impact)" -> elements, every impact


def notebook_facts(path: Path) -> dict[str, Any]:
    """What the page should show, read from the file: mermaid diagrams, panels, code cells."""
    cells = json.loads(path.read_text())["cells"]
    return {
        "mermaid": [
            i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and "```mermaid" in "".join(c["source"])
        ],
        "panels": sum(1 for c in cells if c["cell_type"] == "code" and "show.panel(" in "".join(c["source"])),
        "try_this": scenarios(path),
        "cells": len(cells),
    }


async def check_notebook(
    page: Any,
    base_url: str,
    token: str,
    root: Path,
    relative: str,
    interaction: Interaction | None,
    artifacts: Path,
    in_open_page: bool = False,
    words: Words = ENGLISH,
) -> Report:
    """Check one notebook in `page`: loaded from its URL, or (`in_open_page`) opened in the JupyterLab already there.

    `words` are the menus and the panels' words of the edition the notebook and its JupyterLab speak (editions.py).

    Opening it in the page is what a double-click in the file browser does (`docmanager:open`); it skips JupyterLab's
    own start, which is most of what loading the URL costs. Either way the notebook is closed and its kernel shut
    down at the end, so the page holds one notebook at a time.
    """
    report = Report(relative, in_open_page=in_open_page)
    started = time.monotonic()
    page_error = lambda error: report.problems.append(f"page error: {error}")  # noqa: E731
    page.on("pageerror", page_error)
    workspace = re.sub(r"\W", "-", relative)
    mark = lambda what: report.steps.append(f"{what} {time.monotonic() - started:.1f}")  # noqa: E731
    try:
        if in_open_page:
            await page.evaluate(OPEN, relative)
        else:
            await page.goto(f"{base_url}/lab/workspaces/{workspace}/tree/{relative}?token={token}")
        await page.locator(".jp-NotebookPanel-toolbar").get_by_text("Python 3 (ipykernel)").wait_for(timeout=60_000)
        # The kernel's name shows before the kernel answers; a Run All sent before then can be lost (seen once in
        # CI on lab 1: every prompt left at "[ ]", the kernel idle).
        await page.wait_for_function(KERNEL_IDLE, timeout=60_000, polling=250)
        mark("opened")
        await _menu(page, words.edit, words.clear_outputs)
        await _menu(page, words.run, words.run_all)
        await page.wait_for_function(RUN_FINISHED, timeout=RUN_SECONDS * 1000, polling=250)
        mark("ran")
        lab = relative.startswith("labs/")
        await _check_outputs(page, report, lab)
        facts = notebook_facts(root / relative)
        await _check_mermaid(page, report, facts["mermaid"])
        if not lab:
            await _check_nav_links(page, report, root, relative, facts["cells"])
        mark("checked")
        if AXE.is_file():  # without it the accessibility test says why (test_browser.py)
            await _check_axe(page, report)
            mark("axe")
        shots = artifacts / workspace
        await _check_panels(page, report, facts["panels"], interaction, shots, facts["try_this"], words)
        mark("panels")
    except Exception as exc:  # a timeout or a missing element is a finding, reported with the others
        report.problems.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
        with contextlib.suppress(Exception):  # a page that crashed takes no picture
            await page.screenshot(path=str(artifacts / f"{workspace}-failure.png"), full_page=True)
    finally:
        report.closed = await _shut_down(page, relative)
        page.remove_listener("pageerror", page_error)
        report.seconds = time.monotonic() - started
    return report


# The suite's JupyterLab exposes its application object (--LabApp.expose_app_in_browser, tests/browser/lab.py).
OPEN = """async (path) => {
  await window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Notebook'});
}"""
# File > Close and Shut Down, without the question about unsaved changes: the suite never saves a notebook. Then a
# moment for what the kernel's end sets off (widgets' comms closing) to report its errors to this notebook; the
# answer is whether any notebook is still in the page.
CLOSE = """async (path) => {
  for (const widget of [...(window.jupyterapp?.shell.widgets('main') ?? [])]) {
    if (widget.context?.path !== path) continue;
    widget.context.model.dirty = false;
    try { await widget.sessionContext?.shutdown(); } finally { widget.dispose(); }
  }
  await new Promise(resolve => setTimeout(resolve, 100));
  return document.querySelectorAll('.jp-NotebookPanel').length === 0;
}"""


async def _menu(page: Any, menu: str, item: str) -> None:
    await page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(menu)}$")).click()
    await page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


async def _check_outputs(page: Any, report: Report, lab: bool) -> None:
    text = await page.locator(".jp-Notebook").text_content()  # off-screen cells have no innerText
    if WIDGET_ERROR in text:
        report.problems.append(f"{WIDGET_ERROR!r} on the page")
    errors = await page.locator(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    ).all_text_contents()
    if lab:  # a lab stops at its first unfinished cell, by design: that must be the only error
        if len(errors) > 1 or (errors and "NotImplementedError" not in errors[0]):
            report.problems.append(f"the lab failed before its first exercise: {errors[0][:300]}")
    elif errors:
        report.problems.append(f"{len(errors)} error or stderr output(s); the first: {errors[0][:300]}")
    printed = ", ".join(f'.jp-OutputArea-output[data-mime-type="{kind}"]' for kind in PRINTED)
    texts = await page.locator(printed).all_text_contents()
    if any(TEXT_TABLE.search(text) for text in texts):  # a table printed as fixed-width text, not shown as HTML
        shown = next(text for text in texts if TEXT_TABLE.search(text))
        report.problems.append(f"a table printed as fixed-width text: {shown[:200]!r}")


PRINTED = ("text/plain", "application/vnd.jupyter.stdout")  # outputs JupyterLab shows as text
# The rule under a fixed-width text table's header ("-----  ---"), the way show.Table's text form draws it.
TEXT_TABLE = re.compile(r"^-{2,}(  -+)+$", re.MULTILINE)

# The panel output's HTML tables, and the data cells whose text runs over more than one line (a header may).
TABLES = """output => {
  const tables = [...output.querySelectorAll('table')];
  const wrapped = [];
  for (const cell of output.querySelectorAll('td')) {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const tops = new Set([...range.getClientRects()].map(rect => Math.round(rect.top)));
    if (tops.size > 1) wrapped.push(cell.textContent.trim().slice(0, 60));
  }
  return {tables: tables.length, wrapped};
}"""


async def _check_nav_links(page: Any, report: Report, root: Path, relative: str, cells: int) -> None:
    """The last cell's previous/next links, as JupyterLab renders them, point at notebooks that are there."""
    source = json.loads((root / relative).read_text())["cells"][-1]["source"]
    wanted = re.findall(r"\]\(([^)]+\.ipynb)\)", "".join(source))
    cell = page.locator(".jp-Notebook .jp-Cell").nth(cells - 1)  # in any edition's words ("Next:", "Siguiente:")
    await cell.scroll_into_view_if_needed()
    hrefs = await cell.locator("a").evaluate_all("anchors => anchors.map(a => a.href)")
    if len(hrefs) != len(wanted):
        report.problems.append(f"the last cell shows {len(hrefs)} link(s), the notebook has {len(wanted)}: {wanted}")
    for href in hrefs:  # JupyterLab resolves a link to a file as /files/<path>; a click opens it in a tab
        path = re.search(r"/files/([^?#]+)", href)
        if not path or not (root / path.group(1)).is_file():
            report.problems.append(f"a previous/next link leads nowhere: {href}")
    report.steps.append(f"links {len(hrefs)}")


async def _check_mermaid(page: Any, report: Report, indices: list[int]) -> None:
    for index in indices:
        cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
        await cell.scroll_into_view_if_needed()
        try:
            await cell.locator('.jp-RenderedMermaid img[src^="data:image/svg"]').first.wait_for(timeout=30_000)
        except Exception:
            report.problems.append(
                f"the mermaid diagram of cell {index} did not render: {(await cell.inner_text())[:200]}"
            )
            continue
        if await cell.locator(".jp-RenderedMermaid.jp-mod-warning").count():
            report.problems.append(
                f"the mermaid diagram of cell {index} has an error: {(await cell.inner_text())[:300]}"
            )
        # JupyterLab's renderer makes the diagram's accTitle its alt ("Image" without one) and its accDescr a
        # caption only a screen reader reads.
        alt = await cell.locator(".jp-RenderedMermaid img").first.get_attribute("alt")
        if alt in (None, "", "Image") or not await cell.locator(".jp-RenderedMermaid figcaption").count():
            report.problems.append(
                f"the mermaid diagram of cell {index} has no text alternative (alt {alt!r}): give it accTitle and"
                " accDescr"
            )


# What axe judges: what the notebook itself puts on the page, its cells' outputs (panels included) and its rendered
# markdown; not JupyterLab's editors, toolbars and side panels around them (JupyterLab's to fix, and many).
AXE_SCOPE = ".jp-Notebook .jp-OutputArea-output, .jp-Notebook .jp-MarkdownOutput"
AXE_IMPACTS = ("serious", "critical")  # a finding of these fails the notebook; the others are only counted
# axe skips its page-level rules (a title, a lang, a main landmark, a skip link) by itself for a part of a page.
# `region` is off too: it wants every piece of content inside a landmark, and where the notebook sits among the
# page's landmarks is JupyterLab's layout, not the notebook's (it would flag every output; moderate anyway).
AXE_OFF = ("region",)
AXE_RUN = """async ([scope, off]) => {
  const include = [...document.querySelectorAll(scope)];
  if (!include.length) return [];
  const rules = Object.fromEntries(off.map(id => [id, {enabled: false}]));
  const found = await axe.run({include}, {resultTypes: ['violations'], rules});
  return found.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html})),
  }));
}"""


async def _check_axe(page: Any, report: Report) -> None:
    """axe-core over the notebook's outputs and rendered markdown, in one run: serious and critical findings."""
    if not await page.evaluate("typeof window.axe === 'object'"):
        await page.add_script_tag(path=str(AXE))  # once a page: the next notebook opened in it reuses it
    report.accessibility = []
    for violation in await page.evaluate(AXE_RUN, [AXE_SCOPE, list(AXE_OFF)]):
        rule, nodes = f"{violation['id']} ({violation['impact']})", violation["nodes"]
        report.axe_counts[rule] = len(nodes)
        if violation["impact"] in AXE_IMPACTS:
            shown = "; ".join(f"{n['target'][-80:]} {_snippet(n['html'])}" for n in nodes[:3])
            report.accessibility.append(f"{rule}, {len(nodes)} element(s), {violation['help']}: {shown}")


def _snippet(html: str) -> str:
    return repr(html if len(html) <= 120 else html[:117] + "...")


async def _check_panels(
    page: Any,
    report: Report,
    expected: int,
    interaction: Interaction | None,
    shots: Path,
    tries: list[Scenario],
    words: Words,
) -> None:
    panels = page.locator(".mf-panel")
    found = await panels.count()
    if found != expected:
        report.problems.append(f"{expected} panel(s) in the notebook, {found} drawn as widgets")
        return
    for number in range(found):
        panel = panels.nth(number)
        problems = len(report.problems)
        await panel.scroll_into_view_if_needed()
        button = panel.locator(".widget-button").first
        name = (await button.inner_text()).strip()
        if number == 0:  # one panel a notebook is used from the keyboard alone, its first press
            before = await _press_by_keyboard(panel, report, name, words)
        else:
            before = await _press(panel, name, words)
        if interaction is None:  # a notebook without an entry: the panel must answer with something
            ok = before.strip() and "⚠" not in before and "Traceback" not in before
            report.panels.append(f"panel {number + 1}: pressed {name!r}, it answered")
            if not ok:
                report.problems.append(f"panel {number + 1} answered {before[:300]!r}")
        else:
            await _check_interaction(panel, report, interaction, before, words)
        await _check_tables(panel, report, number, shots)
        if len(report.problems) > problems:  # a picture of what went wrong (a picture of every panel cost CI time)
            await panel.screenshot(path=str(shots) + f"-panel-{number + 1}.png")
        if number == 0 and tries:  # the "try this" speaks of the notebook's first panel (each has one)
            await _check_try_this(page, panel, report, tries, name, words)
        if number == 0:  # last: whatever the arrows leave the slider at, nothing runs after it
            await _check_arrows(panel, report)
            await _check_typed_then_tab(panel, report)


async def _check_tables(panel: Any, report: Report, number: int, shots: Path) -> None:
    """A panel's tables are HTML tables (not fixed-width text) and none of their rows wraps; a picture of the first."""
    output = panel.locator(".mf-panel-output")
    found = await output.evaluate(TABLES)
    if TEXT_TABLE.search(await output.inner_text()) and not found["tables"]:
        report.problems.append(f"panel {number + 1} printed its table as fixed-width text, not as an HTML table")
    if found["wrapped"]:
        report.problems.append(f"panel {number + 1}: a table row wraps, at the cell(s) {found['wrapped'][:3]}")
    if found["tables"]:  # what a learner sees at the browser's width (tests/browser/artifacts/, not committed)
        await output.locator("table").first.screenshot(path=str(shots) + f"-panel-{number + 1}-table.png")


async def _check_interaction(panel: Any, report: Report, interaction: Interaction, before: str, words: Words) -> None:
    change = interaction.change
    seen_before = _read(before, interaction.column)
    await _set(panel, change)
    await _settle(panel.page)
    after = await _press(panel, interaction.button, words)
    seen_after = _read(after, interaction.column)
    what = interaction.column or "text"
    report.panels.append(
        f"{change.kind} {change.label!r} -> {change.value!r}: {what} {seen_before!r} -> {seen_after!r}"
    )
    if seen_before != interaction.before or seen_after != interaction.after:
        report.problems.append(
            f"the panel showed {what} {seen_before!r} then {seen_after!r} after {change.label!r} = {change.value!r};"
            f" the package gives {interaction.before!r} then {interaction.after!r}"
        )
    if interaction.figure and not await panel.locator(".mf-panel-output img").count():
        report.problems.append("the panel drew no figure, unlike the notebook's static default")
    if "{" in after and "}" in after and re.search(r"\{'\w+': ", after):
        report.problems.append(f"the panel printed a bare dict: {after[:200]!r}")


# A control by the label the learner reads: its kind, its slider's track in pixels, the value it shows.
CONTROL = """(panel, label) => {
  const labels = [...panel.querySelectorAll('.widget-label, .widget-label-basic')];
  const box = labels.find(l => l.textContent.trim() === label)?.closest('.widget-inline-hbox');
  if (!box) return null;
  const kind = ['slider', 'text', 'dropdown', 'checkbox'].find(k => box.classList.contains('widget-' + k));
  const shown = {slider: () => box.querySelector('.widget-readout').textContent.trim(),
                 text: () => box.querySelector('input').value,
                 dropdown: () => box.querySelector('select').value,  // the option's label (its text has nbsp)
                 checkbox: () => box.querySelector('input[type=checkbox]').checked}[kind];
  return {kind: kind ?? box.className, shown: shown ? shown() : null,
          track: box.querySelector('.slider-container')?.getBoundingClientRect().width ?? null};
}"""


async def _check_try_this(
    page: Any, panel: Any, report: Report, tries: list[Scenario], button: str, words: Words
) -> None:
    """Set every value the notebook's "try this" asks (tests/notebooks/try_this.py); a value to be refused must be
    refused.

    Nothing runs while values are set, except for a refusal: then the button is pressed and the answer must be the
    package's rule naming the control. Before each refusal the controls go back to what they showed at the start.
    """
    if "<!--" in " ".join(await page.locator(".jp-MarkdownOutput").all_text_contents()):
        report.problems.append("a <!-- try: --> comment is shown on the page as text")
    began = time.monotonic()
    start: dict[str, tuple[str, object]] = {}  # label -> (kind, value shown before this pass)
    changed: set[str] = set()
    count = refused = 0
    for scenario in tries:
        if any(ask.refused for ask in scenario.asks):
            for label in sorted(changed):
                kind, value = start[label]
                await _set(panel, Change(kind, label, value))
            changed.clear()
        try:
            for ask in scenario.asks:
                control = await panel.evaluate(CONTROL, ask.label)
                if control is None or control["kind"] not in ("slider", "text", "dropdown", "checkbox"):
                    raise AssertionError(f"no control {ask.label!r} the suite can use: {control}")
                if control["track"] is not None and control["track"] < TRACK_PIXELS:
                    report.problems.append(
                        f"the slider {ask.label!r} has {control['track']:.0f} px of track; the fast test assumes"
                        f" {TRACK_PIXELS} (tests/notebooks/try_this.py)"
                    )
                start.setdefault(ask.label, (control["kind"], _parsed(control["kind"], control["shown"])))
                await _set(panel, Change(control["kind"], ask.label, ask.value))
                shown = (await panel.evaluate(CONTROL, ask.label))["shown"]
                if _parsed(control["kind"], shown) != ask.value:
                    raise AssertionError(f"{ask.label!r} shows {shown!r} after setting {ask.value!r}")
                changed.add(ask.label)
                count += 1
            for ask in (ask for ask in scenario.asks if ask.refused):
                await _settle(page)
                answer = await _press(panel, button, words)
                if "⚠" not in answer or f"“{ask.label}”" not in answer:
                    raise AssertionError(f"{ask.label!r} = {ask.value!r} was not refused by its rule: {answer[:200]!r}")
                refused += 1
        except AssertionError as exc:
            report.problems.append(f"try this {scenario.item[:50]!r}: {exc}")
    report.panels.append(
        f"try this: {count} value(s) set, {refused} refused with the rule ({time.monotonic() - began:.1f} s)"
    )


def _parsed(kind: str, shown: object) -> object:
    """A control's shown value as the try-this comments write it: a number, an option, true or false."""
    if kind in ("slider", "text"):
        number = float(str(shown).replace(",", ""))
        return int(number) if number.is_integer() else number
    return shown


# Counts the runs that ended: the panel's button carries RUNNING ("mf-running") while its experiment runs. The class
# a record changed to is the next record's old value, or for the last one the button's class now.
COUNT_RUNS = """button => {
  if (button.mfObserver) return;
  button.dataset.mfRuns = '0';
  const running = classes => (classes ?? '').split(/\\s+/).includes('mf-running');
  button.mfObserver = new MutationObserver(changes => {
    changes.forEach((change, i) => {
      const now = i + 1 < changes.length ? changes[i + 1].oldValue : button.className;
      if (running(change.oldValue) && !running(now)) button.dataset.mfRuns = String(+button.dataset.mfRuns + 1);
    });
  });
  button.mfObserver.observe(button, {attributes: true, attributeFilter: ['class'], attributeOldValue: true});
}"""


async def _settle(page: Any) -> None:
    """Wait until the kernel has been idle 300 ms: every value set in the panel has reached it.

    ipywidgets holds a widget's next state update until the kernel has answered the one before, but sends a
    button's click at once; pressing straight after setting a control can run the experiment with the old value.
    """
    await page.evaluate("window.mfIdleSince = null")
    await page.wait_for_function(KERNEL_SETTLED, arg=300, polling=50, timeout=PANEL_SECONDS * 1000)


async def _press(panel: Any, name: str, words: Words) -> str:
    """Press the panel's button, wait until the experiment has run (the button came back), return the output's text."""
    button = panel.locator(".widget-button", has_text=name)
    runs = await _runs(button)
    await button.click()
    return await _ran(panel, button, runs, words)


async def _runs(button: Any) -> int:
    """How many runs of this button have ended so far (COUNT_RUNS watches it from the first call)."""
    await button.evaluate(COUNT_RUNS)
    return int(await button.get_attribute("data-mf-runs"))


async def _ran(panel: Any, button: Any, runs: int, words: Words) -> str:
    """Wait for the end of run number `runs + 1`, then return the output's text."""
    await button.and_(panel.page.locator(f'[data-mf-runs="{runs + 1}"]')).wait_for(timeout=PANEL_SECONDS * 1000)
    output = panel.locator(".mf-panel-output")
    # the result follows the button within moments; "Running…" must be gone
    done = lambda text: text.strip() and words.running not in text  # noqa: E731
    return await _awaited(panel.page, output.inner_text, done, 50, 100)


async def _awaited(page: Any, read: Any, done: Any, tries: int = 40, every_ms: int = 50) -> Any:
    """`await read()` again every `every_ms` until `done` says yes of its value, at most `tries` times: the last
    value read (the page follows a key or a click within moments, not at once)."""
    for _ in range(tries):
        value = await read()
        if done(value):
            break
        await page.wait_for_timeout(every_ms)
    return value


# A panel's controls, the way Tab reaches them: focus the first control's first focusable element (a slider's
# handle) as tabbing into the panel would; count the controls and the sliders (a slider takes two Tabs: its handle,
# then the readout a value can be typed in).
FOCUS_FIRST = """panel => {
  const controls = [...panel.children].filter(child => !child.matches(
    '.mf-panel-gone, .mf-panel-status, .mf-panel-output') && !child.querySelector('.widget-button'));
  const focusable = 'input, select, textarea, button, [contenteditable="true"], [tabindex]:not([tabindex="-1"])';
  controls[0]?.querySelector(focusable)?.focus();
  return {controls: controls.length, sliders: panel.querySelectorAll('.widget-slider').length,
          focused: document.activeElement.className || document.activeElement.tagName};
}"""
# What has the keyboard's focus, as a report names it.
FOCUSED = """() => {
  const element = document.activeElement;
  if (!element || element === document.body) return 'the page itself (body)';
  const text = (element.getAttribute('aria-label') || element.textContent || '').trim().slice(0, 30);
  return `${element.tagName.toLowerCase()}.${[...element.classList].slice(0, 3).join('.')} ${JSON.stringify(text)}`;
}"""
IS_FOCUSED = "element => document.activeElement === element"


async def _press_by_keyboard(panel: Any, report: Report, name: str, words: Words) -> str:
    """Use the panel from the keyboard alone: Tab from its first control to its button, Enter, and then the button
    must still have the focus and the panel's live region say how the run ended ("Done: …", or "⚠ …" when the
    values are refused). Falls back to a click when Tab cannot reach the button, so the other checks still run."""
    page = panel.page
    began = time.monotonic()
    button = panel.locator(".widget-button", has_text=name)
    runs = await _runs(button)
    found = await panel.evaluate(FOCUS_FIRST)
    most = found["controls"] + found["sliders"] + 3
    visited = []
    for _ in range(most):
        await page.keyboard.press("Tab")
        visited.append(await page.evaluate(FOCUSED))
        if await button.evaluate(IS_FOCUSED):
            break
    else:
        report.problems.append(
            f"keyboard: {most} Tabs from the panel's first control ({found['focused']}) did not reach its button"
            f" {name!r}; the focus went {' -> '.join(visited)}"
        )
        return await _press(panel, name, words)
    tabbed = time.monotonic() - began
    await page.keyboard.press("Enter")
    text = await _ran(panel, button, runs, words)
    if not await button.evaluate(IS_FOCUSED):
        focused = await page.evaluate(FOCUSED)
        report.problems.append(f"keyboard: after the run the focus is on {focused}, not on the button {name!r}")
    status = panel.locator(".mf-panel-status [role=status][aria-live]")
    said = (await status.inner_text()).strip() if await status.count() == 1 else None
    if said is None:
        report.problems.append("keyboard: the panel has no status line marked as a live region (role=status)")
    elif not said.startswith((words.done, "⚠")):
        report.problems.append(f"keyboard: after the run the panel's live region says {said[:120]!r}")
    report.panels.append(
        f"keyboard: {len(visited)} Tab(s) to {name!r} ({tabbed:.1f} s), Enter; announced {str(said)[:80]!r}"
    )
    return text


async def _check_arrows(panel: Any, report: Report) -> None:
    """ArrowRight then ArrowLeft (the other way round at the top) on the first linear slider's handle: the readout
    moves one step and back, and the handle's spoken value (aria-valuetext) follows it. A log slider's arrows are
    `_check_typed_then_tab`'s."""
    slider = panel.locator(f".widget-slider:not(.{LOG})").first  # show.log_slider marks its sliders
    if not await slider.count():
        return
    began = time.monotonic()
    handle, readout = slider.locator(".noUi-handle"), slider.locator(".widget-readout")
    await handle.focus()
    shown = await _text(readout)
    value, top = [float(await handle.get_attribute(name)) for name in ("aria-valuenow", "aria-valuemax")]
    keys = ("ArrowLeft", "ArrowRight") if value >= top else ("ArrowRight", "ArrowLeft")
    steps: list[str] = []
    for key in keys:
        await handle.press(key)
        before = steps[-1] if steps else shown
        steps.append(await _awaited(panel.page, lambda: _text(readout), lambda step, before=before: step != before, 20))
    # the panel's script (show.panels.ACCESSIBLE) follows the readout on the next frame
    spoken = await _awaited(
        panel.page, lambda: handle.get_attribute("aria-valuetext"), lambda said: said == steps[-1], 20
    )
    report.panels.append(
        f"{' then '.join(keys)}: {shown} -> {' -> '.join(steps)}, spoken {spoken!r} ({time.monotonic() - began:.1f} s)"
    )
    if steps[0] == shown or steps[1] != shown:
        report.problems.append(f"keyboard: {' then '.join(keys)} moved the slider's readout {shown} -> {steps}")
    if spoken != steps[1]:
        report.problems.append(f"keyboard: the slider's handle says {spoken!r}, its readout {steps[1]!r}")


async def _check_typed_then_tab(panel: Any, report: Report) -> None:
    """A value typed beside the first slider counts once Tab leaves it (not only on Enter); on a log slider, an
    arrow moves the readout (its own step, a 100,000th of the span, would not show)."""
    slider = panel.locator(".widget-slider").first
    if not await slider.count():
        return
    handle, readout = slider.locator(".noUi-handle"), slider.locator(".widget-readout")
    log = LOG in (await slider.get_attribute("class") or "")
    low, high = [float(await handle.get_attribute(name)) for name in ("aria-valuemin", "aria-valuemax")]
    held = await _text(readout)
    typed = f"{10**low:g}" if log else f"{low:g}"
    if float(held.replace(",", "")) == float(typed):
        typed = f"{10**high:g}" if log else f"{high:g}"
    await readout.focus()
    await readout.press("Control+a")
    await readout.type(typed)
    await readout.press("Tab")
    wanted = math.log10(float(typed)) if log else float(typed)
    holds = lambda now: math.isclose(now, wanted, rel_tol=1e-6, abs_tol=1e-6)  # noqa: E731

    async def held_now() -> float:
        return float(await handle.get_attribute("aria-valuenow"))

    now = await _awaited(panel.page, held_now, holds)
    report.panels.append(f"typed {typed} then Tab: the slider holds {now:g}")
    if not holds(now):
        report.problems.append(f"keyboard: {typed} typed beside the slider then Tab, the slider still holds {now:g}")
    if log:
        shown = await _text(readout)
        await handle.focus()
        await handle.press("ArrowLeft" if float(typed) >= 10**high else "ArrowRight")
        moved = await _awaited(panel.page, lambda: _text(readout), lambda text: text != shown)
        if moved == shown:
            report.problems.append(f"keyboard: an arrow on the log slider left its readout at {shown}")


async def _text(locator: Any) -> str:
    return (await locator.inner_text()).strip()


async def _set(panel: Any, change: Change) -> None:
    """Move a slider (through its editable readout), type in a box, pick from a dropdown (the option as it shows it,
    as a try comment writes it) or tick a checkbox."""
    if change.kind == "checkbox":
        box = panel.get_by_role("checkbox", name=change.label, exact=True)
        await box.set_checked(bool(change.value))
    elif change.kind == "dropdown":
        await _select(panel, change.label, str(change.value))
    elif change.kind == "text":
        field_ = panel.get_by_label(change.label, exact=True)
        await field_.fill(str(change.value))
        await field_.press("Enter")
    elif change.kind == "slider":
        control = panel.locator(
            ".widget-slider",
            has=panel.page.locator(".widget-label", has_text=re.compile(f"^{re.escape(change.label)}$")),
        )
        readout = control.locator(".widget-readout")
        await readout.click()
        await readout.press("Control+a")
        await readout.type(str(change.value))
        await readout.press("Enter")
        shown = (await readout.inner_text()).strip()
        if float(shown) != float(change.value):
            raise AssertionError(f"the slider {change.label!r} shows {shown} after typing {change.value}")
    else:
        raise ValueError(f"unknown control kind {change.kind!r}")


async def _select(panel: Any, label: str, shown: str) -> None:
    """Pick the option that shows `shown` in the dropdown `label` (ipywidgets makes an option's value its label; its
    text has no-break spaces)."""
    select = panel.get_by_label(label, exact=True)
    options = await select.evaluate("select => [...select.options].map(option => option.value)")
    if shown not in options:
        raise AssertionError(f"the dropdown {label!r} has no option {shown!r}; it shows {options}")
    await select.select_option(shown)


def _read(text: str, column: str | None) -> str:
    """The value of `column` in the first row of the table in `text`; or `text` itself when no column is asked.

    An HTML table's text has a line a row and a tab between cells; a text table, a rule of dashes under its header.
    """
    if column is None:
        return text.strip().splitlines()[0].strip()
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        cells = [cell.strip() for cell in line.split("\t")]
        if "\t" in line and column in cells:
            row = [cell.strip() for cell in lines[i + 1].split("\t")]
            return row[cells.index(column)] if len(row) == len(cells) else f"(row {lines[i + 1]!r} under {line!r})"
    for i, line in enumerate(lines[:-2]):
        rule = lines[i + 1]
        if re.fullmatch(r"[- ]+", rule or "x") and re.search(rf"(^|  ){re.escape(column)}(  |$)", line):
            spans = [m.span() for m in re.finditer(r"-+", rule)]
            start, end = next((s, e) for s, e in spans if line[s:].startswith(column))
            return lines[i + 2][start:end].strip()
    return f"(no column {column!r} in {text[:120]!r})"


async def _shut_down(page: Any, relative: str) -> bool:
    """Close this notebook and stop its kernel (as File > Close and Shut Down would) so kernels do not pile up.

    True if the page holds no notebook afterwards. The server's session goes too, whatever the page could still do.
    """
    closed = False
    with contextlib.suppress(Exception):  # the page may be gone already; the server stops every kernel at the end
        closed = await page.evaluate(CLOSE, relative) is True
    with contextlib.suppress(Exception):
        await page.evaluate(
            """async (path) => {
              const base = location.pathname.split('/lab')[0];
              const xsrf = decodeURIComponent(document.cookie.match(/_xsrf=([^;]+)/)?.[1] ?? '');
              const sessions = await (await fetch(base + '/api/sessions')).json();
              for (const s of sessions.filter(s => s.path === path)) {
                await fetch(base + '/api/sessions/' + s.id, {method: 'DELETE', headers: {'X-XSRFToken': xsrf}});
              }
            }""",
            relative,
        )
    return closed
