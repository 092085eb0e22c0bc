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
from pathlib import Path
from typing import Any

from helpers import git
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
