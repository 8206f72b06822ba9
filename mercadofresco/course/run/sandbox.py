"""Each learner apart: an unprivileged user, a private working copy, no network, no way to the instructor's files.

When the grader runs as root, each grading slot (one per `--jobs`) has a
system user of its own (`mercadofresco-learner-N`, created on first use).
The learner's kernel starts as root only long enough to enter a new mount and
network namespace, cover the instructor's files with empty mounts (solutions/,
tests/, .git, the submissions and the report), then drops to that user with
its limits; /tmp, /var/tmp, /dev/shm and /run/lock are empty folders of its own.
Everything the user started is killed by uid when the learner is done (and
anything it still left in the shared scratch folders is removed), so nothing
reaches the next learner or a later run. Without root none of that is
possible: the kernel runs as the grader's own user, and the report says so.

The grader's view of the learner's processes from outside (find, measure, kill)
is `course.run.watch`.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import pwd
import resource
import secrets
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from mercadofresco.course.protocol import GRADER_FOLDER
from mercadofresco.course.run.watch import SCRATCH_DIRS, kill_user

USER_PREFIX = "mercadofresco-learner-"
PACKAGE = Path(__file__).resolve().parents[2]  # mercadofresco/, which the kernel imports
MAX_PROCESSES = 256  # threads count too; a fork bomb stops here instead of taking the machine
MAX_FILE_MB = 512  # one file the learner writes (the watcher also sums the working copy and the scratch folders)
MAX_SLOTS = 64  # learner users on one machine, across every grading running at once
LOCK_DIR = Path("/run/mercadofresco-grading")  # who holds which learner user, for every grading on the machine
# The system's own top-level folders stay as they are; every other one (/home, /root, /work, /srv, /mnt, /opt…,
# where an instructor keeps last year's submissions or another checkout) is covered, and only what the kernel
# needs is mounted back: the interpreter, the package and the learner's working copy.
SYSTEM_DIRS = frozenset({"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "run", "sbin"})
SYSTEM_DIRS |= {"sys", "tmp", "usr", "var"}
# Linux constants (linux/sched.h, linux/mount.h, linux/prctl.h)
CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x40000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38


class SandboxError(OSError):
    """The learner's kernel could not be set apart as asked."""


@dataclass(frozen=True)
class Sandbox:
    """Where and as whom one learner's kernel runs (written to a root-only file for the kernel launcher)."""

    workdir: str  # the learner's throwaway working copy; the kernel's cwd and HOME
    memory_mb: int
    user: str | None = None  # None: not root, the kernel runs as the grader's own user
    uid: int = -1
    gid: int = -1
    hidden: tuple[str, ...] = ()  # paths covered by an empty mount inside the kernel's namespace
    network: bool = True  # False: a network namespace of its own, with only the loopback interface up
    shm_mb: int = 0  # the size of /dev/shm (Docker's and Binder's is 64 MB); 0: as /tmp's

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path

    @classmethod
    def read(cls, path: Path) -> Sandbox:
        data = json.loads(path.read_text())
        return cls(**{**data, "hidden": tuple(data["hidden"])})


def is_root() -> bool:
    return os.geteuid() == 0


def learner_user(slot: int) -> tuple[str, int, int]:
    """The system user of grading slot `slot` (created if missing): name, uid, gid."""
    name = f"{USER_PREFIX}{slot}"
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        command = ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent"]
        subprocess.run([*command, "--shell", "/usr/sbin/nologin", name], check=False, capture_output=True)
        entry = pwd.getpwnam(name)  # a KeyError here means useradd is missing: say so
    return name, entry.pw_uid, entry.pw_gid


def installed_checkouts() -> list[Path]:
    """Checkouts of the workbook this Python imports from: the package's own and an editable install's."""
    from importlib import metadata

    roots = [PACKAGE.parent]
    with contextlib.suppress(metadata.PackageNotFoundError, TypeError, ValueError):
        url = json.loads(metadata.distribution("mercadofresco-workbook").read_text("direct_url.json") or "{}")
        if str(url.get("url", "")).startswith("file://"):
            roots.append(Path(url["url"][len("file://") :]))
    return roots


