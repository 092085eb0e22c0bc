"""The GitHub workflow (ci/github/workflow.yml), checked offline.

actionlint (from the test extra) must find nothing in it; the matrix it runs
is made by ci/github/plan.py, so that script is run on the real series.toml
and must name every patch; the scripts it calls (seed, summary) run here on
real repositories and real JUnit files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import git, make_upstream

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "ci/github/workflow.yml"
SCRIPTS = ROOT / "ci/github"


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    if tool is None:
        pytest.fail("actionlint is not installed: it is part of the [test] extra")
    # -shellcheck= and -pyflakes=: the wheel ships neither, and a check that
    # depends on what else the machine has would pass on one and fail on another.
    argv = [tool, "-shellcheck=", "-pyflakes=", "-no-color", "-oneline", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(data, dict)
    return data


def script(name: str, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(SCRIPTS / name), *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False, **kw)


def test_actionlint_finds_nothing() -> None:
    proc = actionlint(WORKFLOW)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """The check above can fail: a typo in a needs: and in an output is caught."""
    broken = tmp_path / "series.yml"
    text = WORKFLOW.read_text()
    broken.write_text(text.replace("needs: [plan, test]", "needs: [plan, tset]"))
    proc = actionlint(broken)
    assert proc.returncode == 1
    assert 'needs job "tset" which does not exist' in proc.stdout


def manifest_ids(root: Path) -> list[str]:
    data = tomllib.loads((root / "series.toml").read_text())
    return [p["id"] for p in data["patch"]]


@pytest.mark.parametrize("source", ["auto", "manifest"])
def test_plan_covers_every_patch_of_series_toml(
    tmp_path: Path, project_copy: Path, source: str
) -> None:
    out = tmp_path / "github_output"
    # auto: the series of this venv, whose `test --list --json` is used once it has one
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = _env(GITHUB_OUTPUT=str(out), PATH=path)
    proc = script("plan.py", "--from", source, cwd=project_copy, env=env)
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    matrix = json.loads(outputs["matrix"])
    assert [job["id"] for job in matrix["include"]] == manifest_ids(project_copy)
    assert json.loads(outputs["ids"]) == manifest_ids(project_copy)


def test_the_test_jobs_take_their_matrix_from_the_plan() -> None:
    jobs = workflow()["jobs"]
    plan_steps = [s for s in jobs["plan"]["steps"] if s.get("id") == "plan"]
    assert plan_steps and "ci/github/plan.py" in plan_steps[0]["run"]
    assert jobs["plan"]["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    test = jobs["test"]
    assert test["needs"] == "plan"
    assert test["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    runs = " ".join(s.get("run", "") for s in test["steps"])
    assert 'series test "$PATCH_ID" --junit "junit/$PATCH_ID.xml"' in runs
    cache = [s for s in test["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert cache and "${{ matrix.id }}" in cache[0]["with"]["key"]
    assert "hashFiles('series.toml', 'patches/**'" in cache[0]["with"]["key"]
    results = jobs["results"]
    assert results["if"] == "always()" and set(results["needs"]) == {"plan", "test"}


def test_every_install_goes_through_the_constraints() -> None:
    for name, job in workflow()["jobs"].items():
        for step in job["steps"]:
            run = step.get("run", "")
            if "pip install" in run:
                assert "-c ci/constraints.txt" in run, f"{name}: {run}"
            uses = step.get("uses")
            if uses:
                assert uses.split("@")[1] in ("v4", "v5"), f"{name}: {uses} is not a pinned major"


def test_plan_refuses_a_duplicate_id(tmp_path: Path, project_copy: Path) -> None:
    text = (project_copy / "series.toml").read_text().replace('id = "P2"', 'id = "P1"')
    (tmp_path / "series.toml").write_text(text)
    proc = script("plan.py", "--from", "manifest", "--root", str(tmp_path))
    assert proc.returncode == 2
    assert "patch id P1 appears twice" in proc.stderr and "hint:" in proc.stderr


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


JUNIT = """<?xml version='1.0' encoding='utf-8'?>
<testsuites name="series test">
  <testsuite name="{id} (stacked)" tests="2" failures="{f}" errors="0" skipped="1">
    <testcase classname="{id}" name="keras/src/a_test.py::test_a" />
    <testcase classname="{id}" name="keras/src/a_test.py::test_b">{case}</testcase>
  </testsuite>
</testsuites>
"""


def write_junit(directory: Path, patch: str, *, failed: bool) -> None:
    case = '<failure message="new failure">boom</failure>' if failed else "<skipped />"
    text = JUNIT.format(id=patch, f=int(failed), case=case)
    (directory / f"{patch}.xml").write_text(text)


def test_summary_passes_when_every_patch_passed(tmp_path: Path) -> None:
    write_junit(tmp_path, "P1", failed=False)
    write_junit(tmp_path, "P2", failed=False)
    proc = script("junit_summary.py", str(tmp_path), "--expect", '["P1", "P2"]')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| P1 | ok | 2 | 0 | 0 | 1 |" in proc.stdout
    assert "**2 of 2 patches pass**" in proc.stdout


def test_summary_fails_on_a_failure_and_on_a_missing_result(tmp_path: Path) -> None:
    write_junit(tmp_path, "P1", failed=True)
    proc = script("junit_summary.py", str(tmp_path), "--expect", '["P1", "P2"]')
    assert proc.returncode == 1
    assert "| P1 | failed | 2 | 1 | 0 | 0 |" in proc.stdout
    assert "| P2 | no result |" in proc.stdout
    assert "failing: P1, P2" in proc.stdout


def test_seed_fetches_the_pin_and_onto_shallowly(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    pin = make_upstream(upstream)
    for n in range(3):
        (upstream / "NEWS").write_text(f"{n}\n")
        git(upstream, "add", "NEWS")
        git(upstream, "commit", "-qm", f"upstream {n}")
    project = tmp_path / "project"
    project.mkdir()
    url = upstream.as_uri()  # file://: the transport that, like https, can fetch shallow
    (project / "series.toml").write_text(
        f'[upstream]\nrepository = "{url}"\nref = "v1.0"\ncommit = "{pin}"\n'
    )
    cache = tmp_path / "cache"
    proc = script(
        "seed_upstream.py", "--onto", "main", cwd=project, env=_env(SERIES_CACHE_DIR=str(cache))
    )
    assert proc.returncode == 0, proc.stderr
    repo = cache / "upstream.git"
    assert git(repo, "rev-parse", "refs/ci/pin^{commit}") == pin
    assert git(repo, "rev-parse", "refs/ci/onto") == git(upstream, "rev-parse", "main")
    # main's three commits since the pin, and the pin alone: nothing older.
    assert git(repo, "rev-list", "--count", "refs/ci/onto", "^refs/ci/pin") == "3"
    assert (repo / "shallow").is_file()
