"""Benchmark every everyday command against what a maintainer would run instead (issue 23).

Each row is a ``series`` command, as its own process of the installed
``series`` script (tools/bin/series: interpreter start and imports
included, as a person runs it; one row shows ``python -m series`` too), next to
its competitor: the git (or shell) commands that answer the same
question or do the same job. Rows are interleaved round by round, so the
machine's load hits both sides alike; the table shows the medians, the
ratio series / competitor, and the load average at the start and end,
for wall time and for CPU time (user + sys of the processes each side
started, git's included: on a loaded machine the steadier figure).
Only the ratios count on a shared machine.

The project is a copy of this one (13 patches) applied on the real Keras
pin from ``../shared/upstream`` (a shallow clone of keras with ``master``
62 commits past the pin), in a temporary directory with its own cache.

``--scale`` adds the synthetic rows (slow: minutes): N patches generated
on the Keras tree against K upstream commits generated on top of the pin
(not committed; built by this script), for ``rebase --onto`` and
``check-conflicts --onto`` (13 and 200 patches over 60 / 1,000 / 5,000
commits), each against the git commands that do the same
job (``git rebase`` + ``format-patch``; a ``git merge-tree`` loop), and
``apply`` (fresh) and ``export`` (nothing changed; the last patch changed by
``git commit --amend``, untimed) of 13 and 200 synthetic patches against
``git am -3`` and ``git format-patch`` (after the same ``--amend``). Every row also
shows series' peak memory: the largest resident set of the ``series``
process and of each git process it started (GNU ``/usr/bin/time``'s %M;
"-" without it). One row is a floor, not a command: ``ci/abort_floor.py``, the
git processes a ``rebase --abort`` that keeps the user's work cannot do without,
next to git's own abort (its docstring).

    python ci/bench_commands.py [--rounds 5] [--scale] [--only NAME...] [--verbose]
"""

# ruff: noqa: E501  (the rows read best one command to a line)
from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What a maintainer types: `series ...` is this script, installed with the venv's
# interpreter on its first line (pyproject's script-files). Run with this
# interpreter, it imports the series package PYTHONPATH names, so a fresh clone's
# code is measured, as `python -m series` would, without runpy's start-up.
SCRIPT = ROOT / "tools" / "bin" / "series"
TARBALL = ROOT.parent / "shared" / "upstream" / "keras-2026-07-21.git.tar.gz"
P18_FILE = "keras/src/tree/torchtree_impl.py"
RERERE = ["-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true"]
IDENT = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@keras-series.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@keras-series.invalid",
}


def load() -> str:
    return f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"


PEAK: list[int] = []  # the peak memory (KiB) of each process run, its git processes included
TIME = shutil.which("time", path="/usr/bin")  # GNU time: a small parent, so its %M is the
# child's own (a child forked from this script would count this script's memory as its own)


def sh(cwd: Path, *argv: str, ok: bool = True, env: dict[str, str] | None = None) -> str:
    """Run ``argv``; its stdout. The largest resident set of it and every process it waited
    for (GNU time's %M) goes to PEAK, when /usr/bin/time is there."""
    with tempfile.NamedTemporaryFile(prefix="bench-peak-") as peak_file:
        wrap = [TIME, "-f", "%M", "-o", peak_file.name] if TIME else []
        proc = subprocess.run(
            [*wrap, *argv],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **IDENT, **(env or {})},
        )
        said = Path(peak_file.name).read_text().split()
    if said and said[-1].isdigit():
        PEAK.append(int(said[-1]))
    if ok and proc.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return proc.stdout


def series(project: Path, *args: str, ok: bool = True, cache: Path | None = None) -> str:
    """``series -C project ARGS``; with the per-user cache ``cache`` when one is given."""
    env = {"SERIES_CACHE_DIR": str(cache)} if cache else None
    return sh(project, sys.executable, str(SCRIPT), "-C", str(project), *args, ok=ok, env=env)


def quiet() -> None:
    """What this script wrote so far written out to the disk (``sync``), before a timed run.

    A timed command right after a copy of a checkout (tens of megabytes) ran while the
    kernel wrote the copy back: its own file writes (git's objects, index, refs) waited
    behind that, by chance, on either side. git's own ``--skip`` took 63 ms after a
    ``sync`` and 116 ms without one in the same run (5 rounds each; its CPU 59 and 113
    ms). A maintainer meets a stop seconds or minutes after it was written, when the
    kernel has long written it back (within 30 s)."""
    os.sync()


