"""The learner bundle starts (issue 23, part 6): unpacked in a fresh folder, its own `make start` installs the
workbook and serves notebook 00, and its `make check LAB=…` checks a lab; nothing of solutions/ or of the grader.

Offline and quick: the install is the bundle's own Makefile recipe (a venv, then `pip install -e .`), but the venv
reads the packages of the environment running these tests (a .pth file) instead of an index, and pip is told
`--no-index --no-deps --no-build-isolation` and reads no pip.conf. So pip builds and installs only the bundle's
package, editable, and fetches nothing. 10 s on an idle machine (25 s under load), mostly JupyterLab and the kernel.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from mercadofresco.course.handout import bundle

ROOT = Path(__file__).resolve().parents[2]
from tests.browser.lab import ISOLATED  # noqa: E402 (the folders of a run's own, as the browser suite gives its JupyterLab)

LAB = "labs/lab1_double_charge.ipynb"
# The knobs install.mk has for this: pip even where uv is on PATH, no pip of the venv's own (it would shadow the
# reused one), no index.
OFFLINE = ["UV=", "VENV_ARGS=--without-pip", "PIP_ARGS=--no-index --no-deps --no-build-isolation"]
# What the machine's environment may hold that would reach the repository, an index, or change a make variable.
DROPPED = ("PIP_", "PYTHON", "VIRTUAL_ENV", "JUPYTER", "JPY_", "MAKE", "MFLAGS", "LAB", "VENV_ARGS", "MERCADOFRESCO_")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="the bundle's commands need make")


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    env = {name: value for name, value in os.environ.items() if not name.startswith(DROPPED)}
    ours = str(Path(sys.executable).parent)  # the repository's .venv/bin: the bundle's commands must not need it
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep) if part != ours)
    for name, sub in ISOLATED.items():
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(home / sub)
    env["PIP_CONFIG_FILE"] = os.devnull  # no index or find-links from the machine's pip configuration
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def make(folder: Path, env: dict[str, str], *arguments: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", *arguments], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def reuse_this_environment(folder: Path) -> None:
    """.venv in the bundle, without pip, reading the packages of the Python running the tests: the index, offline."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / ".venv")], check=True)
    python = folder / ".venv" / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip())
    reused = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "zz_reused_packages.pth").write_text("\n".join(reused) + "\n")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


