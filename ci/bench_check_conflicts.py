"""Benchmark: ``series check-conflicts`` against the same checks done by hand, and its floor.

Builds, in a temporary directory, a 13-patch series on the real Keras tree
shaped like the real one: the same files, three patches on
backend/torch/core.py, two on layers/layer.py, one that only applies on top
of another. An upstream branch "next" carries four commits: one conflicts
with a patch, one is another patch's exact change, one names a patch's PR
in its subject, one is unrelated.

The Keras tree is the base ``series apply`` uses: this project's pinned
upstream, materialised by the tool itself (git, or the PyPI sdist imported
as one commit) in the per-user cache (``$SERIES_CACHE_DIR``, else
``~/.cache/keras-series``); ``--keras PATH`` takes a git clone instead.

Tool: the full report (stack on the pin, 13 alone + 78 pairs, 13 replays
onto "next") with ``series check-conflicts --onto next --json``, in process;
the median of --repeat warm runs, and the first (cold) run; and the same
command as its own ``python -m series`` process (interpreter start and
imports included), as a person runs it.

By hand: the same checks with porcelain git in ONE reused work tree, as a
maintainer would script them: ``git reset --hard START`` then ``git
cherry-pick`` (alone, replay step, "needs") or ``git merge`` (commute).
The script checks that both ways give the same verdicts.

Floor: the tool's own batched ``git merge-tree --write-tree --stdin`` calls,
recorded during one run (their input lines, and the scratch objects that
existed when each started) and fed straight to git again, each from an
empty scratch store, so each writes what it wrote in the tool. What the
tool spends above that is its Python, its other git processes and the
stack and pin look-ups.

    python ci/bench_check_conflicts.py [--keras PATH] [--repeat N] [--project DIR]

``--project DIR`` benchmarks the tool only, on an existing project.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from series.cli import main
from series.git import Ident, Repo
from series.git.mergetree import (
    SPLIT,
    Merge,
    MergeStream,
    TreeMerge,
    parse_merge_tree,
    stored,
)
from series.git.run import Runner, ram_dir
from series.project import Series, default_cache_dir
from series.upstream import cache_repo, resolve

ROOT = Path(__file__).resolve().parent.parent
IDENT = Ident("Bench", "bench@keras-series.invalid", "@1767225600 +0000")
ENV = {**IDENT.env("AUTHOR"), **IDENT.env("COMMITTER")}
MHA = "keras/src/layers/attention/multi_head_attention.py"
# (id, PR, file, the line to edit (a prefix of it, stripped), edit after it instead)
PATCHES = [
    ("P1", 23182, "keras/src/backend/common/variables.py", "def standardize_dtype", False),
    ("P2", 23183, "keras/src/ops/operation.py", "def __call__", False),
    ("P5", 23184, "keras/src/layers/input_spec.py", "def assert_input_compatibility", False),
    ("P6", 23185, "keras/src/layers/core/dense.py", "def call(", False),
    ("P7", 23186, MHA, "def _compute_causal_mask", False),
    ("P9", 23187, "keras/src/backend/torch/trainer.py", "def train_step", False),
    ("P3", 23188, "keras/src/backend/torch/core.py", "def get_device", False),
    ("P4", 23189, "keras/src/backend/torch/core.py", "def convert_to_tensor", False),
    ("P8", 23190, "keras/src/backend/torch/core.py", "def slice(", False),
    ("P13", 23198, "keras/src/layers/layer.py", "def __call__", False),
    ("P15", 23199, "keras/src/backend/torch/nn.py", "def conv(", False),
    ("P17", 23200, "keras/src/layers/layer.py", "def __call__", True),
    ("P18", 23201, "keras/src/tree/torchtree_impl.py", "def _dict_to_ordered_dict", False),
]  # fmt: skip


def _edit(root: Path, path: str, prefix: str, after: bool, text: str) -> None:
    lines = (root / path).read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.strip().startswith(prefix))
    index += 1 if after else 0
    lines[index] = lines[index].rstrip("\n") + f"  # {text}\n"
    (root / path).write_text("".join(lines))


def _commit(repo: Runner, message: str) -> str:
    repo.git("commit", "-qam", message, env=ENV)
    return repo.git("rev-parse", "HEAD").strip()


def keras_base(tmp: Path, keras: Path | None) -> tuple[Runner, str]:
    """A non-bare repository whose HEAD is the Keras base; and what it is, for people."""
    upstream = Runner(tmp / "upstream")
    if keras is not None:
        Runner(tmp).git("clone", "-q", str(keras), str(upstream.path))
        return upstream, f"{keras} ({upstream.git('rev-parse', 'HEAD').strip()[:12]})"
    project = Series.load(ROOT, default_cache_dir())
    base = resolve(project.manifest.upstream, project.cache_dir, source=None, override=None)
    cache = cache_repo(project.cache_dir)
    ref = next(name for name, sha in cache.refs.under("refs/series/").items() if sha == base.commit)
    Runner(tmp).git("init", "-q", "-b", "main", str(upstream.path))
    upstream.git("fetch", "-q", "--no-tags", "--update-head-ok", str(cache.path), f"{ref}:main")
    upstream.git("reset", "-q", "--hard")
    return upstream, base.label


def build(tmp: Path, upstream: Runner) -> tuple[Path, Runner, str]:
    pin = upstream.git("rev-parse", "HEAD").strip()
    author = Runner(tmp / "author")
    Runner(tmp).git("clone", "-q", str(upstream.path), str(author.path))
    project = tmp / "project"
    (project / "patches").mkdir(parents=True)
    entries = []
    for pid, pr, path, prefix, after in PATCHES:
        _edit(author.path, path, prefix, after, f"series {pid}")
        _commit(author, f"{pid}: bench patch\n\nSeries-Id: {pid}")
        name = f"patches/perf-{pid}.patch"
        (project / name).write_bytes(author.git_bytes("format-patch", "-1", "--stdout", "HEAD"))
        entries.append(
            f'[[patch]]\nid = "{pid}"\ntitle = "bench {pid}"\nfile = "{name}"\npr = {pr}\n'
            f'branch = "perf-{pid}"\nstate = "open"\n'
        )
    (project / "series.toml").write_text(
        f'format = 1\n[upstream]\nname = "keras"\nrepository = "{upstream.path}"\n'
        f'ref = "{Repo(upstream.path).refs.symbolic_head()}"\ncommit = "{pin}"\n'
        'source = "git"\n[upstream.sdist]\npackage = "keras"\nversion = "3.15.1"\n\n'
        + "\n".join(entries)
    )
    _next(upstream)
    return project, author, pin


def _next(upstream: Runner) -> None:
    upstream.git("checkout", "-q", "-b", "next")
    _edit(upstream.path, PATCHES[7][2], PATCHES[7][3], False, "upstream edit")
    _commit(upstream, "torch: convert_to_tensor tweak")
    _edit(upstream.path, PATCHES[10][2], PATCHES[10][3], False, "series P15")
    _commit(upstream, "conv: the same change as P15")
    _edit(upstream.path, "keras/src/layers/layer.py", "def build(", False, "upstream")
    _commit(upstream, "Guard built and called (#23200)")
    _edit(upstream.path, "keras/src/version.py", "__version__", False, "upstream")
    _commit(upstream, "version note")


def cpu() -> float:
    """CPU seconds used so far by this process and the git processes it waited for."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def check_conflicts(project: Path, onto: list[str]) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["-C", str(project), "check-conflicts", "--json", *onto], out=out, err=err)
    if code not in (0, 3):
        sys.exit(f"check-conflicts failed ({code}):\n{err.getvalue()}")
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def fast(project: Path, repeat: int, onto: list[str]) -> tuple[float, list[float], dict[str, Any]]:
    times, cpus, report = [], [], {}
    for _ in range(repeat + 1):
        start, used = time.perf_counter(), cpu()
        report = check_conflicts(project, onto)
        times.append(time.perf_counter() - start)
        cpus.append(cpu() - used)
    report["cpu"] = statistics.median(cpus[1:] or cpus)
    return times[0], times[1:], report


