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
