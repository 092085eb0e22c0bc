"""The checks that take no lock (test, lint, prove) while a writer ends: no report of a mix.

``series test``, ``lint`` and ``prove`` write only the per-user cache, so
they take no project lock (series.project), and an export or a rebase's
end may rewrite series.toml and patches/ while they run: series.toml, read
as the run starts, and the patch files, read once the pin is there, are
then of two states of the project. Each run is held at its first git call
(``SERIES_FAULT_PAUSE_AT``; the pin fetched again first, so that no patch
file is read yet; released through a file: no sleep decides the order), the
writer runs to its end meanwhile, then the run is let go.

The export's project is built so that an ok can only be of the mix: in the
state before, P2 fails every check (a test it breaks, an unused import, no
test of its own); the export amends P2 so that it passes them and adds P3,
which fails them (no subset in series.toml, a subject of no area, no test,
a fixture it breaks). Neither state is ok; the old list of patches with the
new P2 is (main: exit 0 for each).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import PatchSpec, git, write
from rebase_helpers import moving_project, resolve_p1
from series.errors import Exit
from test_prove import OPS_PY, PROVE_SPECS
from test_trust_lock import Held, _no_process_left, run  # noqa: F401 (a fixture)
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
