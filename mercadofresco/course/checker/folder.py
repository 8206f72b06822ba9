"""Where the checker keeps its sockets in a learner's working copy, and the test that it is still the grader's.

The grader makes `.grader` in each working copy before the learner's kernel starts (`run.sandbox`); the kernel
may connect to a socket there but not change the folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mercadofresco.course.protocol import GRADER_FOLDER


class GraderFolderError(OSError):
    """The grader's folder in a working copy is not as the grader made it."""


def grader_folder(workdir: Path) -> Path:
    """The grader's folder in `workdir` (its sockets), refused unless it is the grader's own, untouched.

    The learner's kernel may read it (connect to a socket there) but not change it; a symlink, or a folder of
    another owner, means the working copy is not as the grader made it.
    """
    folder = workdir / GRADER_FOLDER
    folder.mkdir(mode=0o755, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise GraderFolderError(f"{folder} is not the grader's folder as the grader made it")
    return folder
