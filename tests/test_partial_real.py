"""Narrowed upstream merges of real series patches, on the shared 2026-07-21 excerpt.

The issue's two cases, built from the real patches: upstream master gains
P3's core.py part in the patch's own lines, under "(#23188)", and P6's
Dense half (dense.py, dense_test.py) under "(#23185)", with one line of
its Dense.call hunk written otherwise. check-conflicts must say that both
are partly upstream, name the hunks and the commits, and keep the rest;
its replay must end on the tree of plain ``git rebase`` skipping every
stop.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from helpers import Project, git
from test_rebase_real import applied

DENSE = "keras/src/layers/core/dense.py"
COMMENT = "# Subclasses are excluded: they may override `kernel`."


def narrowed(tmp: Path, shared: Path, patches: Path) -> Path:
    """A clone of the excerpt whose master took part of P3 and part of P6."""
    up = tmp / "narrowed"
    git(tmp, "clone", "-q", "--branch", "master", str(shared), str(up))
    p3 = patches / "perf-P3-global-state.patch"
    git(up, "apply", "--include=keras/src/backend/torch/core*", str(p3))
    git(up, "commit", "-qam", "Read the device from global state with getattr (#23188)")
    p6 = patches / "perf-P6-dense-einsum.patch"
    git(up, "apply", "--include=keras/src/layers/core/dense*", str(p6))
    text = (up / DENSE).read_text()
    assert COMMENT in text
    (up / DENSE).write_text(text.replace(COMMENT, "# Only Dense itself: subclasses may differ."))
    git(up, "commit", "-qam", "Compute Dense with torch directly when eager (#23185)")
    return up


def test_narrowed_real_merges_are_partly_upstream(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    project = applied(tmp_path, shared_upstream, project_copy, recorded=False)
    up = narrowed(tmp_path, shared_upstream, project.root / "patches")
    took_p3, took_p6 = git(up, "rev-parse", "master~1"), git(up, "rev-parse", "master")
    code, out, err = project.run(
        "check-conflicts", "--json", "--no-matrix", "--onto", "master", "--upstream", str(up)
    )
    assert code == 3, err  # P18 conflicts (upstream cd5bfc1), and P6 in another form
    rows = {r["id"]: r for r in json.loads(out)["onto"]["patches"]}
    p3, p6 = rows["P3"], rows["P6"]
    assert (p3["status"], p3["replay"], p3["upstream"]["verdict"]) == (
        "partly-upstream",
        "clean",
        "partial",
    )
    states = {f["path"]: {h["state"] for h in f["hunks"]} for f in p3["upstream"]["files"]}
    assert states["keras/src/backend/torch/core.py"] == {"upstream"}
    assert states["keras/src/distribution/distribution_lib.py"] == {"missing"}
    assert p3["upstream"]["commits"] == [took_p3]
    assert (p6["status"], p6["upstream"]["verdict"]) == ("partly-upstream", "partial")
    dense = next(f for f in p6["upstream"]["files"] if f["path"] == DENSE)
    assert [h["state"] for h in dense["hunks"]].count("other-form") == 1
    assert {h["state"] for h in dense["hunks"]} == {"upstream", "other-form"}
    assert all(h["commits"] == [took_p6] for h in dense["hunks"])
    einsum = next(f for f in p6["upstream"]["files"] if f["path"].endswith("einsum_dense.py"))
    assert {h["state"] for h in einsum["hunks"]} == {"missing"}
    # the replay (skipping every stop) ends where plain git rebase does
    last = list(rows.values())[-1]
    assert last["tree"] == _git_rebase_skipping(project, up, tmp_path)


def _git_rebase_skipping(project: Project, up: Path, tmp: Path) -> str:
    clone = tmp / "oracle"
    git(tmp, "clone", "-q", str(project.work), str(clone))
    git(clone, "fetch", "-q", "--update-shallow", str(up), "+master:refs/oracle/master")
    base = git(project.work, "rev-parse", "refs/series/base")
    git(clone, "checkout", "-q", "series")
    done = subprocess.run(
        ["git", "rebase", "-q", "--onto", "refs/oracle/master", base],
        cwd=clone, capture_output=True, text=True, check=False,
    )  # fmt: skip
    while done.returncode != 0:
        done = subprocess.run(
            ["git", "rebase", "--skip"], cwd=clone, capture_output=True, text=True, check=False
        )
    tree = git(clone, "rev-parse", "HEAD^{tree}")
    shutil.rmtree(clone)
    return tree


def test_narrowed_real_merges_rebase_with_drop_merged(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    """The rebase keeps what upstream lacks: P6 stops with its EinsumDense half proposed,
    P3 goes on without its core.py part and without a stop."""
    project = applied(tmp_path, shared_upstream, project_copy, recorded=True)
    up = narrowed(tmp_path, shared_upstream, project.root / "patches")
    took_p3 = git(up, "rev-parse", "master~1")
    args = ("rebase", "--onto", "master", "--upstream", str(up), "--drop-merged")
    code, _out, err = project.run(*args)
    assert code == 3, err
    assert "P6" in err and "partly upstream" in err and "series test P6" in err
    work = project.work
    assert "# Only Dense itself" in (work / DENSE).read_text()
    einsum = (work / "keras/src/layers/core/einsum_dense.py").read_text()
    assert "torch_direct_operands" in einsum and "<<<<<<<" not in einsum
    assert git(work, "ls-files", "-u") == ""
    code, out, err = project.run("rebase", "--continue")
    assert code == 0, err
    assert "reduced (partly upstream)" in out
    patches = project.root / "patches"
    p3 = (patches / "perf-P3-global-state.patch").read_text()
    assert "distribution_lib.py" in p3 and "a/keras/src/backend/torch/core.py" not in p3
    assert f"Partly-Upstream: {took_p3}" in p3
    p6 = (patches / "perf-P6-dense-einsum.patch").read_text()
    assert "einsum_dense.py" in p6 and "a/keras/src/layers/core/dense.py" not in p6