def settle(repo: Path) -> None:
    """A stop as a maintainer meets it when they type ``--skip``/``--continue``/``--abort``:
    the index written after the files it describes (the same state on both sides, every
    round).

    git (without nanosecond timestamps) cannot tell a file written in the same second as
    the index from one changed after it: the index marks such "racily clean" entries,
    and the next git command that reads them hashes those files again. Whether the stop's
    checkout (hundreds of files from the pin to master) and its last index write fall in
    the same second is chance, so the timed command re-hashed them in some rounds and not
    in others: git's own ``--skip`` took 0.15 s or 0.33 s from identical copies. So on both
    sides: wait for the next second, then ``git update-index --refresh`` (what any ``git
    status`` does while a person resolves), which writes an index with no racy entry; then
    all of it written out to the disk (``quiet``)."""
    index = repo / ".git" / "index"
    time.sleep(max(0.0, int(index.stat().st_mtime) + 1.02 - time.time()))
    sh(repo, "git", "update-index", "-q", "--refresh", ok=False)
    quiet()


def own_cache(project: Path) -> Path:
    """A synthetic project's own per-user cache: the memo of built stacks keeps 256
    commits, so two 200-patch series in one cache would rebuild each other's every run,
    as no maintainer's one series does."""
    return project.parent / f"{project.name}.cache"


def peak(fn: Callable[[], float]) -> tuple[float, int]:
    """``fn``'s seconds, and the peak memory (KiB) of the processes it ran."""
    PEAK.clear()
    seconds = fn()
    return seconds, max(PEAK, default=0)


CPU: list[float] = []  # the CPU time (user + sys) of the children of the last timed run


def timed(fn: Callable[[], object]) -> float:
    """Wall seconds of ``fn``; its children's CPU seconds (git's included) go to ``CPU``.

    On a loaded machine wall time is mostly waiting for a core; the CPU
    time of the processes a side started is the steadier figure.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[:] = [after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime]
    return wall


@dataclass
class Row:
    """One line of the table: ``mine`` and ``theirs`` each return one timed run's seconds."""

    name: str
    instead: str
    mine: Callable[[], float]
    theirs: Callable[[], float]
    times: dict[str, list[float]] = field(default_factory=lambda: {"mine": [], "theirs": []})
    peaks: list[int] = field(default_factory=list)  # KiB, series' side
    cpu: dict[str, list[float]] = field(default_factory=lambda: {"mine": [], "theirs": []})
    error: str = ""


