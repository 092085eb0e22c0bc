"""The checks that take no lock (test, lint, prove, bench, scorecard) while a writer ends:
no report of a mix.

``series test``, ``lint``, ``prove``, ``bench`` and ``scorecard`` write only
the per-user cache, so they take no project lock (series.project), and an
export or a rebase's end may rewrite series.toml and patches/ while they
run: series.toml, read as the run starts, and the patch files, read once the
pin is there, are then of two states of the project. Each run is held at its first git call
(``SERIES_FAULT_PAUSE_AT``; the pin fetched again first, so that no patch
file is read yet; released through a file: no sleep decides the order), the
writer runs to its end meanwhile, then the run is let go.

The export's project is built so that an ok can only be of the mix: in the
state before, P2 fails every check (a test it breaks, an unused import, no
test of its own); the export amends P2 so that it passes them and adds P3,
which fails them (no subset in series.toml, a subject of no area, no test,
a fixture it breaks). Neither state is ok; the old list of patches with the
new P2 is (main: exit 0 for each). ``bench`` and ``scorecard`` time and trace
Keras, so theirs is built on the real pin, the sdist, in the same way (one
patch, one change in Dense).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import PatchSpec, Project, git, replace_line, write
from rebase_helpers import moving_project, resolve_p1
from series.errors import Exit
from test_prove import OPS_PY, PROVE_SPECS
from test_trust_lock import Held, _no_process_left, argv, env, run  # noqa: F401 (a fixture)
from tinytests import OPS, make_tiny_project

SPECS = [
    replace(PROVE_SPECS[0], subset=(OPS,), body="Upstream: #1000."),
    PatchSpec(
        "P2",
        "ops: mul via abs",
        {OPS_PY: ("return a * b\n", "return abs(a) * b\n")},
        new_files={"tiny/extra.py": "import os\n"},
        subset=(OPS,),
        body="Upstream: #1001.",
    ),
]

CHECKS = [("test",), ("test", "--suite", "tests"), ("lint",), ("prove",)]


def _name(check: tuple[str, ...]) -> str:
    return "-".join(word.strip("-") for word in check)


def _amend_p2_and_add_p3(work: Path) -> None:
    """In the checkout: P2 amended to pass every check (add saturates at 100, with its
    test; no unused import), then a new commit that fails them."""
    git(work, "rm", "-q", "tiny/extra.py")
    ops = (work / OPS_PY).read_text().replace("return abs(a) * b\n", "return a * b\n")
    (work / OPS_PY).write_text(ops.replace("return a + b\n", "return min(a + b, 100)\n"))
    saturates = "\n\ndef test_add_saturates():\n    assert ops.add(99, 5) == 100\n"
    (work / OPS).write_text((work / OPS).read_text() + saturates)
    git(work, "commit", "-q", "-a", "--amend", "--no-edit")
    table = (work / "tiny/table.py").read_text()
    squares = "    return [i * i for i in range(n)]\n"
    (work / "tiny/table.py").write_text(table.replace(squares, "    raise ValueError(n)\n"))
    write(work, {"README.md": "tiny, patched\n"})
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "readme")


def _fetch_the_pin_first() -> None:
    """The cache repository removed: a run's first git calls fetch the pin, before it
    reads any patch file (with the pin kept, its first git call comes after)."""
    shutil.rmtree(Path(os.environ["SERIES_CACHE_DIR"]) / "upstream.git", ignore_errors=True)


def _refused(held: Held, check: tuple[str, ...]) -> None:
    """The held run refused: series.toml named (the patch files it read were the new
    ones: what is read again of them is the same), nothing reported."""
    code, err = held.release()
    assert code == Exit.FAILED, err
    assert f"series.toml changed while {check[0]} ran" in err, err
    assert "full disk" not in err and "does not apply" not in err, err
    assert "run it again" in err, err


@pytest.mark.parametrize("check", CHECKS, ids=_name)
def test_a_check_held_while_an_export_ends_reports_no_ok_of_the_mix(
    tmp_path: Path, check: tuple[str, ...]
) -> None:
    project = make_tiny_project(tmp_path, SPECS)
    code, _, err = project.run("apply")
    assert code == 0, err
    assert run(project, *check).returncode == Exit.FAILED  # the state before: P2 fails
    _fetch_the_pin_first()
    held = Held(project, tmp_path / "go", 1, *check)
    _amend_p2_and_add_p3(project.work)
    export = run(project, "export")
    assert export.returncode == 0, export.stderr
    _refused(held, check)
    after = run(project, *check)  # the state after: P3 fails
    assert after.returncode == Exit.FAILED, after.stderr
    assert "changed while" not in after.stderr, after.stderr


@pytest.mark.parametrize("check", CHECKS[::2] + CHECKS[3:], ids=_name)
def test_a_check_held_while_a_rebase_continue_ends_names_the_change_not_a_patch(
    tmp_path: Path, check: tuple[str, ...]
) -> None:
    """A rebase stopped at P1's conflict, resolved; the check held, then ``--continue``
    runs to its end: series.toml's new pin and P1's new file. main: the old pin with the
    new P1, "P1 does not apply", where it applies in either state."""
    project = moving_project(tmp_path / "p", conflict=True)
    up = str(project.upstream)
    assert run(project, "rebase", "--onto", "main", "--upstream", up).returncode == 3
    resolve_p1(project.work)
    _fetch_the_pin_first()
    held = Held(project, tmp_path / "go", 1, *check)
    assert run(project, "rebase", "--continue").returncode == 0
    _refused(held, check)


@pytest.mark.parametrize("check", CHECKS[::2] + CHECKS[3:], ids=_name)
def test_a_check_held_while_a_rebase_drops_a_patch_names_the_change_not_a_disk(
    tmp_path: Path, check: tuple[str, ...]
) -> None:
    """As row 302 for check-conflicts: the rebase onto ``main``, which carries P3, drops
    it and deletes its file. main: "file operation failed on patches/perf-P3.patch ...
    the operating system refused the write (a full disk, ...)", exit 1."""
    project = moving_project(tmp_path / "p", carries_p3=True)
    _fetch_the_pin_first()
    held = Held(project, tmp_path / "go", 1, *check)
    rebase = run(project, "rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert rebase.returncode == 0, rebase.stderr
    assert not (project.root / "patches/perf-P3.patch").exists()
    _refused(held, check)


def test_a_project_left_alone_is_reported_as_before(tmp_path: Path) -> None:
    """The read again costs a run nothing it reports: held the same way with no writer,
    each check gives the answer of a run never held (lint: exit 0 on P1, the clean one)."""
    project = make_tiny_project(tmp_path, SPECS)
    for check, code in (("lint", "P1"), 0), (("test",), 1), (("prove",), 1):
        _fetch_the_pin_first()
        held = Held(project, tmp_path / f"go-{check[0]}", 1, *check)
        got, err = held.release()
        assert got == code and "changed while" not in err, err


# -- bench and scorecard: the same, on the real Keras pin ------------------------------

DENSE = "keras/src/layers/core/dense.py"
RETURN = "        return x\n\n    def compute_output_shape"
WRONG = "        return x + 1\n\n    def compute_output_shape"  # outputs differ from the pin's
BREAK = "        _ = x.sum().item()\n" + RETURN  # a graph break under torch.compile
READERS = [(("bench", "--quick", "--workload", "dense"), WRONG), (("scorecard",), BREAK)]
SLOW = 900  # seconds: they time and trace Keras; only so that a broken run fails


def _keras_project(tmp_path: Path, keras_cache: Path, project_copy: Path, edit: str) -> Project:
    """This project's pin (its sdist copied from the session's cache: no download) and
    its first patch, P1, applied, then ``edit`` in Dense.call amended into P1 and
    exported: the state before."""
    root = tmp_path / "project"
    root.mkdir()
    text = (project_copy / "series.toml").read_text().replace('source = "auto"', 'source = "sdist"')
    second = text.index("\n[[patch]]\n", text.index("\n[[patch]]\n") + 1)
    (root / "series.toml").write_text(text[: second + 1])
    p1 = tomllib.loads(text)["patch"][0]["file"]
    (root / "patches").mkdir()
    shutil.copy2(project_copy / p1, root / p1)
    if (keras_cache / "sdist").is_dir():
        shutil.copytree(keras_cache / "sdist", Path(os.environ["SERIES_CACHE_DIR"]) / "sdist")
    project = Project(root, root, "")
    assert run(project, "apply").returncode == 0
    replace_line(project.work / DENSE, RETURN, edit)
    git(project.work, "commit", "-q", "-a", "--amend", "--no-edit")
    export = run(project, "export")
    assert export.returncode == 0, export.stderr
    return project


def _amend_p1_and_add_p2(work: Path, edit: str) -> None:
    """In the checkout: ``edit`` in P1 made a comment, which neither the outputs nor the
    graphs see; then a new commit that makes ``edit`` again."""
    dense = work / DENSE
    replace_line(dense, edit, "        # changed\n" + RETURN)
    git(work, "commit", "-q", "-a", "--amend", "--no-edit")
    replace_line(dense, RETURN, edit)
    git(work, "commit", "-q", "-a", "-m", "layers: dense, changed again")


def _slow(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(project, *args), capture_output=True, text=True, env=env(), timeout=SLOW
    )


@pytest.mark.keras
@pytest.mark.parametrize(("check", "edit"), READERS, ids=("bench", "scorecard"))
def test_bench_and_scorecard_held_while_an_export_ends_report_no_ok_of_the_mix(
    tmp_path: Path, keras_cache: Path, project_copy: Path, check: tuple[str, ...], edit: str
) -> None:
    """P1 gives other outputs than the pin (bench) or adds a graph break (scorecard):
    exit 1. The export makes that a comment in P1 and adds P2 with it: exit 1 again. The
    old list of patches (P1 alone) with the new P1, a comment, is the one ok (main: exit
    0, the comparison or the trace of a stack that was never the project's). The state
    after, held with no writer, is answered as any run: the read-again refuses a change
    only."""
    project = _keras_project(tmp_path, keras_cache, project_copy, edit)
    before = _slow(project, *check)
    assert before.returncode == Exit.FAILED, before.stdout + before.stderr
    chart = project.root / ".series/bench/bench.png"
    drawn = chart.stat().st_mtime_ns if chart.exists() else None
    _fetch_the_pin_first()
    held = Held(project, tmp_path / "go", 1, *check)
    _amend_p1_and_add_p2(project.work, edit)
    export = run(project, "export")
    assert export.returncode == 0, export.stderr
    code, out, err = _release(held)
    assert code == Exit.FAILED, out + err
    assert f"series.toml changed while {check[0]} ran" in err and "run it again" in err, err
    assert not out and "note:" not in err, out + err  # no table, no note
    assert (chart.stat().st_mtime_ns if chart.exists() else None) == drawn  # no chart
    _fetch_the_pin_first()  # the state after, held the same way with no writer: its answer
    code, out, err = _release(Held(project, tmp_path / "again", 1, *check))
    assert code == Exit.FAILED and "changed while" not in err, out + err


def _release(held: Held) -> tuple[int, str, str]:
    held.go.touch()
    out, err = held.proc.communicate(timeout=SLOW)
    return held.proc.returncode, out, err
