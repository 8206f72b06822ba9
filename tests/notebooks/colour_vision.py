"""Whether a figure's series stay apart for a reader who does not see every colour.

A figure's output carries its series (show.pictures.series): each legend entry's label, colour, marker, line
style and hatch. Two series of one axes are apart when
- something besides colour tells them apart: a marker, a line style, a hatch, or a label written beside the data;
- and their colours are the same (one thing drawn two ways) or stay at least APART from each other, in CAM02-UCS,
  for normal vision and under simulated deuteranopia, protanopia and tritanopia (colorspacious, severity 100).
"""

from __future__ import annotations

import itertools
from typing import Any

APART = 10.0  # CAM02-UCS distance: petroff10's closest pair is 14.5 under every simulation; tab:red/tab:green 5.2
DEFICIENCIES = ("deuteranomaly", "protanomaly", "tritanomaly")  # at severity 100: deuteranopia, protanopia, ...


def distance(first: str, second: str, deficiency: str | None = None) -> float:
    """How far apart two colours look (CAM02-UCS), to normal vision or under `deficiency` at full severity."""
    import numpy as np
    from colorspacious import cspace_convert
    from matplotlib import colors

    seen = []
    for colour in (first, second):
        rgb = np.array(colors.to_rgb(colour))
        if deficiency:
            space = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
            rgb = np.clip(cspace_convert(rgb, space, "sRGB1"), 0, 1)
        seen.append(cspace_convert(rgb, "sRGB1", "CAM02-UCS"))
    return float(np.linalg.norm(seen[0] - seen[1]))


def problems(series: list[dict[str, Any]]) -> list[str]:
    """Each pair of one axes' series that a reader could confuse, said in a sentence."""
    found = []
    for one, other in itertools.combinations(series, 2):
        if one["axes"] != other["axes"]:
            continue
        pair = f"{one['label']!r} and {other['label']!r}"
        shape = any(one[key] != other[key] for key in ("marker", "linestyle", "hatch"))
        if not (shape or one.get("direct") or other.get("direct")):
            found.append(f"{pair} differ by colour alone (give each a marker, line style, hatch or direct label)")
        if one["colour"].lower() == other["colour"].lower():
            continue
        for deficiency in (None, *DEFICIENCIES):
            apart = distance(one["colour"], other["colour"], deficiency)
            if apart < APART:
                seen = f"under simulated {deficiency.replace('anomaly', 'anopia')}" if deficiency else "to anyone"
                found.append(f"{pair} ({one['colour']}, {other['colour']}) look alike {seen}: {apart:.1f} < {APART}")
    return found
