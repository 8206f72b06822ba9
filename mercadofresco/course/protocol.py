"""What the grader's processes say to each other: the plan of a run, the rows of its record, the words that stop it.

Five processes take part in grading one learner: the grader (`grading`), the runner that watches the others
(`run.nbrun`), pytest with nbval and the grader's plugin, which runs the learner's cells (`run.nbplugin`), the
checker, which runs the hidden checks (`python -m mercadofresco.course.checker`), and the learner's kernel. The
grader writes a `Plan` (a JSON file named by `PLAN_ENV`). The plugin appends a `CellRow` to the record for each
learner cell that failed; after the last cell it hands the kernel to the checker (a `Handover`, one JSON line
on a pipe), runs the `ServeCell` the checker sends back with nbval's own client (connected to the kernel before
any learner code ran), and waits until the checker closes its pipe; the checker appends a `CheckRow` for each
hidden check and a `NoteRow` for what the instructor should read. Everything here is plain data with one
`to_json`/`from_json` each (and `Pipe`, which reads those lines off a pipe), and this module imports nothing of
`course/`, so every process can share it.

A row's `kind` says which record it is; a verdict is the checker's `CheckRow.verdict`, never a word in a text.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
from dataclasses import dataclass, field
from typing import Any, Literal

PLAN_ENV = "MERCADOFRESCO_GRADING_PLAN"  # the plan's path, in the environment of the runner and of pytest
# The two pipes between the plugin and the checker, as "read,write" file descriptors in each one's environment.
# Plugin -> checker: the `Handover`, then SERVE_CELL_ENDED once the kernel has answered the serve cell.
# Checker -> plugin: the `ServeCell` once the checker listens; then nothing until it closes its end (done).
HANDOVER_ENV = "MERCADOFRESCO_GRADING_HANDOVER"
SERVE_CELL_ENDED = "serve cell ended"
LINE_BYTES = 64 * 1024  # the processes' lines are short; a longer one is not theirs
GRADER_FOLDER = ".grader"  # in a learner's working copy: the checker's sockets, which the kernel may not change
CELL_TIMEOUT_SECONDS = 20.0  # a lab cell's time, in the grader and in selfcheck alike (`run.limits.Limits`)

# What a cell of the graded notebook is.
LEARNER: Literal["learner"] = "learner"  # a learner's code cell
END: Literal["end"] = "end"  # the grader's last cell: after it the checks run
UNKNOWN: Literal["unknown"] = "unknown"  # a cell the plan does not list
Role = Literal["learner", "end", "unknown"]

# A cell that failed like this leaves a kernel nobody should trust, so the run stops there, in the grader and in
# selfcheck alike. These are nbval's and the grader's own words, never the learner's: an exception merely named
# MemoryError stops nothing. A cell cut off by the time limit and interrupted is not among them: the kernel goes
# on, the next cells run, and every check that can still run does (a slow cell is not 0 of 13).
OUT_OF_MEMORY = "the cell ran out of memory (the grader's memory limit)"
KERNEL_DIED = "Kernel died while running the cell (os._exit, a crash, or killed by the grader's limits)"
STOPPING_REASONS = ("exceeded waiting for output", "Kernel dead", "Kernel died", "Failed to interrupt", OUT_OF_MEMORY)

NAME_CHARS = 40  # of a name the learner chose (their exception's class) in a reason


def stops(reason: str) -> bool:
    """True if a learner cell that failed for `reason` means the kernel ran out of memory, wedged or died.

    `reason` is a `CellRow.reason`, made by the grader's plugin from nbval's and the grader's own words; the
    learner's text in it is cut and cleaned (`shown`), and an exception's name alone never matches.
    """
    return any(marker in reason for marker in STOPPING_REASONS)


def shown(text: str, limit: int = 40) -> str:
    """`text` as the terminal may show it: control characters (escape codes) dropped, cut to `limit` characters."""
    text = "".join(ch if ch.isprintable() else " " if ch in "\n\r\t" else "?" for ch in str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def learner_name(name: str) -> str:
    """A name the learner chose (their exception's class), as a report may show it: a Python name, cut short."""
    name = str(name)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
        return "an exception"
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


# -- the records ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One cell of the graded notebook, in order: the learner's code, or the grader's last cell."""

    role: Role

    def to_json(self) -> dict:
        return {"role": self.role}

    @classmethod
    def from_json(cls, data: dict) -> Cell:
        return cls(_role(data.get("role")))


@dataclass(frozen=True)
class Plan:
    """What the grader tells the runner and the plugin about one learner's run (a JSON file, `PLAN_ENV`)."""

    cells: tuple[Cell, ...]
    memory_mb: int
    checks: str  # the lab's checks module (solutions/checks/labN.py), which only the checker's process loads
    lab_cells: int  # the lab's code cells: the time budget counts them, not the learner's extras
    workdir: str  # the learner's working copy
    uid: int | None  # the learner's user, None when the grader is not root
    check_count: int
    only: tuple[str, ...] = ()  # the checks to run, all when empty (a regrade of some)
    cell_timeout_seconds: float = CELL_TIMEOUT_SECONDS  # of each learner cell, and of each check
    record: str = ""  # where the plugin, then the checker, append their rows (set by the runner)
    checker: str = ""  # where the checker says what it holds for this learner (set by the runner)
    language: str = "en"  # the learner's edition: the kernel and the checker speak it (their reasons, the stories)

    def learner_cells(self) -> int:
        return sum(1 for cell in self.cells if cell.role == LEARNER)

    def grader_cells(self) -> int:
        return sum(1 for cell in self.cells if cell.role != LEARNER)

    def role_of(self, number: int) -> Role:
        return self.cells[number].role if 0 <= number < len(self.cells) else UNKNOWN

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["cells"] = [cell.to_json() for cell in self.cells]
        data["only"] = list(self.only)
        return data

    @classmethod
    def from_json(cls, data: dict) -> Plan:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in fields}
        values["cells"] = tuple(Cell.from_json(cell) for cell in data.get("cells", []))
        values["only"] = tuple(data.get("only", ()))
        return cls(**values)

    def dumps(self) -> str:
        return json.dumps(self.to_json())

    @classmethod
    def loads(cls, text: str) -> Plan:
        return cls.from_json(json.loads(text))