class Bench:
    """The applied project, a plain git clone of its checkout, and the upstream."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        os.environ["SERIES_CACHE_DIR"] = str(tmp / "cache")
        with tarfile.open(TARBALL) as tar:
            tar.extractall(tmp / "up", filter="data")
        self.shared = tmp / "up" / "keras.git"
        self.project = tmp / "project"
        self.project.mkdir()
        shutil.copy2(ROOT / "series.toml", self.project / "series.toml")
        shutil.copytree(ROOT / "patches", self.project / "patches")
        shutil.copytree(ROOT / "resolutions", self.project / "resolutions")
        series(self.project, "apply", "--source", "git", "--upstream", str(self.shared))
        self.work = self.project / "work"
        self.fetch_master(self.work)
        self.pin = sh(self.work, "git", "rev-parse", "refs/series/base").strip()
        self.clone = tmp / "clone"
        sh(tmp, "git", "clone", "-q", str(self.work), str(self.clone))
        self.fetch_master(self.clone)
        sh(self.clone, "git", "checkout", "-q", "series")
        self._train_rerere()
        series(self.project, "status")  # warm: the kept report, the patch info
        series(self.project, "list")

    def fetch_master(self, repo: Path) -> None:
        """The shared upstream's master into ``repo`` as refs/bench/master."""
        sh(
            repo,
            "git",
            "fetch",
            "-q",
            "--update-shallow",
            str(self.shared),
            "+master:refs/bench/master",
        )

    def _start_git_rebase(self, clone: Path) -> None:
        """`git rebase --onto master PIN` with rerere, in ``clone``: it stops at P18."""
        sh(clone, "git", *RERERE, "rebase", "-q", "--onto", "refs/bench/master", self.pin, ok=False)

    def _train_rerere(self) -> None:
        """Resolve P18 once (with series' recorded result) in a copy of the clone, and give
        the clone that copy's rerere records (``.git/rr-cache``), nothing else.

        Not in the clone itself: the rebase finished there would leave every tree and
        commit of the rebased series in the clone's object store, and each git rebase timed
        in a copy of it would find most of the objects it writes already there (git then
        writes none). series' side has no such head start (its trial is a copy, removed),
        and neither has a maintainer's repository before its first rebase onto master."""
        trial = self.tmp / "trial"
        shutil.copytree(self.project, trial, symlinks=True)
        series(trial, "rebase", "--onto", "master", "--upstream", str(self.shared))
        resolved = (trial / "work" / P18_FILE).read_bytes()
        shutil.rmtree(trial)
        trainee = self.tmp / "trainee"
        shutil.copytree(self.clone, trainee, symlinks=True)
        self._start_git_rebase(trainee)
        (trainee / P18_FILE).write_bytes(resolved)
        sh(trainee, "git", "add", P18_FILE)
        sh(trainee, "git", *RERERE, "rebase", "--continue", env={"GIT_EDITOR": "true"})
        shutil.copytree(trainee / ".git" / "rr-cache", self.clone / ".git" / "rr-cache")
        shutil.rmtree(trainee)

    # -- copies that one run may change ------------------------------------------------
    def copy(self, what: Path, name: str) -> Path:
        """A fresh copy of ``what`` for one timed run, on disk before the run (``quiet``)."""
        target = self.tmp / "runs" / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(what, target, symlinks=True)
        quiet()
        return target

    def rows(self) -> list[Row]:
        p, w, up = self.project, self.work, str(self.shared)
        py = sys.executable
        patches = sorted(str(f) for f in (p / "patches").glob("*.patch"))
        p5 = next((f for f in patches if "P5" in Path(f).name), patches[0])
        out = self.tmp / "fp"
        return [
            Row("series --version", "python -c pass",
                lambda: timed(lambda: sh(p, py, str(SCRIPT), "--version")),
                lambda: timed(lambda: sh(p, py, "-c", "pass"))),
            Row("python -m series --version", "python -c pass",
                lambda: timed(lambda: sh(p, py, "-m", "series", "--version")),
                lambda: timed(lambda: sh(p, py, "-c", "pass"))),
            Row("series --help", "python -c pass",
                lambda: timed(lambda: series(p, "--help")),
                lambda: timed(lambda: sh(p, py, "-c", "pass"))),
            Row("status, nothing changed since the last", "git status + git log --oneline BASE..",
                self._status,
                lambda: timed(lambda: (sh(w, "git", "status"), sh(w, "git", "log", "--oneline", f"{self.pin}..")))),
            Row("list", "reading the files (cat)",
                lambda: timed(lambda: series(p, "list")),
                lambda: timed(lambda: sh(p, "cat", "series.toml", *patches))),
            Row("show P5", "reading the file (cat)",
                lambda: timed(lambda: series(p, "show", "P5")),
                lambda: timed(lambda: sh(p, "cat", p5))),
            Row("export, nothing changed", "git format-patch pin..",
                lambda: self._again("export"),
                lambda: timed(lambda: sh(w, "git", "format-patch", "-q", "-o", str(out), f"{self.pin}.."))),
            Row("apply, re-run, up to date", "a no-op (git status)",
                lambda: self._again("apply"),
                lambda: timed(lambda: sh(w, "git", "status", "--porcelain"))),
            *self._quilt_rows(),
            Row("rebase --onto master (P18 recorded)", "git rebase --onto + rerere + format-patch",
                self._rebase, self._git_rebase),
            Row("rebase --abort (stopped at P18)", "git rebase --abort",
                lambda: self._stopped("--abort"), lambda: self._git_stopped("--abort")),
            Row("rebase --abort, its floor (ci/abort_floor.py)", "git rebase --abort",
                self._abort_floor, lambda: self._git_stopped("--abort")),
            Row("rebase --skip (stopped at P18)", "git rebase --skip",
                lambda: self._stopped("--skip"), lambda: self._git_stopped("--skip")),
            Row("rebase --continue (P18 resolved)", "git rebase --continue",
                lambda: self._stopped("--continue"), lambda: self._git_stopped("--continue")),
            Row("rebase --continue, the whole job (P18 resolved)", "git rebase --continue + format-patch",
                lambda: self._stopped("--continue"), lambda: self._git_stopped("--continue", export=True)),
            Row("range-diff (pin vs master)", "git range-diff",
                self._range_diff, self._git_range_diff),
            Row("range-diff, first run (nothing kept)", "git range-diff",
                lambda: self._range_diff(kept=False), self._git_range_diff),
            Row("branches --dry-run", "git for-each-ref + rev-list + cat-file of the record + cat series.toml",
                lambda: timed(lambda: series(p, "branches", "--dry-run")),
                lambda: timed(self._git_branches)),
            Row("check-conflicts (pin)", "a git merge-tree loop",
                lambda: timed(lambda: series(p, "check-conflicts", "--json")),
                lambda: self._merge_tree_loop(None)),
            Row("check-conflicts --onto master", "a git merge-tree loop",
                lambda: timed(lambda: series(p, "check-conflicts", "--onto", "master", "--upstream", up, "--json")),
                lambda: self._merge_tree_loop("refs/bench/master")),
            Row("apply, fresh directory", "git am -3",
                self._apply_fresh, self._git_am),
        ]  # fmt: skip

    def _quilt_rows(self) -> list[Row]:
        """apply's re-run against the competitor issue 23 names, ``quilt push -a`` with
        everything applied (quilt exits 2 and says "File series fully applied"), on a
        quilt tree of the pin's files and the same patch files; none without quilt (and a
        line that says so: the table would otherwise just lack a row the issue names)."""
        if shutil.which("quilt") is None:
            print('quilt is not on PATH: the row "apply, re-run, up to date (quilt)" is left out'
                  " (apt-get install quilt, then run again to measure it)")  # fmt: skip
            return []
        tree = self.tmp / "quilt"
        tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(self.work), "archive", self.pin], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        (tree / "patches").mkdir()
        manifest = tomllib.loads((self.project / "series.toml").read_text())
        names = []
        for entry in manifest["patch"]:
            source = self.project / entry["file"]
            shutil.copy(source, tree / "patches" / source.name)
            names.append(source.name)
        (tree / "patches" / "series").write_text("".join(f"{n}\n" for n in names))
        sh(tree, "quilt", "push", "-a", "-q")
        return [
            Row("apply, re-run, up to date (quilt)", "quilt push -a (all applied)",
                lambda: self._again("apply"),
                lambda: timed(lambda: sh(tree, "quilt", "push", "-a", ok=False))),
        ]  # fmt: skip

    def _status(self) -> float:
        """A status after a status: the other rows' commands write the checkout's refs."""
        series(self.project, "status")
        return timed(lambda: series(self.project, "status"))

    def _again(self, command: str) -> float:
        """A run after a run of the same command that changed nothing (what it verified is
        kept: series.stack.verified), as a maintainer re-runs it; the first one untimed."""
        series(self.project, command)
        return timed(lambda: series(self.project, command))

    def _rebase(self) -> float:
        run = self.copy(self.project, "rebase")
        return timed(
            lambda: series(run, "rebase", "--onto", "master", "--upstream", str(self.shared))
        )

    def _git_rebase(self) -> float:
        clone = self.copy(self.clone, "git-rebase")

        def job() -> None:
            self._start_git_rebase(clone)
            sh(clone, "git", *RERERE, "rebase", "--continue", env={"GIT_EDITOR": "true"})
            sh(
                clone,
                "git",
                "format-patch",
                "-q",
                "-o",
                str(self.tmp / "by-hand"),
                "refs/bench/master..",
            )

        return timed(job)

    def _stopped(self, how: str) -> float:
        """A copy stopped at P18 (its recorded resolution removed), then ``rebase how`` timed
        (the stop settled first, as on git's side: ``settle``)."""
        run = self.copy(self.project, "stopped")
        shutil.rmtree(run / "resolutions", ignore_errors=True)
        series(run, "rebase", "--onto", "master", "--upstream", str(self.shared), ok=False)
        if how == "--continue":
            trial = self.tmp / "runs" / "rebase" / "work" / P18_FILE
            if not trial.exists():  # --only without the rebase row: P18 as a rebase resolves it
                self._rebase()
            (run / "work" / P18_FILE).write_bytes(trial.read_bytes())
            sh(run / "work", "git", "add", P18_FILE)
        settle(run / "work")
        return timed(lambda: series(run, "rebase", how, ok=False))

    def _abort_floor(self) -> float:
        """The stop of ``_stopped``, then ci/abort_floor.py timed: Python and the git processes
        an abort that keeps the user's changes cannot do without, nothing else (its
        docstring). series' abort / git's own can come no lower than this row's ratio."""
        run = self.copy(self.project, "stopped")
        shutil.rmtree(run / "resolutions", ignore_errors=True)
        series(run, "rebase", "--onto", "master", "--upstream", str(self.shared), ok=False)
        settle(run / "work")
        floor = ROOT / "ci" / "abort_floor.py"
        branch = tomllib.loads((run / "series.toml").read_text())["series"]["branch"]
        return timed(lambda: sh(run, sys.executable, str(floor), str(run / "work"), branch))

    def _git_stopped(self, how: str, export: bool = False) -> float:
        """git's own ``rebase how`` from the stop series' rows start from, settled as theirs;
        ``export``: then ``format-patch`` of the rebased series, as the rebase row's git side
        does: series' ``--continue`` that ends the rebase writes patches/ again, the whole
        job, where git's own leaves that to a ``format-patch`` after it."""
        clone = self.copy(self.clone, "git-stopped")
        sh(clone, "git", "rebase", "-q", "--onto", "refs/bench/master", self.pin, ok=False)
        if how == "--continue":
            sh(clone, "git", "checkout", "--theirs", P18_FILE, ok=False)
            sh(clone, "git", "add", P18_FILE)
        settle(clone)

        def job() -> None:
            sh(clone, "git", "rebase", how, env={"GIT_EDITOR": "true"}, ok=False)
            if export:
                out = str(self.tmp / "by-hand-continue")
                sh(clone, "git", "format-patch", "-q", "-o", out, "refs/bench/master..")

        return timed(job)

    def _range_diff(self, kept: bool = True) -> float:
        """``series range-diff`` run again with nothing changed since the last (the answer
        that one kept, series.stack.rangediff_kept), or, unless ``kept``, the full run, its
        kept answer removed (untimed) before it.

        The kept row runs on a copy of the rebased project and of the cache made once: the
        rebase row makes its project again every round (new commits) and the other rows
        write into the shared cache, either of which a kept answer must not survive (its
        key holds the refs and the cache's objects), so on the shared ones it would be a
        first run every round. The copy's first run (untimed) keeps the answer."""
        if not (self.tmp / "runs" / "rebase" / "work").exists():
            self._rebase()
        if not kept:
            run = self.tmp / "runs" / "rebase"
            shutil.rmtree(self.tmp / "cache" / "range-diff", ignore_errors=True)
            return timed(lambda: series(run, "range-diff", ok=False))
        run, cache = self.tmp / "runs" / "range-diff-again", self.tmp / "range-diff-cache"
        if not run.exists():
            shutil.copytree(self.tmp / "runs" / "rebase", run, symlinks=True)
            shutil.rmtree(cache, ignore_errors=True)
            shutil.copytree(self.tmp / "cache", cache, symlinks=True)
            series(run, "range-diff", ok=False, cache=cache)
        return timed(lambda: series(run, "range-diff", ok=False, cache=cache))

    def _git_range_diff(self) -> float:
        clone = self.tmp / "runs" / "git-rebase"
        if not clone.exists():
            self._git_rebase()
        return timed(
            lambda: sh(
                clone, "git", "range-diff", f"{self.pin}..origin/series", "refs/bench/master..HEAD"
            )
        )

    def _git_branches(self) -> None:
        """What ``branches --dry-run`` answers (which branch would be created, moved, deleted
        or refused), asked of git by hand: the local branches and the one checked out (never
        moved), each patch's commit (pin..series, in order), the record of the branches series
        made (what it may move or delete; none here yet) and the branch names (series.toml)."""
        w = self.work
        sh(w, "git", "for-each-ref", "--format=%(HEAD) %(objectname) %(refname)", "refs/heads/")
        sh(w, "git", "rev-list", "--reverse", f"{self.pin}..series")
        sh(w, "git", "cat-file", "-p", "refs/series/branches", ok=False)
        sh(self.project, "cat", "series.toml")

    def _merge_tree_loop(self, onto: str | None) -> float:
        """What check-conflicts answers, as a loop of merge-tree: each patch alone, each pair,
        and (``onto``) each patch replayed onto it in order (``cherry_pick_tree``).

        In a fresh copy of the clone each round, as every git side that writes objects: run
        in the clone itself, the loop left in it the trees of each patch replayed onto
        master without P18 (P18 conflicts, and the loop goes on without it), which is what
        ``git rebase --skip`` at P18 writes; every later round's copy of the clone then held
        them, and git's own ``--skip`` wrote 10 objects instead of 34, in 48 ms instead of
        62 (7 rounds each, docs/benchmarks.md): the resume rows of a whole run were timed
        against a git given a head start, and the loop's own later rounds too."""
        work = self.copy(self.clone, "merge-tree-loop")
        commits = sh(work, "git", "rev-list", "--reverse", f"{self.pin}..origin/series").split()
        pin_tree = sh(work, "git", "rev-parse", f"{self.pin}^{{tree}}").strip()

        def job() -> None:
            alone = [cherry_pick_tree(work, pin_tree, c) for c in commits]
            for i, one in enumerate(alone):
                for two in alone[i + 1 :]:
                    if one and two:
                        merge_trees(work, self.pin, one, two)
            if onto:
                prev = sh(work, "git", "rev-parse", f"{onto}^{{tree}}").strip()
                for c in commits:
                    prev = cherry_pick_tree(work, prev, c) or prev

        return timed(job)

    def _apply_fresh(self) -> float:
        target = self.tmp / "runs" / "fresh"
        shutil.rmtree(target, ignore_errors=True)
        return timed(lambda: series(self.project, "apply", "--dir", str(target)))

    def _git_am(self) -> float:
        target = self.tmp / "runs" / "git-am"
        shutil.rmtree(target, ignore_errors=True)
        manifest = tomllib.loads((self.project / "series.toml").read_text())
        patches = [str(self.project / p["file"]) for p in manifest["patch"]]  # the series' order

        def job() -> None:
            sh(self.tmp, "git", "clone", "-q", "--no-checkout", str(self.clone), str(target))
            sh(target, "git", "checkout", "-q", "-b", "am", self.pin)
            sh(target, "git", "am", "-q", "-3", *patches)

        return timed(job)


