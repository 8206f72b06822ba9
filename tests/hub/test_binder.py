"""What Binder and a JupyterHub's image build (issue 25): repo2docker's own Dockerfile for the repository and for
the learner bundle, from `jupyter-repo2docker --no-build` (no Docker engine needed), read for its key lines.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests import small_box

ROOT = Path(__file__).resolve().parents[2]
REPO2DOCKER = Path(sys.executable).with_name("jupyter-repo2docker")
TARGET = "/srv/mercadofresco-workbook"  # outside the home, which a hub covers with each learner's own volume


def dockerfile(folder: Path, *options: str) -> str:
    """repo2docker's Dockerfile for `folder`, for the user BinderHub and Zero to JupyterHub's images run as."""
    command = [str(REPO2DOCKER), "--no-build", "--user-id", "1000", "--user-name", "jovyan", *options, str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr + done.stdout  # its log says which Python it chose, then the Dockerfile


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository as a clean clone of it has it (tracked and new files, as on disk)."""
    folder = tmp_path_factory.mktemp("clone")
    return small_box.copy_workbook(folder, -1, -1)


def _key_lines(text: str) -> None:
    """The lines of an image with the workbook's pinned environment: Python 3.11, binder/, then postBuild."""
    assert "Building conda environment for python=3.11" in text, "the image's Python must be binder/runtime.txt's"
    copy = text.index("COPY --chown=1000:1000 src/ ${REPO_DIR}/")
    install = text.index('pip install --no-cache-dir -r "binder/requirements.txt"')
    post_build = text.index("./binder/postBuild")
    assert copy < install < post_build, "the workbook must be copied before its editable install, postBuild last"
    assert "environment.yml" not in text, "binder/ must win over the root environment.yml (the developers' [dev])"
    assert not re.search(r"^\s*(ADD|RUN\s+(curl|wget))", text, re.MULTILINE), "nothing fetched but the packages"


def test_repo2docker_builds_the_repository_with_the_pinned_environment_and_postbuild(clone):
    _key_lines(dockerfile(clone))
    requirements = (clone / "binder" / "requirements.txt").read_text().split()
    assert requirements[requirements.index("-c") + 1] == "../constraints.txt"  # relative to binder/
    assert (clone / "binder" / ".." / "constraints.txt").resolve() == (clone / "constraints.txt").resolve()
    assert "-e" in requirements and requirements[requirements.index("-e") + 1] == "."  # from ${REPO_DIR}


def test_every_package_the_image_installs_by_name_has_a_pin():
    """A dependency added without a pin would reach Binder at whatever version is newest on the day it builds."""
    pinned = {
        _name(line.split("==")[0]) for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line
    }
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = [line for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines() if line[:1].isalpha()]
    wanted = {_name(Requirement(text).name) for text in [*project["dependencies"], *named]}
    assert wanted and not wanted - pinned, f"not in constraints.txt: {sorted(wanted - pinned)}"


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def test_a_hub_image_from_the_learner_bundle_has_no_solutions_and_lives_outside_the_home(unpacked):
    text = dockerfile(unpacked, "--target-repo-dir", TARGET)
    _key_lines(text)
    assert "ARG REPO_DIR=${HOME}" in text  # what --target-repo-dir sets, as a build argument (not in the text)
    assert not (unpacked / "solutions").exists() and (unpacked / "binder" / "postBuild").is_file()


def test_postbuild_merges_the_kernels_transport_into_the_images_server_config_and_keeps_the_rest(tmp_path):
    """binder/postBuild's settings reach the file a learner's server reads (tests/hub/test_hub.py shows they work)."""
    script = (ROOT / "binder" / "postBuild").read_text()
    merge = script.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    config = tmp_path / "etc" / "jupyter" / "jupyter_server_config.json"
    config.parent.mkdir(parents=True)
    config.write_text('{"ServerApp": {"root_dir": "/srv"}, "KernelManager": {"shutdown_wait_time": 3}}')
    run = f"import sys; sys.prefix = {str(tmp_path)!r}\n{merge}"
    subprocess.run([sys.executable, "-c", run], cwd=ROOT, check=True)
    merged = json.loads(config.read_text())
    assert merged == {"ServerApp": {"root_dir": "/srv"}, "KernelManager": {"shutdown_wait_time": 3, "transport": "ipc"}}