def as_command(project: Path, repeat: int) -> list[float]:
    """Warm wall times of ``python -m series check-conflicts`` as its own process."""
    argv = [sys.executable, "-m", "series", "-C", str(project), "check-conflicts", "--json"]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run([*argv, "--onto", "next"], capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 3):
            sys.exit(f"check-conflicts failed ({proc.returncode}):\n{proc.stderr.decode()}")
    return times


@dataclass
class Batch:
    """One ``merge-tree --stdin`` process of the tool, replayable: a batch, or the replay's
    merge stream (its lines fed at once)."""

    cwd: str
    env: dict[str, str]
    lines: list[str]
    objects: Path  # a copy of the scratch store as the batch found it (the stream: as it left it)
    out: list[TreeMerge]


@contextmanager
def recording(keep: Path) -> Iterator[list[Batch]]:
    """Record the tool's ``merge-tree --stdin`` merges: each batch (``Merge.trees``) with
    the scratch store it found, and the replay's stream (``MergeStream``): its lines, its
    answers, and the scratch store when it closed.

    The stream's lines are answered one at a time beside other processes that write the
    scratch store (the favoured chain's trees), so no copy taken before it holds all they
    read: the floor feeds them to git with the store as the stream left it, its own
    merges' results in it too (git skips writing an object it finds: that part of the
    floor is, if anything, lower)."""
    batches: list[Batch] = []
    trees, close = Merge.trees, MergeStream.close
    send, answer = MergeStream.send, MergeStream.answer
    streams: dict[int, Batch] = {}

    def stream_of(self: MergeStream) -> Batch:
        if id(self) not in streams:
            empty = Path(tempfile.mkdtemp(prefix="objects-", dir=keep))
            streams[id(self)] = Batch(str(self.path), stored(self.env), [], empty, [])
            batches.append(streams[id(self)])
        return streams[id(self)]

    def record_trees(self: Merge, lines: Any, env: Any = None) -> list[TreeMerge]:
        store = Path(stored(env)["GIT_OBJECT_DIRECTORY"])
        snapshot = Path(tempfile.mkdtemp(prefix="objects-", dir=keep))
        shutil.copytree(store, snapshot, dirs_exist_ok=True)
        out = trees(self, lines, env)
        batches.append(Batch(str(self.path), stored(env), list(lines), snapshot, out))
        return out

    def record_send(self: MergeStream, line: str) -> bool:
        sent = send(self, line)
        if sent:
            stream_of(self).lines.append(line)
        return sent

    def record_answer(self: MergeStream) -> TreeMerge | None:
        found = answer(self)
        if found is not None:
            stream_of(self).out.append(found)
        return found

    def record_close(self: MergeStream) -> None:
        close(self)
        batch = streams.get(id(self))
        store = Path(self.env.get("GIT_OBJECT_DIRECTORY", ""))
        if batch is not None and store.is_dir():
            shutil.copytree(store, batch.objects, dirs_exist_ok=True)

    Merge.trees = record_trees  # type: ignore[method-assign]
    MergeStream.send = record_send  # type: ignore[method-assign]
    MergeStream.answer = record_answer  # type: ignore[method-assign]
    MergeStream.close = record_close  # type: ignore[method-assign]
    try:
        yield batches
    finally:
        Merge.trees = trees  # type: ignore[method-assign]
        MergeStream.send, MergeStream.answer = send, answer  # type: ignore[method-assign]
        MergeStream.close = close  # type: ignore[method-assign]


