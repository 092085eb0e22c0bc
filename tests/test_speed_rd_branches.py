"""``series branches --dry-run`` and ``series range-diff``: few git processes, neither
GitPython nor rich imported, the same answers (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is the git processes each command starts (a ``git`` shim first on
PATH: GitPython's import alone runs ``git version`` twice), the modules it
imports, and that what it says is what git says asked pair by pair.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import PatchSpec, Project, git, make_project
from rebase_helpers import commit_upstream
from series.git import Repo
from series.git import run as git_run
from series.stack.rangediff import classify_diffs
from test_speed import ELEVEN, Counted, committed_project, drop, imported_after, one_by_one

# What `branches --dry-run` asks git (no `git version`): the checkout (is it one; its state
# and record; its branches and HEAD in one for-each-ref), the cache (the pin; the memo of
# the built stack).
BRANCHES_AT_MOST = 6


def test_branches_dry_run_starts_no_gitpython_and_few_git_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path, ELEVEN)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run("branches")
    out, calls = counted.run("branches", "--dry-run")
    assert "nothing to change" in out, out
    verbs = [c.split()[0] for c in calls]
    assert "version" not in verbs, calls
    assert len(calls) <= BRANCHES_AT_MOST, calls
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), "branches", "--dry-run")
    assert "series.stack.branches" in modules
    assert not {"git", "rich"} & modules, sorted({"git", "rich"} & modules)


def test_branches_answers_the_same_without_gitpython(tmp_path: Path) -> None:
    """What it plans and writes: a moved patch moves its branch and the ones after it."""
    project = make_project(tmp_path, ELEVEN)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run("branches")
    before = {b: git(project.work, "rev-parse", b) for b in ("perf-P1", "perf-P6", "perf-P11")}
    drop(project, "P5")
    out, calls = counted.run("branches", "--dry-run", "--json")
    items = {i["branch"]: i for i in json.loads(out)["branches"]}
    assert items["perf-P1"]["action"] == "unchanged"
    assert items["perf-P6"]["action"] == items["perf-P11"]["action"] == "move"
    assert items["perf-P5"]["action"] == "delete"
    assert [git(project.work, "rev-parse", b) for b in before] == list(before.values())
    assert "version" not in [c.split()[0] for c in calls]
    counted.run("branches", "--prune")
    assert git(project.work, "rev-parse", "perf-P6") == items["perf-P6"]["new"]
    assert not git(project.work, "branch", "--list", "perf-P5")


def test_range_diff_starts_no_gitpython_and_no_diff_when_git_says_equal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pair git marks ``=`` is unchanged without a diff of its own."""
    project, counted = committed_project(tmp_path)
    drop(project, "P5")
    out, calls = counted.run("range-diff", "--json")
    verbs = [c.split()[0] for c in calls]
    assert "version" not in verbs and "diff-tree" not in verbs, calls
    assert verbs.count("range-diff") == 1, calls
    report = json.loads(out)
    kinds = {p["id"]: p["kind"] for p in report["patches"]}
    assert kinds == {**{s.id: "unchanged" for s in ELEVEN}, "P5": "dropped"}
    assert kinds == oracle_kinds(counted, report)
    texts = {p["id"]: p["range_diff"] for p in report["patches"] if p["old"] and p["new"]}
    assert texts == one_by_one(counted, report)
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), "range-diff")
    assert "series.stack.rangediff" in modules
    assert not {"git", "rich"} & modules, sorted({"git", "rich"} & modules)


def oracle_kinds(counted: Counted, report: dict[str, object]) -> dict[str, str]:
    """Each row's class from the two commits' diffs asked of git one by one."""
    cache = counted.cache / "upstream.git"
    argv = ["git", "diff-tree", "-p", "--full-index", "--no-renames", "--no-color"]

    def diff(commit: str) -> bytes:
        return subprocess.run([*argv, f"{commit}^", commit], cwd=cache, capture_output=True).stdout

    kinds = {}
    for p in report["patches"]:  # type: ignore[attr-defined]
        if p["old"] and p["new"]:
            kinds[p["id"]] = classify_diffs(diff(p["old"]), diff(p["new"]))
        else:
            kinds[p["id"]] = p["kind"]
    return kinds


