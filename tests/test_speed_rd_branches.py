"""``series branches --dry-run`` and ``series range-diff``: few git processes, neither
GitPython nor rich imported, the same answers (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is the git processes each command starts (a ``git`` shim first on
PATH: GitPython's import alone runs ``git version`` twice), the modules it
imports, and that what it says is what git says asked pair by pair.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers import PatchSpec, Project, git, make_project
from rebase_helpers import commit_upstream
from series import upstream
from series.builder import memo
from series.git import Repo
from series.git import run as git_run
from series.manifest import load
from series.project import Series
from series.stack import rangediff
from series.stack.rangediff import classify_diffs
from series.upstream.unreachable import recall, remember
from test_speed import (
    ELEVEN,
    HALVES,
    Counted,
    committed_project,
    drop,
    imported_after,
    one_by_one,
)

# What `branches --dry-run` asks git (no `git version`): the checkout (is it one; its
# branches and HEAD in one for-each-ref; its state and record through one cat-file), the
# cache (the pin through one cat-file; the memo of the built stack).
BRANCHES_AT_MOST = 5

# Modules neither command needs when the cache has the pin and the memo the stacks: the
# fetch and the sdist (tarfile, html.parser), the upstream revisions, the rebase state,
# logging (a line is written only under --verbose).
NOT_IMPORTED = {
    "git",
    "rich",
    "logging",
    "tarfile",
    "html.parser",
    "series.upstream.pin",
    "series.upstream.fetch",
    "series.upstream.sdist_download",
    "series.upstream.revision",
    "series.upstream.source",
    "series.stack.rebase_state",
}


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
    assert verbs.count("cat-file") == 2, calls  # one per repository, lookups and reads
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    shutil.rmtree(counted.cache / "branches")  # the full run (the answer kept: test_branches_kept)
    modules = imported_after("-C", str(project.root), "branches", "--dry-run")
    assert "series.stack.branches" in modules
    assert not NOT_IMPORTED & modules, sorted(NOT_IMPORTED & modules)


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
    # series' own check of git's version (series.git.version; the shim's, which is a
    # wrapper script, is asked each run and left out by GitShim); none of GitPython's
    assert "version" not in verbs and "diff-tree" not in verbs, calls
    assert verbs.count("range-diff") == HALVES, calls  # 10 pairs: two halves, each once
    report = json.loads(out)
    kinds = {p["id"]: p["kind"] for p in report["patches"]}
    assert kinds == {**{s.id: "unchanged" for s in ELEVEN}, "P5": "dropped"}
    assert kinds == oracle_kinds(counted, report)
    texts = {p["id"]: p["range_diff"] for p in report["patches"] if p["old"] and p["new"]}
    assert texts == one_by_one(counted, report)
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), "range-diff")
    assert "series.stack.rangediff" in modules
    assert not NOT_IMPORTED & modules, sorted(NOT_IMPORTED & modules)
    parsing = {"argparse", "gettext", "series.cli.parse"}  # a plain one: series.cli.plain
    assert not parsing & modules, sorted(parsing & modules)


# What `range-diff` asks git after a rebase, the project not a git repository (no process
# to say so): the memo of both stacks in one for-each-ref (started first, read once the
# earlier version is read), the checkout (is it one; the snapshot of the series before
# the rebase, its commit, trees and files through one cat-file), the cache (both pins
# through one cat-file, started with the listing; the range-diff, of 11 pairs in two
# halves at once on two cores: series.stack.rangediff.CUT_AT). The listing and the
# cache's cat-file run beside the checkout's, so which starts first is the machine's:
# compared without their order (range_diff_calls).
RANGE_DIFF_AFTER_REBASE = [  # the checkout told a repository from its files (no IS_REPO)
    "for-each-ref --format=%(refname) %(objectname) refs/series/stack/",
    "cat-file --batch-command",
    "cat-file --batch-command",
    "range-diff",
]


def range_diff_calls(verbs: list[str]) -> list[str]:
    """``verbs`` sorted, the range-diffs of the halves (series.stack.rangediff._cut) as one."""
    halves = verbs.count("range-diff")
    assert halves == HALVES, verbs
    return sorted([v for v in verbs if v != "range-diff"] + ["range-diff"] * (halves > 0))


def _rebased_then_range_diff(project: Project, tmp_path: Path) -> tuple[Counted, Any, Any]:
    """``project`` applied, rebased onto an upstream commit of UTIL, range-diff run once
    (it builds the series before the rebase on its pin: the memo), then counted: the
    counter, the second range-diff's JSON report, and its git calls."""
    counted = Counted(project, tmp_path)
    counted.run("apply")
    commit_upstream(project.upstream, UTIL, "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20")
    counted.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    counted.run("range-diff")
    out, calls = counted.run("range-diff", "--json")
    return counted, json.loads(out), calls


