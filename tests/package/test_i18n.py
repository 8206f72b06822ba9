"""The learner's language: English unchanged by a byte, Spanish from the catalog and Babel, pseudo for the leak scan."""

from __future__ import annotations

import contextlib
import os
from datetime import datetime
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po

from mercadofresco import i18n


@pytest.fixture
def stack():
    """What a test enters for its length only (`i18n.speaking`: this thread's language, no other's)."""
    with contextlib.ExitStack() as opened:
        yield opened


@pytest.mark.parametrize(
    ("environ", "cwd", "expected"),
    [
        ({}, "/home/ana/workbook/notebooks", "en"),
        ({}, "/home/ana/workbook/notebooks/es", "es"),
        ({}, "/home/ana/workbook/labs/es", "es"),
        ({}, "/home/es", "en"),  # a folder named es that is no edition's
        ({"JPY_SESSION_NAME": "/srv/workbook/notebooks/es/01_the_incident.ipynb"}, "/", "es"),
        ({"MERCADOFRESCO_LANG": "en"}, "/w/notebooks/es", "en"),  # asked for: first
        ({"MERCADOFRESCO_LANG": "pseudo"}, "/", "pseudo"),
        ({"MERCADOFRESCO_LANG": "klingon"}, "/", "en"),
    ],
)
def test_the_edition_is_asked_for_or_the_notebooks_folder(environ, cwd, expected):
    assert i18n.edition(environ, cwd) == expected


def test_english_is_the_source_unchanged(stack):
    stack.enter_context(i18n.speaking("en"))
    assert i18n._("{count} orders sent") == "{count} orders sent"
    for value, spec in [(5472000, ","), (48.2, ".2f"), (0.00001, ""), (1234.5, ",.1f"), (0.25, ".0%")]:
        assert i18n.number(value, spec) == format(value, spec)
    friday = datetime(2026, 1, 2, 19, 14)
    assert i18n.moment(friday, "%A %d %B %Y, %H:%M") == friday.strftime("%A %d %B %Y, %H:%M")


def test_spanish_numbers_and_dates_are_written_as_a_spanish_reader_writes_them(stack):
    stack.enter_context(i18n.speaking("es"))
    pairs = [(5472000, ","), (48.2, ".2f"), (0.0001234, ""), (5472, ""), (1.5e-9, "g"), (1234567.891, ",g")]
    said = [i18n.number(value, spec) for value, spec in pairs]
    assert said == ["5.472.000", "48,20", "0,0001234", "5472", "1,5e-09", "1,23457e+06"]  # Python's digits
    assert i18n.moment(datetime(2026, 1, 2, 19, 14), "%A %d %B %Y, %H:%M") == "viernes 2 de enero de 2026, 19:14"
    with pytest.raises(ValueError, match="no es pattern for the date format '%j'"):
        i18n.moment(datetime(2026, 1, 2), "%j")


def test_spanish_sentences_come_from_the_catalog_and_a_fuzzy_one_stays_english(monkeypatch, tmp_path, stack):
    catalog = Catalog(locale="es")
    catalog.add("{count} orders sent", "{count} pedidos enviados")
    catalog.add("orders", "pedidos", context="table header")
    catalog.add("charged twice", "cobrado dos veces", flags=["fuzzy"])  # English changed since: not trusted
    (tmp_path / "es" / "LC_MESSAGES").mkdir(parents=True)
    with (tmp_path / "es" / "LC_MESSAGES" / "mercadofresco.po").open("wb") as out:
        write_po(out, catalog)
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.catalog.cache_clear()
    stack.enter_context(i18n.speaking("es"))
    try:
        assert i18n._("{count} orders sent").format(count=3) == "3 pedidos enviados"
        assert i18n.pgettext("table header", "orders") == "pedidos"
        assert i18n._("orders") == "orders"  # the same English without the context: another message
        assert i18n._("charged twice") == "charged twice"
        assert i18n.ngettext("{n} order", "{n} orders", 1) == "{n} order"
    finally:
        i18n.catalog.cache_clear()


def test_pseudo_dots_every_letter_and_leaves_fields_tags_and_entities(stack):
    stack.enter_context(i18n.speaking("pseudo"))
    said = i18n._("{count} orders in <b>cola</b> &amp; %(name)s")
    assert said == "{count} ȯṙḋėṙṡ ïṅ <b>ċȯĺȧ</b> &amp; %(name)s"
    assert not any(c.isascii() and c.isalpha() for c in i18n.dotted("The quick brown fox jumps over the lazy dog"))
    assert len(i18n.dotted("exactly once")) == len("exactly once")  # one code point for one: tables keep widths


def test_a_language_spoken_in_one_thread_is_not_spoken_in_another(stack):
    """A test that speaks Spanish must not make a grading in a background thread of the same process speak it
    (stop 60's CI: a test set MERCADOFRESCO_LANG for the whole process while lab 2 was graded beside it)."""
    import threading

    heard = []
    stack.enter_context(i18n.speaking("es"))
    thread = threading.Thread(target=lambda: heard.append(i18n.edition({}, "/")))
    thread.start()
    thread.join()
    assert (i18n.edition({}, "/"), heard) == ("es", ["en"])


def test_a_process_whose_folder_is_gone_still_knows_its_language(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    here = Path.cwd()
    try:
        os.chdir(gone)
        gone.rmdir()
        assert i18n.edition({}) == "en"
    finally:
        os.chdir(here)