class Pipe:
    """The lines one grader process writes to another on pipe `fd` (the handover, the serve cell…)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.closed = fd, b"", False

    def line(self, timeout: float | None) -> str | None:
        """The next line, waiting up to `timeout` seconds (None: until there is one); None if none came."""
        while b"\n" not in self.buffer and not self.closed and len(self.buffer) < LINE_BYTES:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.fd, 4096)
            self.closed = not chunk
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode(errors="replace") if line else None


@dataclass(frozen=True)
class Handover:
    """What the plugin tells the checker after the learner's last cell: the kernel to check, or why there is none.

    `pid` is the kernel's process, `pgid` its process group, which the checker interrupts as jupyter_client
    does. `gone` is why no check can run ("" when the kernel is there); `stopped` says a learner cell stopped the
    run, which the report tells from the cell's own row.
    """

    pid: int = 0
    pgid: int = 0
    gone: str = ""
    stopped: bool = False

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Handover:
        try:
            return cls(int(data["pid"]), int(data["pgid"]), str(data["gone"]), data["stopped"] is True)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"a handover without what it needs: {exc}") from None

    def dumps(self) -> str:
        return json.dumps(self.to_json()) + "\n"

    @classmethod
    def loads(cls, text: str) -> Handover:
        try:
            return cls.from_json(json.loads(text))
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"a handover that is not JSON: {exc}") from None


@dataclass(frozen=True)
class ServeCell:
    """What the checker asks the plugin to run once it listens: the cell that connects the kernel to it."""

    source: str

    def dumps(self) -> str:
        return json.dumps({"serve": self.source}) + "\n"

    @classmethod
    def loads(cls, text: str) -> ServeCell:
        try:
            return cls(str(json.loads(text)["serve"]))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ProtocolError(f"not a serve cell: {exc}") from None


@dataclass(frozen=True)
class CellRow:
    """A learner cell that failed (or a setup that failed): what the plugin saw, never the cell's source."""

    cell: int
    role: Role
    outcome: str  # pytest's: "failed", "skipped"; a cell that passed writes no row
    reason: str
    stdout: str = ""
    stops: bool = False  # the kernel died, wedged or ran out of memory: the grader saw it, the text did not say it

    def to_json(self) -> dict:
        return {"kind": "cell", **dataclasses.asdict(self)}


@dataclass(frozen=True)
class CheckRow:
    """A hidden check's verdict, decided in the checker from the world it owns."""

    check: str
    verdict: bool
    reason: str = ""
    story: tuple[str, ...] = field(default_factory=tuple)  # the smallest world that broke the rule, in words
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"kind": "check", **dataclasses.asdict(self), "story": list(self.story)}


@dataclass(frozen=True)
class NoteRow:
    """A note for the instructor's report (the kernel sent messages out of turn, …)."""

    note: str

    def to_json(self) -> dict:
        return {"kind": "note", "note": self.note}


Row = CellRow | CheckRow | NoteRow


def row_from_json(data: dict) -> Row:
    """One line of the record as its record; a line of any other shape is a `ProtocolError`."""
    kind = data.get("kind")
    try:
        if kind == "cell":
            stdout, stops = str(data.get("stdout", "")), data.get("stops") is True
            return CellRow(
                int(data["cell"]), _role(data["role"]), str(data["outcome"]), str(data["reason"]), stdout, stops
            )
        if kind == "check":
            story = tuple(str(line) for line in data.get("story", ()))
            reason, seconds = str(data.get("reason", "")), float(data.get("seconds", 0))
            return CheckRow(str(data["check"]), data["verdict"] is True, reason, story, seconds)
        if kind == "note":
            return NoteRow(str(data["note"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"a {kind} row without what it needs: {exc}") from None
    raise ProtocolError(f"a row of no known kind: {kind!r}")


def read_rows(text: str) -> list[Row]:
    """The record's JSON lines as rows."""
    return [row_from_json(json.loads(line)) for line in text.splitlines() if line.strip()]


def write_rows(rows: list[Row]) -> str:
    """Rows as the record's JSON lines."""
    return "".join(json.dumps(row.to_json()) + "\n" for row in rows)


class ProtocolError(ValueError):
    """A plan or a row that is not of the protocol's shape."""


def _role(value: Any) -> Role:
    if value not in (LEARNER, END, UNKNOWN):
        raise ProtocolError(f"no such role: {value!r}")
    return value
