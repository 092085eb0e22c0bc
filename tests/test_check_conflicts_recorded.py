"""check-conflicts --onto uses the recorded resolutions, as rebase does, and agrees with it.

A conflict with a recorded resolution (resolutions/<id>/) that applies is
``resolved``: not a problem, named in the report, and the replay goes on
from the resolved tree, which is the tree ``series rebase`` then makes. A
resolution recorded for another conflict is not used: the conflict stays
one, and the note says why.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from helpers import Project, git
from rebase_helpers import commit_upstream, moving_project, resolve_p1
from test_json import envelope
from test_rebase import rebase
from test_rebase_real import applied


def check(project: Project, onto: str, upstream: Path) -> tuple[int, dict[str, Any]]:
    """The --json report, checked against docs/json-schema.json."""
    code, data = envelope(
        project, "check-conflicts", "--no-matrix", "--onto", onto, "--upstream", str(upstream)
    )
    assert code in (0, 3), data["error"]
    return code, data


def rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in data["onto"]["patches"]}


def recorded_elsewhere(tmp_path: Path) -> tuple[Project, Project]:
    """A project whose rebase recorded P1's resolution, and a pristine copy that has it."""
    pristine = tmp_path / "pristine"
    project = moving_project(tmp_path / "a", conflict=True)
    shutil.copytree(project.root, pristine, ignore=shutil.ignore_patterns("work"))
    assert rebase(project)[0] == 3
    resolve_p1(project.work)
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    shutil.copytree(project.root / "resolutions", pristine / "resolutions")
    return project, Project(pristine, project.upstream, project.commit)


def test_a_recorded_resolution_resolves_the_conflict_as_rebase_does(tmp_path: Path) -> None:
    project, other = recorded_elsewhere(tmp_path)
    (path,) = (other.root / "resolutions" / "P1").glob("*.patch")
    name = f"resolutions/P1/{path.name}"
    code, data = check(other, "main", other.upstream)
    assert code == 0, data["problems"]
    p1 = rows(data)["P1"]
    assert (p1["status"], p1["replay"], p1["resolution"]) == ("resolved", "resolved", name)
    assert p1["files"] == ["pkg/core.py"]
    assert p1["note"] == f"conflicts, resolved by {name}"
    assert any(name in n for n in data["notes"])
    assert data["ok"] and data["exit_code"] == 0
    # The replay went on from the resolved tree: the trees rebase made, patch by patch.
    main = git(project.upstream, "rev-parse", "main")
    made = git(project.work, "log", "--reverse", "--format=%T", f"{main}..series").split()
    assert [r["tree"] for r in data["onto"]["patches"]] == made
    # In text too.
    code, out, err = other.run(
        "check-conflicts", "--no-matrix", "--onto", "main", "--upstream", str(other.upstream)
    )
    assert code == 0, err
    assert f"conflicts, resolved by {name}" in " ".join(out.split())
    assert "ok: the series fits" in out
    # The other project's rebase does what check-conflicts said.
    assert other.run("apply")[0] == 0
    code, out, err = rebase(other)
    assert code == 0, err
    assert git(other.work, "rev-parse", "series^{tree}") == made[-1]


def test_a_resolution_made_for_another_conflict_leaves_the_conflict(tmp_path: Path) -> None:
    _, other = recorded_elsewhere(tmp_path)
    up = other.upstream
    git(up, "checkout", "-q", "-b", "other", "v1.0")
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -2\n", "core: f1 returns -2")
    code, data = check(other, "other", up)
    assert code == 3
    p1 = rows(data)["P1"]
    assert (p1["status"], p1["replay"], p1["resolution"]) == ("conflict", "conflict", None)
    assert "made for another conflict" in p1["note"]
    assert any(p.startswith("P1 conflicts on other by itself") for p in data["problems"])


def test_the_real_series_check_agrees_with_its_rebase_onto_master(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    """The issue's scenario: the recorded resolutions (P18's), the shared excerpt's master."""
    project = applied(tmp_path, shared_upstream, project_copy, recorded=True)
    code, data = check(project, "master", shared_upstream)
    assert code == 0, data["problems"]
    verdicts = {pid: row["status"] for pid, row in rows(data).items()}
    recorded = sorted(p.name for p in (project.root / "resolutions").iterdir())
    assert "P18" in recorded  # and P23, since wave 2
    assert {pid: verdicts.pop(pid) for pid in recorded} == dict.fromkeys(recorded, "resolved")
    assert set(verdicts.values()) == {"clean"}
    (path,) = (project.root / "resolutions" / "P18").glob("*.patch")
    assert rows(data)["P18"]["resolution"] == f"resolutions/P18/{path.name}"
    code, out, err = project.run("rebase", "--onto", "master", "--upstream", str(shared_upstream))
    assert code == 0, err
    assert "resolved (recorded)" in out
    assert git(project.work, "rev-parse", "series^{tree}") == data["onto"]["patches"][-1]["tree"]
