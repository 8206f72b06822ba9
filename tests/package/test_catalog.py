"""The package's Spanish catalog: current with the code, every message translated, the same fields in both."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from mercadofresco import errors, i18n
from mercadofresco.lessons import show
from tools import edition

FIELDS = re.compile(r"\{(\w*)[^{}]*\}")


@pytest.fixture
def stack():
    """What a test enters for its length only (`i18n.speaking`: this thread's language, no other's)."""
    with contextlib.ExitStack() as opened:
        yield opened


def spanish() -> Catalog:
    return read_po(io.StringIO(edition.SPANISH.read_text()), locale="es")


def test_the_template_is_current_and_every_message_has_its_spanish():
    assert edition.problems(edition.extracted(), spanish()) == []


def test_the_check_fails_on_a_stale_template_a_missing_entry_and_a_fuzzy_one(tmp_path, monkeypatch):
    template = edition.extracted()
    template.add("a sentence the code says now")
    catalog = spanish()
    catalog["exclusive of {low}"].flags.add("fuzzy")
    found = edition.problems(template, catalog)
    assert any("is stale" in line for line in found), found
    assert "no Spanish for 'a sentence the code says now'" in found
    assert "fuzzy (the English changed): 'exclusive of {low}'" in found


def test_an_edited_english_message_keeps_its_old_translation_marked_fuzzy():
    template = edition.extracted()
    template.delete("in seconds")
    template.add("in whole seconds")
    merged = edition.updated(template, edition.SPANISH.read_text())
    assert merged["in whole seconds"].fuzzy and merged["in whole seconds"].string == "en segundos"


def test_each_translation_has_the_fields_of_its_english():
    """A field the translator renamed or dropped would raise KeyError, or lose a number, at the learner's."""
    for message in spanish():
        if not message.id:
            continue
        english = message.id if isinstance(message.id, tuple) else (message.id,)
        forms = message.string if isinstance(message.string, tuple) else (message.string,)
        for index, form in enumerate(forms):  # a plural's forms: the singular's fields, then the plural's
            source = english[min(index, len(english) - 1)]
            assert sorted(FIELDS.findall(form)) == sorted(FIELDS.findall(source)), (message.id, form)


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not installed")
def test_gnu_msgfmt_accepts_the_catalog(tmp_path):
    checked = subprocess.run(
        ["msgfmt", "-c", "-o", str(tmp_path / "es.mo"), str(edition.SPANISH)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_the_spanish_edition_says_a_refusal_and_a_table_in_spanish(stack):
    stack.enter_context(i18n.speaking("es"))
    with pytest.raises(ValueError) as refused:
        errors.check_range("visibility_timeout_s", 50_000.5, 0, 43_200)
    assert str(refused.value) == "visibility_timeout_s debe estar entre 0 y 43200; se recibió 50000,5"
    table = show.Table([{"pedido_id": "PED-1", "charges": 1_234}, {"pedido_id": "PED-2", "charges": 2}])
    assert "1.234" in repr(table) and "Tabla de pedido_id, cobros (2 filas, la primera PED-1)" in table._repr_html_()


def test_the_pseudo_edition_leaves_no_english_word_in_what_went_through_the_catalog(stack):
    stack.enter_context(i18n.speaking("pseudo"))
    with pytest.raises(ValueError) as refused:
        errors.check_range("x", 5, 0, 1, low_excluded=True)  # the setting's name is the code's own
    assert not re.search(r"[A-Za-z]{2,}", str(refused.value)), str(refused.value)
    shown = show.Table([{"event": "received"}])._repr_html_()
    assert not re.search(r">[^<]*[A-Za-z]{2,}[^<]*<", shown.split("<table>")[1]), shown  # headers and words
