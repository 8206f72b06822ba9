"""The learner's language: the package's sentences go through `_`, and its numbers and dates through `number`/`moment`.

English is the source and stays as it is written: in the English edition `_(text)` is `text` and
`number(x, ",.2f")` is `format(x, ",.2f")`, so English outputs do not change by a byte. The Spanish edition reads
its translations from the package's gettext catalog (`mercadofresco/locale/es/LC_MESSAGES/mercadofresco.po`,
the file Poedit and Weblate edit) and writes numbers and dates as a Spanish reader does, through Babel
(5.472.000, 48,20, viernes 2 de enero). Translate at the edge, never the data: a row keeps its English keys and
values, and only what is shown is translated, so both editions compute the same numbers.

Which edition a process speaks is read on each call, first match wins:
  1. MERCADOFRESCO_LANG (`en`, `es`, or `pseudo`), for a terminal, a class run from the command line, the tests;
  2. the folder of the notebook this kernel runs: Jupyter Server names it in JPY_SESSION_NAME, and JupyterLab,
     nbval and nbclient start a kernel in it, so `notebooks/es/` speaks Spanish with no line of code for it;
  3. English.

`pseudo` is English with every letter dotted (a→ȧ, one code point for one): a run in it shows at a glance any
sentence that did not come through here (tests/package/test_catalog.py runs a refusal and a table in it).

A message is a template with named fields, `_("{count} orders sent").format(count=n)`: the translator moves the
fields, and Babel extracts the template (`python -m tools.edition extract`), which it cannot do from an f-string.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path

LANG_ENV = "MERCADOFRESCO_LANG"
EDITIONS = ("en", "es")  # the editions a learner can read; `pseudo` is for the tests
PSEUDO = "pseudo"
LOCALE_DIR = Path(__file__).parent / "locale"
DOMAIN = "mercadofresco"
BABEL_LOCALES = {"es": "es_ES"}
_DOTTED = str.maketrans(  # one code point for one, all in DejaVu Sans (matplotlib's font): widths and figures hold
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "ȧḃċḋėḟġḣïĵķĺṁṅȯṗʠṙṡṫüṿẇẋẏżȦḂĊḊĖḞĠḢÏĴĶĹṀṄȮṖǪṘṠṪÜṾẆẊẎŻ"
)
_SPEAKING: contextvars.ContextVar[str | None] = contextvars.ContextVar("speaking", default=None)
_FIELD = re.compile(r"(\{[^{}]*\}|%\(\w+\)[sdfr]|<[^<>]*>|&\w+;)")  # left as they are: fields, tags, entities


@contextlib.contextmanager
def speaking(language: str) -> Iterator[None]:
    """Speak `language` in this thread (and its context) only, whatever the environment says: for tests, which
    must not change what the other threads of their process speak (work done in the background, say)."""
    token = _SPEAKING.set(language)
    try:
        yield
    finally:
        _SPEAKING.reset(token)


def edition(environ: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    """The edition this process speaks: `en`, `es` or `pseudo` (see the module's docstring for the order)."""
    if (spoken := _SPEAKING.get()) is not None:
        return spoken
    environ = os.environ if environ is None else environ
    asked = environ.get(LANG_ENV, "").strip().lower()
    if asked in (*EDITIONS, PSEUDO):
        return asked
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:  # the folder this process was in is gone: no notebook's folder to read
            cwd = ""
    for where in (environ.get("JPY_SESSION_NAME", ""), cwd):
        folder = Path(where) if where else None
        if folder is not None and folder.suffix == ".ipynb":
            folder = folder.parent
        if (
            folder is not None
            and folder.name in EDITIONS[1:]
            and folder.parent.name in ("notebooks", "labs", "solutions")
        ):
            return folder.name
    return "en"


def _(message: str) -> str:
    """`message` in the learner's language (itself in English; itself, untranslated, where the catalog lacks it)."""
    return _translated(edition(), "", message)


def N_(message: str) -> str:
    """`message` itself, marked for the catalog: for a constant translated where it is shown, `_(CONSTANT)`."""
    return message


def T_(message: str) -> str:
    """`message` itself, marked for the catalog as a table cell's words: a row keeps its English, and a table
    (`lessons.show`) shows it in the learner's language, `pgettext("table cell", message)`."""
    return message


def pgettext(context: str, message: str) -> str:
    """`message` in the learner's language, where the same English means different things (`context` tells which)."""
    return _translated(edition(), context, message)


def ngettext(singular: str, plural: str, count: int) -> str:
    """The form of a message for `count`, in the learner's language (Spanish, like English, has two: n == 1 or not)."""
    language, english = edition(), singular if count == 1 else plural
    if language == PSEUDO:
        return dotted(english)
    forms = catalog(language).get(("", singular)) if language != "en" else None
    return forms[0 if count == 1 else 1] if isinstance(forms, tuple) and all(forms) else english


def number(value: float, spec: str = "") -> str:
    """`value` written as `format(value, spec)` writes it in English, and as a reader of the edition writes it.

    The digits are Python's in every edition (the same rounding, so both editions show the same numbers); the
    decimal and group symbols are the edition's, from Babel's locale data: 5,472,000.5 is 5.472.000,5 in Spanish.
    """
    english = format(value, spec)
    language = edition()
    if language not in BABEL_LOCALES:
        return english
    decimal, group = _symbols(BABEL_LOCALES[language])
    return english.translate(str.maketrans({".": decimal, ",": group}))


@functools.cache
def _symbols(locale: str) -> tuple[str, str]:
    from babel.numbers import get_decimal_symbol, get_group_symbol  # paid for by the Spanish edition only

    return get_decimal_symbol(locale), get_group_symbol(locale)


def moment(when: datetime, spec: str) -> str:
    """`when` as `when.strftime(spec)` writes it in English, and in the edition's words and order elsewhere."""
    language = edition()
    if language not in BABEL_LOCALES:
        return when.strftime(spec)
    from babel.dates import format_datetime

    pattern = _CLDR.get(spec)
    if pattern is None:
        raise ValueError(f"no {language} pattern for the date format {spec!r}: add it to i18n._CLDR")
    return format_datetime(when, pattern, locale=BABEL_LOCALES[language])


_CLDR = {  # strftime specs the package uses -> the CLDR pattern a Spanish reader expects
    "%H:%M": "HH:mm",
    "%H:%M:%S": "HH:mm:ss",
    "%A %H:%M": "EEEE HH:mm",
    "%A %d %B %Y, %H:%M": "EEEE d 'de' MMMM 'de' y, HH:mm",
    "%A %d %B %Y, %H:%M:%S %Z": "EEEE d 'de' MMMM 'de' y, HH:mm:ss zzz",
    "%Y-%m-%d %H:%M": "yyyy-MM-dd HH:mm",
    "%a %d %H:%M": "EEE dd HH:mm",
    "%a %H:%M": "EEE HH:mm",
    "%a %H:%M:%S": "EEE HH:mm:ss",
    "%d %b %H:%M": "dd MMM HH:mm",
}


def dotted(text: str) -> str:
    """The pseudo edition of `text`: every ASCII letter dotted, fields, tags and entities left as they are."""
    pieces = _FIELD.split(text)
    return "".join(piece if index % 2 else piece.translate(_DOTTED) for index, piece in enumerate(pieces))


def _translated(language: str, context: str, message: str) -> str:
    if language == PSEUDO:
        return dotted(message)
    if language == "en" or not message:
        return message
    translated = catalog(language).get((context, message))
    return translated if isinstance(translated, str) and translated else message


@functools.cache
def catalog(language: str) -> dict[tuple[str, str], str | tuple[str, ...]]:
    """The package's translations into `language`, as (context, English) -> translation (a plural message: its
    singular -> its forms); fuzzy entries left out."""
    path = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    if not path.exists():
        return {}
    from babel.messages.pofile import read_po

    with path.open("rb") as opened:
        read = read_po(opened)
    return {
        (message.context or "", message.id if isinstance(message.id, str) else message.id[0]): message.string
        for message in read
        if message.id and message.string and not message.fuzzy
    }
