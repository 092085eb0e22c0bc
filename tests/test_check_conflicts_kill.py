"""check-conflicts killed, on a full disk, and beside another command: every report right.

check-conflicts writes only the per-user cache: the cache repository (the
pin fetched, the stack built and memoised, the ``--onto`` revision fetched
under a scratch ref of the run), and its records (``commitfiles/``,
``patchids/``, ``alone.json``). A kill -9 of its process group at any step
(series.faults: each git call, each write between them) must leave a cache
the next run reads right: the same report, the same exit code, as the run
never killed. A file size limit (``ulimit -f``) is named as such, never
taken for a revision the upstream lacks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conflict_helpers import Case, make_case
from helpers import series_process
from series.errors import Exit
from test_check_conflicts import REPLAY_SPECS, _next_branch
from test_rebase_kill import step_names
from test_trust_recover import series

ONTO = ["check-conflicts", "--json", "--onto", "next"]


def _cache() -> Path:
    return Path(os.environ["SERIES_CACHE_DIR"])


def replay_case(tmp: Path) -> Case:
    """The replay of tests/test_check_conflicts.py: every verdict on upstream ``next``."""
    case = make_case(tmp, REPLAY_SPECS)
    _next_branch(case.project.upstream)
    return case


def report(out: str) -> dict[str, Any]:
    """The --json report, less what differs between two right runs: the timings, and
    how the pin was had (fetched, then kept in the cache)."""
    data = json.loads(out)
    assert isinstance(data, dict)
    data.pop("stats", None)
    if data.get("pin"):
        data["pin"].pop("reason")
        data["pin"].pop("label")
    return data


def test_a_file_size_limit_during_the_onto_fetch_is_named_not_a_missing_revision(
    tmp_path: Path,
) -> None:
    """With the pin and the stack in the cache, the fetch of ``next`` is what writes:
    git's unpack-objects is killed by SIGXFSZ, and git fetch says only that it died."""
    case = replay_case(tmp_path)
    root = case.project.root
    code, out, err = series_process(root, *ONTO)
    assert code == Exit.CONFLICT, err
    wanted = report(out)
    shutil.rmtree(_cache())
    assert series_process(root, "check-conflicts")[0] == 0  # the pin and the stack kept
    code, _, err = series_process(root, "check-conflicts", "--onto", "next", limit=0)
    assert code == Exit.FAILED, err
    assert "file size limit exceeded (ulimit -f)" in err, err
    assert "cannot find next" not in err and "check the revision name" not in err, err
    code, out, err = series_process(root, *ONTO)
    assert code == Exit.CONFLICT and report(out) == wanted, err
