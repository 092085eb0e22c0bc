"""Benchmark: ``series check-conflicts`` against the same checks done the slow way.

Builds, in a temporary directory, a 13-patch series on the real Keras tree
(a clone of the sdist-as-git repository, by default /work/dev/keras-base)
shaped like the real one: the same files, three patches on
backend/torch/core.py, two on layers/layer.py, one that only applies on top
of another. An upstream branch "next" carries four commits: one conflicts
with a patch, one is another patch's exact change, one names a patch's PR
in its subject, one is unrelated.

Fast: the full report (stack on the pin, 13 alone + 78 pairs, 13 replays
onto "next") with ``series check-conflicts --onto next --json``, in process;
the median of --repeat warm runs, and the first (cold) run.

Slow: the same checks with porcelain git, each in a temporary worktree:
``git worktree add`` then ``git cherry-pick`` (alone, replay step, "needs")
or ``git merge`` (commute). It checks that both ways give the same
verdicts, and prints both times and their ratio.

    python ci/bench_check_conflicts.py [--keras PATH] [--repeat N] [--project DIR]

``--project DIR`` benchmarks the fast way only, on an existing project.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from series.cli import main
from series.git import Ident, Repo

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


def _commit(repo: Repo, message: str) -> str:
    repo.git("commit", "-qam", message, env=ENV)
    return repo.git("rev-parse", "HEAD").strip()


def build(tmp: Path, keras: Path) -> tuple[Path, Repo, Repo, str]:
    upstream = Repo(tmp / "upstream")
    Repo(tmp).git("clone", "-q", str(keras), str(upstream.path))
    pin = upstream.git("rev-parse", "HEAD").strip()
    author = Repo(tmp / "author")
    Repo(tmp).git("clone", "-q", str(upstream.path), str(author.path))
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
        f'ref = "{upstream.symbolic_head()}"\ncommit = "{pin}"\n'
        'source = "git"\n[upstream.sdist]\npackage = "keras"\nversion = "3.15.1"\n\n'
        + "\n".join(entries)
    )
    upstream.git("checkout", "-q", "-b", "next")
    _edit(upstream.path, PATCHES[7][2], PATCHES[7][3], False, "upstream edit")
    _commit(upstream, "torch: convert_to_tensor tweak")
    _edit(upstream.path, PATCHES[10][2], PATCHES[10][3], False, "series P15")
    _commit(upstream, "conv: the same change as P15")
    _edit(upstream.path, "keras/src/layers/layer.py", "def build(", False, "upstream")
    _commit(upstream, "Guard built and called (#23200)")
    _edit(upstream.path, "keras/src/version.py", "__version__", False, "upstream")
    _commit(upstream, "version note")
    return project, upstream, author, pin


def cpu() -> float:
    """CPU seconds used so far by this process and the git processes it waited for."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def fast(project: Path, repeat: int, onto: list[str]) -> tuple[float, list[float], dict[str, Any]]:
    times, cpus, report = [], [], {}
    for _ in range(repeat + 1):
        out, err = io.StringIO(), io.StringIO()
        start, used = time.perf_counter(), cpu()
        code = main(["-C", str(project), "check-conflicts", "--json", *onto], out=out, err=err)
        times.append(time.perf_counter() - start)
        cpus.append(cpu() - used)
        if code not in (0, 3):
            sys.exit(f"check-conflicts failed ({code}):\n{err.getvalue()}")
        report = json.loads(out.getvalue())
    report["cpu"] = statistics.median(cpus[1:] or cpus)
    return times[0], times[1:], report


class Slow:
    """Each check in its own temporary worktree, with porcelain git."""

    def __init__(self, repo: Repo, scratch: Path) -> None:
        self.repo, self.scratch, self.checks = repo, scratch, 0

    def check(self, start: str, argv: list[str]) -> str | None:
        """Run ``git argv`` in a fresh worktree at ``start``; the new HEAD, or None."""
        self.checks += 1
        path = self.scratch / f"wt{self.checks}"
        self.repo.git("worktree", "add", "-q", "--detach", str(path), start)
        try:
            status, _, _ = Repo(path).git_status(*argv, env=ENV)
            return Repo(path).git("rev-parse", "HEAD").strip() if status == 0 else None
        finally:
            self.repo.git("worktree", "remove", "--force", str(path))

    def pick(self, start: str, commit: str) -> str | None:
        return self.check(
            start, ["cherry-pick", "--allow-empty", "--keep-redundant-commits", commit]
        )


def slow(author: Repo, pin: str, onto: str, tmp: Path) -> tuple[float, dict[str, Any]]:
    commits = author.commits(pin, "HEAD")
    ids = [p[0] for p in PATCHES]
    s = Slow(author, tmp)
    start, used = time.perf_counter(), cpu()
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


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keras", type=Path, default=Path("/work/dev/keras-base"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--project", type=Path, help="benchmark the fast way on this project")
    args = parser.parse_args()
    if (
        not args.project
        and not (args.keras / ".git").exists()
        and not (args.keras / "HEAD").exists()
    ):
        parser.error(f"{args.keras} is not a git repository of the Keras tree; pass --keras PATH")
    with tempfile.TemporaryDirectory(prefix="series-bench-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["SERIES_CACHE_DIR"] = str(tmp / "cache")
        if args.project:
            cold, warm, _ = fast(args.project.resolve(), args.repeat, [])
            print(f"fast: cold {cold:.3f} s, warm median {statistics.median(warm):.3f} s")
            return 0
        project, upstream, author, pin = build(tmp, args.keras)
        cold, warm, report = fast(project, args.repeat, ["--onto", "next"])
        onto = report["onto"]["commit"]
        author.git("fetch", "-q", str(upstream.path), "next")
        slow_time, slow_result = slow(author, pin, onto, tmp / "wt")
    stats = report["stats"]
    median = statistics.median(warm)
    wrong = agree(report, slow_result)
    print(
        f"patches: {len(PATCHES)}; fast: {stats['merges']} merges in {stats['batches']} "
        f"merge-tree batches ({stats['merge_mode']}); slow: {slow_result['checks']} checks"
    )
    print(
        f"fast (check-conflicts --onto, full report): warm median {median:.3f} s, cold {cold:.3f} s"
    )
    print(f"slow (worktree + cherry-pick/merge per check): {slow_time:.3f} s")
    print(f"ratio: {slow_time / median:.1f}x (warm), {slow_time / cold:.1f}x (cold)")
    fast_cpu, slow_cpu = report["cpu"], slow_result["cpu"]
    print(
        f"cpu (user+sys, with git): fast {fast_cpu:.3f} s, slow {slow_cpu:.3f} s, "
        f"ratio {slow_cpu / fast_cpu:.1f}x"
    )
    print("verdicts agree" if not wrong else f"VERDICTS DIFFER: {wrong}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(run())
