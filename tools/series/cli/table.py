"""The table of commands: one row per command, its name, help, arguments and runner.

A test runs every row for real (tests/test_cli.py), so a row and its
command cannot disagree.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from series.cli.rows_checks import (
    add_bench,
    add_check_conflicts,
    add_lint,
    add_prove,
    add_scorecard,
    add_test,
    run_bench,
    run_check_conflicts,
    run_lint,
    run_prove,
    run_scorecard,
    run_test,
)
from series.cli.rows_work import (
    add_apply,
    add_branches,
    add_export,
    add_list,
    add_range_diff,
    add_rebase,
    add_show,
    add_status,
    run_apply,
    run_branches,
    run_export,
    run_list,
    run_range_diff,
    run_rebase,
    run_show,
    run_status,
)
from series.errors import Exit
from series.project import Series
from series.ui import Ui

Adder = Callable[[argparse.ArgumentParser], None]
Runner = Callable[[Series, Ui, argparse.Namespace], Exit]
Writes = Callable[[argparse.Namespace], bool]


def reads(a: argparse.Namespace) -> bool:
    return False


def writes(a: argparse.Namespace) -> bool:
    return True


@dataclass(frozen=True)
class Command:
    """``writes``: whether this run writes the checkout, series.toml, patches/ or
    resolutions/; such a run holds the project lock from start to end (series.project).
    The checks (test, lint, prove, bench, scorecard, check-conflicts) read the
    project and write only in the cache, their own work trees there, and
    files named on their command line (--junit, --chart), so they take no lock.
    """

    name: str
    help: str
    add: Adder
    run: Runner
    writes: Writes = reads


COMMANDS: tuple[Command, ...] = (
    Command(
        "apply",
        "materialise the pinned upstream and apply the stack as commits",
        add_apply,
        run_apply,
        writes,
    ),
    Command(
        "export",
        "write the checkout's commits back to patches/ and series.toml",
        add_export,
        run_export,
        writes,
    ),
    Command(
        "check-conflicts",
        "merge-tree dry runs: the stack on its pin, pairwise, and --onto another upstream",
        add_check_conflicts,
        run_check_conflicts,
    ),
    Command(
        "branches",
        "one branch per patch (pin + patches 1..k) for stacked pull requests, pushed with leases",
        add_branches,
        run_branches,
        lambda a: not a.dry_run,
    ),
    Command(
        "rebase",
        "move the series onto another upstream revision (--continue, --skip, --abort)",
        add_rebase,
        run_rebase,
        writes,
    ),
    Command(
        "status",
        "where the checkout stands: pin, branch, applied, unexported, drift, a rebase",
        add_status,
        run_status,
    ),
    Command(
        "range-diff",
        "how each patch changed between two versions of the series (git range-diff form)",
        add_range_diff,
        run_range_diff,
    ),
    Command("list", "the series as a table", add_list, run_list),
    Command(
        "show",
        "one patch for review: message, upstream link, diffstat, subset",
        add_show,
        run_show,
    ),
    Command(
        "test",
        "each patch's test subset on torch, against the pin's results, cached and in parallel",
        add_test,
        run_test,
    ),
    Command(
        "lint",
        "ruff check and ruff format --check on the files each patch touches; its message",
        add_lint,
        run_lint,
    ),
    Command(
        "bench",
        "what each patch buys: timed side by side with the pin, with intervals and controls",
        add_bench,
        run_bench,
    ),
    Command(
        "scorecard",
        "graphs, graph breaks and recompiles under torch.compile, per stack state",
        add_scorecard,
        run_scorecard,
    ),
    Command(
        "prove",
        "whether each patch's tests fail without its production change, and how",
        add_prove,
        run_prove,
    ),
)
