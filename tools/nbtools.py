"""Maintainer tools for the lesson notebooks: run them in place, deterministically.

    python tools/nbtools.py execute notebooks/01_delivery_guarantees.ipynb   # refresh outputs
    python tools/nbtools.py execute notebooks/*.ipynb
    python tools/nbtools.py links                                            # previous/next links, restart note

Learners never need this: the committed notebooks already carry their outputs.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def nbval_sanitizers(path: Path = ROOT / "tests" / "nbval_sanitize.cfg") -> list[tuple[re.Pattern, str]]:
    """The (pattern, replacement) pairs of the project's nbval sanitize file, as strict nbval applies them."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return [(re.compile(parser[name]["regex"]), parser[name]["replace"]) for name in parser.sections()]


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
    os.environ.setdefault("MERCADOFRESCO_WHOLE_RUN", "1")  # labs.WHOLE_RUN_ENV: a lab's selfcheck cell idles


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


NAV_ID = "nav-links"
RESTART = (
    "*After a kernel restart, run every cell again from the top (Run → Run All Cells): "
    "each panel and each experiment needs the cells above it.*"
)
# Where each lab fits in the course: after the notebook that teaches what it needs.
LAB_AFTER = {
    "04": ("lab1_double_charge.ipynb", "Lab 1, the double charge of 48.20 € (exercise 1)"),
    "11": ("lab2_dlq_runbook.ipynb", "Lab 2, 340 messages in the DLQ on a Monday (exercise 2)"),
    "13": ("lab3_outbox.ipynb", "Lab 3, the outbox for 1 order in 900 without an event (exercise 3)"),
}


def title(notebook: object) -> str:
    """A notebook's first heading, without the #."""
    return notebook.cells[0].source.splitlines()[0].lstrip("# ").strip()


def nav_source(paths: list[Path], index: int, titles: list[str]) -> str:
    """The last cell of notebook `index`: previous and next, and the lab that fits after it."""
    parts = []
    if index > 0:
        parts.append(f"**Previous:** [{titles[index - 1]}]({paths[index - 1].name})")
    if index + 1 < len(paths):
        parts.append(f"**Next:** [{titles[index + 1]}]({paths[index + 1].name})")
    text = "---\n\n" + " · ".join(parts)
    lab = LAB_AFTER.get(paths[index].name[:2])
    if lab:
        text += f"\n\n**Now the lab:** [{lab[1]}](../labs/{lab[0]}), which uses what this notebook showed."
    return text


def links(folder: Path = ROOT / "notebooks") -> list[Path]:
    """Give every notebook its previous/next cell and its first cell the restart note; return what changed."""
    import nbformat

    paths = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    notebooks = [nbformat.read(path, as_version=4) for path in paths]
    titles = [title(notebook) for notebook in notebooks]
    changed = []
    for index, (path, notebook) in enumerate(zip(paths, notebooks, strict=True)):
        before = nbformat.writes(notebook)
        if RESTART not in notebook.cells[0].source:
            notebook.cells[0].source += "\n\n" + RESTART
        notebook.cells = [cell for cell in notebook.cells if cell.get("id") != NAV_ID]
        nav = nbformat.v4.new_markdown_cell(nav_source(paths, index, titles))
        nav["id"] = NAV_ID
        notebook.cells.append(nav)
        if nbformat.writes(notebook) != before:
            nbformat.write(notebook, path)
            changed.append(path)
    return changed


def main(argv: list[str]) -> int:
    if argv == ["links"]:
        for path in links():
            print(f"linked {path.name}")
        return 0
    if len(argv) < 2 or argv[0] != "execute":
        print(__doc__)
        return 2
    quiet_environment()
    for name in argv[1:]:
        print(f"{name}: {execute(Path(name)):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
