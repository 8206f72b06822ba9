"""The editions the browser suite runs: English, and Spanish (issue 51), each in a JupyterLab of its own.

An edition is its notebooks (notebooks/es/ and labs/es/ for Spanish), the Makefile target that starts its JupyterLab
(`make start-es`: JupyterLab's menus in Spanish) and the words the driver reads and clicks there. Nothing Spanish is
typed here: JupyterLab's words are its language pack's (the locale .jupyterlab-settings/es names), a panel's are its
notebook's catalog's (locale/es/notebooks/<stem>.po) or the package's (mercadofresco/locale/es), and its numbers are
written by `i18n.number`. LESSON_PANELS (panels.py) stays the one table of what the panels must show: the Spanish
interactions are derived from it (`interactions`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, replace

import nbformat

from mercadofresco import i18n
from tests.browser.lab import ROOT, make_start_arguments
from tests.browser.panels import LESSON_PANELS, Change, Interaction

TRANSLATION_PLUGIN = "@jupyterlab/translation-extension:plugin"  # its `locale`, in a settings dir's overrides.json
MENU = "menu"  # the context of a menu bar's label in JupyterLab's catalog (jupyterlab_server translates it so)


@dataclass(frozen=True)
class Words:
    """What the driver clicks and reads in one edition's JupyterLab: the menus it runs a notebook with (JupyterLab's
    words) and what a panel's output and live region say while and after it runs (the package's)."""

    edit: str = "Edit"
    clear_outputs: str = "Clear Outputs of All Cells"
    run: str = "Run"
    run_all: str = "Run All Cells"
    running: str = "Running…"
    done: str = "Done: "


ENGLISH = Words()


@dataclass(frozen=True)
class Edition:
    name: str  # as mercadofresco.i18n names it: en, es
    target: str  # the Makefile target that starts its JupyterLab
    folders: tuple[str, ...]  # where its notebooks and labs are, from the repository's root

    def notebooks(self) -> list[str]:
        """Every lesson notebook and lab of the edition, found on disk: one added later is checked too."""
        found = [path for folder in self.folders for path in sorted((ROOT / folder).glob("*.ipynb"))]
        return [str(path.relative_to(ROOT)) for path in found]

    @functools.cached_property
    def locale(self) -> str | None:
        """JupyterLab's locale in this edition's settings (None: JupyterLab's own English)."""
        arguments = make_start_arguments(self.target)
        folder = next(a.split("=", 1)[1] for a in arguments if a.startswith("--LabApp.app_settings_dir="))
        overrides = json.loads((ROOT / folder / "overrides.json").read_text())
        return overrides.get(TRANSLATION_PLUGIN, {}).get("locale")

    def jupyterlab_says(self, english: str, context: str = "") -> str:
        """`english` as this edition's JupyterLab shows it: its language pack's translation, else English (what
        JupyterLab itself shows for a string its pack lacks)."""
        if self.locale is None:
            return english
        said = jupyterlab_catalog(self.locale).get(f"{context}\x04{english}" if context else english)
        return said[0] if said and said[0] else english

    def package_says(self, english: str) -> str:
        with i18n.speaking(self.name):
            return i18n._(english)

    @functools.cached_property
    def words(self) -> Words:
        english = ENGLISH
        done = self.package_says("Done: {summary}").split("{summary}")[0]  # show.panel's "Done: " and the summary
        return Words(
            edit=self.jupyterlab_says(english.edit, MENU),
            clear_outputs=self.jupyterlab_says(english.clear_outputs),
            run=self.jupyterlab_says(english.run, MENU),
            run_all=self.jupyterlab_says(english.run_all),
            running=self.package_says(english.running),
            done=done,
        )

    @functools.cached_property
    def interactions(self) -> dict[str, Interaction]:
        """LESSON_PANELS as this edition's panels show it."""
        if self.name == "en":
            return LESSON_PANELS
        return {stem: translated(stem, interaction, self.name) for stem, interaction in LESSON_PANELS.items()}


EDITIONS = {
    "en": Edition("en", "start", ("notebooks", "labs")),
    "es": Edition("es", "start-es", ("notebooks/es", "labs/es")),
}


def derive_all() -> None:
    """Every edition's words and interactions, derived now in this thread. The derivation parses the notebooks' code
    (`notebook_catalog.code_words`, with ast), which must not happen in two threads at once (CPython 3.11 shares the
    ast constructor's state: "AST constructor recursion depth mismatch"); the whole set's thread only reads them."""
    for edition in EDITIONS.values():
        edition.words, edition.interactions  # noqa: B018 (computed and kept)


def of(path: str) -> Edition:
    """The edition of a notebook, by the folder it is in, as a kernel started there finds it (mercadofresco.i18n)."""
    return EDITIONS[i18n.edition(environ={"JPY_SESSION_NAME": path}, cwd="")]


@functools.cache
def jupyterlab_catalog(locale: str) -> dict[str, list[str]]:
    """The language pack's catalog of JupyterLab's own strings: English (with "context\\x04" before it when it has
    one) -> its translations."""
    from jupyterlab_server.translation_utils import get_language_pack

    return get_language_pack(locale)[0]["jupyterlab"]


# -- a lesson panel's interaction in another edition -------------------------------------------------------------


def translated(stem: str, interaction: Interaction, language: str) -> Interaction:
    """The interaction as the edition's panel shows it.

    - A control's label: the notebook catalog's translation of the English label its code writes, else the
      package's (a label the package gives, `rules.questions()`).
    - The button: the notebook's translation of its `button=` word, else the package's ("Run experiment").
    - A dropdown's value: the option as the edition's dropdown shows it, which is what the driver picks (and what a
      try comment writes): the panels' dropdowns are `show.choices(names)`, each name labelled with the edition's
      table word for it ("exponential" is "exponencial"); the committed Spanish notebook's widget state has that
      label among the dropdown's `_options_labels` (test_editions.py holds it).
    - A table column: its header as the edition's table shows it, `pgettext("table header", …)` (show.tables.header).
    - A value read in the table or the text: a number as the edition writes it (`i18n.number`), a word as the
      edition's table shows it (`pgettext("table cell", …)`, show.tables.cell).
    """
    from mercadofresco.lessons import show
    from tools import edition, notebook_catalog

    english, _template, catalog_path, _spanish = edition.notebook_paths(f"{stem}.ipynb")
    notebook = nbformat.read(english, as_version=4)
    catalog = notebook_catalog.read(catalog_path)
    labels = notebook_catalog._labels(notebook, catalog)
    change = interaction.change
    with i18n.speaking(language):
        label = labels.get(change.label) or i18n._(change.label)
        button = _code_string(notebook, catalog, interaction.button) or i18n._(interaction.button)
        column = i18n.pgettext("table header", interaction.column) if interaction.column else None
        before, after = _shown(interaction.before), _shown(interaction.after)
        value = show.choices([change.value])[0][0] if change.kind == "dropdown" else change.value
    changed = Change(change.kind, label, value)
    return replace(interaction, change=changed, before=before, after=after, column=column, button=button)


def _code_string(notebook, catalog, english: str) -> str | None:
    """The notebook catalog's translation of a string its code writes (a panel's `button="Classify"`), or None."""
    from tools import notebook_catalog

    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for words in notebook_catalog.code_words(cell.id, cell.source):
            entry = catalog.get(words.text, context=words.context)
            if words.text == english and entry is not None and entry.string and not entry.fuzzy:
                return entry.string
    return None


ENGLISH_NUMBER = re.compile(r"-?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?")


def _shown(english: str) -> str:
    """A value the English panel shows, as the speaking edition's shows it.

    A number is written again by `i18n.number` with the spec the table wrote it with (show.tables.cell: `,` for a
    whole number, `,g` for a float): "1,624" is "1.624" and "335.1" is "335,1" in Spanish. A word is the table's
    word for it; a line of words ("transient (burst)", notebook 10's verdict, its kind and its time shape), each
    word as the table shows it.
    """
    if ENGLISH_NUMBER.fullmatch(english):
        spec = ",g" if "." in english else ","
        value = float(english.replace(",", "")) if "." in english else int(english.replace(",", ""))
        if format(value, spec) != english:
            raise ValueError(f"{english!r} is not a number as show.tables.cell writes one: no edition's form of it")
        return i18n.number(value, spec)
    whole = i18n.pgettext("table cell", english)
    if whole != english:
        return whole
    return re.sub(r"[A-Za-z][\w-]*(?: [A-Za-z][\w-]*)*", lambda words: i18n.pgettext("table cell", words[0]), english)


# -- a sentence of the package, as a page shows it ---------------------------------------------------------------


def sentence(language: str, english: str, **fields: str | re.Pattern) -> re.Pattern:
    """A sentence of the package (its English template) as the page shows it in `language`: its tags out (HTML
    read as text), each field in `fields` filled in (a pattern stays a pattern), any other field any text. Match it
    against text whose whitespace is collapsed (`collapsed`): a long line of selfcheck's is broken between words.

    In an edition other than English the package's catalog must have the sentence: an English one would pass too.
    """
    with i18n.speaking(language):
        said = i18n._(english)
    if language != "en" and said == english:
        raise AssertionError(f"the package's {language} catalog has no translation of {english!r}")
    said = re.sub(r"<[^<>]+>", "", said)
    pieces = re.split(r"\{(\w*)\}", said)
    pattern = ""
    for index, piece in enumerate(pieces):
        if index % 2 == 0:
            pattern += re.escape(collapsed(piece))
        elif isinstance(fields.get(piece), re.Pattern):
            pattern += fields[piece].pattern
        else:
            pattern += re.escape(fields[piece]) if piece in fields else ".+?"
    return re.compile(pattern)


def collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", text)
