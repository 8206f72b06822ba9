"""Panels: a notebook's controls, a button and the result, usable from the keyboard and with a screen reader."""

from __future__ import annotations

import html
import json
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from mercadofresco.i18n import N_, _
from mercadofresco.lessons.show.controls import WIDE, describe, value_of
from mercadofresco.lessons.show.pictures import Picture
from mercadofresco.lessons.show.tables import Table, recorded

RUNNING = "mf-running"  # the button's class while its experiment runs
SAID_CHARACTERS = 200  # a status announcement says a picture's first sentences, about this long
QUEUED_SECONDS = 0.25  # a press that arrives this soon after a run ends was made during it
GONE = N_("⚠ The kernel that drew this panel is gone: run the notebook's cells again (Run → Run All Cells) to use it.")
# JupyterLab marks every view of a widget whose kernel has restarted or died `jupyter-widgets-disconnected`, and
# keeps drawing it: without this the panel looks alive and its button does nothing. The rules travel in the
# panel's own HTML widget (which ipywidgets does not sanitise), so they need no extension. The focus ring takes
# the theme's brand colour, 3 px wide: JupyterLab's own ring on a widget is about 2:1 against the page (WCAG
# asks 3:1).
PANEL_STYLE = (
    "<style>"
    ".mf-panel > .mf-panel-gone {display: none}"
    ".mf-panel {padding-top: 4px}"  # the first control's focus ring is not cut at the top
    ".mf-panel.jupyter-widgets-disconnected > .mf-panel-gone"
    " {display: block; font-weight: bold; color: var(--jp-error-color1, #b00020)}"
    ".mf-panel.jupyter-widgets-disconnected > :not(.mf-panel-gone):not(.mf-panel-output)"
    " {opacity: 0.4; pointer-events: none}"
    ".mf-panel :focus-visible {outline: 3px solid var(--jp-brand-color0, #0d47a1) !important; outline-offset: 2px}"
    # ipywidgets' own `outline: none !important` on text boxes is more specific than the rule above
    ".mf-panel.mf-panel .jupyter-widgets input:focus-visible, .mf-panel.mf-panel .jupyter-widgets select:focus-visible"
    " {outline: 3px solid var(--jp-brand-color0, #0d47a1) !important; outline-offset: 1px}"
    "</style>"
)
# ipywidgets 8 names a text box, a dropdown and a checkbox by their label, but not a slider's handle nor its
# editable readout, gives a log slider's handle the exponent as its value, and puts a control's tooltip on its
# label only (a title there describes nothing). This script, shown once with each panel (JupyterLab runs it for
# outputs the learner's own kernel made), names the handle and the readout by the slider's label, gives every
# control's focusable parts its tooltip (unit and range) as their description and the handle the readout's value
# as its spoken value, and makes the panel's status line a live region, so a screen reader announces "Done: ..."
# after each run. It watches the page, so a panel drawn again (Run All) gets the same.
ACCESSIBLE = """
(() => {
  if (window.mfPanelsAccessible) return;
  const GONE = __GONE__;
  window.mfPanelsAccessible = true;
  const set = (element, name, value) => {
    if (value && element.getAttribute(name) !== value) element.setAttribute(name, value);
  };
  const fix = () => {
    for (const panel of document.querySelectorAll('.mf-panel')) {
      for (const box of panel.querySelectorAll(':scope > .widget-inline-hbox')) {
        const label = box.querySelector(':scope > .widget-label');
        const name = label?.textContent.replace(/\\u200b/g, '').trim() || '';
        const help = label?.getAttribute('title') || '';
        const handle = box.querySelector('.noUi-handle'), readout = box.querySelector('.widget-readout');
        if (handle && name) {
          set(handle, 'aria-label', name);
          // the value the slider holds, not one being typed (it counts once the focus leaves the readout)
          if (readout && document.activeElement !== readout) set(handle, 'aria-valuetext', readout.textContent.trim());
        }
        if (readout && name) {
          set(readout, 'role', 'textbox');
          set(readout, 'aria-label', name + ', typed');
        }
        for (const part of box.querySelectorAll('input, select, textarea, .noUi-handle, .widget-readout')) {
          if (help !== 'null') set(part, 'aria-description', help);
        }
      }
      const status = panel.querySelector('.mf-panel-status .widget-html-content');
      if (status) {
        set(status, 'role', 'status');
        set(status, 'aria-live', 'polite');
      }
      if (panel.classList.contains('jupyter-widgets-disconnected')) {  // its kernel is gone: say so, once
        if (status && status.textContent !== GONE) status.textContent = GONE;
        for (const part of panel.querySelectorAll('input, select, button, .noUi-handle, .widget-readout')) {
          set(part, 'aria-disabled', 'true');
        }
      }
    }
  };
  // ipywidgets takes a value typed beside a slider on Enter, and on a blur its listener never hears (it listens
  // on the slider's box, and a blur does not bubble): the focus leaving the readout (Tab) commits it too, with a
  // blur that bubbles to that listener, so what the learner sees is what runs.
  const commit = readout => readout.dispatchEvent(new FocusEvent('blur', {bubbles: true}));
  document.addEventListener('focusout', event => {
    if (event.target.matches?.('.mf-panel .widget-readout')) commit(event.target);
  }, true);
  // Keys a control or a table uses itself, which JupyterLab's command mode would take (it moves to another cell):
  // a closed dropdown's arrows, a table region's scrolling keys. A log slider's arrows move it 1 % of its span
  // (10 % with Page Up/Down), through its readout: its own step is a 100,000th, too small to see.
  const scrolling = ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown'];
  const steps = {ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1, PageUp: 10, PageDown: -10};
  window.addEventListener('keydown', event => {
    const target = event.target;
    if (!scrolling.includes(event.key) || !target?.closest) return;
    const box = target.closest('.mf-panel .mf-log');
    if (box && target.matches('.noUi-handle') && event.key in steps) {
      const low = +target.getAttribute('aria-valuemin'), high = +target.getAttribute('aria-valuemax');
      const now = +target.getAttribute('aria-valuenow');
      const exponent = Math.min(high, Math.max(low, now + steps[event.key] * (high - low) / 100));
      const value = 10 ** exponent;
      const readout = box.querySelector('.widget-readout');
      const whole = box.classList.contains('mf-integer'), held = parseFloat(readout.textContent.replace(/,/g, ''));
      let next = whole ? Math.round(value) : +value.toPrecision(4);
      if (whole && next === held) next = held + Math.sign(steps[event.key]);  // 1 % of 1 to 500 is 1.06: one more
      readout.textContent = String(Math.min(10 ** high, Math.max(10 ** low, next)));
      commit(readout);
      event.preventDefault();
      event.stopPropagation();
    } else if (target.matches('.mf-table, .mf-panel select')) {
      event.stopPropagation();
    }
  }, true);
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; fix(); });
  }).observe(document.body, {
    childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ['class'],
  });
  fix();
})();
"""