def test_range_diff_after_a_rebase_reads_what_it_compares_with_few_git_processes(
    tmp_path: Path,
) -> None:
    """The series before the rebase (its snapshot in the checkout) against patches/ now:
    each repository read through one cat-file, the memo listed once, both pins found in the
    cache without the fetch; the texts and classes are git's, pair by pair."""
    project = make_project(tmp_path, ELEVEN)
    counted, report, calls = _rebased_then_range_diff(project, tmp_path)
    assert report["old"] == "the series before the last `series rebase`", report["old"]
    kinds = {p["id"]: p["kind"] for p in report["patches"]}
    assert kinds == {s.id: "unchanged" for s in ELEVEN}
    assert kinds == oracle_kinds(counted, report)
    texts = {p["id"]: p["range_diff"] for p in report["patches"] if p["old"] and p["new"]}
    assert texts == one_by_one(counted, report)
    verbs = [c if c.split()[0] in ("rev-parse", "cat-file", "for-each-ref") else c.split()[0]
             for c in calls]  # fmt: skip
    assert range_diff_calls(verbs) == sorted(RANGE_DIFF_AFTER_REBASE), calls


def reorder(project: Project, order: list[str]) -> None:
    """series.toml's patches in ``order`` (their tables moved, nothing else changed)."""
    toml = project.root / "series.toml"
    text = toml.read_text()
    head, *tables = text.split("[[patch]]\n")
    by_id = {table.split('"', 2)[1]: table for table in tables}
    toml.write_text(head + "".join(f"[[patch]]\n{by_id[pid]}" for pid in order))


@pytest.mark.parametrize(
    ("moved", "halves"),
    [
        # P3 and P8 swapped: the first eight pairs are the same patches in both orders
        ([1, 2, 8, 4, 5, 6, 7, 3, 9, 10, 11], True),
        # P1 moved to the end: no cut leaves the same patches before it in both orders
        ([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1], False),
    ],
)
def test_range_diff_of_a_reordered_series_is_git_pair_by_pair(
    tmp_path: Path, moved: list[int], halves: bool
) -> None:
    """A long series is range-diffed in two halves at once where a cut leaves the same
    patches before it in both versions' orders (on two cores), else whole: the
    texts and classes are git's asked pair by pair either way, and no pair is asked
    alone. (Checked to fail with the cut placed one pair off in the old version: the pair
    the cut parts is asked alone; test_the_cut_leaves_the_same_patches_on_each_side
    checks the cut itself.)"""
    project, counted = committed_project(tmp_path)
    counted.run("apply")
    reorder(project, [f"P{i}" for i in moved])
    out, calls = counted.run("range-diff", "--json")
    report = json.loads(out)
    assert [p["id"] for p in report["patches"]] == [f"P{i}" for i in moved]
    texts = {p["id"]: p["range_diff"] for p in report["patches"] if p["old"] and p["new"]}
    assert texts == one_by_one(counted, report)
    assert {p["id"]: p["kind"] for p in report["patches"]} == oracle_kinds(counted, report)
    asked = [c for c in calls if c.startswith("range-diff")]  # no pair asked alone
    assert len(asked) == (HALVES if halves else 1) and not any("^!" in c for c in asked), calls


