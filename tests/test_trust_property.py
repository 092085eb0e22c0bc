"""Property: random series commands, plain git and kills never lose work (issue 18, "Trust").

A hypothesis state machine drives a small real project (four patches on a
tiny upstream whose ``main`` conflicts with P1 and whose ``calm`` does
not) through random sequences of

* series commands, run as real processes, each one perhaps SIGKILLed
  before its Nth git call (``SERIES_FAULT_KILL_AT``), or killed with its
  process group (its git included) as soon as it has logged its Nth git
  call (``kill=-N``, which cuts a git process in its work): ``apply``,
  ``apply --force``, ``export``, ``rebase --onto calm|main``,
  ``rebase --continue|--skip|--abort`` and ``status``;
* plain git in the checkout: a commit on whatever HEAD is, a commit on a
  detached HEAD, an uncommitted edit (of a tracked file, or a new file),
  ``git add -A``, a conflict resolved (cleanly, or with only its
  ``<<<<<<<`` lines deleted) and added, a checkout of another branch.

After every step:

(a) **commits**: every commit that was reachable from HEAD, a branch, a
    tag, a stash entry or a series backup ref (``refs/series/backup/``)
    after an earlier step is still reachable from a ref, HEAD or a stash
    entry, or has an equivalent copy that is (same tree, same parent trees,
    same author and message but for the ``Series-Id`` trailer: what
    ``apply`` and ``export`` rebuild). The commits series makes for itself
    during a rebase (under ``refs/series/rebase/``) are not the user's and
    are not tracked; a commit made on top of them is. A commit that a
    plain git action itself leaves behind (a checkout away from a detached
    HEAD) is not series' to keep and is no longer tracked.
(b) **patch files and series.toml**: every version of them seen after a
    step that left no export journal and no rebase in progress (what an
    interrupted export or rebase half wrote is its own output, rolled
    back or finished by the next command) is still somewhere: the
    project, its git history (the project is a git repository, as the
    real one is), ``.series/backups/``, or a blob reachable in the
    checkout (the rebase snapshots).
(c) **uncommitted edits**: every content the test wrote into the checkout
    that is still there after a step is still in the work tree, the index
    or a reachable object (a stash, a backup ref) after the next series
    command. Only ``rebase --abort`` and ``--skip`` may drop edits, and
    only of the files of the conflict they throw away (documented, as git
    does).
(d) **exit status**: every series command that was not killed, and the
    ``series status`` run after every step, exits 0-4 with no traceback
    and no "internal error".
(e) **no conflict markers** in patches/ (a half-resolved conflict
    committed by ``--continue``).
(g) **no leftovers** after a command that wrote and exited 0: no
    ``*.lock`` in the checkout's git directory, no ``.*.tmp`` in patches/,
    no staging directory of apply (what a killed run leaves is cleared or
    finished by the next).

A sixth rule runs two commands at once: the second runs to its end while
the first is held at the start of its Nth git process (a ``git`` shim on
its PATH); then (f) the
project is not a **mix**: with no rebase in progress and no export
journal, series.toml pins the commit the checkout sits on (checked after
every step) and the patches apply on it (``series check-conflicts``).

CI runs a fixed number of examples (``derandomize=True``, no example
database) without shrinking. For longer local runs (docs/hardening.md):
``SERIES_PROPERTY_EXAMPLES=N`` and ``SERIES_PROPERTY_STEPS=N`` ask for
more and longer sequences, ``SERIES_PROPERTY_SHRINK=1`` for the shortest
failing one, ``SERIES_PROPERTY_RANDOM=1`` for other sequences than CI's,
``SERIES_PROPERTY_TRACE=1`` prints each step, and
``SERIES_PROPERTY_KNOWN`` (failure names or their beginnings, ``*`` for
any text, comma-separated) leaves out failures already known, so that a
long run finds the next. The sequences it found on main are replayed
below as plain tests.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from helpers import DEFAULT_SPECS, PatchSpec, git, make_project
from rebase_helpers import commit_upstream

SPECS = [
    *DEFAULT_SPECS,
    PatchSpec("P4", "readme: says patched", {"README.md": ("tiny upstream\n", "tiny, patched\n")}),
]
EDITED = ("pkg/core.py", "pkg/util.py", "README.md")
KILLS = st.none() | st.integers(1, 60) | st.integers(-60, -1)  # < 0: the process group
FIRST = ["rebase --onto calm", "rebase --onto main", "apply --force", "export"]
SECOND = ["rebase --abort", "apply --force", "export", "rebase --continue"]
# Holds the Nth git process started through it (N = 0: the first one started after
# series.toml changed) until the file go exists.
SHIM = """#!/bin/sh
n=$(( $(cat "{hold}/count" 2>/dev/null || echo 0) + 1 ))
echo $n > "{hold}/count"
if [ ! -e "{hold}/held" ] && {{ [ $n -eq {at} ] || ! cmp -s "{hold}/toml" "{toml}"; }}; then
    : > "{hold}/held"
    while [ ! -e "{hold}/go" ]; do sleep 0.02; done