def scale_rows(bench: Bench, only: list[str] | None) -> list[Row]:
    """The synthetic rows (``--scale``): generated upstream commits and patches.

    Only the rows ``only`` names are built (their projects take minutes)."""

    def wanted(name: str) -> bool:
        return not only or any(name.startswith(o) for o in only)

    rows = []
    for commits in (60, 1000, 5000):
        for patches, what in ((p, w) for p in (13, 200) for w in ("rebase", "check-conflicts")):
            if what == "rebase":
                name = f"rebase --onto, {patches} synthetic over {commits}"
                if wanted(name):
                    up = synthetic_upstream(bench, commits)
                    project = synthetic_project(bench, up, patches, commits)
                    rows.append(Row(name, "git rebase + format-patch",
                                    functools.partial(_synthetic_rebase, bench, project, up),
                                    functools.partial(_synthetic_git_rebase, bench, project)))  # fmt: skip
            else:
                name = f"check-conflicts --onto, {patches} over {commits}"
                if wanted(name):
                    up = synthetic_upstream(bench, commits)
                    project = synthetic_project(bench, up, patches, commits)
                    rows.append(Row(name, "a git merge-tree loop",
                                    functools.partial(_synthetic_check, project, up),
                                    functools.partial(_synthetic_loop, project)))  # fmt: skip
    # apply and export depend on the patches only (the pin): 13 and 200 show how they grow.
    for patches in (13, 200):
        for name, instead, mine, theirs in (
            (f"apply, fresh, {patches} synthetic", "git am -3", _synthetic_apply, _synthetic_am),
            (f"export, nothing changed, {patches} synthetic", "git format-patch pin..",
             _synthetic_export, _synthetic_format_patch),
            (f"export, last patch changed, {patches} synthetic", "git format-patch pin.. (the same --amend before)",
             _synthetic_export_changed, _synthetic_format_patch_changed),
        ):  # fmt: skip
            if wanted(name):
                project = synthetic_project(bench, synthetic_upstream(bench, 60), patches, 60)
                rows.append(Row(name, instead, functools.partial(mine, bench, project),
                                functools.partial(theirs, bench, project)))  # fmt: skip
    return rows


