"""Tables as a learner reads them: HTML a screen reader can walk in Jupyter, aligned text for nbval and a terminal."""

from __future__ import annotations

import contextlib
import datetime as dt
import html
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from mercadofresco.i18n import T_, _, ngettext, number, pgettext

# Unit suffixes of the package's column names, as a header shows them: "oldest_wait_min" reads "oldest wait (min)".
UNITS = {
    "s": "s", "seconds": "s", "ms": "ms", "min": "min", "minutes": "min", "h": "h", "hours": "h", "days": "days",
    "usd": "USD", "pct": "%", "per_s": "/s", "usd_per_month": "USD/month", "usd_a_month": "USD/month", "mb": "MB",
}  # fmt: skip
ACRONYMS = {"dlq": "DLQ", "erp": "ERP", "db": "DB", "ttl": "TTL", "usd": "USD", "sdk": "SDK", "api": "API"}
# The lesson's own names, shown as the code spells them (a learner looks for them in the package); a name without
# "_" (AWS's MessageGroupId) is shown as it is.
VERBATIM = {"pedido_id", "idempotency_key", "referencia_cobro", "cobrado_en", "caduca_bloqueo", "expira_en"}
SAID_CELLS = 6  # an announcement of a one-row table says this many of its cells
NAMED_COLUMNS = 4  # a table without a caption is named by this many of its columns
_RECORDING: list[list[Table]] = []  # the lists `recorded` fills, innermost last


def header(column: str) -> str:
    """A column's header: its words, and its unit in brackets ("max_calls_per_s" reads "max calls (/s)").

    The words are the English the key makes; the learner reads them in the edition's language (`pgettext` with
    the context "table header": the rows keep their English keys, only what is shown is translated).
    """
    if column in VERBATIM:
        return column
    english = _english_header(column)
    return pgettext("table header", english)


def _english_header(column: str) -> str:
    if "_" not in column:
        return column
    words = column.split("_")
    unit = ""
    for size in (3, 2, 1):  # the longest suffix first: "usd_per_month" before "month"
        suffix = "_".join(words[-size:])
        if len(words) > size and suffix in UNITS and not words[-size - 1].isdigit():  # "after_40_s" is a moment
            unit, words = f" ({UNITS[suffix]})", words[:-size]
            break
    return " ".join(ACRONYMS.get(word, word) for word in words) + unit


BOOLEANS = (T_("True"), T_("False"))  # a table's yes and no, in the edition's words


def cell(value: Any) -> str:
    """A value as a table shows it: thousands separated, a float to 6 significant digits, NaN as "-"; a word
    (an event's name, a verdict) in the edition's language, the value itself staying English in the row."""
    if isinstance(value, Decimal):  # an importe: its digits as stored, the edition's decimal sign (48,20)
        return number(value)
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):  # a cell of words
        return str(type(value)(pgettext("table cell", item) for item in value))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return pgettext("table cell", str(value))
    if isinstance(value, int):
        return number(value, ",")
    if value != value:
        return "-"  # NaN: nothing to measure
    return number(value, ",.0f") if abs(value) >= 1e6 else number(value, ",g")