def test_the_cut_leaves_the_same_patches_on_each_side(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where both stacks are cut (two cores): after the pair nearest the middle
    before which both orders hold the same patches; none under CUT_AT pairs, where no
    such pair is, or on one core. (Checked to fail with the old stack's cut
    one pair later.)"""

    def stack(order: list[int], tag: str) -> dict[str, tuple[str, str, str]]:
        return {f"P{i}": (f"{tag}{i}", "", "") for i in order}

    eleven = list(range(1, 12))
    ids = [f"P{i}" for i in eleven]
    monkeypatch.setattr(rangediff, "_spare_core", lambda: True)
    same = rangediff._cut(stack(eleven, "a"), stack(eleven, "b"), ids)
    assert same in (("a5", "b5"), ("a6", "b6")), same  # 11 pairs: 5 | 6 or 6 | 5
    swapped = stack([1, 2, 8, 4, 5, 6, 7, 3, 9, 10, 11], "b")
    assert rangediff._cut(stack(eleven, "a"), swapped, ids) in (("a2", "b2"), ("a8", "b3"))
    moved = stack([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1], "b")
    assert rangediff._cut(stack(eleven, "a"), moved, ids) is None
    few = list(range(1, rangediff.CUT_AT))
    assert rangediff._cut(stack(few, "a"), stack(few, "b"), [f"P{i}" for i in few]) is None
    monkeypatch.setattr(rangediff, "_spare_core", lambda: False)
    assert rangediff._cut(stack(eleven, "a"), stack(eleven, "b"), ids) is None


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_range_diff_on_one_core_asks_git_once(tmp_path: Path) -> None:
    """On one core the two halves would only add their own starts: one range-diff, whole,
    and the same texts. (Checked to fail without the check of the cores: two.)"""
    project, counted = committed_project(tmp_path)
    counted.run("apply")
    reorder(project, [f"P{i}" for i in (1, 2, 8, 4, 5, 6, 7, 3, 9, 10, 11)])
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # series, and the git it starts, inherit it
    try:
        out, calls = counted.run("range-diff", "--json")
    finally:
        os.sched_setaffinity(0, cores)
    report = json.loads(out)
    texts = {p["id"]: p["range_diff"] for p in report["patches"] if p["old"] and p["new"]}
    assert texts == one_by_one(counted, report)
    assert [c.split()[0] for c in calls].count("range-diff") == 1, calls


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
    counted, report, calls = _rebased_then_range_diff(project, tmp_path)
    rows = {p["id"]: p for p in report["patches"]}
    assert " = " in rows["P3"]["range_diff"].splitlines()[0]
    assert rows["P3"]["kind"] == "content changed"
    assert {p: r["kind"] for p, r in rows.items()} == oracle_kinds(counted, report)
    assert [c.split()[0] for c in calls].count("diff-tree") == 1, calls


def test_range_diff_diffs_only_the_files_whose_raw_lines_differ(tmp_path: Path) -> None:
    """Patches of two files each: P1's util.py hunk gets new context from upstream, the
    test file it adds is the same blob in both versions; P2's message is edited after the
    rebase (git marks it ``!``), its two files the same. The raw diffs are asked once:
    P2's are equal (unchanged, not diffed), and P1 is diffed in util.py alone. The classes
    are those of the whole diffs, the texts git's pair by pair."""
    specs = [
        PatchSpec(
            "P1",
            "util: VALUE_18 is 1800",
            {UTIL: ("VALUE_18 = 18\n", "VALUE_18 = 1800\n")},
            new_files={"pkg/util_test.py": "def test_value_18():\n    pass\n"},
        ),
        PatchSpec(
            "P2",
            "core: f9 returns 909",
            {"pkg/core.py": ("return 9\n", "return 909\n")},
            new_files={"pkg/core_test.py": "def test_f9():\n    pass\n"},
        ),
    ]
    project = make_project(tmp_path, specs)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    commit_upstream(project.upstream, UTIL, "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20")
    counted.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    two = project.root / "patches" / "perf-P2.patch"
    two.write_text(two.read_text().replace("Why: test.", "Why: a test."))
    out, calls = counted.run("range-diff", "--json")
    report = json.loads(out)
    kinds = {p["id"]: p["kind"] for p in report["patches"]}
    assert kinds == {"P1": "context only", "P2": "unchanged"}, kinds
    assert kinds == oracle_kinds(counted, report)
    texts = {p["id"]: p["range_diff"] for p in report["patches"]}
    assert texts == one_by_one(counted, report)
    assert all(" ! " in text.splitlines()[0] for text in texts.values()), texts
    diffs = [c for c in calls if c.startswith("diff-tree")]
    assert len(diffs) == 2 and " --raw " in diffs[0], calls
    assert diffs[1].endswith(f" -- {UTIL}"), calls


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
            os.kill(batch.proc.pid, signal.SIGKILL)  # a Popen, or a spawned git (a pid)
            batch.proc.wait()
    assert git_run._LIGHT == [True]


def test_light_processes_ends_with_its_block() -> None:
    assert git_run._LIGHT == [False]
    with git_run.light_processes():
        assert git_run._LIGHT == [True]
    assert git_run._LIGHT == [False]


def test_the_cached_pin_is_what_resolve_answers_or_none(tmp_path: Path) -> None:
    """cached_pin answers only where resolve would find the pin in the cache without a fetch,
    and answers what resolve answers; else None, and resolve decides (the sdist, a fetch)."""
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    cache_dir = counted.cache
    pinned = load(project.root / "series.toml").upstream
    repo = upstream.cache_repo(cache_dir)
    for source in ("git", "auto"):
        wanted = pinned._replace(source=source)
        found = upstream.cached_pin(wanted, repo, cache_dir)
        assert found is not None
        assert found == upstream.resolve(wanted, cache_dir, source=None, override=None)
        assert found == upstream.cached_pin(pinned, repo, cache_dir, source=source)
    assert upstream.cached_pin(pinned._replace(source="sdist"), repo, cache_dir) is None
    # auto falls back to the sdist while the URL is remembered unreachable; git does not
    remember(cache_dir, pinned.repository, "no route to host")
    auto = pinned._replace(source="auto")
    assert upstream.cached_pin(auto, repo, cache_dir) is None
    assert upstream.cached_pin(auto, repo, cache_dir, source="git") is not None
    assert recall(cache_dir, pinned.repository) is None  # forgotten, as the fetch forgets it
    # the pin's ref moved (or gone): resolve fetches again
    cache = cache_dir / "upstream.git"
    ref = git(cache, "for-each-ref", "--format=%(refname)", "refs/series/git/").split()[0]
    commit_upstream(project.upstream, UTIL, "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20")
    git(cache, "fetch", "-q", str(project.upstream), f"+main:{ref}")
    assert git(cache, "rev-parse", ref) != pinned.commit
    assert upstream.cached_pin(pinned, upstream.cache_repo(cache_dir), cache_dir) is None
    git(cache, "update-ref", "-d", ref)
    assert upstream.cached_pin(pinned, upstream.cache_repo(cache_dir), cache_dir) is None


def test_one_memo_listing_for_two_builds_stays_what_the_refs_hold(tmp_path: Path) -> None:
    """range-diff lists the memo once for both stacks: what the first build records (and
    deletes, over the limit) is in the listing the second one reads."""
    project = make_project(tmp_path, ELEVEN)
    counted = Counted(project, tmp_path)
    counted.run("apply")  # the pin in the cache; then a memo of nothing
    series = Series.load(project.root, counted.cache)
    cache, base = series.cache, series.manifest.upstream.commit
    for ref in git(cache.path, "for-each-ref", "--format=%(refname)", memo.MEMO).split():
        git(cache.path, "update-ref", "-d", ref)
    files = series.patch_files(list(series.manifest.patches))
    known = memo.recorded(cache)
    first = memo.build(cache, base, files[:5], known)
    assert known == memo.recorded(cache) and first.reused == 0
    second = memo.build(cache, base, files, known)
    assert second.reused == 5 and known == memo.recorded(cache)
    assert [s.commit for s in second.steps[:5]] == [s.commit for s in first.steps]