fi
exec "{git}" "$@"
"""
KNOWN = {k.strip() for k in os.environ.get("SERIES_PROPERTY_KNOWN", "").split(",") if k.strip()}
TRACE = bool(os.environ.get("SERIES_PROPERTY_TRACE"))
MARKERS = (b"\n+<<<<<<<", b"\n+=======", b"\n+>>>>>>>", b"\n+|||||||")


class Broken(AssertionError):
    """An invariant does not hold; ``kind`` classifies it for the report."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


_KINDS: dict[str, type[Broken]] = {}


def broken(kind: str, what: str, detail: str) -> Broken:
    """A Broken of its own class per kind and command, so hypothesis tells the bugs apart."""
    name = f"{kind} after {what.split(' (')[0]}"
    cls = _KINDS.setdefault(name, type(name.replace(" ", "_"), (Broken,), {}))
    return cls(kind, f"{what}: {detail}")


@dataclass(frozen=True)
class Template:
    root: Path  # holds project/ (applied, a git repository) and cache/
    upstream: Path
    env: dict[str, str]
    committed: frozenset[str]  # blob ids of the project files in its git history


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def build_template(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Template:
    """The project every example starts from: applied, its files committed."""
    cache = tmp / "cache"
    monkeypatch.setenv("SERIES_CACHE_DIR", str(cache))
    project = make_project(tmp, SPECS)
    up = project.upstream
    commit_upstream(up, "pkg/util.py", "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: VALUE_20")
    git(up, "branch", "calm")
    commit_upstream(up, "pkg/core.py", "return 1\n", "return -1\n", "core: f1 returns -1")
    root = project.root
    (root / ".gitignore").write_text("work/\n.series/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the series")
    code, _, err = project.run("apply")
    assert code == 0, err
    git(project.work, "branch", "other", "refs/series/base")
    committed = frozenset(blob_id(p.read_bytes()) for p in _series_files(root))
    return Template(tmp, up, dict(os.environ), committed)


def _series_files(root: Path) -> list[Path]:
    return [root / "series.toml", *sorted((root / "patches").glob("*.patch"))]


class TrustMachine(RuleBasedStateMachine):
    """One example: a copy of the template, driven step by step, checked after each."""

    template: Template  # set by the test (a subclass per test)

    def __init__(self) -> None:
        super().__init__()
        t = self.template
        self.dir = Path(tempfile.mkdtemp(prefix="ex-", dir=t.root))
        shutil.copytree(t.root / "project", self.dir / "project", symlinks=True)
        shutil.copytree(t.root / "cache", self.dir / "cache", symlinks=True)
        self.root, self.work = self.dir / "project", self.dir / "project" / "work"
        self.env = {**t.env, "SERIES_CACHE_DIR": str(self.dir / "cache")}
        self.env.pop("SERIES_FAULT_KILL_AT", None)
        self.count = 0
        self.only: set[str] | None = None  # the invariants checked (None: all)
        if TRACE:
            print("example", file=sys.stderr)
        self.commits: set[str] = set()  # (a) what must stay reachable
        self.versions: set[str] = set()  # (b) blob ids of series.toml and patch versions
        self.edits: dict[str, str] = {}  # (c) blob id -> path, of contents the test wrote
        self._track(self._scan())

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- running things -------------------------------------------------------------

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args], cwd=self.work, capture_output=True, text=True, env=self.env
        )

    def _series(
        self, *args: str, kill: int | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run series; ``kill`` N > 0: SIGKILL it before its git call N; N < 0: kill its group.

        The group kill (series and the git it runs, as a terminal's kill of a
        job would) comes as soon as series has logged its git call -N, so it
        usually cuts that git process in the middle of its work.
        """
        env = dict(env or self.env)
        argv = [sys.executable, "-m", "series", "-C", str(self.root), *args]
        if kill is not None and kill < 0:
            return _group_killed(argv, {**env, "SERIES_DEBUG": "1"}, -kill)
        if kill is not None:
            env["SERIES_FAULT_KILL_AT"] = str(kill)
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        except subprocess.TimeoutExpired as exc:  # it is killed; a hang is a failure
            return subprocess.CompletedProcess(argv, 124, "", f"hung: {exc}")

    def _command(self, args: list[str], kill: int | None) -> None:
        """A series command, then the invariants (a)-(e) and ``series status``."""
        args = self._argv(args)
        conflicted = self._conflicted() if args[-1] in ("--abort", "--skip") else set()
        done = self._series(*args, kill=kill)
        what = f"series {' '.join(args[:2])} ({' '.join(args[2:3])} kill at {kill})"
        if TRACE:
            print(f"  {what}: exit {done.returncode}", file=sys.stderr)
        self._exit_ok(done, what, killed=kill is not None)
        scan = self._scan()
        self._check(scan, what, conflicted)
        if done.returncode == 0 and args[0] != "status":
            self._no_leftovers(what)
        status = self._series("status")
        self._exit_ok(status, f"series status after {what}", killed=False)
        self._track(scan)

    def _action(self) -> None:
        """After plain git: what git itself dropped is not series' to keep."""
        if TRACE:
            print(f"  git action {self.count}", file=sys.stderr)
        scan = self._scan()
        self.commits &= scan.reachable
        self.edits = {h: p for h, p in self.edits.items() if h in scan.present}
        self._track(scan)

    # -- series commands --------------------------------------------------------------

    @rule(force=st.booleans(), kill=KILLS)
    def apply(self, force: bool, kill: int | None) -> None:
        self._command(["apply", "--force"] if force else ["apply"], kill)

    @rule(kill=KILLS)
    def export(self, kill: int | None) -> None:
        self._command(["export"], kill)

    @rule(onto=st.sampled_from(["main", "calm"]), kill=KILLS)
    def rebase(self, onto: str, kill: int | None) -> None:
        self._command(["rebase", "--onto", onto], kill)

    @rule(action=st.sampled_from(["--continue", "--skip", "--abort"]), kill=KILLS)
    def rebase_action(self, action: str, kill: int | None) -> None:
        self._command(["rebase", action], kill)

    @rule()
    def status(self) -> None:
        self._command(["status"], None)

    @rule(
        first=st.sampled_from(FIRST),
        second=st.sampled_from(SECOND),
        after=st.integers(1, 40),
    )
    def concurrently(self, first: str, second: str, after: int) -> None:
        """``second`` runs to its end while ``first`` is held at the start of its git process N.

        (N = 0, for the replayed sequences: the first git process it starts
        after it changed series.toml, a point that does not move with the
        number of git calls before it.)

        A ``git`` shim first on ``first``'s PATH counts the git processes it
        starts and holds the Nth until ``second`` has ended, so the point is
        the same on every run. Then both must have exited 0-4, nothing is
        lost, and the project is not a mix: with no rebase in progress and
        no export journal, the patches apply on the pin of series.toml
        (``series check-conflicts --no-matrix``: the user's commits may
        conflict pairwise with a patch, never in order).
        """
        one, two = self._argv(first.split()), self._argv(second.split())
        conflicted = self._conflicted() if two[-1] in ("--abort", "--skip") else set()
        env = {**self.env, "SERIES_LOCK_TIMEOUT": "2"}
        hold = self.dir / "hold"
        shutil.rmtree(hold, ignore_errors=True)
        hold.mkdir()
        shim = hold / "git"
        shutil.copy(self.root / "series.toml", hold / "toml")
        # N > 0 holds at the count only: series.toml is then compared with its own copy
        toml = self.root / "series.toml" if after <= 0 else hold / "toml"
        shim.write_text(SHIM.format(hold=hold, at=after, toml=toml, git=shutil.which("git")))
        shim.chmod(0o755)
        argv = [sys.executable, "-m", "series", "-C", str(self.root), *one]
        path = f"{hold}{os.pathsep}{env['PATH']}"
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "PATH": path, "GIT_PYTHON_GIT_EXECUTABLE": str(shim)},
        )
        while proc.poll() is None and not (hold / "held").exists():
            time.sleep(0.02)
        try:
            done = self._series(*two, env=env)
        finally:
            (hold / "go").touch()
        _, err = proc.communicate()
        code = proc.returncode
        what = f"series {second} while series {first} was held (at git process {after})"
        if TRACE:
            print(f"  {what}: exit {code}, {done.returncode}", file=sys.stderr)
        what_first = f"series {first} held while series {second} ran (at git process {after})"
        self._exit_ok(subprocess.CompletedProcess(one, code, "", err), what_first, killed=False)
        self._exit_ok(done, what, killed=False)
        scan = self._scan()
        self._check(scan, what, conflicted)
        if scan.settled(self.root):
            check = self._series("check-conflicts", "--no-matrix")  # in order, not pairwise
            self._exit_ok(check, f"series check-conflicts after {what}", killed=False)
            if check.returncode != 0:
                self._fail("mixed project", what, check.stdout[-800:] + check.stderr[-800:])
        status = self._series("status")
        self._exit_ok(status, f"series status after {what}", killed=False)
        self._track(scan)

    def _argv(self, args: list[str]) -> list[str]:
        if args[0] == "rebase" and "--onto" in args:
            return [*args, "--upstream", str(self.template.upstream)]
        return args

    # -- plain git in the checkout ----------------------------------------------------

    def _edit(self, path: str, line: int) -> None:
        self.count += 1
        target = self.work / path
        lines = target.read_text().splitlines(keepends=True) if target.is_file() else []
        lines.insert(min(line, len(lines)), f"# edit {self.count}\n")
        data = "".join(lines).encode()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.edits[blob_id(data)] = path

    @rule(path=st.sampled_from(EDITED), line=st.integers(0, 40), detach=st.booleans())
    def commit(self, path: str, line: int, detach: bool) -> None:
        if detach:
            self._git("checkout", "-q", "--detach")
        self._edit(path, line)
        self._git("add", "-A")
        self._git("commit", "-q", "-m", f"edit {self.count}")
        self._action()

    @rule(path=st.sampled_from([*EDITED, "notes.txt"]), line=st.integers(0, 40))
    def edit(self, path: str, line: int) -> None:
        self._edit(path, line)
        self._action()

    @rule()
    def add(self) -> None:
        self._git("add", "-A")
        self._action()

    @rule(half=st.booleans())
    def resolve(self, half: bool) -> None:
        """Resolve each conflicted file (the patch's side), or only delete its ``<<<<<<<`` lines."""
        for path in self._git("diff", "--name-only", "--diff-filter=U").stdout.split():
            target = self.work / path
            if half:
                keep = [
                    ln for ln in target.read_text().splitlines(True) if not ln.startswith("<<<")
                ]
                data = "".join(keep).encode()
            else:
                data = self._git("show", f":3:{path}").stdout.encode()
            target.write_bytes(data)
            self.edits[blob_id(data)] = path
            self._git("add", path)
        self._action()

    @rule(branch=st.sampled_from(["series", "other"]))
    def switch(self, branch: str) -> None:
        self._git("checkout", "-q", branch)
        self._action()

    # -- the invariants -----------------------------------------------------------------

    def _scan(self) -> Scan:
        stash = self._git("stash", "list", "--format=%H").stdout.split()
        objects = self._git("rev-list", "--objects", "--all", "HEAD", *stash).stdout.splitlines()
        reachable = {line for line in objects if " " not in line}
        blobs = {line.split(" ", 1)[0] for line in objects if " " in line}
        user = self._git(
            "rev-list",
            "HEAD",
            "--branches",
            "--tags",
            "--glob=refs/series/backup/*",
            *stash,
            "--not",
            "--glob=refs/series/rebase/*",
        ).stdout.split()
        index = self._git("ls-files", "-s").stdout.splitlines()
        files = {
            blob_id(p.read_bytes())
            for p in self.work.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(self.work).parts
        }
        present = files | {line.split()[1] for line in index} | blobs
        kept = {blob_id(p.read_bytes()) for p in _series_files(self.root)}
        backups = self.root / ".series" / "backups"
        if backups.is_dir():
            kept |= {blob_id(p.read_bytes()) for p in backups.rglob("*") if p.is_file()}
        series_files = kept | blobs | self.template.committed
        refs = dict(
            line.split(" ", 1)
            for line in self._git("for-each-ref", "--format=%(refname) %(objectname)").stdout.split(
                "\n"
            )
            if line
        )
        return Scan(reachable, set(user), present, blobs, series_files, refs)

    def _track(self, scan: Scan) -> None:
        self.commits |= scan.user
        # an edit committed (or stashed) is kept by its commit: invariant (a)
        self.edits = {h: p for h, p in self.edits.items() if h not in scan.stored}
        if scan.settled(self.root):  # not what an interrupted export or rebase half wrote
            self.versions |= {blob_id(p.read_bytes()) for p in _series_files(self.root)}

    def _check(self, scan: Scan, what: str, conflicted: set[str]) -> None:
        missing = self.commits - scan.reachable
        copied = self._equivalents(missing, scan)
        self.commits -= copied  # their copies are tracked instead
        missing -= copied
        if missing:
            shown = [self._git("log", "-1", "--format=%h %s", c).stdout.strip() for c in missing]
            self._fail("lost commit", what, f"{sorted(shown)} no longer reachable")
            self.commits -= missing
        lost = self.versions - scan.series_files
        if lost:
            self._fail("lost patch content", what, f"{len(lost)} version(s) of patches/")
            self.versions -= lost
        gone = {p for h, p in self.edits.items() if h not in scan.present and p not in conflicted}
        if gone:
            self._fail("lost uncommitted edit", what, f"the edits of {sorted(gone)}")
        self.edits = {h: p for h, p in self.edits.items() if h in scan.present}
        pin = tomllib.loads((self.root / "series.toml").read_text())["upstream"]["commit"]
        base = scan.refs.get("refs/series/base")
        if scan.settled(self.root) and base != pin:
            detail = f"series.toml pins {pin[:12]}, the checkout sits on {str(base)[:12]}"
            self._fail("mixed project", what, detail)
        for path in _series_files(self.root):
            if any(m in path.read_bytes() for m in MARKERS):
                self._fail("markers committed", what, f"{path.name} has conflict markers")

    def _no_leftovers(self, what: str) -> None:
        """After a command that wrote and succeeded: no lock or temporary file of a killed run."""
        left = [
            *(self.work / ".git").rglob("*.lock"),
            *(self.root / "patches").glob(".*.tmp"),
            *self.root.glob(".work.series-new-*"),
        ]
        if left:
            names = sorted(str(p.relative_to(self.root)) for p in left)
            self._fail("leftovers", what, f"{names} left behind")

    def _exit_ok(self, done: subprocess.CompletedProcess[str], what: str, *, killed: bool) -> None:
        if killed and done.returncode == -9:
            return
        if done.returncode == 124 and done.stderr.startswith("hung:"):
            self._fail("hang", what, "it did not end within 120 s")
        if "Traceback" in done.stderr or "internal error" in done.stderr or done.returncode > 4:
            self._fail("exit 70/traceback", what, f"exit {done.returncode}: {done.stderr[-800:]}")
        if done.returncode < 0:
            self._fail("wrong exit code", what, f"exit {done.returncode}: {done.stderr[-800:]}")

    def _fail(self, kind: str, what: str, detail: str) -> None:
        name = f"{kind} after {what.split(' (')[0]}"
        if any(fnmatch.fnmatchcase(name, f"{k}*") for k in KNOWN):
            return
        if self.only is None or kind in self.only:
            raise broken(kind, what, detail)

    def _equivalents(self, missing: set[str], scan: Scan) -> set[str]:
        """Those of ``missing`` with a reachable copy: same trees, author and message."""
        if not missing:
            return set()
        keys = self._keys(missing | scan.user)
        have = {keys[c] for c in scan.user}
        return {c for c in missing if keys[c] in have}

    def _keys(self, commits: set[str]) -> dict[str, tuple[str, ...]]:
        fmt = "%H%x00%T%x00%an <%ae> %ad%x00%P%x00%B%x01"
        out = self._git("log", "--no-walk=unsorted", f"--format={fmt}", *sorted(commits)).stdout
        rows = [r.lstrip("\n").split("\0") for r in out.split("\x01") if r.strip()]
        parents = sorted({p for r in rows for p in r[3].split()})
        trees = self._git("rev-parse", *(f"{p}^{{tree}}" for p in parents)).stdout.split()
        tree_of = dict(zip(parents, trees, strict=True))
        keys = {}
        for sha, tree, author, ps, body in rows:
            message = "\n".join(ln for ln in body.splitlines() if not ln.startswith("Series-Id:"))
            keys[sha] = (tree, author, *(tree_of[p] for p in ps.split()), message.strip())
        return keys

    def _conflicted(self) -> set[str]:
        raw = self._git("cat-file", "blob", "refs/series/rebase/state").stdout
        try:
            stop = json.loads(raw).get("stop") or {}
        except ValueError:
            return set()
        return set(stop.get("files", []))