def _synthetic_apply(bench: Bench, project: Path) -> float:
    target = bench.tmp / "runs" / "synthetic-fresh"
    shutil.rmtree(target, ignore_errors=True)
    return timed(lambda: series(project, "apply", "--dir", str(target), cache=own_cache(project)))


def _synthetic_am(bench: Bench, project: Path) -> float:
    target = bench.tmp / "runs" / "synthetic-am"
    shutil.rmtree(target, ignore_errors=True)
    patches = sorted(str(f) for f in (project / "patches").glob("*.patch"))

    def job() -> None:
        sh(bench.tmp, "git", "clone", "-q", "--no-checkout", str(project / "work"), str(target))
        sh(target, "git", "checkout", "-q", "-b", "am", bench.pin)
        sh(target, "git", "am", "-q", "-3", *patches)

    return timed(job)


def _synthetic_export(bench: Bench, project: Path) -> float:
    cache = own_cache(project)
    # the canonical form written once: the timed run changes nothing
    series(project, "export", cache=cache)
    return timed(lambda: series(project, "export", cache=cache))


def _synthetic_format_patch(bench: Bench, project: Path) -> float:
    out = bench.tmp / "synthetic-fp-export"
    shutil.rmtree(out, ignore_errors=True)
    return timed(
        lambda: sh(
            project / "work", "git", "format-patch", "-q", "-o", str(out), f"{bench.pin}..series"
        )
    )