@contextlib.contextmanager
def claimed_user(lock_dir: Path = LOCK_DIR) -> Iterator[tuple[str, int, int]]:
    """A learner user no other grading (in this process or another) is using now, held until the block ends.

    Users are shared by the whole machine, and a learner is cleaned up by killing
    every process of its user, so two gradings must never use one user at once.
    """
    lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for slot in range(MAX_SLOTS):
        handle = open(lock_dir / f"{slot}.lock", "w")  # noqa: SIM115 (held open for the whole block)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        try:
            user = learner_user(slot)
            kill_user(user[1])  # whatever an interrupted grading left behind
            yield user
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        return
    raise SandboxError(0, f"all {MAX_SLOTS} learner users are busy")


def repository_secrets(roots: list[Path]) -> list[Path]:
    """What a kernel must never read in a checkout of the workbook: solutions/, tests/ and the git history."""
    found = []
    for root in roots:
        for name in ("solutions", "tests", ".git"):
            path = root / name
            if path.exists():
                found.append(path)
        git = root / ".git"
        if git.is_file():  # a worktree: the history lives in the main checkout's .git
            gitdir = Path(git.read_text().split("gitdir:", 1)[-1].strip())
            common = (gitdir / "commondir").read_text().strip() if (gitdir / "commondir").exists() else ".."
            found.append((gitdir / common).resolve())
    return sorted(set(found))


# -- inside the kernel process, before any learner code --------------------------------
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise SandboxError(errno, f"{what}: {os.strerror(errno)}")


def enter(sandbox: Sandbox) -> None:
    """Set this process apart: namespaces and hidden paths (as root), limits, then the learner's user."""
    libc = _libc()
    if sandbox.user is not None:
        # System V shared memory and semaphores of its own too: they would otherwise outlive every process
        _call(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | (0 if sandbox.network else CLONE_NEWNET)), "unshare")
        _call(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        for path in sandbox.hidden:
            if os.path.isdir(path):
                flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
                _call(libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, b"size=4k,mode=000"), f"hide {path}")
            elif os.path.exists(path):
                _call(libc.mount(b"/dev/null", path.encode(), None, MS_BIND, None), f"hide {path}")
        needed = [Path(sys.base_prefix), Path(sys.prefix), PACKAGE, Path(sandbox.workdir)]
        _cover_the_rest(libc, needed)
        _reach_python(libc)
        # The workbook itself may live under /tmp (a clone made there, as some CI runners do): what the kernel
        # needs of it stays reachable, and nothing else (not the clone's other folders).
        kept = _open_under_scratch(needed)
        size_mb = max(64, sandbox.memory_mb // 4)  # counts against RAM: keep it small
        for scratch in SCRATCH_DIRS:  # a /tmp of its own: nothing written there outlives the learner
            if scratch.is_dir():
                mb = sandbox.shm_mb if sandbox.shm_mb and scratch == Path("/dev/shm") else size_mb
                options = f"size={mb}m,mode=1777".encode()
                _call(
                    libc.mount(b"tmpfs", str(scratch).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"{scratch}"
                )
        _mount_back(libc, kept)
        # A /proc of its own, where the learner's user sees its own processes only: the shared one showed every
        # process's command line (the grader's paths, a classmate's kernel, other programs' arguments). Linux 5.8
        # and later give each proc mount its own options; an older kernel refuses "invisible" (EINVAL) and the
        # mount is not made, rather than changing the options of the host's own /proc.
        options = b"hidepid=invisible"
        libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)
        if not sandbox.network and shutil.which("ip"):  # loopback only (a local PostgreSQL works), nothing outside
            subprocess.run(["ip", "link", "set", "lo", "up"], check=False, capture_output=True)
    memory = sandbox.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_MB << 20, MAX_FILE_MB << 20))
    if sandbox.user is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))
        _call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
        os.setgroups([])
        os.setgid(sandbox.gid)
        os.setuid(sandbox.uid)
    os.chdir(sandbox.workdir)


def _open_under_scratch(paths: list[Path]) -> list[tuple[Path, int]]:
    """Open the folders among `paths` that sit under a scratch folder (outermost only), before it is covered."""
    outermost = _outermost([p.resolve() for p in paths if any(p.resolve().is_relative_to(s) for s in SCRATCH_DIRS)])
    return [(path, os.open(path, os.O_RDONLY | os.O_DIRECTORY)) for path in outermost if path.is_dir()]