@dataclass(frozen=True)
class Scan:
    reachable: set[str]  # commits reachable from any ref, HEAD or a stash entry
    user: set[str]  # commits reachable from HEAD, branches, tags, stashes, backups (not rebase)
    present: set[str]  # blob ids in the work tree, the index, or reachable
    stored: set[str]  # blob and tree ids reachable (committed, stashed, snapshotted)
    series_files: set[str]  # blob ids where a version of patches/ or series.toml can be found
    refs: dict[str, str]  # every ref of the checkout -> its object

    def settled(self, root: Path) -> bool:
        """No rebase in progress and no export journal: the project and checkout agree."""
        journal = (root / ".series" / "export-journal.json").exists()
        return not journal and "refs/series/rebase/state" not in self.refs


def _group_killed(
    argv: list[str], env: dict[str, str], at: int
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert proc.stderr is not None
    err, calls = [], 0
    while calls < at and (line := proc.stderr.readline()):
        err.append(line)
        calls += line.startswith("series.git: git ")
    if calls == at:
        os.killpg(proc.pid, signal.SIGKILL)
    err.append(proc.stderr.read())
    return subprocess.CompletedProcess(argv, proc.wait(), "", "".join(err))


# -- the property ----------------------------------------------------------------------------


def _machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> type[TrustMachine]:
    template = build_template(tmp_path / "template", monkeypatch)
    return type("Machine", (TrustMachine,), {"template": template})


EXAMPLES = int(os.environ.get("SERIES_PROPERTY_EXAMPLES") or 5)
STEPS = int(os.environ.get("SERIES_PROPERTY_STEPS") or 8)


def test_no_sequence_of_commands_git_and_kills_loses_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_state_machine_as_test(
        _machine(tmp_path, monkeypatch),
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            derandomize=not os.environ.get("SERIES_PROPERTY_RANDOM"),
            suppress_health_check=list(HealthCheck),
            # a failing sequence is at most STEPS long; shrinking it takes minutes
            phases=list(Phase)
            if os.environ.get("SERIES_PROPERTY_SHRINK")
            else [Phase.explicit, Phase.reuse, Phase.generate],
        ),
    )


