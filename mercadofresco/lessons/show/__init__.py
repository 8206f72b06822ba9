"""The shared toolkit every section shows its results with; nothing here decides.

- `tables`: rows as a table a screen reader can walk (`table`, `items`, `Table`).
- `pictures`: figures in one colour-blind-safe palette, each with a text alternative (`Picture`, `canvas`, `bars`).
- `panels`: controls, a button and the result, usable from the keyboard (`panel`, `log_slider`).

A notebook imports `show` and calls `show.table(...)`, `show.panel(...)`: the names below are the three
modules' public ones.
"""

from mercadofresco import moved
from mercadofresco.lessons.show.controls import INTEGER, LOG_FORMAT, WIDE, choices, log_slider, value_of
from mercadofresco.lessons.show.panels import GONE, RUNNING, panel, refusal, summary
from mercadofresco.lessons.show.pictures import (
    BAD,
    GOOD,
    HATCHES,
    MARKERS,
    PALETTE,
    Picture,
    bars,
    canvas,
    listed,
    numbers,
    titled,
)
from mercadofresco.lessons.show.tables import Table, cell, duration, header, items, table

__all__ = [
    "BAD", "GONE", "GOOD", "HATCHES", "INTEGER", "LOG_FORMAT", "MARKERS", "PALETTE", "RUNNING", "WIDE",
    "Picture", "Table", "bars", "canvas", "cell", "choices", "duration", "header", "items", "listed", "log_slider",
    "numbers", "panel", "refusal", "summary", "table", "titled", "value_of",
]  # fmt: skip


def __getattr__(name: str) -> object:  # names that moved away keep working a while (mercadofresco.moved)
    return moved.attribute(__name__, name)
