"""Maintainer tools for the lesson notebooks: run them in place, deterministically.

    python tools/nbtools.py execute notebooks/01_delivery_guarantees.ipynb   # refresh outputs
    python tools/nbtools.py execute notebooks/*.ipynb

Learners never need this: the committed notebooks already carry their outputs.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quiet_environment() -> None:
    """Keep matplotlib, IPython and Jupyter caches inside the project, not in $HOME."""
    cache = ROOT / ".cache"
    for name, sub in [
        ("MPLCONFIGDIR", "matplotlib"),
        ("IPYTHONDIR", "ipython"),
        ("JUPYTER_CONFIG_DIR", "jupyter/config"),
        ("JUPYTER_DATA_DIR", "jupyter/data"),
        ("JUPYTER_RUNTIME_DIR", "jupyter/runtime"),
        ("XDG_RUNTIME_DIR", "xdg/runtime"),
        ("XDG_CACHE_HOME", "xdg/cache"),
    ]:
        path = cache / sub
        path.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault(name, str(path))
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


def execute(path: Path, timeout: int = 120) -> float:
    """Run a notebook top to bottom in a fresh kernel, write its outputs back, return the seconds it took."""
    import nbformat  # imported here: the tests import this module only for quiet_environment()
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    elapsed = time.perf_counter() - started
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)
    return elapsed


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "execute":
        print(__doc__)
        return 2
    quiet_environment()
    for name in argv[1:]:
        print(f"{name}: {execute(Path(name)):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