def floor(batches: list[Batch], scratch: Path) -> float:
    """Wall time of the merges fed straight to git, one ``merge-tree --stdin`` per batch
    (the stream's lines in one; a batch of ``SPLIT`` lines or more in two at once, as the
    tool runs it when a core is idle), each into an empty scratch store; the outputs
    compared with what the tool got."""
    total = 0.0
    for i, b in enumerate(batches):
        if not b.lines:
            continue
        store = Path(tempfile.mkdtemp(prefix=f"floor-{i}-", dir=scratch))
        alternates = f"{b.env['GIT_ALTERNATE_OBJECT_DIRECTORIES']}{os.pathsep}{b.objects}"
        env = {**os.environ, **b.env, "GIT_OBJECT_DIRECTORY": str(store)}
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = alternates
        # a long batch in two processes at once, its halves, as the tool runs it on an
        # idle machine (series.git.mergetree SPLIT): the floor is the faster way
        half = len(b.lines) // 2 if len(b.lines) >= SPLIT else len(b.lines)
        parts = [p for p in (b.lines[:half], b.lines[half:]) if p]
        argv = ["git", "merge-tree", "--write-tree", "-z", "--stdin"]
        start = time.perf_counter()
        procs = [subprocess.Popen(argv, cwd=b.cwd, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in parts]  # fmt: skip
        with ThreadPoolExecutor(len(procs)) as pool:  # each fed and read at once
            done = list(pool.map(lambda pp: pp[0].communicate(("\n".join(pp[1]) + "\n").encode()),
                                 zip(procs, parts, strict=True)))  # fmt: skip
        total += time.perf_counter() - start
        got = [merge for out, _ in done for merge in parse_merge_tree(out)]
        if any(proc.returncode for proc in procs) or got != b.out:
            sys.exit(f"replaying merge-tree batch {i} gave another result:\n{done[-1][1]!r}")
        shutil.rmtree(store)
    return total


class Reused:
    """Every check in one reused work tree, with porcelain git."""

    def __init__(self, repo: Runner, path: Path, start: str) -> None:
        repo.git("worktree", "add", "-q", "--detach", str(path), start)
        self.tree, self.checks = Runner(path), 0

    def check(self, start: str, argv: list[str]) -> str | None:
        """``git reset --hard start``, then ``git argv``: the new HEAD, or None."""
        self.checks += 1
        self.tree.git("reset", "-q", "--hard", start)
        status, _, _ = self.tree.git_status(*argv, env=ENV)
        return self.tree.git("rev-parse", "HEAD").strip() if status == 0 else None

    def pick(self, start: str, commit: str) -> str | None:
        return self.check(
            start, ["cherry-pick", "--allow-empty", "--keep-redundant-commits", commit]
        )


def by_hand(author: Runner, pin: str, onto: str, tmp: Path) -> tuple[float, dict[str, Any]]:
    commits = Repo(author.path).history.commits(pin, "HEAD")
    ids = [p[0] for p in PATCHES]
    start, used = time.perf_counter(), cpu()
    s = Reused(author, tmp / "wt", pin)
    alone = {pid: s.pick(pin, c) for pid, c in zip(ids, commits, strict=True)}
    pairs = {}
    for i, a in enumerate(ids):
        for j in range(i + 1, len(ids)):
            one, two = alone[a], alone[ids[j]]
            if one and two:
                merged = s.check(one, ["merge", "-q", "--no-edit", two])
                pairs[(a, ids[j])] = "commute" if merged else "conflict"
            elif one:
                pairs[(a, ids[j])] = "needs" if s.pick(one, commits[j]) else "n/a"
            else:
                pairs[(a, ids[j])] = "n/a"
    chain, replay = onto, {}
    for pid, commit in zip(ids, commits, strict=True):
        new = s.pick(chain, commit)
        replay[pid] = "conflict" if new is None else "applied"
        chain = new or chain
    seconds, used = time.perf_counter() - start, cpu() - used
    result = {"alone": alone, "pairs": pairs, "replay": replay, "checks": s.checks, "cpu": used}
    return seconds, result


def agree(report: dict[str, Any], slow_result: dict[str, Any]) -> list[str]:
    wrong = []
    for row in report["matrix"]["alone"]:
        if row["applies"] != bool(slow_result["alone"][row["id"]]):
            wrong.append(f"alone {row['id']}")
    for p in report["matrix"]["pairs"]:
        if p["result"] != slow_result["pairs"][(p["a"], p["b"])]:
            wrong.append(f"pair {p['a']} {p['b']}: {p['result']}")
    for row in report["onto"]["patches"]:
        conflict = row["replay"] == "conflict"
        if conflict != (slow_result["replay"][row["id"]] == "conflict"):
            wrong.append(f"replay {row['id']}")
    return wrong


@dataclass
class Figures:
    cold: float
    warm: list[float]
    command: list[float]
    floors: list[float]
    hand: list[float]
    report: dict[str, Any]
    result: dict[str, Any]
    batches: int


def measure(tmp: Path, keras: Path | None, repeat: int) -> Figures:
    upstream, label = keras_base(tmp, keras)
    print(f"base: {label}")
    os.environ["SERIES_CACHE_DIR"] = str(tmp / "cache")  # the runs start on an empty cache
    project, author, pin = build(tmp, upstream)
    cold, warm, report = fast(project, repeat, ["--onto", "next"])
    command = as_command(project, repeat)
    scratch = Path(tempfile.mkdtemp(prefix="series-bench-floor-", dir=ram_dir()))
    try:
        with recording(scratch) as batches:
            check_conflicts(project, ["--onto", "next"])
        if not batches:
            sys.exit(
                "recorded no merge: does series still merge through Merge.trees and MergeStream?"
            )
        floors = [floor(batches, scratch) for _ in range(repeat)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    author.git("fetch", "-q", str(upstream.path), "next")
    onto = report["onto"]["commit"]
    hand: list[float] = []
    result: dict[str, Any] = {}
    for i in range(max(1, repeat // 2)):
        seconds, result = by_hand(author, pin, onto, tmp / f"hand-{i}")
        hand.append(seconds)
        author.git("worktree", "remove", "--force", str(tmp / f"hand-{i}" / "wt"))
    return Figures(cold, warm, command, floors, hand, report, result, len(batches))


def show(f: Figures) -> bool:
    med = statistics.median
    tool, hand, base = med(f.warm), med(f.hand), med(f.floors)
    stats, wrong = f.report["stats"], agree(f.report, f.result)
    print(
        f"patches: {len(PATCHES)}; tool: {stats['merges']} merges in {stats['batches']} "
        f"merge-tree batches ({stats['merge_mode']}); by hand: {f.result['checks']} checks"
    )
    print(f"tool (check-conflicts --onto, full report): warm median {tool:.3f} s, "
          f"cold {f.cold:.3f} s  ({len(f.warm)} warm runs)")  # fmt: skip
    print(f"tool as a command (python -m series, its own process): {med(f.command):.3f} s")
    print(f"by hand (one reused work tree, reset + cherry-pick/merge): {hand:.3f} s "
          f"(median of {len(f.hand)})")  # fmt: skip
    print(f"floor (the tool's {f.batches} merge-tree --stdin processes fed to git): {base:.3f} s "
          f"(median of {len(f.floors)})")  # fmt: skip
    print(f"ratio by hand / tool: {hand / tool:.1f}x (warm), {hand / f.cold:.1f}x (cold), "
          f"{hand / med(f.command):.1f}x (warm, as a command)")  # fmt: skip
    print(f"ratio tool / floor:   {tool / base:.1f}x (warm)")
    fast_cpu, hand_cpu = f.report["cpu"], f.result["cpu"]
    print(f"cpu (user+sys, with git): tool {fast_cpu:.3f} s, by hand {hand_cpu:.3f} s, "
          f"ratio {hand_cpu / fast_cpu:.1f}x")  # fmt: skip
    print("verdicts agree" if not wrong else f"VERDICTS DIFFER: {wrong}")
    return not wrong


def load() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} cores, load average {os.getloadavg()[0]:.1f}"


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keras", type=Path, help="a git clone of Keras (default: the pin)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--project", type=Path, help="benchmark the tool alone on this project")
    args = parser.parse_args()
    if args.keras and not ((args.keras / ".git").exists() or (args.keras / "HEAD").exists()):
        parser.error(f"{args.keras} is not a git repository of the Keras tree")
    print(f"machine: {load()} at the start")
    with tempfile.TemporaryDirectory(prefix="series-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.project:
            os.environ["SERIES_CACHE_DIR"] = str(tmp / "cache")
            cold, warm, _ = fast(args.project.resolve(), args.repeat, [])
            print(f"tool: cold {cold:.3f} s, warm median {statistics.median(warm):.3f} s")
            return 0
        figures = measure(tmp, args.keras, args.repeat)
    ok = show(figures)
    print(f"machine: {load()} at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run())