# -- the sequences it found on main, replayed ----------------------------------------------


@contextmanager
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> Iterator[TrustMachine]:
    """A fresh example checking only the invariant ``kind``, for a sequence replayed by hand.

    Each test below replays a sequence the machine found failing on an
    earlier main; only the invariant ``kind`` is checked, so each stays the
    regression test of its own fix.
    """
    machine = _machine(tmp_path, monkeypatch)()
    machine.only = {kind}
    try:
        yield machine
    finally:
        machine.teardown()


LOST = "branch `lost`: every commit reachable before a command stays reachable from a named ref"


def test_a_commit_on_a_detached_head_survives_apply_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with example(tmp_path, monkeypatch, "lost commit") as state:
        state.commit(detach=True, line=0, path="pkg/core.py")
        state.apply(force=True, kill=None)


def test_a_commit_made_at_a_rebase_stop_survives_abort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with example(tmp_path, monkeypatch, "lost commit") as state:
        state.rebase(onto="main", kill=None)
        state.resolve(half=False)
        state.commit(detach=False, line=0, path="pkg/util.py")
        state.rebase_action(action="--abort", kill=None)


def test_the_commits_a_rebase_replaced_stay_reachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with example(tmp_path, monkeypatch, "lost commit") as state:
        state.rebase(onto="calm", kill=None)


def test_a_half_resolved_conflict_is_not_exported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with example(tmp_path, monkeypatch, "markers committed") as state:
        state.rebase(onto="main", kill=None)
        state.resolve(half=True)
        state.rebase_action(action="--continue", kill=None)


def test_abort_keeps_an_edit_outside_the_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with example(tmp_path, monkeypatch, "lost uncommitted edit") as state:
        state.rebase(onto="main", kill=None)
        state.edit(line=0, path="pkg/util.py")
        state.rebase_action(action="--abort", kill=None)


def test_abort_while_a_rebase_runs_leaves_no_mixed_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with example(tmp_path, monkeypatch, "mixed project") as state:
        # held at its first git process after it wrote series.toml (its end)
        state.concurrently(first="rebase --onto calm", second="rebase --abort", after=0)
