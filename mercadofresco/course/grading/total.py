"""One learner's line of the gradebook: the checks' points, the written answers', the late penalty, the final total.

The gradebook makes them (`gradebook.totals`); every report and the LMS files (`lms`) say them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mercadofresco.i18n import _


@dataclass
class Total:
    """One learner's line of the gradebook."""

    learner: str
    checks: int
    checks_max: int
    written: float
    written_max: float
    days_late: int = 0
    penalty_percent: float = 0.0
    comments: list[tuple[str, str]] = field(default_factory=list)  # (question, comment)
    unmarked: float = 0.0  # points of written answers nobody has marked yet: the total is provisional

    @property
    def provisional(self) -> str:
        """What every report says of a total that may still grow: "" once every written answer is marked."""
        said = _("provisional: {points} points of written answers not marked yet")
        return said.format(points=f"{self.unmarked:g}") if self.unmarked else ""

    @property
    def before_penalty(self) -> float:
        return self.checks + self.written

    @property
    def final(self) -> float:
        return round(self.before_penalty * (1 - self.penalty_percent / 100), 2)

    @property
    def maximum(self) -> float:
        return self.checks_max + self.written_max
