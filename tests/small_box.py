"""The small box (issue 25): the workbook as an ordinary learner has it on Binder or a JupyterHub, on this machine.

A user of its own, not root, whose home holds a copy of the workbook and is, with /tmp, /var/tmp, /dev/shm and
/run/lock (fresh and empty), the only place it can write; /dev/shm of 64 MB, as Docker and Binder give; 2 GB of
memory for everything it starts (a memory cgroup where the machine has one, and each process's address space).
The confinement is the grader's own (`course.run.sandbox.enter`): beside the system's folders the box sees only the
interpreter, the home and, read-only, the package this Python was installed with. The copy in the home is the one
that runs: it comes first on PYTHONPATH, as `make start` in the learner's copy would install it.

    python tests/small_box.py USER HOME COMMAND...    (as root: COMMAND runs in HOME/mercadofresco-workbook)
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from mercadofresco.course.run import sandbox, watch  # noqa: E402

USER = "mercadofresco-box"
COPY = "mercadofresco-workbook"  # the workbook's folder in the learner's home
SHM_MB = 64
MEMORY_MB = 2048
CGROUPS = (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup"))  # version 1's memory controller, version 2


def create_user(name: str = USER) -> tuple[int, int, Path]:
    """An ordinary user with a home only it can read, as a hub's `adduser` makes them: uid, gid, home."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        command = ["adduser", "--disabled-password", "--gecos", "", "--home", f"/home/{name}", name]
        subprocess.run(command, check=True, capture_output=True)
        entry = pwd.getpwnam(name)
    home = Path(entry.pw_dir)
    home.chmod(0o700)  # Debian's useradd leaves 755, readable by every other user
    return entry.pw_uid, entry.pw_gid, home


def copy_workbook(home: Path, uid: int, gid: int, source: Path = ROOT) -> Path:
    """The workbook's files (git's tracked and new ones, as they are on disk) in `home`, owned by the user."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source,
        capture_output=True,
        check=True,
    )
    target = home / COPY
    shutil.rmtree(target, ignore_errors=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (source / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, target / name)
    for path in [target, *target.rglob("*")]:
        os.chown(path, uid, gid)
    return target


def remove_user(name: str = USER) -> None:
    """Stop everything the user still runs, then remove the user and its home."""
    with contextlib.suppress(KeyError):
        watch.kill_user(pwd.getpwnam(name).pw_uid)
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
    for root in CGROUPS:
        with contextlib.suppress(OSError):
            (root / name).rmdir()


def memory_cgroup(name: str, mb: int) -> Path | None:
    """A memory cgroup of `mb` for the box (its `cgroup.procs`), or None where the machine offers none."""
    for root in CGROUPS:
        limit = "memory.limit_in_bytes" if root.name == "memory" else "memory.max"
        if not (root / limit).exists() and not (root / "cgroup.controllers").exists():
            continue
        try:
            group = root / name
            group.mkdir(exist_ok=True)
            (group / limit).write_text(str(mb << 20))
            return group / "cgroup.procs"
        except OSError:
            continue
    return None


def run(user: str, home: Path, command: list[str]) -> None:
    """Enter the box as `user` and replace this process with `command`, in the workbook's copy in `home`."""
    entry = pwd.getpwnam(user)
    procs = memory_cgroup(user, MEMORY_MB)
    if procs is not None:
        procs.write_text(str(os.getpid()))
    box = sandbox.Sandbox(
        workdir=str(home), memory_mb=MEMORY_MB, user=user, uid=entry.pw_uid, gid=entry.pw_gid, shm_mb=SHM_MB
    )
    sandbox.enter(box)
    workbook = home / COPY
    os.chdir(workbook)
    env = {
        "HOME": str(home),
        "USER": user,
        "LANG": "C.UTF-8",
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(workbook),  # the learner's copy of the package, not the one this Python was installed with
        "MERCADOFRESCO_BOX_MEMORY": "cgroup" if procs is not None else "address space",
    }
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    run(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])
