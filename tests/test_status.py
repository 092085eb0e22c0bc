"""series status in each state of a checkout; the warning of commands that read patches/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import PatchSpec, Project, git, make_project
from rebase_helpers import moving_project, resolve_p1
from test_rebase import rebase


def status(project: Project) -> dict[str, Any]:
    code, out, err = project.run("status", "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_status_without_a_checkout(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    data = status(project)
    assert data["checkout"] is None and "series apply" in data["next"]
    code, out, _ = project.run("status")
    assert code == 0 and "checkout:   none" in out


def test_status_of_a_fresh_checkout_then_of_local_work(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply", "--to", "P2")[0] == 0
    data = status(project)
    assert [p["applied"] for p in data["patches"]] == [True, True, False]
    assert data["drift"] == {"known": True, "patches": [], "pin": False}
    assert data["checkout"]["head"] == "refs/heads/series"
    assert "apply" in data["next"]
    (project.work / "pkg" / "core.py").write_text("edited\n")
    assert status(project)["uncommitted"] == ["pkg/core.py"]
    git(project.work, "commit", "-qam", "fix P2 in the checkout")
    data = status(project)
    assert len(data["unexported"]) == 1 and "series export" in data["next"]
    _code, _out, err = project.run("check-conflicts", "--no-matrix")
    assert "are not in patches/" in err and "fix P2 in the checkout" in err


def test_status_shows_patches_changed_under_the_checkout(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    patch = project.root / "patches" / "perf-P2.patch"
    patch.write_text(patch.read_text().replace("Why: test.", "Why: a better reason."))
    data = status(project)
    assert data["drift"]["patches"] == ["P2"] and "apply" in data["next"]


def test_status_during_and_after_a_rebase(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    data = status(project)
    rb = data["rebase"]
    assert rb["stopped_at"] == "P1" and rb["files"] == ["pkg/core.py"]
    assert "--continue" in data["next"] and data["checkout"]["head"].startswith("detached")
    _code, out, _ = project.run("status")
    assert "stopped at P1 (pkg/core.py)" in out
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    data = status(project)
    assert data["rebase"] is None and data["next"].startswith("nothing to do")
    assert data["pin"]["sdist"] is None and data["pin"]["source"] == "git"


def test_status_at_a_stop_whose_conflicts_were_reset(tmp_path: Path) -> None:
    """A --skip cut short (or a reset) leaves the stop with nothing in the checkout."""
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    git(project.work, "reset", "-q", "--hard")
    data = status(project)
    assert data["rebase"]["stopped_at"] == "P1"
    assert "holds nothing of P1" in data["next"] and "--skip` drops P1" in data["next"]
    assert project.run("rebase", "--skip")[0] == 0
    assert status(project)["rebase"] is None


def test_drift_lists_only_the_patches_that_were_edited(tmp_path: Path) -> None:
    """Issue 20: after P5 and P18 were edited, drift listed 11 patches. Here: five
    patches, the first and the fourth edited in patches/; the others, stacked on them
    (two on the same file), did not change and are not drift."""
    specs = [
        PatchSpec("P1", "core: f1", {"pkg/core.py": ("return 1\n", "return 101\n")}),
        PatchSpec("P2", "core: f3", {"pkg/core.py": ("return 3\n", "return 303\n")}),
        PatchSpec("P3", "util: VALUE_5", {"pkg/util.py": ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}),
        PatchSpec("P4", "util: VALUE_9", {"pkg/util.py": ("VALUE_9 = 9\n", "VALUE_9 = 99\n")}),
        PatchSpec("P5", "core: f9", {"pkg/core.py": ("return 9\n", "return 909\n")}),
    ]
    project = make_project(tmp_path, specs)
    assert project.run("apply")[0] == 0
    for pid, old, new in (
        ("P1", "+    return 101", "+    return 111"),
        ("P4", "+VALUE_9 = 99", "+VALUE_9 = 98"),
    ):
        patch = project.root / "patches" / f"perf-{pid}.patch"
        patch.write_text(patch.read_text().replace(old, new))
    data = status(project)
    assert data["drift"]["patches"] == ["P1", "P4"], data["drift"]
    _, out, _ = project.run("status")
    assert "drift:      patches/ vs checkout: P1, P4" in out
    # what apply then does agrees: it rebuilds from P1, and the checkout holds the edits
    assert project.run("apply")[0] == 0
    assert status(project)["drift"]["patches"] == []
    assert "return 111" in (project.work / "pkg/core.py").read_text()


def test_status_says_what_it_could_not_check_and_how(tmp_path: Path) -> None:
    """Not "drift: unknown" and then "nothing to do": what was not checked, and how to."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    assert project.run("cache", "clean")[0] == 0  # the base is no longer in the cache
    data = status(project)
    assert data["drift"]["known"] is False and "not in the cache" in data["drift"]["why"]
    assert "nothing to do" not in data["next"]
    assert data["next"].startswith("drift not checked: `series check-conflicts --no-matrix`")
    _, out, _ = project.run("status")
    assert "drift:      not checked: the checkout's base" in out and "nothing to do" not in out
    # doing what it says makes the check possible
    assert project.run("check-conflicts", "--no-matrix")[0] == 0
    data = status(project)
    assert data["drift"] == {"known": True, "patches": [], "pin": False}
    assert data["next"].startswith("nothing to do")
