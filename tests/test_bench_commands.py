"""ci/bench_commands.py runs: issue 23's table is printed by it, so it must not rot.

Speed is never asserted here (the script prints ratios for people); what is
asserted is that the script runs from this checkout as the docs say, one round
of a few rows, and prints them. ci/bench_check_conflicts.py once stopped
running for months of commits without anyone noticing (its test:
tests/test_check_conflicts.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SHARED_UPSTREAM

# Run in a fresh interpreter (the script's module sets SERIES_CACHE_DIR for its runs): the
# Bench of ci/bench_commands.py made, its clone's objects, refs and rerere records listed,
# every row's git side run once, and listed again.
_CLONE_PROBE = """\
import os, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, {ci!r})
import bench_commands as bc

def seen(clone):
    files = sorted(str(p.relative_to(clone)) for p in (clone / ".git").rglob("*")
                   if p.is_file() and p.parts[len(clone.parts) + 1] in ("objects", "refs",
                                                                        "rr-cache", "packed-refs"))
    refs = subprocess.run(["git", "for-each-ref"], cwd=clone, capture_output=True,
                          text=True, check=True).stdout
    return files, refs

with tempfile.TemporaryDirectory(dir={tmp!r}) as tmp:
    bench = bc.Bench(Path(tmp))
    before = seen(bench.clone)
    for row in bench.rows():
        if row.name.startswith(("rebase --", "check-conflicts")):
            row.theirs()
    print("same" if seen(bench.clone) == before else "changed")
"""

ROWS = ("series --version", "rebase --continue, the whole job", "rebase --abort, its floor")


def test_the_everyday_commands_benchmark_runs_a_round_of_its_rows(tmp_path: Path) -> None:
    """One round of three rows (a start-up, a stopped rebase's --continue with git's
    --continue + format-patch beside it, --abort's floor): exit 0, each row in the table,
    each with a ratio. It writes only in its own temporary directory (TMPDIR here)."""
    if not SHARED_UPSTREAM.is_file():
        pytest.skip(f"../shared/upstream/{SHARED_UPSTREAM.name} is not beside the checkout")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    script = ROOT / "ci" / "bench_commands.py"
    argv = [sys.executable, str(script), "--rounds", "1", "--only", *ROWS]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env, cwd=tmp)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| `")]
    assert len(table) == len(ROWS), proc.stdout
    for name in ROWS:  # the table keeps the script's order of rows
        line = next((row for row in table if row.startswith(f"| `{name}")), None)
        assert line is not None, proc.stdout
        assert line.count("x |") >= 2, line  # the wall and the CPU ratio
    assert list(tmp.iterdir()) == [], "the benchmark left files behind"


def test_no_git_side_writes_into_the_clone_the_others_copy(tmp_path: Path) -> None:
    """git's sides of the rows that write objects (a rebase and its stops, the merge-tree
    loops of check-conflicts) run in copies of the bench's clone: none leaves anything in
    the clone itself. The merge-tree loop once ran in it, and left there the trees git's
    own ``--skip`` then found already written in every later round (docs/benchmarks.md)."""
    if not SHARED_UPSTREAM.is_file():
        pytest.skip(f"../shared/upstream/{SHARED_UPSTREAM.name} is not beside the checkout")
    probe = _CLONE_PROBE.format(ci=str(ROOT / "ci"), tmp=str(tmp_path))
    argv = [sys.executable, "-c", probe]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1] == "same", proc.stdout[-3000:]
