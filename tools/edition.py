"""The Spanish edition's catalogs: the package's messages extracted with Babel, merged into the Spanish catalog.

    python tools/edition.py extract     # mercadofresco/locale/mercadofresco.pot from the package's _() calls
    python tools/edition.py update      # merge it into mercadofresco/locale/es/LC_MESSAGES/mercadofresco.po
    python tools/edition.py check       # exit 1 when the template is stale or a Spanish entry is missing or fuzzy

A message whose English changed keeps its old translation marked fuzzy (gettext's way; Poedit and Weblate show
the old English beside it), and `mercadofresco.i18n` does not use a fuzzy entry until a translator clears it.
Locations (#: file:line) are left out of the files so that moving a line does not change a catalog.
"""

from __future__ import annotations

import argparse
import io
import sys
from datetime import UTC, datetime
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mercadofresco"
TEMPLATE = PACKAGE / "locale" / "mercadofresco.pot"
SPANISH = PACKAGE / "locale" / "es" / "LC_MESSAGES" / "mercadofresco.po"
KEYWORDS = {"_": None, "N_": None, "pgettext": ((1, "c"), 2), "ngettext": (1, 2)}
PROJECT = "MercadoFresco reliability workbook"
DATED = datetime(2026, 12, 7, tzinfo=UTC)  # the files' header dates, fixed: git says when a line changed
SPANISH_PLURALS = "nplurals=2; plural=(n != 1);"  # gettext's and Poedit's for Spanish (CLDR adds one for millions)


def extracted() -> Catalog:
    """The package's messages as a template: every `_`, `pgettext` and `ngettext` call with a literal."""
    template = Catalog(project=PROJECT, version="1", fuzzy=False, creation_date=DATED, revision_date=DATED)
    found = extract_from_dir(PACKAGE, method_map=[("**.py", "python")], keywords=KEYWORDS, strip_comment_tags=True)
    for filename, _lineno, message, comments, context in found:
        template.add(message, locations=[(filename, 0)], auto_comments=comments, context=context)
    return template


def as_text(catalog: Catalog) -> str:
    """A catalog as the committed file holds it: no dates, no line numbers, entries in the template's order."""
    out = io.BytesIO()
    write_po(out, catalog, width=100, include_lineno=False, include_previous=True)
    return out.getvalue().decode()


def updated(template: Catalog, spanish_text: str | None) -> Catalog:
    """The Spanish catalog merged with `template`: new entries empty, changed ones fuzzy, gone ones dropped."""
    spanish = read_po(io.StringIO(spanish_text), locale="es") if spanish_text else _new_spanish()
    spanish.update(template, update_header_comment=False, no_fuzzy_matching=False)
    spanish.obsolete.clear()  # a message the package no longer says is not kept (git keeps the history)
    return spanish


def said(message: Message) -> bool:
    """Whether a catalog entry is translated: its one string, or every form of a plural one."""
    forms = message.string if isinstance(message.string, tuple | list) else (message.string,)
    return all(forms)


def _new_spanish() -> Catalog:
    spanish = Catalog(locale="es", project=PROJECT, version="1", fuzzy=False, creation_date=DATED, revision_date=DATED)
    spanish.mime_headers = [("Plural-Forms", SPANISH_PLURALS)]
    return spanish


def problems(template: Catalog, spanish: Catalog) -> list[str]:
    """What stops the Spanish edition from saying the package's messages: stale template, missing or fuzzy entries."""
    found = []
    if not TEMPLATE.exists() or TEMPLATE.read_text() != as_text(template):
        found.append(f"{TEMPLATE.relative_to(ROOT)} is stale: run `python tools/edition.py extract`")
    for message in template:
        if not message.id:
            continue
        translated = spanish.get(message.id, context=message.context)
        if translated is None or not said(translated):
            found.append(f"no Spanish for {message.id!r}" + (f" ({message.context})" if message.context else ""))
        elif translated.fuzzy:
            found.append(f"fuzzy (the English changed): {message.id!r}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/edition.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["extract", "update", "check"])
    args = parser.parse_args(argv)
    template = extracted()
    if args.command == "extract":
        TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        TEMPLATE.write_text(as_text(template))
        print(f"wrote {TEMPLATE.relative_to(ROOT)}: {len(template)} messages")
        return 0
    spanish_text = SPANISH.read_text() if SPANISH.exists() else None
    if args.command == "update":
        SPANISH.parent.mkdir(parents=True, exist_ok=True)
        merged = updated(template, spanish_text)
        SPANISH.write_text(as_text(merged))
        fuzzy = sum(1 for message in merged if message.id and message.fuzzy)
        empty = sum(1 for message in merged if message.id and not said(message))
        print(f"wrote {SPANISH.relative_to(ROOT)}: {len(merged)} messages, {empty} to translate, {fuzzy} fuzzy")
        return 0
    spanish = read_po(io.StringIO(spanish_text), locale="es") if spanish_text else _new_spanish()
    found = problems(template, spanish)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