class Table:
    """Rows as Jupyter shows a DataFrame: an HTML table and, for nbval and a terminal, aligned text.

    `frame` is the rows as a pandas DataFrame, for a learner who wants to sort, filter or plot them.
    Numbers are right-aligned, with thousands separators. No row wraps: a header may take two lines, so that a
    table of many columns stays narrow; what is still too wide scrolls sideways in a region the keyboard reaches.
    For a screen reader the `caption` says what the table is (without one the region is named by its columns),
    each column header is a `<th scope="col">` and each row's first cell a `<th scope="row">`.
    """

    def __init__(self, rows: list[dict[str, Any]], columns: list[str] | None = None, caption: str = "") -> None:
        self.columns = (columns or list(rows[0])) if rows else []
        self.rows = [[row.get(column, "") for column in self.columns] for row in rows]
        self.caption = caption

    @property
    def frame(self) -> Any:
        import pandas as pd  # imported when a table is shown: a module that only computes stays light

        return pd.DataFrame(self.rows, columns=self.columns)

    def __repr__(self) -> str:
        if not self.rows:
            return _("(no rows)")
        headers = [header(column) for column in self.columns]
        cells = [[cell(value) for value in row] for row in self.rows]
        widths = [max(len(name), *(len(line[i]) for line in cells)) for i, name in enumerate(headers)]
        numeric = [all(_is_number(row[i]) for row in self.rows) for i in range(len(headers))]

        def line(values: list[str]) -> str:
            padded = (v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric, strict=True))
            return "  ".join(padded).rstrip()

        text = "\n".join([line(headers), "  ".join("-" * width for width in widths), *map(line, cells)])
        return f"{self.caption}\n{text}" if self.caption else text

    def said(self) -> str:
        """What an announcement says of the table: its caption, its one row ("charges 2, in DLQ 0"), or its size."""
        if self.caption:
            return self.caption
        if len(self.rows) != 1:
            return _("a table of {count} rows").format(count=number(len(self.rows)))
        pairs = [f"{header(c)} {cell(v)}" for c, v in zip(self.columns, self.rows[0], strict=True)]
        return ", ".join(pairs[:SAID_CELLS]) + (", …" if len(pairs) > SAID_CELLS else "")

    def named_rows(self) -> bool:
        """Whether each row's first cell names it (a row header): values all different, and not all numbers."""
        first = [row[0] for row in self.rows]
        return len({str(value) for value in first}) == len(first) and not all(_is_number(v) for v in first)

    def _name(self, headers: list[str]) -> str:
        """A table's name without a caption: its first columns, its size and, when rows are named, the first one
        (two tables of one notebook with the same columns then get different names, so a screen reader's list of
        regions tells them apart).
        """
        columns = ", ".join(headers[:NAMED_COLUMNS]) + (", …" if len(headers) > NAMED_COLUMNS else "")
        rows = ngettext("{count} row", "{count} rows", len(self.rows)).format(count=number(len(self.rows)))
        if self.named_rows():
            return _("Table of {columns} ({rows}, first {first})").format(
                columns=columns, rows=rows, first=cell(self.rows[0][0])
            )
        return _("Table of {columns} ({rows})").format(columns=columns, rows=rows)

    def _repr_html_(self) -> str:
        if not self.rows:
            return f"<p><i>{html.escape(_('(no rows)'))}</i></p>"
        headers = [header(column) for column in self.columns]
        numeric = [all(_is_number(row[i]) for row in self.rows) for i in range(len(headers))]
        name = self.caption or self._name(headers)

        def align(i: int) -> str:
            return "right" if numeric[i] else "left"

        # JupyterLab's own rules set every cell's white-space: the table's style would not reach them. A data cell
        # never wraps; a column header may take two lines, at the bottom of its cell, so the table stays narrow.
        named = self.named_rows()

        def data(i: int, value: Any) -> str:
            tag, scope = ("th", ' scope="row"') if i == 0 and named else ("td", "")
            style = f"text-align: {align(i)}; white-space: nowrap"
            return f'<{tag}{scope} style="{style}">{html.escape(cell(value))}</{tag}>'

        head = "".join(
            f'<th scope="col" style="text-align: {align(i)}; vertical-align: bottom">{html.escape(text)}</th>'
            for i, text in enumerate(headers)
        )
        body = "".join("<tr>" + "".join(data(i, v) for i, v in enumerate(row)) + "</tr>" for row in self.rows)
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        # The region scrolls sideways when the table is wider than the page; tabindex lets the keyboard reach it
        # (arrow keys then scroll it), and its name tells a screen reader which table it holds.
        return (
            f'<div class="mf-table" role="region" tabindex="0" aria-label="{html.escape(name)}"'
            ' style="overflow-x: auto; max-width: 100%">'
            f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )


def duration(delta: dt.timedelta) -> str:
    """A span of time as a table shows it, to the minute, every unit kept so a column aligns: "0 d 1 h 47 min"."""
    minutes = int(delta.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    return f"{days} d {minutes // 60} h {minutes % 60:02d} min"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def table(rows: list[dict[str, Any]], columns: list[str] | None = None, caption: str = "") -> None:
    """Show `rows` as a table: HTML in Jupyter, aligned text elsewhere (both deterministic, so nbval compares them).

    `caption` says what the table is, for a reader who cannot see the sentence above it; leave it out when the
    sentence right above the cell says it.
    """
    from IPython.display import display

    shown = Table(rows, columns, caption)
    for tables in _RECORDING:
        tables.append(shown)
    display(shown)


@contextlib.contextmanager
def recorded() -> Iterator[list[Table]]:
    """The tables `table` shows while the block runs, in order (a panel's status line speaks of them)."""
    tables: list[Table] = []
    _RECORDING.append(tables)
    try:
        yield tables
    finally:
        _RECORDING.remove(tables)


def items(dynamodb_items: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Show DynamoDB items (typed values such as {"S": "EN_CURSO"}) as a table, attributes sorted.

    Values are shown as DynamoDB sends them: a number attribute ({"N": "1767225600"}, an epoch for the TTL) as
    its digits, without separators.
    """
    rows = [{name: next(iter(typed.values())) for name, typed in sorted(item.items())} for item in dynamodb_items]
    table(rows, columns or sorted({name for row in rows for name in row}, key=lambda n: (n != "clave", n)))
