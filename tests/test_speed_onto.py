"""What ``series rebase --onto`` asks of git and of the system (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is how the rebase starts its git processes and how many it
starts, and that what it writes and says stays the same.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rebase_helpers import moving_project


def test_onto_starts_its_git_processes_without_forking_series(tmp_path: Path) -> None:
    """Every git process of a rebase is started by subprocess (``vfork``, nothing run in
    the child but C), not by series.git.child.spawn's ``fork`` (series' page tables
    copied, Python run in the child): a fresh process, as a person runs it."""
    project = moving_project(tmp_path, conflict=True)
    probe = (
        "import os, sys\n"
        "forks = []\n"
        "real = os.fork\n"
        "def counted():\n"
        "    forks.append(1)\n"
        "    return real()\n"
        "os.fork = counted\n"
        f"sys.argv = ['series', '-C', {str(project.root)!r}, 'rebase', '--onto', 'main',"
        f" '--upstream', {str(project.upstream)!r}]\n"
        "from series.entry import main\n"
        "code = main()\n"
        "print('forks', len(forks), 'subprocess' in sys.modules)\n"
        "sys.exit(code)\n"
    )
    argv = [sys.executable, "-c", probe]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr  # stopped at P1's conflict: a dozen git processes
    assert proc.stdout.split("\n")[-2] == "forks 0 True", proc.stdout
