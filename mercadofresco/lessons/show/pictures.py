"""Figures every learner can read: one colour-blind-safe palette, and a text alternative said with the picture.

A figure function draws a `matplotlib.figure.Figure` (not pyplot: no global state) and returns it as a
`Picture`, with a text alternative made from the same data: what *this run* shows, in numbers. Jupyter shows the
picture as an HTML image whose `alt` is that text, so a screen reader says it (JupyterLab gives a plain PNG output
no alt); the text form is the same sentence, so nbval compares it and a terminal prints it.

Colours come from `PALETTE`, matplotlib's `petroff10` cycle, chosen to stay apart under the common colour-vision
deficiencies; meaning never rests on colour alone (markers, line styles, hatches or direct labels carry it too).
`series` lists what a figure's legends name, with how each looks: the output carries it, and a test checks that
every pair stays apart under simulated deuteranopia, protanopia and tritanopia.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mercadofresco.i18n import _, number
from mercadofresco.lessons.show.tables import cell, header

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: a notebook that only prints stays light
    from matplotlib.figure import Figure

# matplotlib's `petroff10` style (M. A. Petroff, "Accessible Color Sequences for Data Visualization", 2021):
# ten colours whose closest pair stays 14.5 apart (CAM02-UCS) under each simulated deficiency.
BLUE, ORANGE, RED, GREY, PURPLE, BROWN, DARK_ORANGE, KHAKI, SLATE, CYAN = PALETTE = (
    "#3f90da", "#ffa90e", "#bd1f01", "#94a4a2", "#832db6", "#a96b59", "#e76300", "#b9ac70", "#717581", "#92dadd",
)  # fmt: skip
GOOD, BAD = BLUE, RED  # the lesson's "as it should be" and "what goes wrong", told apart by shape as well
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")  # the n-th series' marker, beside its colour
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "--", "oo", "||", "**")  # the n-th bar series' hatch


def canvas(width: float = 8, height: float = 3.2, rows: int = 1, columns: int = 1, **options: Any) -> tuple:
    """A new figure and its axes (as `Figure.subplots` returns them), drawing in `PALETTE` order.

    `options` go to `subplots` (sharex, width_ratios, ...).
    """
    from cycler import cycler
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots(rows, columns, **options)
    for ax in figure.axes:
        ax.set_prop_cycle(cycler(color=PALETTE))
    return figure, axes


@dataclass
class Picture:
    """A figure and its text alternative: what a reader who cannot see the picture is told instead."""

    figure: Figure
    alt: str

    def __post_init__(self) -> None:
        if not self.alt.strip():
            raise ValueError(_("a picture needs a text alternative: say what this run shows"))

    def __repr__(self) -> str:
        return self.alt

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        from IPython.core.pylabtools import print_figure

        png = print_figure(self.figure, "png", bbox_inches="tight", base64=True)
        image = f'<img src="data:image/png;base64,{png}" alt="{html.escape(self.alt, quote=True)}">'
        return {"text/html": image, "text/plain": self.alt}, {"text/html": {"series": series(self.figure)}}


def series(figure: Figure) -> list[dict[str, Any]]:
    """What each axes' legend names, and how it looks: label, colour (over white), marker, line style, hatch.

    A label that the axes also writes as text beside the data counts as a direct label (`direct`).
    """
    found = []
    for index, ax in enumerate(figure.axes):
        texts = {text.get_text() for text in ax.texts}
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            found.append({"axes": index, "label": label, **_look(handle), "direct": label in texts})
    return found


def _look(handle: Any) -> dict[str, Any]:
    """How a legend entry looks: its colour composited over white, and its shape."""
    from matplotlib import colors
    from matplotlib.container import BarContainer
    from matplotlib.lines import Line2D

    marker = linestyle = hatch = ""
    if isinstance(handle, Line2D):
        colour, marker, linestyle = handle.get_color(), str(handle.get_marker()), str(handle.get_linestyle())
        alpha = handle.get_alpha()
    else:  # a patch, a bar container's first bar or a collection (fill_between, scatter)
        artist = handle.patches[0] if isinstance(handle, BarContainer) else handle
        faces = colors.to_rgba_array(artist.get_facecolor())  # one colour or one per element: the first
        colour = faces[0] if len(faces) else "white"
        hatch, alpha = str(artist.get_hatch() or ""), None
        if hasattr(artist, "get_linestyle"):
            linestyle = str(artist.get_linestyle())
    red, green, blue, opacity = colors.to_rgba(colour, alpha)
    over_white = [opacity * value + (1 - opacity) for value in (red, green, blue)]
    marker = "" if marker in ("None", "none") else marker
    linestyle = "-" if linestyle == "solid" else linestyle
    return {"colour": colors.to_hex(over_white), "marker": marker, "linestyle": linestyle, "hatch": hatch}


def titled(title: str, text: str) -> str:
    """A text alternative that starts with the figure's title, which is part of the picture: "Title. Text"."""
    return f"{title}. {text}" if title else text


def listed(words: list[str]) -> str:
    """Words as a sentence lists them: "a", "a and b", "a, b and c"."""
    if len(words) == 1:
        return words[0]
    return _("{items} and {last}").format(items=", ".join(words[:-1]), last=words[-1])


def numbers(values: list[float], unit: str = "") -> str:
    """A list of numbers as a sentence says them: "3, 5 and 9 s"."""
    return f"{listed([number(value, ',g') for value in values])} {unit}".rstrip()


def bars(
    rows: list[dict[str, Any]], category: str, value: str, group: str | None = None, title: str = "", ylabel: str = ""
) -> Picture:
    """A bar per row (`category` on the x axis, `value` as height), side by side per `group` if given.

    Each bar is labelled with its value; each group has its own colour and hatch. The text alternative reads the
    bars out, group by group.
    """
    figure, ax = canvas()
    categories = list(dict.fromkeys(str(row[category]) for row in rows))
    groups = list(dict.fromkeys(str(row[group]) for row in rows)) if group else [""]
    width = 0.8 / len(groups)
    said = []
    for g, name in enumerate(groups):
        heights = [
            next((row[value] for row in rows if str(row[category]) == c and (not group or str(row[group]) == name)), 0)
            for c in categories
        ]
        positions = [i + (g - (len(groups) - 1) / 2) * width for i in range(len(categories))]
        name = cell(name)  # a group's word in the edition (the row keeps its English)
        drawn = ax.bar(
            positions, heights, width, label=f"{header(group)} = {name}" if group else None,
            color=PALETTE[g % len(PALETTE)], hatch=HATCHES[g % len(HATCHES)], edgecolor="white",
        )  # fmt: skip
        ax.bar_label(drawn, fontsize=8)
        pairs = "; ".join(
            f"{' '.join(cell(c).split())}: {number(h, ',g')}" for c, h in zip(categories, heights, strict=True)
        )
        said.append(f"{header(group)} = {name}, {pairs}" if group else pairs)
    ax.set_xticks(range(len(categories)), [cell(c) for c in categories], fontsize=8)
    ax.set_ylabel(ylabel or header(value))
    ax.set_title(title)
    if group:
        ax.legend(fontsize=8)
    # A category's line breaks (a long tick label) are read as spaces.
    measured, by = ylabel or header(value), header(category)
    if title:
        heading = _("Bar chart: {title}. {measured} by {category}.").format(title=title, measured=measured, category=by)
    else:
        heading = _("Bar chart. {measured} by {category}.").format(measured=measured, category=by)
    alt = heading + " " + ". ".join(said) + "."
    return Picture(figure, alt)
