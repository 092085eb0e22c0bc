"""check-conflicts --onto: fully, partly or not upstream, from merges, not from PR numbers.

Upstream branch "next" merges narrowed versions of the series' PRs: P1's
core half in its own lines, P2's core half written otherwise, only a
README change under P3's number, and P4 exactly, under no number. The
report says per patch which hunks upstream holds, by which commits, and
what remains; where git would not stop, the trees are git's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conflict_helpers import RealGit, make_case, upstream_commit
from helpers import PatchSpec, git
from test_json import errors

SCHEMA = json.loads((Path(__file__).parents[1] / "docs/json-schema.json").read_text())

CORE, UTIL = "pkg/core.py", "pkg/util.py"

# manifest_text numbers the PRs 1000 + index
SPECS = [
    PatchSpec(
        "P1",
        "core, util: f3 and VALUE_7",
        {CORE: ("return 3\n", "return 303\n"), UTIL: ("VALUE_7 = 7\n", "VALUE_7 = 77\n")},
    ),
    PatchSpec(
        "P2",
        "core, util: f8 and VALUE_20",
        {CORE: ("return 8\n", "return 808\n"), UTIL: ("VALUE_20 = 20\n", "VALUE_20 = 2020\n")},
    ),
    PatchSpec("P3", "util: VALUE_25", {UTIL: ("VALUE_25 = 25\n", "VALUE_25 = 2525\n")}),
    PatchSpec("P4", "core: f10", {CORE: ("return 10\n", "return 1010\n")}),
]


def _next(upstream: Path) -> dict[str, str]:
    core = {CORE: ("return 3\n", "return 303\n")}
    return {
        "U1": upstream_commit(upstream, "next", "core: f3 (#1000)", core),
        "U2": upstream_commit(
            upstream,
            "next",
            "core: f8 otherwise (#1001)",
            {CORE: ("return 8\n", "return 8 * 101\n")},
        ),
        "U3": upstream_commit(upstream, "next", "docs (#1002)", {"README.md": ("tiny", "small")}),
        # P4 within a larger change (another patch-id), under no PR number
        "U4": upstream_commit(
            upstream,
            "next",
            "core: f10 and README",
            {CORE: ("return 10\n", "return 1010\n"), "README.md": ("small", "smaller")},
        ),
    }


def _hunks(row: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    return {
        f["path"]: (f["hunks"][0]["state"], f["hunks"][0]["commits"])
        for f in row["upstream"]["files"]
    }


def test_each_patch_fully_partly_or_not_upstream(tmp_path: Path) -> None:
    case = make_case(tmp_path, SPECS)
    up = _next(case.project.upstream)
    code, report, err = case.run_json("--onto", "next", "--no-matrix")
    assert code == 3, err  # P2 conflicts: upstream took its core half in another form
    assert errors(SCHEMA, report) == []
    rows = {r["id"]: r for r in report["onto"]["patches"]}
    got = {
        pid: (r["status"], r["replay"], (r["upstream"] or {}).get("verdict"))
        for pid, r in rows.items()
    }
    assert got == {
        "P1": ("partly-upstream", "clean", "partial"),
        "P2": ("partly-upstream", "conflict", "partial"),
        "P3": ("clean", "clean", "none"),
        "P4": ("already-upstream", "empty", "full"),
    }
    assert _hunks(rows["P1"]) == {CORE: ("upstream", [up["U1"]]), UTIL: ("missing", [])}
    assert rows["P1"]["upstream"]["remaining"] == [UTIL]
    assert rows["P1"]["upstream"]["commits"] == [up["U1"]]
    assert _hunks(rows["P2"]) == {CORE: ("other-form", [up["U2"]]), UTIL: ("missing", [])}
    assert rows["P3"]["upstream"]["commits"] == []
    assert rows["P3"]["note"] == "upstream names its PR, but holds none of its hunks"
    assert [(e["kind"], e["commit"]) for e in rows["P4"]["evidence"]] == [("hunks", up["U4"])]
    assert any(n.startswith("P1 is partly upstream (pkg/core.py:") for n in report["notes"])
    assert any(p.startswith("P2 is partly upstream in another form") for p in report["problems"])
    assert not any(p.startswith("P3") for p in report["problems"] + report["notes"])

    # git rebase stops only at P2, and its trees are ours
    oracle = RealGit(case, tmp_path, fetch="next")
    stopped, tree = oracle.rebase("refs/oracle/onto", case.commits[-1])
    assert stopped == ["P2"]
    assert tree == rows["P4"]["tree"]
    picked = oracle.cherry_pick("refs/oracle/onto", case.commits[:1])
    assert picked.tree == rows["P1"]["tree"]


def test_partly_upstream_remainder_is_upstream_side_without_markers(tmp_path: Path) -> None:
    case = make_case(tmp_path, SPECS[:2])
    _next(case.project.upstream)
    code, report, err = case.run_json("--onto", "next", "--no-matrix")
    assert code == 3, err
    p2 = report["onto"]["patches"][1]
    tree = p2["upstream"]["remainder_tree"]
    # the tree was written to the run's scratch store: rebuild what it must be and compare
    oracle = RealGit(case, tmp_path, fetch="next")
    picked = oracle.cherry_pick("refs/oracle/onto", case.commits[:1])
    assert picked.commit is not None
    git(oracle.path, "checkout", "-q", "--detach", picked.commit)
    path = oracle.path / UTIL
    path.write_text(path.read_text().replace("VALUE_20 = 20\n", "VALUE_20 = 2020\n"))
    git(oracle.path, "commit", "-qam", "P2's remainder by hand")
    assert git(oracle.path, "rev-parse", "HEAD^{tree}") == tree
    text = (oracle.path / CORE).read_text()
    assert "return 8 * 101\n" in text and "<<<<<<<" not in text


def test_report_for_people_lists_hunks(tmp_path: Path) -> None:
    case = make_case(tmp_path, SPECS)
    up = _next(case.project.upstream)
    code, out, err = case.project.run("check-conflicts", "--onto", "next", "--no-matrix")
    assert code == 3, err
    assert "partly-upstream" in out
    assert f"upstream has it in another form by {up['U2'][:12]}" in out
    assert "remains" in out
