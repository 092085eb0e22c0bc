"""Command-line rows for the checks: check-conflicts, test, lint, prove, bench, scorecard.

As in rows_work: ``add_*`` adds the arguments, ``run_*`` calls the command module.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from series.cli.rows_work import REV, URL, json_option
from series.errors import Exit
from series.project import Series
from series.ui import Ui


def jobs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="test runs at the same time (default: the cores available)",
    )


def no_cache_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-cache", action="store_true", help="run everything again, ignoring cached results"
    )


CHECK_CONFLICTS_EPILOG = (
    "exit status: 0 the series fits; 3 a patch does not apply on the pin, conflicts on "
    "the --onto replay, or does not apply alone although series.toml says "
    "applies_alone = true; 2 bad input (unknown REV, unusable --upstream, a corrupt patch "
    "file, bad option); 1 the --onto source could not be reached. "
    "Manual: docs/check-conflicts.md."
)


def add_check_conflicts(p: argparse.ArgumentParser) -> None:
    p.epilog = CHECK_CONFLICTS_EPILOG
    p.add_argument(
        "--onto",
        type=REV,
        metavar="REV",
        help="also replay the series onto this upstream revision (a ref or commit; "
        "'sdist:VERSION' for a PyPI sdist)",
    )
    p.add_argument(
        "--upstream",
        type=URL,
        metavar="URL|PATH",
        help="where --onto REV lives (default: the cache, then upstream.repository); "
        "an sdist .tar.gz with --onto sdist:VERSION",
    )
    p.add_argument(
        "--source",
        choices=("git", "sdist"),
        help="where the pinned base comes from (default: the manifest's upstream.source)",
    )
    p.add_argument("--no-matrix", action="store_true", help="skip the pairwise matrix on the pin")
    p.add_argument(
        "--merge-mode",
        choices=("auto", "synthetic", "merge-base"),
        default="auto",
        help="how merge bases are given to git merge-tree (default: auto, probed)",
    )
    json_option(p)


def run_check_conflicts(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import check_conflicts

    return check_conflicts.run(
        series,
        ui,
        onto=a.onto,
        upstream_url=a.upstream,
        source=a.source,
        matrix=not a.no_matrix,
        as_json=a.json,
        merge_mode=a.merge_mode,
    )


def add_test(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to test (default: all)")
    p.add_argument(
        "--mode",
        choices=("stacked", "alone"),
        default="stacked",
        help="stacked: patch k on the pin plus patches 1..k (default); "
        "alone: on the pin plus patch k only",
    )
    jobs_option(p)
    json_option(p)
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML for CI")
    no_cache_option(p)
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="run only the I-th of N shards of the patches (1-based; the same split on "
        "every machine, balanced by recorded durations; docs/testing.md)",
    )
    p.add_argument(
        "--list", action="store_true", help="print the plan (patches, shards) and run nothing"
    )


def run_test(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import test as test_cmd

    return test_cmd.run(
        series,
        ui,
        ids=a.ids,
        mode=a.mode,
        jobs=a.jobs,
        as_json=a.json,
        junit=a.junit,
        use_cache=not a.no_cache,
        shard=a.shard,
        list_only=a.list,
    )


def add_lint(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to lint (default: all)")
    json_option(p)


def run_lint(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import lint as lint_cmd

    return lint_cmd.run(series, ui, ids=a.ids, as_json=a.json)


def add_prove(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "exit status: 0 every patch has a behavioural test (or is exempt in series.toml); "
        "1 a patch is flagged (no behavioural test, broken tests, no tests) or does not "
        "apply; 2 bad input. Manual: docs/prove.md."
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to prove (default: all)")
    jobs_option(p)
    p.add_argument("--json", action="store_true", help="print JSON for machines, per test")
    no_cache_option(p)


def run_prove(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import prove

    return prove.run(series, ui, ids=a.ids, jobs=a.jobs, as_json=a.json, use_cache=not a.no_cache)


def add_bench(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "arms: the pin, each patch alone on the pin (where it applies alone), the stack "
        "after each patch (compared with the one before), and the whole stack against the "
        "pin. exit status: 0 measured; 1 a patch's outputs differ from its baseline "
        "(equivalence failed); 2 bad input. Manual: docs/bench.md."
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to measure (default: all)")
    p.add_argument(
        "--workload",
        action="append",
        metavar="NAME",
        help="a workload to run (repeatable; default: all; --quick: the tiny set)",
    )
    p.add_argument("--rounds", type=int, metavar="N", help="measured rounds (default: 15)")
    p.add_argument("--quick", action="store_true", help="a tiny workload set, a few rounds")
    p.add_argument(
        "--chart",
        type=Path,
        metavar="PNG",
        help="where to write the chart (default: .series/bench/bench.png)",
    )
    p.add_argument(
        "--profile",
        metavar="WORKLOAD",
        help="instead: the top frames of one call of WORKLOAD on the pin and the stack",
    )
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda, where a GPU is present")
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def run_bench(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import bench

    return bench.run(
        series,
        ui,
        ids=a.ids,
        workloads=a.workload,
        rounds=a.rounds,
        quick=a.quick,
        as_json=a.json,
        chart=a.chart,
        profile=a.profile,
        device=a.device,
    )


def add_scorecard(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "For each stack state (the pin, then patches 1..k): graphs, graph breaks, break "
        "reasons and recompiles of the small LM and CNN under torch.compile. exit status: "
        "0 no state adds breaks or recompiles; 1 one does (flagged); 2 bad input. "
        "Manual: docs/bench.md."
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to score (default: all)")
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=2,
        metavar="N",
        help="states traced at the same time (default: 2)",
    )
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda, where a GPU is present")
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def run_scorecard(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import scorecard

    return scorecard.run(series, ui, ids=a.ids, as_json=a.json, jobs=a.jobs, device=a.device)
