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

from helpers import Project, git
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
