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
from pathlib import Path
from typing import Any

import pytest

from conflict_helpers import Case, make_case
from helpers import git, series_process
from rebase_helpers import moving_project
from series.errors import Exit
from series.upstream.refs import SCRATCH
from test_check_conflicts import REPLAY_SPECS, _next_branch
from test_rebase_kill import step_names
from test_shallow import real_project
from test_trust_lock import Held, _no_process_left, run  # noqa: F401 (a fixture)
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


def _limited_onto(root: Path, limit: int) -> tuple[dict[str, Any], str]:
    """The report of ``--onto next`` on a cold cache; then, the cache emptied and the pin
    and the stack kept again, ``--onto next`` under a file size limit of ``limit``
    bytes: it fails naming the limit. That report, and the failed run's stderr."""
    code, out, err = series_process(root, *ONTO)
    assert code == Exit.CONFLICT, err
    wanted = report(out)
    shutil.rmtree(_cache())
    assert series_process(root, "check-conflicts")[0] == 0  # the pin and the stack kept
    code, _, err = series_process(root, "check-conflicts", "--onto", "next", limit=limit)
    assert code == Exit.FAILED and "file size limit exceeded (ulimit -f)" in err, err
    return wanted, err


def test_a_file_size_limit_during_the_onto_fetch_is_named_not_a_missing_revision(
    tmp_path: Path,
) -> None:
    """With the pin and the stack in the cache, the fetch of ``next`` is what writes:
    git's unpack-objects is killed by SIGXFSZ, and git fetch says only that it died."""
    case = replay_case(tmp_path)
    root = case.project.root
    wanted, err = _limited_onto(root, 0)
    assert "cannot find next" not in err and "check the revision name" not in err, err
    code, out, err = series_process(root, *ONTO)
    assert code == Exit.CONFLICT and report(out) == wanted, err


def _sample(names: list[str]) -> list[int]:
    """The steps to kill at: the first of each kind (a write counted as one kind, whatever
    its file), every step of alone.json's write, and the last two."""
    kinds: dict[str, int] = {}
    for n, name in enumerate(names, 1):
        kind = name.split(" ", 1)[0] + name.rpartition(":")[2] if ".json" in name else name
        kinds.setdefault(kind, n)
    alone = [n for n, name in enumerate(names, 1) if "alone.json" in name]
    return sorted({*kinds.values(), *alone, len(names) - 1, len(names)})


def _leftovers(root: Path) -> list[str]:
    """Temporary files in the project and the cache, and scratch refs in the cache."""
    found = [str(p) for p in [*root.rglob(".series-tmp-*"), *_cache().rglob(".series-tmp-*")]]
    repo = _cache() / "upstream.git"
    if (repo / "HEAD").is_file():
        found += git(repo, "for-each-ref", "--format=%(refname)", SCRATCH).split()
    return found


def test_check_conflicts_onto_killed_at_each_kind_of_step_then_the_same_report(
    tmp_path: Path,
) -> None:
    """From an empty cache (the most it writes: the cache repository made, the pin and
    ``next`` fetched, the stack built, every record written), killed at the first step of
    each kind, and at each step of its last write: the next run's report and exit code
    are the unkilled run's, and no temporary file or scratch ref of the killed run
    stays (the scratch refs of a killed ``--onto`` fetch went with the next run's own)."""
    case = replay_case(tmp_path)
    root = case.project.root
    shutil.rmtree(_cache(), ignore_errors=True)
    clean = series(root, *ONTO, debug=True)
    assert clean.returncode == Exit.CONFLICT, clean.stderr[-2000:]
    wanted, names = report(clean.stdout), step_names(clean)
    steps = _sample(names)
    assert len(steps) > 20 and any(names[n - 1] == "git merge-tree" for n in steps)
    for n in steps:
        shutil.rmtree(_cache())
        killed = series(root, *ONTO, kill_at=n)
        assert killed.returncode == -9, (n, killed.stderr[-2000:])
        again = series(root, *ONTO)
        assert again.returncode == Exit.CONFLICT, (n, names[n - 1], again.stderr[-2000:])
        assert report(again.stdout) == wanted, (n, names[n - 1])
        assert not _leftovers(root), (n, names[n - 1], _leftovers(root))


