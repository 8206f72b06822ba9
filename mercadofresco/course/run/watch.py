"""The grader's view of one learner's processes: find them, measure them, kill them.

The grader (`course.run.nbrun`) calls these four times a second while a learner's
notebook runs, and once more when it is done: the processes of the learner's
user (or, without root, the kernel's descendants), their resident memory, the
CPU they keep busy, what they keep in their own scratch folders and on the
grader's disk, and a kill that leaves none behind. `course.run.sandbox` sets the
kernel apart; this module only looks at it from outside.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path

SCRATCH_DIRS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/run/lock"))  # a tmpfs each, per learner
TICKS = os.sysconf("SC_CLK_TCK")
MOST_FILES = 20_000  # in a working copy, or in the checker's database: more is a limit passed (the labs make ~100)


def _status(pid: int) -> dict[str, str]:
    fields = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def processes_of(uid: int) -> list[int]:
    """Every process whose real uid is `uid`."""
    return [pid for pid in _pids() if _status(pid).get("Uid", "").split()[:1] == [str(uid)]]


def is_workbook_database(pid: int) -> bool:
    """True for the embedded PostgreSQL of `database` (server, workers, watcher): the workbook's, not the learner's."""
    with contextlib.suppress(OSError):
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        return b"mercadofresco-pg-" in command or command.startswith(b"postgres: ")  # its workers retitle themselves
    return False


def running(pid: int) -> bool:
    """False for a process that has exited and waits to be reaped (a zombie runs nothing)."""
    return not _status(pid).get("State", "Z").startswith("Z")


def command_name(pid: int) -> str:
    """A short name for a process, for the report: its command line, cut at 60 characters."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:60]
    return "?"


def descendants(root: int) -> list[int]:
    """Every process below `root` (not `root` itself), by parent links."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        parent = _status(pid).get("PPid")
        if parent and parent.isdigit():
            children.setdefault(int(parent), []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def resident_mb(pids: list[int]) -> float:
    """Resident memory of `pids` together, in MB."""
    total_kb = 0
    for pid in pids:
        rss = _status(pid).get("VmRSS", "0 kB").split()[0]
        total_kb += int(rss) if rss.isdigit() else 0
    return total_kb / 1024


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """CPU time (user + system) each of `pids` has used so far, in seconds."""
    used = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            used[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return used


def scratch_mb(pid: int) -> float:
    """What the learner keeps in its own /tmp, /var/tmp, /dev/shm and /run/lock (memory: they are tmpfs), in MB."""
    used = 0.0
    for folder in SCRATCH_DIRS:
        with contextlib.suppress(OSError):
            stats = os.statvfs(f"/proc/{pid}/root{folder}")  # the folder as the learner's namespace sees it
            used += (stats.f_blocks - stats.f_bfree) * stats.f_frsize / 2**20
    return used


class TooManyFilesError(Exception):
    """A folder holds more entries than a walk of it may look at: its size cannot be known cheaply."""


def folder_mb(path: Path, most_entries: int = MOST_FILES) -> float:
    """Disk space used under `path`, in MB; TooManyFilesError past `most_entries` entries (a walk must stay cheap).

    Counting only the first entries would let 20,001 empty files hide 6 GB behind them.
    """
    used, seen, stack = 0, 0, [str(path)]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                seen += 1
                if seen > most_entries:
                    raise TooManyFilesError(f"more than {most_entries:,} files")
                with contextlib.suppress(OSError):
                    stats = entry.stat(follow_symlinks=False)
                    used += stats.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
    return used / 2**20


class CpuWatch:
    """CPUs a set of processes keeps busy, averaged over the last `window_seconds` (0 until `full_after` seconds)."""

    def __init__(self, window_seconds: float, full_after: float) -> None:
        self.window_seconds, self.full_after = window_seconds, full_after
        self.last: dict[int, float] = {}
        self.samples: list[tuple[float, float]] = []  # (when, CPU seconds used since the previous sample)

    def sample(self, now: float, used: dict[int, float]) -> float:
        """Record the processes' CPU times (`cpu_seconds`) at `now`; the CPUs busy on average over the window."""
        spent = sum(total - self.last.get(pid, 0.0) for pid, total in used.items()) if self.samples else 0.0
        self.last = used
        self.samples = [(when, s) for when, s in self.samples if now - when < self.window_seconds] + [(now, spent)]
        if now - self.samples[0][0] < self.full_after:
            return 0.0
        return sum(s for _, s in self.samples[1:]) / (now - self.samples[0][0])


def held_by_checker(graders: list[int], told: Path) -> tuple[list[int], list[Path]]:
    """What the grader holds for one learner: its processes (`graders`: pytest, which reads the kernel's output,
    and the checker; and what the checker said in `told` it started for that learner: lab 3's database), and the
    folders of their files (memory, in /dev/shm)."""
    pids, folders = list(graders), []
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        said = json.loads(told.read_text())
        for server in said["pids"]:
            pids += [int(server), *descendants(int(server))]
        folders = [Path(folder) for folder in said["folders"]]
    return pids, folders


def peak_address_space_mb(pid: int) -> float:
    """The largest address space process `pid` has held (VmPeak), in MB; 0 if it cannot be read."""
    peak = _status(pid).get("VmPeak", "0 kB").split()[0]
    return int(peak) / 1024 if peak.isdigit() else 0.0


def kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_user(uid: int, rounds: int = 50) -> None:
    """Kill every process of `uid`, again until none is left (a process may fork while we look)."""
    for _ in range(rounds):
        pids = processes_of(uid)
        if not pids:
            return
        for pid in pids:  # stop them all first, so none can start another while we kill
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        kill(pids)


def remove_files_of(uid: int, dirs: tuple[Path, ...] = SCRATCH_DIRS) -> list[Path]:
    """Remove what `uid` left at the top of the shared scratch folders; returns what was removed."""
    removed = []
    for folder in dirs:
        with contextlib.suppress(OSError):
            for entry in folder.iterdir():
                with contextlib.suppress(OSError):
                    if entry.lstat().st_uid != uid:
                        continue
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry, ignore_errors=True)
                    else:
                        entry.unlink()
                    removed.append(entry)
    return removed
