"""The two worked examples of grading a class across machines: a Kubernetes Indexed Job and a GitHub Actions matrix.

The Job is validated against Kubernetes' own schemas (kubernetes-validate, strict: an unknown field fails), and
its shell line is run by a real shell for one index; the workflow is read as YAML and checked for what it needs.
"""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from mercadofresco.course.grading import commands
from mercadofresco.course.run import nbrun

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "deploy" / "grading-job.yaml"
MERGE = ROOT / "deploy" / "merge-job.yaml"
WORKFLOW = ROOT / "deploy" / "github-actions-grade.yml"
KUBERNETES = "1.33.0"  # the oldest version whose schema has every field the Job uses (appArmorProfile: 1.30)


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", [JOB, MERGE], ids=lambda p: p.name)
def test_the_jobs_are_valid_kubernetes(path):
    assert kubernetes_validate.validate(load(path), KUBERNETES, strict=True)


def test_the_validation_fails_a_job_with_a_field_kubernetes_does_not_know():
    job = load(JOB)
    broken = copy.deepcopy(job)
    broken["spec"]["completion"] = broken["spec"].pop("completions")  # one letter short
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_each_pod_grades_the_shard_of_its_completion_index():
    job = load(JOB)
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    shards = int(next(e["value"] for e in container["env"] if e["name"] == "SHARDS"))
    assert spec["completionMode"] == "Indexed" and spec["completions"] == shards and pod["restartPolicy"] == "Never"
    line = container["args"][0].replace("python -m mercadofresco.course.grading", "echo")  # the shell expands it
    printed = subprocess.run(
        ["/bin/sh", "-c", line],
        env={"JOB_COMPLETION_INDEX": "2", "SHARDS": str(shards), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert printed[:2] == ["grade", "/class/submissions"]
    assert printed[printed.index("--shard") + 1] == f"3/{shards}"
    assert commands.parse_shard(f"3/{shards}") == (3, shards)
    jobs = int(printed[printed.index("--jobs") + 1])
    memory = container["resources"]["limits"]["memory"]
    assert int(re.fullmatch(r"(\d+)Gi", memory).group(1)) * 1024 >= jobs * nbrun.Limits().memory_mb
    assert container["securityContext"]["runAsUser"] == 0  # the isolation needs root, and nothing else does
    assert load(MERGE)["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonRoot"] is True


def test_the_workflow_grades_a_matrix_of_shards_and_merges_their_artifacts():
    workflow = load(WORKFLOW)
    assert "workflow_dispatch" in workflow[True]  # YAML 1.1 reads the key `on` as true
    grade, merge = workflow["jobs"]["grade"], workflow["jobs"]["merge"]
    shards = int(workflow["env"]["SHARDS"])
    assert grade["strategy"]["matrix"]["shard"] == list(range(1, shards + 1))
    assert grade["strategy"]["fail-fast"] is False
    steps = {step.get("uses", step.get("name")): step for step in grade["steps"]}
    grading_step = next(step["run"] for step in grade["steps"] if "grading grade" in step.get("run", ""))
    assert '--shard "${{ matrix.shard }}/$SHARDS"' in grading_step and "--results results" in grading_step
    assert steps["actions/upload-artifact@v4"]["with"]["name"] == "results-shard-${{ matrix.shard }}"
    assert merge["needs"] == "grade"
    download = next(step for step in merge["steps"] if step.get("uses") == "actions/download-artifact@v4")
    assert download["with"] == {"pattern": "results-shard-*", "merge-multiple": True, "path": "results/"}
    assert any("grading merge results" in step.get("run", "") for step in merge["steps"])


def test_the_instructor_guide_says_how_to_run_each():
    guide = (ROOT / "docs" / "instructor.md").read_text()
    for text in ("deploy/grading-job.yaml", "deploy/merge-job.yaml", "deploy/github-actions-grade.yml", "--shard"):
        assert text in guide, text