@pytest.fixture(scope="module")
def started(unpacked, environment, tmp_path_factory):
    """`make start` in the unpacked bundle, installing first, until its JupyterLab answers; stopped afterwards."""
    reuse_this_environment(unpacked)
    port, token = free_port(), secrets.token_hex(16)
    config = {
        "ServerApp": {"open_browser": False, "ip": "127.0.0.1", "port": port, "port_retries": 0},
        "IdentityProvider": {"token": token},
    }
    (Path(environment["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.json").write_text(json.dumps(config))
    log_path = tmp_path_factory.mktemp("start") / "make-start.log"
    began = time.monotonic()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            ["make", "start", f"PYTHON={sys.executable}", *OFFLINE],
            cwd=unpacked,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # make and its JupyterLab in a process group of their own, stopped together
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"make start exited ({process.returncode}):\n{log_path.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"make start did not serve in 180 s:\n{log_path.read_text()[-3000:]}")
            try:
                get_json(f"{url}/api/status?token={token}")
                break
            except OSError:
                time.sleep(0.25)
        yield {"url": url, "token": token, "log": log_path, "seconds": time.monotonic() - began}
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def test_the_bundle_holds_the_learners_files_and_nothing_of_the_instructors(unpacked):
    names = {path.relative_to(unpacked).as_posix() for path in unpacked.rglob("*") if path.is_file()}
    for needed in (
        "README.md",
        "README.es.md",
        "Makefile",
        "install.mk",
        ".jupyterlab-settings/overrides.json",
        ".jupyterlab-settings/es/overrides.json",
        "notebooks/es/00_start_here.ipynb",
        "labs/es/lab1_double_charge.ipynb",
        "pyproject.toml",
        "constraints.txt",
        "notebooks/00_start_here.ipynb",
        LAB,
        "mercadofresco/course/selfcheck.py",
    ):
        assert needed in names, needed
    assert not [name for name in names if name.split("/")[0] in ("solutions", "tests", "tools", "benchmarks", ".git")]
    assert not [name for name in names if any(name.startswith(f"{room}/") for room in bundle.GRADER_ROOMS)]
    assert {"mercadofresco/course/protocol.py", "mercadofresco/course/checks.py"} <= names
    assert (unpacked / "README.md").read_text() == (ROOT / "learner" / "README.md").read_text()
    assert (unpacked / "Makefile").read_text() == (ROOT / "learner" / "Makefile").read_text()


def test_the_learners_readme_names_only_what_the_bundle_has(unpacked):
    readme = (unpacked / "README.md").read_text()
    for instructor_only in (
        "solutions/",
        "tests/",
        "tools/",
        "benchmarks/",
        "--hidden",
        "make test",
        "learner-bundle",
        "course.grading",
        "For instructors",
        "git checkout",
    ):
        assert instructor_only not in readme, instructor_only
    targets = set(re.findall(r"^([a-z][a-z-]*):", (unpacked / "Makefile").read_text(), re.MULTILINE))
    named = set(re.findall(r"\bmake (?:[A-Z]+=\S+ )?([a-z][a-z-]*)", readme))
    assert named == {"start", "start-es", "check", "clean"} and named <= targets, (named, targets)
    spanish = (unpacked / "README.es.md").read_text()  # the same guide in Spanish: the same commands
    assert set(re.findall(r"\bmake (?:[A-Z]+=\S+ )?([a-z][a-z-]*)", spanish)) == named
    quoted = re.findall(r"(?<!`)`([\w./-]*/[\w./-]*)`(?!`)", readme)
    paths = {name.removeprefix(f"{bundle.PREFIX}/") for name in quoted}
    assert LAB in paths and "notebooks/00_start_here.ipynb" in paths
    assert [path for path in sorted(paths) if not (unpacked / path).exists()] == []


def test_make_start_opens_jupyterlab_as_the_repositorys_does():
    """The same root and settings folder as the repository's `make start` (the browser suite's), on notebook 00."""

    def arguments(makefile: Path, variable: str) -> list[str]:
        text = makefile.read_text().replace("\\\n", " ")
        line = re.search(rf"^{variable} := \$\(BIN\)/\S+(?: -m)? \S+ (.+)$", text, re.MULTILINE).group(1)
        start = re.search(rf"^start: .*\n\t\$\({variable}\) (.+)$", text, re.MULTILINE).group(1)
        return [*line.split(), *start.split()]

    learner = arguments(ROOT / "learner" / "Makefile", "JUPYTER_LAB")
    assert learner == arguments(ROOT / "Makefile", "LAB")
    assert "--ServerApp.root_dir=." in learner and learner[-1] == "notebooks/00_start_here.ipynb"


def test_make_check_without_a_lab_says_how(unpacked, environment):
    result = make(unpacked, environment, "check")
    assert result.returncode != 0
    assert "make check LAB=labs/lab1_double_charge.ipynb" in result.stdout
    assert "labs/lab2_dlq_runbook.ipynb" in result.stdout  # the labs there are
    wrong = make(unpacked, environment, "check", "LAB=labs/lab9.ipynb")
    assert wrong.returncode != 0 and "no notebook 'labs/lab9.ipynb'" in wrong.stdout
    assert not (unpacked / ".venv" / ".installed").exists()  # it said so before installing anything


def test_make_start_installs_the_bundle_and_serves_notebook_00(started, unpacked):
    url, token = started["url"], started["token"]
    log = started["log"].read_text()
    assert "Installing the workbook into .venv" in log
    assert "Successfully installed mercadofresco-workbook" in (unpacked / ".venv" / "install.log").read_text()
    notebook = get_json(f"{url}/api/contents/notebooks/00_start_here.ipynb?token={token}")
    assert notebook["type"] == "notebook" and notebook["content"]["cells"]
    listing = {item["name"] for item in get_json(f"{url}/api/contents/?token={token}&content=1")["content"]}
    assert {"README.md", "notebooks", "labs", "mercadofresco"} <= listing and "solutions" not in listing
    # the bundle's .jupyterlab-settings: its overrides are JupyterLab's defaults now (no news prompt)
    settings = get_json(f"{url}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}")
    assert settings["schema"]["properties"]["fetchNews"]["default"] == "false"
    # what the learner's kernel imports is the bundle's package, without the grader's modules
    python = str(unpacked / ".venv" / "bin" / "python")
    code = "import mercadofresco, importlib.util as u; print(mercadofresco.__file__, u.find_spec(sys.argv[1]))"
    code = "import sys; " + code
    command = [python, "-c", code, "mercadofresco.course.grading"]
    found = subprocess.run(command, cwd="/", capture_output=True, text=True, check=True).stdout.split()
    assert found == [str(unpacked / "mercadofresco" / "__init__.py"), "None"]
    print(f"make start served notebook 00 after {started['seconds']:.1f} s (install included)")


def test_make_check_runs_a_blank_lab_and_reports_its_failures(started, unpacked, environment):
    result = make(unpacked, environment, "check", f"LAB={LAB}", f"PYTHON={sys.executable}", *OFFLINE)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "-m mercadofresco.course.selfcheck labs/lab1_double_charge.ipynb" in output
    assert "failed" in output and "NotImplementedError: your code here" in output, output
    assert "Traceback" not in output and "ModuleNotFoundError" not in output, output