def _amend_last(work: Path) -> None:
    """The checkout's last patch changed as a maintainer changes it: one more line in its
    file, and ``git commit --amend``."""
    path = sh(work, "git", "diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD").split()[0]
    with (work / path).open("a") as fh:
        fh.write("# changed\n")
    sh(work, "git", "commit", "-q", "--amend", "--no-edit", "-a")


def _synthetic_export_changed(bench: Bench, project: Path) -> float:
    run = bench.copy(project, "synthetic-export-changed")
    cache = own_cache(project)
    series(run, "export", cache=cache)  # what the copy's checkout is, known once
    _amend_last(run / "work")
    return timed(lambda: series(run, "export", cache=cache))


def _synthetic_format_patch_changed(bench: Bench, project: Path) -> float:
    work = bench.copy(project / "work", "synthetic-fp-changed")
    out = bench.tmp / "synthetic-fp-changed-out"
    shutil.rmtree(out, ignore_errors=True)

    _amend_last(work)  # untimed, as on series' side
    return timed(
        lambda: sh(work, "git", "format-patch", "-q", "-o", str(out), f"{bench.pin}..series")
    )


def synthetic_upstream(bench: Bench, commits: int) -> Path:
    """The pin plus ``commits`` commits on ``next``, each editing one of a hundred Keras files."""
    up = bench.tmp / f"up-{commits}"
    if up.exists():
        return up
    sh(bench.tmp, "git", "clone", "-q", "--bare", str(bench.shared), str(up))
    files = sh(up, "git", "ls-tree", "-r", "--name-only", bench.pin, "keras/src/").split()
    files = [f for f in files if f.endswith(".py") and "test" not in f][:100]
    # fast-import: one process for thousands of commits. Each commit adds a line at the
    # top of a file; the synthetic patches add theirs at the end: merged, never conflicting.
    content = {f: sh(up, "git", "cat-file", "blob", f"{bench.pin}:{f}").encode() for f in files}
    chunks = [f"reset refs/heads/next\nfrom {bench.pin}\n".encode()]
    for i in range(commits):
        path = files[i % len(files)]
        content[path] = f"# upstream change {i}\n".encode() + content[path]
        msg = f"upstream change {i}\n".encode()
        chunks.append(
            f"commit refs/heads/next\ncommitter Up <up@x> {1700000000 + i} +0000\n".encode()
            + f"data {len(msg)}\n".encode() + msg
            + f"M 100644 inline {path}\ndata {len(content[path])}\n".encode() + content[path] + b"\n"
        )  # fmt: skip
    subprocess.run(["git", "fast-import", "--quiet"], cwd=up, input=b"".join(chunks), check=True)
    return up