def summary(result: Any, tables: Sequence[Table] = ()) -> str:
    """What the status line says after "Done: ": the tables the run showed (`tables`, each by `Table.said`) and
    the result (a picture's text alternative, a table's, a text), or that the result is below."""
    said = [table.said() for table in tables[:2]]
    if isinstance(result, Table):
        said.append(result.said())
    elif isinstance(result, Picture):  # its first sentences: the whole text is the picture's, for a reader who asks
        said.append(_first_sentences(result.alt))
    elif isinstance(result, str):
        said.append(result)
    return "; ".join(said) if said else _("the result is below.")


def _first_sentences(text: str, enough: int = SAID_CHARACTERS) -> str:
    """The sentences of `text` up to about `enough` characters (at least the first), for an announcement."""
    sentences = re.split(r"(?<=\.) (?=[A-Z0-9])", text)
    kept = sentences[:1]
    for sentence in sentences[1:]:
        if len(" ".join([*kept, sentence])) > enough:
            break
        kept.append(sentence)
    return " ".join(kept)


RUN_EXPERIMENT = N_("Run experiment")  # the button's label, unless a notebook names it (`button="Classify"`)


def panel(run: Callable[..., Any], controls: dict[str, Any], button: str = RUN_EXPERIMENT) -> Any:
    """Controls, a button, a status line and an output area that shows what `run(**values)` prints and returns.

    `controls` maps each argument of `run` to its widget; the widget's description is the label the learner
    reads (and a screen reader says), so a control without one is refused (ValueError). A number's tooltip says
    its unit and range (`describe`), which a screen reader says after its name. The output stays empty until the
    button is pressed; then it shows the result for the chosen values (draw it the way the notebook drew its
    default result above), and the status line, a live region, says "Done: " and what the run showed (`summary`).
    A ValueError (a value out of range, a combination that makes no sense) is shown, and announced, as a message
    naming the control, not as a traceback. The button keeps the keyboard's focus through a run; a press made
    while one runs is dropped. After a kernel restart the panel says that its kernel is gone (GONE) and greys its
    controls.
    """
    import ipywidgets as widgets  # imported here so the package works without a notebook
    from IPython.display import display

    class Panel(widgets.VBox):
        def __repr__(self) -> str:  # what a saved notebook shows before a kernel brings the widgets back
            return _("Interactive panel: run the notebook's cells in JupyterLab to use it.")

    output = widgets.Output()
    output.add_class("mf-panel-output")
    button = _(button)  # the package's own label in the edition (a notebook's own is translated in it)
    run_button = widgets.Button(description=button, button_style="primary")
    said = _("Set the controls and press <b>{button}</b>: the result appears below.")
    hint = widgets.HTML(f"<i>{said.format(button=button)}</i>")
    status = widgets.HTML("")
    status.add_class("mf-panel-status")
    gone = widgets.HTML(PANEL_STYLE + _(GONE))
    gone.add_class("mf-panel-gone")
    for name, control in controls.items():
        if not (getattr(control, "description", "") or "").strip():
            raise ValueError(f"the control for {name!r} has no description: it is the label a learner reads")
        control.style.description_width = "initial"  # long labels stay readable
        kind = type(control).__name__
        if "Slider" in kind or kind == "Checkbox":
            control.layout.width = WIDE
        if not control.tooltip and (hasattr(control, "min") or kind in ("IntText", "FloatText")):
            control.tooltip = describe(control) or None  # a number's unit and range: on hover, and said after its name
    ended = [-math.inf]  # when the last run ended, on the kernel's monotonic clock

    def on_click(_button: Any) -> None:
        # The kernel handles one message at a time: presses made during a run arrive the moment it ends. They are
        # dropped (a person who saw the result presses later than QUEUED_SECONDS); the button stays enabled so
        # that it keeps the keyboard's focus (a disabled button drops it to the page).
        if time.monotonic() - ended[0] < QUEUED_SECONDS:
            return
        run_button.add_class(RUNNING)
        status.value = _("Running…")
        said = _("⚠ The experiment failed: the error is below.")
        with output:
            output.clear_output()
            print(_("Running…"), flush=True)
            output.clear_output(wait=True)  # "Running…" stays until the result replaces it
            try:
                with recorded() as tables:
                    result = run(**{name: value_of(control) for name, control in controls.items()})
                if result is not None:
                    display(result)
                said = _("Done: {summary}").format(summary=summary(result, tables))
            except ValueError as exc:
                said = f"⚠ {refusal(str(exc), controls)}"
                print(said)
            finally:
                sys.stdout.flush()  # the printed tables reach the page before the status says "done"
                status.value = html.escape(said)
                run_button.remove_class(RUNNING)
                ended[0] = time.monotonic()

    run_button.on_click(on_click)
    box = Panel([gone, *controls.values(), widgets.HBox([run_button, hint]), status, output])
    box.add_class("mf-panel")
    box.button, box.output, box.gone, box.status = run_button, output, gone, status  # for tests and readers
    # JupyterLab runs the script for an output the learner's kernel made; a saved notebook opened untrusted shows
    # the text form instead, empty here (a Javascript object's would read "<IPython.core.display.Javascript object>").
    script = ACCESSIBLE.replace("__GONE__", json.dumps(_(GONE)))
    display({"application/javascript": script, "text/plain": ""}, raw=True)
    return box


def refusal(message: str, controls: dict[str, Any]) -> str:
    """`message` with each argument name replaced by the label of the control that sets it."""
    for name, control in controls.items():
        label = getattr(control, "description", "") or name
        message = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", f"“{label}”", message)
    return message