def _mount_back(libc: ctypes.CDLL, kept: list[tuple[Path, int]]) -> None:
    """Bind each kept folder (with the hiding mounts beneath it) back at its path, under what now covers it."""
    try:
        for path, handle in kept:
            os.makedirs(path, mode=0o755, exist_ok=True)
            source = f"/proc/self/fd/{handle}".encode()
            _call(libc.mount(source, str(path).encode(), None, MS_BIND | MS_REC, None), f"mount {path} back")
    finally:
        for _, handle in kept:
            os.close(handle)


def _cover_the_rest(libc: ctypes.CDLL, needed: list[Path]) -> None:
    """Cover every top-level folder but the system's with an empty one, and mount back the `needed` paths inside;
    every top-level file reads as empty (a host's /container_info.json is not the learner's to read)."""
    needed = [path.resolve() for path in needed]
    for top in sorted(Path("/").iterdir()):
        if top.is_symlink():
            continue
        if top.is_file():
            _call(libc.mount(b"/dev/null", str(top).encode(), None, MS_BIND, None), f"hide {top}")
        elif top.is_dir() and top.name not in SYSTEM_DIRS:
            _cover(libc, top, _outermost([path for path in needed if path == top or top in path.parents]))


def _reach_python(libc: ctypes.CDLL) -> None:
    """Let the learner's user read the interpreter and the package when they sit in a closed folder (say /root).

    The closed folder is covered by an empty one (its other contents stay hidden)
    and each needed folder is mounted back at its old path.
    """
    needed = [Path(sys.base_prefix), Path(sys.prefix), PACKAGE]
    closed_dirs: dict[Path, list[Path]] = {}
    for path in (p.resolve() for p in needed):
        closed = next((p for p in [*reversed(path.parents), path] if not os.stat(p).st_mode & stat.S_IXOTH), None)
        if closed is not None and path not in closed_dirs.get(closed, []):
            closed_dirs.setdefault(closed, []).append(path)
    for closed, paths in closed_dirs.items():
        _cover(libc, closed, paths)


def _cover(libc: ctypes.CDLL, folder: Path, kept: list[Path]) -> None:
    """Cover `folder` with an empty one that only root can write, then mount the `kept` folders back inside it."""
    handles = [(path, os.open(path, os.O_RDONLY | os.O_DIRECTORY)) for path in kept if path.is_dir()]
    try:
        _call(
            libc.mount(b"tmpfs", str(folder).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=755"), f"cover {folder}"
        )
    except BaseException:
        for _, handle in handles:
            os.close(handle)
        raise
    _mount_back(libc, handles)


def _outermost(paths: list[Path]) -> list[Path]:
    """`paths` without those inside another of them, sorted."""
    return sorted({p for p in paths if not any(q != p and p.is_relative_to(q) for q in paths)})


def prepare_workdir(base: Path, box_user: tuple[str, int, int] | None, fonts: Path | None = None) -> Path:
    """A fresh working copy for one learner under `base`, with the grader's folder in it (`checker.folder`).

    With a learner's user, the copy is root's, the learner's group may write in it, and it has the sticky bit: the
    learner owns what it makes there, and cannot rename, remove or replace what it does not (the grader's folder).
    A symlink planted where the grader later made its socket folder once had the root grader chmod a folder of
    the host's.
    """
    workdir = base / f"l-{secrets.token_hex(6)}"  # short: unix socket paths inside it stay under 108 bytes
    workdir.mkdir(mode=0o700)
    if fonts is not None:
        shutil.copytree(fonts, workdir / ".matplotlib")
    if box_user is not None:
        for path in workdir.rglob("*"):
            os.chown(path, box_user[1], box_user[2])
        os.chown(workdir, 0, box_user[2])
        os.chmod(workdir, 0o1770)
    (workdir / GRADER_FOLDER).mkdir(mode=0o755)
    return workdir


def remove(path: Path) -> None:
    """Remove a working copy, whatever the learner left (shutil.rmtree recurses: 3,000 nested folders break it)."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False, capture_output=True)