def synthetic_project(bench: Bench, up: Path, patches: int, commits: int) -> Path:
    """A project of ``patches`` generated patches (one line added at the end of a Keras file each)."""
    project = bench.tmp / f"synthetic-{patches}-{commits}"
    if project.exists():
        return project
    author = bench.tmp / f"author-{patches}-{commits}"
    sh(bench.tmp, "git", "clone", "-q", str(up), str(author))
    sh(author, "git", "checkout", "-q", "-b", "series", bench.pin)
    files = sh(author, "git", "ls-files", "keras/src/").split()
    files = [f for f in files if f.endswith(".py") and "test" not in f][:150]
    for k in range(patches):
        path = author / files[(k * 7) % len(files)]
        with path.open("a") as fh:
            fh.write(f"\n\ndef _series_patch_{k}():\n    return {k}\n")
        sh(author, "git", "commit", "-qam", f"synthetic: patch {k}")
    (project / "patches").mkdir(parents=True)
    sh(author, "git", "format-patch", "-q", "-o", str(project / "patches"), f"{bench.pin}..series")
    toml = (bench.project / "series.toml").read_text().split("\n[[patch]]")[0]
    entries = []
    for k, f in enumerate(sorted((project / "patches").glob("*.patch"))):
        entries.append(
            f'\n[[patch]]\nid = "P{k + 1}"\ntitle = "synthetic: patch {k}"\n'
            f'file = "patches/{f.name}"\nbranch = "p-{k + 1}"\nstate = "open"\nsubset = []\n'
        )
    (project / "series.toml").write_text(toml + "".join(entries))
    sh(project, "git", "init", "-q")
    argv = ["apply", "--source", "git", "--upstream", str(bench.shared)]
    series(project, *argv, cache=own_cache(project))
    sh(project / "work", "git", "fetch", "-q", str(up), "+next:refs/bench/next")
    return project


def _synthetic_rebase(bench: Bench, project: Path, up: Path) -> float:
    run = bench.copy(project, "synthetic-rebase")
    argv = ["rebase", "--onto", "next", "--upstream", str(up)]
    return timed(lambda: series(run, *argv, ok=False, cache=own_cache(project)))


def _synthetic_git_rebase(bench: Bench, project: Path) -> float:
    work = bench.copy(project / "work", "synthetic-git")

    def job() -> None:
        sh(work, "git", "rebase", "-q", "--onto", "refs/bench/next", bench.pin, ok=False)
        sh(
            work,
            "git",
            "format-patch",
            "-q",
            "-o",
            str(bench.tmp / "synthetic-fp"),
            "refs/bench/next..",
        )

    return timed(job)


def _synthetic_check(project: Path, up: Path) -> float:
    argv = ["check-conflicts", "--onto", "next", "--upstream", str(up), "--no-matrix", "--json"]
    return timed(lambda: series(project, *argv, cache=own_cache(project)))