@pytest.mark.usefixtures("_no_process_left")
def test_a_rebase_that_ends_while_check_conflicts_runs_is_named_not_a_disk_fault(
    tmp_path: Path,
) -> None:
    """check-conflicts takes no lock (it writes only the cache): held at its first git
    call (series.toml read, the pin not yet fetched, no patch file read) while a rebase
    onto ``main``, which carries P3, runs to its end and deletes P3's patch file. main:
    "file operation failed on patches/perf-P3.patch ... the operating system refused the
    write (a full disk, ...)", exit 1: a read, of a file another command had removed."""
    project = moving_project(tmp_path / "p", carries_p3=True)
    shutil.rmtree(_cache())  # the pin is fetched first: git calls before any patch is read
    held = Held(project, tmp_path / "go", 1, "check-conflicts")
    rebase = run(project, "rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert rebase.returncode == 0, rebase.stderr
    assert not (project.root / "patches/perf-P3.patch").exists()
    code, err = held.release()
    assert code == Exit.FAILED, err
    assert "changed while check-conflicts ran" in err and "series.toml" in err, err
    assert "full disk" not in err and "refused the write" not in err, err
    assert "run it again" in err, err
    after = run(project, "check-conflicts")
    assert after.returncode == 0 and "ok: the series fits" in after.stdout, after.stderr


def test_the_real_series_onto_master_of_the_shared_clone_killed_at_a_sample_of_steps(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    """The real series and the shared shallow clone of keras, from an empty cache, killed
    at each of its fetches (the pin, then master with the history the range needs: the
    clone's ``shallow`` file written), at its first merge and at its last two steps: the
    next run's report is the unkilled run's, and nothing of the killed run stays."""
    project = real_project(tmp_path, project_copy)
    root = project.root
    argv = ["check-conflicts", "--source", "git", "--no-matrix", "--json"]
    argv += ["--upstream", str(shared_upstream), "--onto", "master"]
    shutil.rmtree(_cache(), ignore_errors=True)
    clean = series(root, *argv, debug=True)
    assert clean.returncode in (0, Exit.CONFLICT), clean.stderr[-3000:]
    wanted, names = (clean.returncode, report(clean.stdout)), step_names(clean)
    fetches = [n for n, name in enumerate(names, 1) if name == "git fetch"]
    merge = names.index("git merge-tree") + 1
    steps = sorted({*fetches, merge, len(names) - 1, len(names)})
    assert len(fetches) >= 2, names
    for n in steps:
        shutil.rmtree(_cache())
        assert series(root, *argv, kill_at=n).returncode == -9, n
        again = series(root, *argv)
        assert (again.returncode, report(again.stdout)) == wanted, (n, again.stderr[-2000:])
        assert not _leftovers(root), (n, _leftovers(root))


def test_a_fetch_of_the_onto_revision_cut_short_is_fetched_again_not_trusted(
    tmp_path: Path,
) -> None:
    """``next`` adds a directory whose tree is larger than a file size limit, so git's
    unpack-objects writes the commits and small trees, then is killed at that tree: the
    cache holds ``next``'s commit without its history whole, as after a full disk or a kill
    in the fetch. main: every later run took the commit for fetched (a warm run fetches
    nothing) and failed, "internal error: git log ... unable to read tree", for ever."""
    case = replay_case(tmp_path)
    up, root = case.project.upstream, case.project.root
    git(up, "checkout", "-q", "next")
    for i in range(60):
        (up / "gen").mkdir(exist_ok=True)
        (up / "gen" / f"module_{i:03d}.py").write_text(f"VALUE = {i}\n")
    git(up, "add", "-A")
    git(up, "commit", "-qm", "gen: many modules")
    git(up, "checkout", "-q", "main")
    wanted, err = _limited_onto(root, 1000)
    tip = git(up, "rev-parse", "next")
    assert git(_cache() / "upstream.git", "cat-file", "-t", tip) == "commit"  # cut short
    for _ in range(2):
        code, out, err = series_process(root, *ONTO)
        assert code == Exit.CONFLICT and "internal error" not in err, err
        assert report(out) == wanted
