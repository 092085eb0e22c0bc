"""Where each timing in docs/ comes from: the script or test that prints or checks it.

docs/ state timings (a bench's wall time, a ratio of two runs, a timeout).
Each section of a page that states one is listed in ``SOURCES`` with what
reproduces it: a script of ci/ that prints the figure, a `series` command
whose own report prints it, or the test that checks a bound series
promises. This script finds every section with a timing, prints its figures
and their source, and fails (exit 1) for a section that states a timing
and has no source, or names a script or test that does not exist. Figures
measured by hand are printed as such, so what no script reproduces stays
visible. tests/test_docs_claims.py runs it.

Usage::

    python ci/doc_figures.py [--docs DIR] [--quiet]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMING = re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|min|seconds|minutes)\b")


@dataclass(frozen=True)
class Source:
    """``kind``: ``script`` (a file of ci/, with its arguments), ``command`` (a series
    command whose report prints the figure), ``test`` (tests/FILE::NAME checks the
    bound) or ``by hand`` (a measurement no script repeats: printed as a gap)."""

    kind: str
    what: str


def script(what: str) -> Source:
    return Source("script", what)


# (page, the section's heading as written, without the #s) -> its source
SOURCES: dict[tuple[str, str], Source] = {
    (
        "bench.md",
        "Measuring the series: `series bench`, `--profile` and `series scorecard`",
    ): script("ci/bench_series.py --out bench-out"),
    ("bench.md", "Method"): Source("command", "series bench --json (settings.target_cpu_ms)"),
    ("bench.md", "Workloads"): Source("command", "series bench --quick --json (settings, seconds)"),
    ("bench.md", "Speed of the tool"): script("ci/bench_series.py --out bench-out [--scorecard]"),
    ("benchmarks.md", "Benchmarks"): script(
        "ci/bench_apply.py, ci/bench_check_conflicts.py, ci/bench_versions.py, "
        "ci/bench_rebase.py, ci/bench_test.py (the table names each)"
    ),
    ("benchmarks.md", "`series bench`: what the series buys"): script(
        "ci/bench_series.py --out bench-out"
    ),
    ("benchmarks.md", "`series apply` against `git am`"): script("ci/bench_apply.py"),
    ("benchmarks.md", "`series check-conflicts`"): script("ci/bench_check_conflicts.py"),
    ("benchmarks.md", "`series test`"): script("ci/bench_test.py"),
    (
        "benchmarks.md",
        "`series rebase` and `check-conflicts --onto` on the shared upstream",
    ): script("ci/bench_rebase.py"),
    ("benchmarks.md", "Before and after the restructure (222a6a7 against 553e163)"): script(
        "ci/bench_versions.py --other PYTHON"
    ),
    ("benchmarks.md", "The everyday commands against what a maintainer would run instead"): script(
        "ci/bench_commands.py [--scale]"
    ),
    (
        "benchmarks.md",
        "The fixed cost of status, list, show and the no-op export and apply",
    ): script("ci/bench_commands.py --rounds 7 --only ..."),
    (
        "benchmarks.md",
        "The resume rows with one `diff-index` fewer each (2026-12-04, speed-resume)",
    ): Source(
        "by hand",
        "ci/bench_commands.py --rounds 5 --only 'rebase --' --verbose of each tree; its stop "
        "and settle, two trees and git's own alternating (PYTHONPATH per tree); "
        "GIT_TRACE2_EVENT for the processes, spawn times by a wrapper of os.posix_spawnp",
    ),
    (
        "benchmarks.md",
        "`--abort` and `--skip` without re, enum and json (2026-12-05, f2c6def)",
    ): Source(
        "by hand",
        "python -c 'import os, X; os._exit(0)' against the same without X, 30 rounds; "
        "ci/bench_commands.py's stop at P18 made by each tree's own series, with its own "
        "per-user cache, 12 rounds of the two trees interleaved; valgrind --tool=callgrind "
        "--trace-children=no of series' own process",
    ),
    (
        "benchmarks.md",
        "The resume rows on a quiet machine, and `--skip` without the resolution check "
        "(2026-12-05, 82ec4fb)",
    ): Source(
        "by hand",
        "ci/bench_commands.py's Bench (its stop at P18, settle and git's own _git_stopped), "
        "two trees interleaved, each making its own stop; valgrind --tool=callgrind of "
        "series' own process; GIT_TRACE2_EVENT and GIT_TRACE2_PERF; time marks by "
        "wrappers of series' functions and of os.posix_spawnp; gc.callbacks",
    ),
    (
        "benchmarks.md",
        "The clone git's rows copy, and `--continue` without tomllib (2026-12-05, 5dc118f)",
    ): Source(
        "by hand",
        "ci/bench_commands.py's Bench: git's own --skip (_git_stopped) in copies of its clone "
        "before and after _merge_tree_loop ran in it, objects counted with git count-objects; "
        "valgrind --tool=callgrind of series' own process on the stop at P18; two trees "
        "interleaved (PYTHONPATH per tree); GIT_TRACE2_EVENT and time marks; "
        "ci/bench_commands.py --rounds 5 --verbose (the whole table, twice)",
    ),
    (
        "benchmarks.md",
        "The range since the pin beside its merge base, and where `--abort`'s time goes "
        "(2026-12-05, b82b6da)",
    ): Source(
        "by hand",
        "ci/bench_commands.py's --scale synthetic projects (13 patches over 60 and 5,000 "
        "commits) and its stop at P18, settled; each git process's start and end logged by "
        "a C wrapper of git first on PATH; two trees alternating round by round (PYTHONPATH "
        "per tree); Store.recall timed in one process; ci/bench_commands.py --rounds 9 "
        '--only "rebase --abort", --rounds 7 --only "rebase --" and the whole table',
    ),
    (
        "benchmarks.md",
        "The resume rows after a stop's record of its resolution is read from the index "
        "(2026-12-05, 95a607f)",
    ): script('ci/bench_commands.py --rounds 7 --only "rebase --"'),
    (
        "benchmarks.md",
        "The resume rows with their git started before the imports (2026-12-05)",
    ): Source(
        "by hand",
        "ci/bench_commands.py's stop at P18 and settle, two trees alternating round by round "
        "(PYTHONPATH per tree; --continue each from its own copy of one per-user cache); "
        "the timeline by a wrapper of os.posix_spawnp and os.waitpid and time marks; "
        "python -c 'import re, pathlib' against 'import re'",
    ),
    ("benchmarks.md", "Where `rebase --skip`'s time goes (4d5c313)"): Source(
        "by hand",
        "ci/bench_commands.py's stop at P18, settled; series run under a wrapper that times "
        "its steps (time.perf_counter around each function), GIT_TRACE2_EVENT for git's "
        "processes, python -X importtime for the imports",
    ),
    ("benchmarks.md", "`rebase --skip` and `--continue` against git's own (skip5)"): Source(
        "by hand",
        "ci/bench_commands.py's stop rows and settle, main's tree, this one and git's own "
        "interleaved round by round (PYTHONPATH per tree); instructions: valgrind "
        "--tool=callgrind [--trace-children=yes] of each on a settled stop",
    ),
    ("benchmarks.md", "Bytecode"): Source(
        "by hand", "`time series --help` with and without PYTHONDONTWRITEBYTECODE"
    ),
    ("benchmarks.md", "This branch against main (`ci/bench_versions.py`)"): script(
        "ci/bench_versions.py --other OLD --rounds 5 --upstream KERAS.git"
    ),
    ("benchmarks.md", "This session's main against its start (`ci/bench_versions.py`)"): script(
        "ci/bench_versions.py --other OLD --rounds 5 --upstream KERAS.git"
    ),
    ("rebase.md", "Speed"): script("ci/bench_rebase.py"),
    ("testing.md", "Speed"): script("ci/bench_test.py"),
    ("testing.md", "The broad suite on the series (2026-12-01)"): Source(
        "command", "series test --broad -j 2 --json (parts: pin_duration, stack_duration)"
    ),
    ("testing.md", "Every patch proven: `series prove` of the 21 patches"): Source(
        "command", "series prove -j 2 (each run's time on stderr; wall time from the shell)"
    ),
    ("testing.md", "Parallel runs and work trees"): Source(
        "command", "series test --json (each run's duration, from JUnit)"
    ),
    ("series.md", "The test environment"): Source("command", "series test P9 (the time column)"),
    ("series.md", "Every subset on the full stack"): Source(
        "command", "series test --no-cache (the time column; wall time from the shell)"
    ),
    ("series.md", "P25 and P26: what the CNN and the attention layer still paid for (issue 22)"): (
        Source(
            "command", "series bench P25 P26 --workload cnn --workload mha ... (median CPU time)"
        )
    ),
    ("series.md", "P27: calls of several tensors or scalar keywords (issue 22)"): Source(
        "command", "series bench P27 --workload layer_call --workload dense --workload mha ..."
    ),
    (
        "series.md",
        "P28: what LayerNormalization, Embedding and the attention projections"
        " still paid for (issue 22)",
    ): Source(
        "by hand",
        "series bench P28 --workload mha --workload lm_generate ... (median CPU time);"
        " the upstream-LLM table from a side-by-side script outside the repository",
    ),
    ("rebase.md", "How it works"): Source(
        "test", "tests/test_docs_claims.py::test_the_documented_timeouts_are_the_defaults"
    ),
    ("branches.md", "Safety: what series moves, and what it refuses"): Source(
        "test", "tests/test_docs_claims.py::test_the_documented_timeouts_are_the_defaults"
    ),
    ("hardening.md", "Ctrl-C, and a network that never answers"): Source(
        "test",
        "tests/test_trust_signals.py::"
        "test_rebase_from_a_server_that_never_answers_announces_and_gives_up",
    ),
    ("hardening.md", "What series remembers to skip work (`tests/test_trust_cache.py`)"): Source(
        "test",
        "tests/test_trust_cache.py::"
        "test_a_module_changed_within_a_tick_of_the_digest_counts_by_its_bytes",
    ),
    ("hardening.md", "Not covered yet"): Source(
        "test",
        "tests/test_trust_cache.py::"
        "test_a_module_changed_within_a_tick_of_the_digest_counts_by_its_bytes",
    ),
    ("architecture.md", "What a re-run of apply or export checks, and why by content"): Source(
        "test",
        "tests/test_trust_cache.py::"
        "test_a_module_changed_within_a_tick_of_the_digest_counts_by_its_bytes",
    ),
    ("workflow.md", "Global options and exit codes"): Source(
        "test", "tests/test_docs_claims.py::test_the_documented_timeouts_are_the_defaults"
    ),
    ("ci.md", "The matrix"): Source("command", "series test P1 (the time column)"),
    ("ci.md", "First-run cost"): Source(
        "by hand", "`time git push` after `pre-commit install --hook-type pre-push`"
    ),
}


@dataclass(frozen=True)
class Found:
    page: str
    section: str
    figures: tuple[str, ...]


def sections(docs: Path) -> list[Found]:
    """Every section of docs/*.md that states a timing, with its figures."""
    found = []
    for page in sorted(docs.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for part in re.split(r"(?m)^(?=#{1,4} )", text):
            first = part.splitlines()[0] if part else ""
            heading = first.lstrip("#").strip() if first.startswith("#") else ""
            figures = tuple(m.group(0) for m in TIMING.finditer(part))
            if figures:
                found.append(Found(page.name, heading, figures))
    return found


def problems(found: list[Found], root: Path) -> list[str]:
    out = []
    for f in found:
        source = SOURCES.get((f.page, f.section))
        if source is None:
            out.append(
                f"docs/{f.page} § {f.section or '(top)'}: {len(f.figures)} timing(s) "
                f"({', '.join(f.figures[:3])}) and no source: add it to SOURCES in "
                "ci/doc_figures.py"
            )
        elif source.kind == "test":
            file, _, name = source.what.partition("::")
            path = root / file
            if not path.is_file() or f"def {name}(" not in path.read_text(encoding="utf-8"):
                out.append(f"docs/{f.page} § {f.section}: no test {source.what}")
        elif source.kind == "script":
            for named in re.findall(r"ci/[\w/]+\.py", source.what):
                if not (root / named).is_file():
                    out.append(f"docs/{f.page} § {f.section}: no script {named}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    parser.add_argument("--quiet", action="store_true", help="print only the problems")
    args = parser.parse_args(argv)
    found = sections(args.docs)
    if not args.quiet:
        for f in found:
            source = SOURCES.get((f.page, f.section))
            where = f"{source.kind}: {source.what}" if source else "NO SOURCE"
            print(f"docs/{f.page} § {f.section or '(top)'}: {', '.join(f.figures)}")
            print(f"    <- {where}")
        by_hand = [
            f for f in found if (s := SOURCES.get((f.page, f.section))) and s.kind == "by hand"
        ]
        print(f"{len(found)} sections with timings; {len(by_hand)} measured by hand only")
    bad = problems(found, ROOT)
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
