"""The Spanish edition in the browser suite (issue 51): its JupyterLab in Spanish, and its panels' interactions.

The Spanish notebooks and labs themselves run in test_browser.py, with the English ones (the same two workers over
both editions' JupyterLabs); lab 1's save-then-check loop in test_learner_loop.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser.editions import EDITIONS, MENU, jupyterlab_catalog
from tests.browser.lab import ROOT, make_start_arguments
from tests.browser.panels import LESSON_PANELS

SPANISH = EDITIONS["es"]


def main_menus() -> list[str]:
    """The labels of JupyterLab's own menu bar, in English, in their order: its main menu's settings schema."""
    from jupyterlab.commands import get_app_dir

    schema = json.loads(
        (Path(get_app_dir()) / "schemas" / "@jupyterlab" / "mainmenu-extension" / "plugin.json").read_text()
    )
    menus = sorted(schema["jupyter.lab.menus"]["main"], key=lambda menu: menu.get("rank", 0))
    return [menu["label"] for menu in menus]


def test_the_spanish_jupyterlab_shows_its_menu_bar_as_its_language_pack_says_it(lab_server_es):
    """`make start-es`: every menu of JupyterLab's menu bar as the Spanish language pack says it (Archivo, Editar, …);
    a menu the pack does not translate stays as JupyterLab writes it."""
    from playwright.sync_api import sync_playwright

    from tests.browser.lab import CHROMIUM

    english = main_menus()
    wanted = [SPANISH.jupyterlab_says(label, MENU) for label in english]
    translated = [label for label, said in zip(english, wanted, strict=True) if said != label]
    assert len(translated) >= len(english) // 2, f"the language pack translates only {translated} of {english}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        page.goto(f"{lab_server_es.url}/lab/workspaces/menus?token={lab_server_es.token}")
        bar = page.locator(".lm-MenuBar-itemLabel")
        bar.get_by_text(wanted[0], exact=True).wait_for(timeout=60_000)
        shown = bar.all_inner_texts()
        browser.close()
    print(f"menu bar: {shown}; untranslated by the pack: {[label for label in english if label not in translated]}")
    assert [said for said in wanted if said not in shown] == [], f"the menu bar shows {shown}, the pack says {wanted}"
    assert [label for label in translated if label in shown] == [], f"English menus in the Spanish JupyterLab: {shown}"


def test_make_start_es_serves_the_root_in_spanish_and_opens_the_spanish_notebook_00():
    """No browser needed: `make start-es` serves `.` with settings whose JupyterLab locale has a language pack."""
    arguments = make_start_arguments("start-es")
    assert "--ServerApp.root_dir=." in arguments
    assert arguments[-1] == "notebooks/es/00_start_here.ipynb"
    assert "--LabApp.default_url=/lab/tree/notebooks/es/00_start_here.ipynb" in arguments
    assert SPANISH.locale == "es_ES"
    said = jupyterlab_catalog(SPANISH.locale).get(f"{MENU}\x04File")  # {} without the pack
    assert said and said != ["File"], f"no {SPANISH.locale} language pack for JupyterLab"


@pytest.mark.parametrize("stem", sorted(LESSON_PANELS))
def test_a_spanish_panels_interaction_is_its_english_one_in_the_editions_words(stem):
    """The Spanish interaction is derived from LESSON_PANELS (editions.translated), with what the Spanish notebook
    shows: its control's label, a table column the package's catalog translates, a dropdown's option among those
    the committed notebook's widget state records for that control."""
    english, spanish = LESSON_PANELS[stem], SPANISH.interactions[stem]
    print(f"{stem}: {spanish}")
    assert (spanish.change.kind, spanish.figure) == (english.change.kind, english.figure)
    if english.change.kind != "dropdown":
        assert spanish.change.value == english.change.value
    if english.column is not None:
        assert spanish.column != english.column, f"{english.column!r} has no Spanish in the package's catalog"
    notebook = json.loads((ROOT / "notebooks" / "es" / f"{stem}.ipynb").read_text())
    source = "".join(
        "".join(cell["source"])
        for cell in notebook["cells"]
        if cell["cell_type"] == "code" and "show" in "".join(cell["source"])
    )
    assert f'"{spanish.change.label}"' in source, (
        f"the Spanish notebook's code writes no label {spanish.change.label!r}"
    )
    if english.change.kind == "dropdown":
        state = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
        options = [
            model["state"]["_options_labels"]
            for model in state.values()
            if model["state"].get("description") == spanish.change.label and "_options_labels" in model["state"]
        ]
        assert options and spanish.change.value in options[0], f"{spanish.change.label!r} offers {options}"
