"""How the learner's kernel reaches the checker: a Unix socket in the grader's folder of its working copy, the
cell that asks the kernel to connect, and the one connection accepted (from the learner's user only).
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from mercadofresco.course.checker import folder
from mercadofresco.course.checker.boundary import BoundaryError

CONNECT_SECONDS = 15.0  # the kernel's answer to the grader's serve cell (imports included)
SERVE_CELL_ENDED = (
    "the kernel did not connect: it ended the grader's last cell without running it"
    " (does a cell of yours change how the kernel compiles or runs code?)"
)
CONNECT_POLL_SECONDS = 0.2  # how often the wait for that answer looks whether the serve cell has ended


def listen(workdir: Path, uid: int | None) -> tuple[socket.socket, Path]:
    """A Unix socket in the grader's folder of the working copy, which the learner's kernel may connect to."""
    path = folder.grader_folder(workdir) / "boundary"
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o777)  # in the grader's own folder; who may talk is the peer's uid's to say (connect)
    listener.listen(1)
    return listener, path


def serve_source(path: Path) -> str:
    """The one cell the grader sends after the learner's: connect to the checker and answer its calls."""
    return (
        "from mercadofresco.course.checker import learner_side as _learner_side\n"
        f"_learner_side.serve(globals(), {str(path)!r})"
    )


def accept_kernel(
    listener: socket.socket,
    uid: int | None,
    timeout: float = CONNECT_SECONDS,
    ended: Callable[[], bool] = lambda: False,
) -> socket.socket:
    """Accept the kernel's connection (from the learner's user only, when there is one).

    A connection from anyone else is closed and the wait goes on: a learner graded beside this one once pointed
    a root client of its own grading at this socket (a symlink where its kernel's socket had been), and had this
    connection refused would have cost the learner here every check. `ended()` is true once the kernel has
    finished the serve cell: it will not connect any more (a learner's compiler or audit hook emptied the cell),
    so the grader says so then instead of after `timeout`.
    """
    deadline = time.monotonic() + timeout
    listener.settimeout(CONNECT_POLL_SECONDS)
    strangers: list[int] = []
    while True:
        try:
            sock, _ = listener.accept()
        except TimeoutError:
            if ended():
                raise BoundaryError(SERVE_CELL_ENDED + _strangers(strangers)) from None
            if time.monotonic() >= deadline:
                raise BoundaryError(f"the kernel did not connect within {timeout:g} s{_strangers(strangers)}") from None
            continue
        if uid is None:
            break
        _, peer_uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if peer_uid == uid:
            break
        sock.close()
        strangers.append(peer_uid)
    sock.settimeout(None)
    return sock


def _strangers(uids: list[int]) -> str:
    return f" (refused {len(uids)} connection(s) from uid {', '.join(map(str, sorted(set(uids))))})" if uids else ""