UTIL = "pkg/util.py"
TWO = [
    PatchSpec("P1", "core: f1 returns 101", {"pkg/core.py": ("return 1\n", "return 101\n")}),
    PatchSpec("P2", "core: f9 returns 909", {"pkg/core.py": ("return 9\n", "return 909\n")}),
]


def with_rename(tmp_path: Path) -> Project:
    """P1, P2, and P3 moving pkg/util.py to pkg/moved.py whole (a rename, 100%)."""
    project = make_project(tmp_path, TWO)
    mover = tmp_path / "mover"
    git(tmp_path, "clone", "-q", str(project.upstream), str(mover))
    git(mover, "mv", UTIL, "pkg/moved.py")
    message = "util: move to moved.py\n\nWhy: test.\n\nSeries-Id: P3"
    git(mover, "commit", "-qm", message, date="2026-02-03T10:00:00+00:00")
    patch = git(mover, "format-patch", "-1", "-M", "--stdout", "HEAD") + "\n"
    (project.root / "patches" / "perf-P3.patch").write_text(patch)
    with (project.root / "series.toml").open("a") as toml:
        toml.write(
            '\n[[patch]]\nid = "P3"\ntitle = "util: move to moved.py"\n'
            'file = "patches/perf-P3.patch"\npr = 1002\nbranch = "perf-P3"\n'
            'state = "open"\nsubset = []\n'
        )
    return project


def test_range_diff_diffs_a_rename_git_marks_equal(tmp_path: Path) -> None:
    """P3 moves a file upstream then changed: git's range-diff, which finds renames, shows
    the same rename (``=``); the lines P3 removes and adds are not the same (diffs without
    renames), so it is ``content changed`` as before, not ``unchanged``."""
    project = with_rename(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    commit_upstream(project.upstream, UTIL, "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20")
    counted.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    out, calls = counted.run("range-diff", "--json")
    report = json.loads(out)
    rows = {p["id"]: p for p in report["patches"]}
    assert " = " in rows["P3"]["range_diff"].splitlines()[0]
    assert rows["P3"]["kind"] == "content changed"
    assert {p: r["kind"] for p, r in rows.items()} == oracle_kinds(counted, report)
    assert [c.split()[0] for c in calls].count("diff-tree") == 1, calls


def test_the_long_lived_cat_file_without_gitpython_answers_as_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lookups and reads in light mode: missing and ambiguous names, blobs, another type,
    and a cat-file that died on the way (git asked directly, the same answers)."""
    monkeypatch.setattr(git_run, "_LIGHT", [True])
    project = make_project(tmp_path)
    repo = Repo(project.upstream)
    head = git(project.upstream, "rev-parse", "HEAD")
    blob = git(project.upstream, "rev-parse", f"HEAD:{UTIL}")
    data = (project.upstream / UTIL).read_bytes()
    for _ in range(2):  # the second round after killing both processes
        assert repo.objects.rev("HEAD") == head
        assert repo.objects.rev("no-such-ref") is None
        assert repo.objects.rev("HEAD\nHEAD") is None
        assert repo.objects.rev("no such") is None  # "no such^{commit} missing"
        assert repo.objects.has(blob) and not repo.objects.has("0" * 40)
        assert repo.objects.read_blob(blob) == data
        assert repo._run.object_data(head, "blob") is None  # a commit, not a blob
        for batch in [v for k, v in vars(repo._run).items() if k.startswith("_plain")]:
            batch.proc.kill()
            batch.proc.wait()
    assert git_run._LIGHT == [True]


def test_light_processes_ends_with_its_block() -> None:
    assert git_run._LIGHT == [False]
    with git_run.light_processes():
        assert git_run._LIGHT == [True]
    assert git_run._LIGHT == [False]