@functools.cache
def merge_base_option(work: Path) -> bool:
    """Whether this git's ``merge-tree --write-tree`` takes ``--merge-base`` (2.40 and
    later; 2.39 refuses it with exit 129, and a loop that ignored that merged nothing)."""
    proc = subprocess.run(
        ["git", "merge-tree", "--write-tree", "--merge-base=HEAD", "HEAD", "HEAD"],
        cwd=work,
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


def cherry_pick_tree(work: Path, onto: str, commit: str) -> str | None:
    """The tree of ``commit`` cherry-picked onto the tree ``onto``, by hand: one ``git
    merge-tree`` (after one ``commit-tree`` where git cannot take ``--merge-base``: a
    commit of ``onto`` whose parent is ``commit^``, so that the merge base git finds is
    ``commit^``); None when it conflicts."""
    if merge_base_option(work):
        argv = ["merge-tree", "--write-tree", f"--merge-base={commit}^", onto, commit]
    else:
        side = sh(work, "git", "commit-tree", onto, "-p", f"{commit}^", "-m", "x").strip()
        argv = ["merge-tree", "--write-tree", side, commit]
    proc = subprocess.run(["git", *argv], cwd=work, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"git {' '.join(argv)}: exit {proc.returncode}\n{proc.stderr[-500:]}")
    return proc.stdout.split("\n")[0] if proc.returncode == 0 else None


def merge_trees(work: Path, base: str, one: str, two: str) -> str | None:
    """The trees ``one`` and ``two`` merged over the commit ``base``, by hand: each made a
    commit whose parent is ``base`` (``commit-tree``), then one ``git merge-tree``; None
    when they conflict."""
    sides = [sh(work, "git", "commit-tree", t, "-p", base, "-m", "x").strip() for t in (one, two)]
    proc = subprocess.run(
        ["git", "merge-tree", "--write-tree", *sides],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"git merge-tree: exit {proc.returncode}\n{proc.stderr[-500:]}")
    return proc.stdout.split("\n")[0] if proc.returncode == 0 else None


def _synthetic_loop(project: Path) -> float:
    """Each patch cherry-picked onto the one before, a conflicting one skipped (as ``git
    rebase --skip`` would), with ``git merge-tree``."""
    work = project / "work"
    pin = sh(work, "git", "rev-parse", "refs/series/base").strip()
    commits = sh(work, "git", "rev-list", "--reverse", f"{pin}..series").split()
    onto = sh(work, "git", "rev-parse", "refs/bench/next^{tree}").strip()

    def job() -> None:
        prev = onto
        for c in commits:
            prev = cherry_pick_tree(work, prev, c) or prev

    return timed(job)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scale", action="store_true", help="add the synthetic rows (slow)")
    parser.add_argument("--only", nargs="*", help="rows whose name starts with one of these")
    parser.add_argument(
        "--verbose", action="store_true", help="also each round's figures (to judge the spread)"
    )
    args = parser.parse_args()
    if not TARBALL.is_file():
        raise SystemExit(f"no {TARBALL}: ../shared/upstream is not beside the checkout")
    print(f"machine: {load()} at the start")
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as tmp_name:
        bench = Bench(Path(tmp_name))
        rows = bench.rows() + (scale_rows(bench, args.only) if args.scale else [])
        if args.only:
            rows = [r for r in rows if any(r.name.startswith(o) for o in args.only)]
        for r in range(args.rounds):
            for row in rows if r % 2 == 0 else reversed(rows):
                if row.error:
                    continue
                try:
                    sides = ("mine", "theirs") if r % 2 == 0 else ("theirs", "mine")
                    for side in sides:
                        seconds, kib = peak(getattr(row, side))
                        row.times[side].append(seconds)
                        row.cpu[side].append(CPU[0])
                        if side == "mine":
                            row.peaks.append(kib)
                except Exception as exc:  # a row that cannot run says why, the rest go on
                    row.error = str(exc).splitlines()[0][:100]
    report(rows, args.rounds)
    if args.verbose:
        report_rounds(rows)
    print(f"machine: {load()} at the end")
    return 0


def report(rows: list[Row], rounds: int) -> None:
    med = statistics.median
    print(
        f"\n| command | instead | series | instead | series / instead | cpu: series | instead "
        f"| series / instead | peak memory |  ({rounds} rounds, medians; peak: the largest process)"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        if row.error or not row.times["mine"]:
            print(f"| `{row.name}` | {row.instead} | - | - | not measured: {row.error} | | | | - |")
            continue
        mine, theirs = med(row.times["mine"]), med(row.times["theirs"])
        cpu_mine, cpu_theirs = med(row.cpu["mine"]), med(row.cpu["theirs"])
        print(
            f"| `{row.name}` | {row.instead} | {mine:.3f} s | {theirs:.3f} s | {mine / theirs:.2f}x "
            f"| {cpu_mine:.3f} s | {cpu_theirs:.3f} s | {cpu_mine / max(cpu_theirs, 1e-3):.2f}x "
            f"| {f'{max(row.peaks) / 1024:.0f} MB' if any(row.peaks) else '-'} |"
        )


def report_rounds(rows: list[Row]) -> None:
    """Each round's wall and CPU seconds, series / instead, row by row (``--verbose``)."""
    print("\neach round, wall (cpu) seconds: series / instead")
    for row in rows:
        if row.error or not row.times["mine"]:
            continue
        # a row that failed half-way has one side's figure more: the pairs run are shown
        times, cpu = row.times, row.cpu
        rounds = zip(times["mine"], cpu["mine"], times["theirs"], cpu["theirs"], strict=False)
        said = "; ".join(f"{m:.3f} ({mc:.3f}) / {t:.3f} ({tc:.3f})" for m, mc, t, tc in rounds)
        print(f"- `{row.name}`: {said}")


if __name__ == "__main__":
    raise SystemExit(main())
