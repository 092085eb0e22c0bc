"""Recorded resolutions replayed, and check-conflicts' favoured chain, each check turned off.

The mutation sweep of docs/hardening.md ("Success claims, each check turned off") left
checks standing with no test that failed without them, among them the conflict a recorded
resolution's header must name and the postimage its fast replay compares
(series.merge.resolutions), and the favoured chain's merge in check-conflicts' verdict
(series.conflicts.analysis). Each case here is the input that tells one from its absence,
on real repositories, or a defect found on the way (rows 880-899); the checks found
redundant are there too, with the evidence.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from helpers import PatchSpec, Project, git, make_project
from rebase_helpers import commit_upstream, resolve_p1
from test_check_conflicts_recorded import check, recorded_elsewhere, rows
from test_rebase import rebase


def zero_context(path: Path) -> None:
    """The one hunk of the resolution at ``path`` written again without its context lines,
    as ``git diff -U0 --full-index`` writes it: the same ids, the same lines changed."""
    head, _, hunk = path.read_text().partition("\n@@ ")
    header, *lines = hunk.split("\n")
    found = re.match(r"-(\d+),\d+ \+(\d+),\d+ @@", header)
    assert found is not None, header
    lead = next(i for i, line in enumerate(lines) if line[:1] in ("-", "+"))
    changes = [line for line in lines if line[:1] in ("-", "+")]
    minus = sum(line[0] == "-" for line in changes)
    start, plus = int(found[1]) + lead, len(changes) - minus
    new = f"@@ -{start},{minus} +{int(found[2]) + lead},{plus} @@\n"
    path.write_text(f"{head}\n{new}" + "\n".join(changes) + "\n")


def tree_of(data: dict[str, Any], pid: str) -> str:
    tree: str = rows(data)[pid]["tree"]
    return tree


def test_a_resolution_without_context_lines_is_replayed_alike_by_both_commands(
    tmp_path: Path,
) -> None:
    """P1's recorded resolution written again without context (``-U0``: its hunk names
    the lines it replaces, its index line the very blobs): check-conflicts said the
    resolution "does not apply" (``git apply`` wants a hunk with no context after it at
    the file's end) and exit 3, where the rebase replayed it exactly and ran through. Both
    now replay it: "resolved", the same tree, the lines recorded."""
    _, other = recorded_elsewhere(tmp_path)
    (path,) = (other.root / "resolutions" / "P1").glob("*.patch")
    zero_context(path)
    name = f"resolutions/P1/{path.name}"
    code, data = check(other, "main", other.upstream)
    assert code == 0, data["problems"]
    p1 = rows(data)["P1"]
    assert (p1["status"], p1["resolution"]) == ("resolved", name), p1
    assert other.run("apply")[0] == 0
    code, out, err = rebase(other)
    assert code == 0, err
    assert re.search(rf"P1\s+resolved \(recorded\)\s+{name}", out), out
    assert git(other.work, "rev-parse", "series^{tree}") == tree_of(data, "P3")
    assert "    return 1001\n" in (other.work / "pkg" / "core.py").read_text()


def onto_other(project: Project, *args: str) -> tuple[int, str, str]:
    return project.run("rebase", "--onto", "other", "--upstream", str(project.upstream), *args)


def test_a_resolution_whose_header_names_another_conflict_is_not_replayed(
    tmp_path: Path,
) -> None:
    """Upstream moved again (``other``: f5 changed too, far from P1's lines), so P1's
    conflict is another, with another name; the file of that name holds the resolution
    recorded for the conflict before (copied over it: its header names that one). Its
    hunk still applies by its context, but it was made for another conflict: check-conflicts
    and the rebase do not replay it, and say why (row 881)."""
    _, other = recorded_elsewhere(tmp_path)
    (old,) = (other.root / "resolutions" / "P1").glob("*.patch")
    third = Project(tmp_path / "third", other.upstream, other.commit)
    shutil.copytree(other.root, third.root, ignore=shutil.ignore_patterns("resolutions"))
    up = other.upstream
    git(up, "checkout", "-q", "-b", "other", "main")
    commit_upstream(up, "pkg/core.py", "return 5\n", "return 55\n", "core: f5 returns 55")
    assert other.run("apply")[0] == 0  # this conflict, resolved by hand: its name
    assert onto_other(other)[0] == 3
    resolve_p1(other.work, "return 2002")
    assert other.run("rebase", "--continue")[0] == 0
    (named,) = {p.name for p in (other.root / "resolutions" / "P1").glob("*.patch")} - {old.name}
    (third.root / "resolutions" / "P1").mkdir(parents=True)
    shutil.copy(old, third.root / "resolutions" / "P1" / named)
    said = f"{named} is named for this conflict, but its header names another: not replayed"
    code, data = check(third, "other", up)
    assert code == 3, data
    p1 = rows(data)["P1"]
    assert (p1["status"], p1["resolution"], p1["note"]) == ("conflict", None, said), p1
    assert third.run("apply")[0] == 0
    code, out, err = onto_other(third)
    assert code == 3, out + err
    assert said in err, err
    assert "<<<<<<< new base" in (third.work / "pkg" / "core.py").read_text()


def test_a_resolution_edited_in_review_replays_its_edited_lines(tmp_path: Path) -> None:
    """P1's conflict resolved (``return 1001``) and recorded; in review its added line is
    edited to ``return 1002`` (its index line left as git wrote it), then the series put
    back as it was before the rebase and rebased again: the rebase commits the line the
    resolution now holds, and check-conflicts says the tree it makes, not the blob the
    index line names from before the edit (row 882)."""
    project, other = recorded_elsewhere(tmp_path)
    (path,) = (project.root / "resolutions" / "P1").glob("*.patch")
    path.write_text(path.read_text().replace("+    return 1001\n", "+    return 1002\n"))
    shutil.rmtree(project.root / "patches")  # the series before the rebase, as git keeps it
    shutil.copytree(other.root / "patches", project.root / "patches")
    shutil.copy(other.root / "series.toml", project.root / "series.toml")
    assert project.run("apply", "--force")[0] == 0
    code, out, err = rebase(project)
    assert code == 0 and "resolved (recorded)" in out, out + err
    core = git(project.work, "show", "series~2:pkg/core.py")
    assert "    return 1002\n" in core + "\n" and "return 1001" not in core, core
    shutil.copy(path, other.root / "resolutions" / "P1" / path.name)  # the same, elsewhere
    code, data = check(other, "main", other.upstream)
    assert code == 0 and rows(data)["P1"]["status"] == "resolved", data["problems"]
    assert git(project.work, "rev-parse", "series^{tree}") == tree_of(data, "P3")


UTIL = "pkg/util.py"
CHAINED = [
    PatchSpec(
        "P1",
        "core: f1 returns 101, VALUE_3 is 33",
        {"pkg/core.py": ("return 1\n", "return 101\n"), UTIL: ("VALUE_3 = 3\n", "VALUE_3 = 33\n")},
    ),
    PatchSpec("P2", "util: VALUE_12 is 1212", {UTIL: ("VALUE_12 = 12\n", "VALUE_12 = 1212\n")}),
    PatchSpec("P3", "util: VALUE_21 is 2121", {UTIL: ("VALUE_21 = 21\n", "VALUE_21 = 2121\n")}),
]


def chained(tmp: Path, specs: list[PatchSpec]) -> Project:
    """``specs`` on the small upstream, applied; upstream's ``main`` conflicts with P1 (f1)
    and with P2 (VALUE_12), and ``other`` is ``main`` with f5 changed too."""
    project = make_project(tmp, specs)
    up = project.upstream
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    commit_upstream(up, UTIL, "VALUE_12 = 12\n", "VALUE_12 = -12\n", "util: VALUE_12 is -12")
    git(up, "checkout", "-q", "-b", "other")
    commit_upstream(up, "pkg/core.py", "return 5\n", "return 55\n", "core: f5 returns 55")
    assert project.run("apply")[0] == 0
    return project


def test_check_conflicts_says_a_patch_conflicts_where_its_predecessors_resolution_meets_it(
    tmp_path: Path,
) -> None:
    """P1 and P2 rebased onto ``main``: P1's conflict resolved with P1's line (as the
    favoured chain resolves it), P2's with ``VALUE_12 = 0`` and, beyond its markers,
    ``VALUE_20 = 0``; both recorded. P3 (``VALUE_21``) is added to that series on the pin,
    with those resolutions, and checked onto ``other``, where P1's conflict is another
    (f5 moved) and P2's, after P1's line, the one recorded. P3 replays cleanly without P1
    and P2 (the skip chain), and conflicts with the line P2's resolution adds (the
    favoured chain), as the rebase does: "conflict (by itself)", not "clean" (row 883).
    P2's resolution resolves its conflict with P1 kept: P2 conflicts because of P1, and the
    note says so, not that the resolution "was made for another conflict" (row 884)."""
    first = chained(tmp_path / "first", CHAINED[:2])
    assert first.run("rebase", "--onto", "main", "--upstream", str(first.upstream))[0] == 3
    resolve_p1(first.work, "return 101")
    assert first.run("rebase", "--continue")[0] == 3  # P2 stops
    util = first.work / UTIL
    text = util.read_text()
    start, end = text.index("<<<<<<< new base"), text.index(">>>>>>> P2\n") + len(">>>>>>> P2\n")
    text = f"{text[:start]}VALUE_12 = 0\n{text[end:]}".replace("VALUE_20 = 20\n", "VALUE_20 = 0\n")
    util.write_text(text)
    git(first.work, "add", UTIL)
    code, out, err = first.run("rebase", "--continue")
    assert code == 0 and out.count("resolved (recorded)") == 2, out + err
    (p2,) = (first.root / "resolutions" / "P2").glob("*.patch")
    project = chained(tmp_path / "second", CHAINED)
    assert git(project.upstream, "rev-parse", "other") == git(first.upstream, "rev-parse", "other")
    shutil.copytree(first.root / "resolutions", project.root / "resolutions")
    code, data = check(project, "other", project.upstream)
    assert code == 3, data
    said = {r["id"]: r for r in data["onto"]["patches"]}
    assert (said["P1"]["status"], said["P1"]["cause"]) == ("conflict", "self"), said["P1"]
    p2_row = (said["P2"]["status"], said["P2"]["cause"], said["P2"]["blocked_by"])
    assert p2_row == ("conflict", "earlier", ["P1"]), said["P2"]
    assert said["P2"]["note"] == f"with P1 kept, resolved by resolutions/P2/{p2.name}"
    p3_row = (said["P3"]["status"], said["P3"]["cause"], said["P3"]["files"])
    assert p3_row == ("conflict", "self", [UTIL]), said["P3"]
    # The rebase, P1's conflict resolved as before: P2 replayed, P3 stops on pkg/util.py.
    assert onto_other(project)[0] == 3
    resolve_p1(project.work, "return 101")
    code, out, err = project.run("rebase", "--continue")
    assert code == 3, out + err
    assert f"P2   conflict resolved by resolutions/P2/{p2.name}" in err, err
    assert "rebase stopped: P3" in err and f"conflict: {UTIL}" in err, err


def _insert_without_context(path: Path, after: int, line: str) -> None:
    """A hunk added to the resolution at ``path``, as ``diff -U0`` writes one: ``line``
    inserted after line ``after`` of the marked-up file, with no context (its index line
    left as git wrote it: the postimage now another, so no exact replay)."""
    text = path.read_text()
    _, _, hunk = text.partition("\n@@ ")
    found = re.match(r"-(\d+),(\d+) \+(\d+),(\d+) @@", hunk)
    assert found is not None, hunk
    shift = int(found[4]) - int(found[2])  # the lines the first hunk adds
    assert after > int(found[1]) + int(found[2])  # after the first hunk
    path.write_text(f"{text}@@ -{after},0 +{after + shift + 1},1 @@\n+{line}\n")


def test_a_hunk_git_would_place_at_the_file_s_end_is_not_replayed(tmp_path: Path) -> None:
    """P1's recorded resolution given a second hunk as a hand-made ``diff -U0`` writes it:
    a line inserted after line 30 of the marked-up ``pkg/core.py`` (of 60), no context.
    Its index line no longer names the result, so it is not replayed exactly; ``git
    apply`` (the fallback) matches a hunk with no context after it at the file's end
    only, and put the line there (main: "resolved (recorded)", the line at the end of
    ``pkg/core.py``, in the commit and in check-conflicts' tree). Neither command replays
    it now, and both say why: P1 stops at its conflict."""
    _, other = recorded_elsewhere(tmp_path)
    (path,) = (other.root / "resolutions" / "P1").glob("*.patch")
    _insert_without_context(path, 30, "# reviewed")
    said = f"{path.name} has a hunk with no context after it (pkg/core.py, line 30)"
    code, data = check(other, "main", other.upstream)
    assert code == 3, data
    p1 = rows(data)["P1"]
    assert (p1["status"], p1["resolution"]) == ("conflict", None), p1
    assert said in p1["note"], p1
    assert other.run("apply")[0] == 0
    code, out, err = rebase(other)
    assert code == 3, out + err
    assert said in err, err
    assert "# reviewed" not in (other.work / "pkg" / "core.py").read_text()
