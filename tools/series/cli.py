"""Command-line entry point: parsing, the command table, errors to exit codes.

Each command is a row of ``COMMANDS``: its name, a function that adds its
arguments, and a function that calls the command module with typed options.
Command modules are imported by their runner, so ``series list`` does not
pay for importing what ``series test`` needs.
Only ``main`` catches ``SeriesError``; anything else is a bug and is printed
as an internal error with the traceback and exit code 70.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

from series import __version__, envelope
from series.errors import Exit, InternalError, SeriesError, os_error
from series.project import Series
from series.ui import Ui

Adder = Callable[[argparse.ArgumentParser], None]
Runner = Callable[[Series, Ui, argparse.Namespace], Exit]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add: Adder
    run: Runner


def _dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="the checkout (default: [series].checkout in series.toml, 'work')",
    )


def _add_apply(p: argparse.ArgumentParser) -> None:
    _dir(p)
    p.add_argument("--to", metavar="ID", help="apply the stack up to and including this patch")
    p.add_argument(
        "--source",
        choices=("git", "sdist"),
        help="where the upstream base comes from (default: the manifest's "
        "upstream.source; 'auto' tries git, then the sdist)",
    )
    p.add_argument(
        "--upstream",
        metavar="URL|PATH",
        help="fetch upstream from this URL, mirror or clone (or use this sdist .tar.gz)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="go on over uncommitted changes or unexported commits, "
        "after stashing them / keeping a backup ref",
    )
    _json(p)


def _run_apply(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import apply

    return apply.run(
        series,
        ui,
        directory=a.dir,
        to=a.to,
        source=a.source,
        upstream_url=a.upstream,
        force=a.force,
        as_json=a.json,
    )


def _run_export(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import export

    return export.run(series, ui, directory=a.dir, as_json=a.json)


def _add_export(p: argparse.ArgumentParser) -> None:
    _dir(p)
    _json(p)


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json", action="store_true", help="print one JSON envelope for machines (docs/json.md)"
    )


def _add_list(p: argparse.ArgumentParser) -> None:
    _json(p)


def _run_list(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import list as list_cmd

    return list_cmd.run(series, ui, as_json=a.json)


def _add_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="the patch id, e.g. P1")
    p.add_argument("--diff", action="store_true", help="include the diff")
    p.add_argument(
        "--no-pager",
        action="store_true",
        help="do not page --diff on a terminal (default: $GIT_PAGER, $PAGER or less)",
    )
    _json(p)


def _run_show(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import show

    return show.run(series, ui, patch_id=a.id, diff=a.diff, as_json=a.json, pager=not a.no_pager)


CHECK_CONFLICTS_EPILOG = (
    "exit status: 0 the series fits; 3 a patch does not apply on the pin, conflicts on "
    "the --onto replay, or does not apply alone although series.toml says "
    "applies_alone = true; 2 bad input (unknown REV, unusable --upstream, a corrupt patch "
    "file, bad option); 1 the --onto source could not be reached. "
    "Manual: docs/check-conflicts.md."
)


def _add_check_conflicts(p: argparse.ArgumentParser) -> None:
    p.epilog = CHECK_CONFLICTS_EPILOG
    p.add_argument(
        "--onto",
        metavar="REV",
        help="also replay the series onto this upstream revision (a ref or commit; "
        "'sdist:VERSION' for a PyPI sdist)",
    )
    p.add_argument(
        "--upstream",
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
    _json(p)


def _run_check_conflicts(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
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


def _add_test(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to test (default: all)")
    p.add_argument(
        "--mode",
        choices=("stacked", "alone"),
        default="stacked",
        help="stacked: patch k on the pin plus patches 1..k (default); "
        "alone: on the pin plus patch k only",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="test runs at the same time (default: the cores available)",
    )
    _json(p)
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML for CI")
    p.add_argument(
        "--no-cache", action="store_true", help="run everything again, ignoring cached results"
    )
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="run only the I-th of N shards of the patches (1-based; the same split on "
        "every machine, balanced by recorded durations; docs/testing.md)",
    )
    p.add_argument(
        "--list", action="store_true", help="print the plan (patches, shards) and run nothing"
    )


def _run_test(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
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


def _add_lint(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to lint (default: all)")
    _json(p)


def _run_lint(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import lint as lint_cmd

    return lint_cmd.run(series, ui, ids=a.ids, as_json=a.json)


def _add_branches(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "exit status: 0 done (or nothing to change); 2 bad input; 3 a patch does not apply "
        "(the branches before it were made); 4 refused: a branch series did not leave as it "
        "is, locally or on REMOTE (nothing changed; --force replaces it after a backup); "
        "1 REMOTE unreachable. Manual: docs/branches.md."
    )
    _dir(p)
    p.add_argument("--prefix", default="", metavar="P", help="put P before every branch name")
    p.add_argument("--alone", action="store_true", help="each branch: the pin plus its patch only")
    p.add_argument("--dry-run", action="store_true", help="list what would change; change nothing")
    p.add_argument(
        "--push",
        metavar="REMOTE",
        help="push the branches too, each leased against what REMOTE had",
    )
    p.add_argument(
        "--prune",
        action="store_true",
        help="delete the branches series made for patches no longer in series.toml",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace branches someone else moved (the old commits are kept as backup refs)",
    )
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def _run_branches(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import branches
    from series.stack.branch_plan import Options

    options = Options(a.prefix, a.alone, a.dry_run, a.push, a.prune, a.force)
    return branches.run(series, ui, directory=a.dir, options=options, as_json=a.json)


def _add_prove(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "exit status: 0 every patch has a behavioural test (or is exempt in series.toml); "
        "1 a patch is flagged (no behavioural test, broken tests, no tests) or does not "
        "apply; 2 bad input. Manual: docs/prove.md."
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to prove (default: all)")
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help="test runs at the same time (default: the cores available)",
    )
    p.add_argument("--json", action="store_true", help="print JSON for machines, per test")
    p.add_argument(
        "--no-cache", action="store_true", help="run everything again, ignoring cached results"
    )


def _run_prove(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import prove

    return prove.run(series, ui, ids=a.ids, jobs=a.jobs, as_json=a.json, use_cache=not a.no_cache)


def _add_bench(p: argparse.ArgumentParser) -> None:
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


def _run_bench(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
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


def _add_scorecard(p: argparse.ArgumentParser) -> None:
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


def _run_scorecard(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import scorecard

    return scorecard.run(series, ui, ids=a.ids, as_json=a.json, jobs=a.jobs, device=a.device)


def _add_rebase(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "exit status: 0 rebased; 3 stopped at a conflict; 2 bad options or REV; "
        "4 refused (work would be lost, or the checkout or target moved). Manual: docs/rebase.md."
    )
    _dir(p)
    p.add_argument("--onto", metavar="REV", help="the upstream branch, tag or commit to move to")
    p.add_argument(
        "--upstream", metavar="URL|PATH", help="where REV lives (a clone, a mirror or a URL)"
    )
    p.add_argument(
        "--drop-merged",
        action="store_true",
        help="remove patches already upstream (same patch-id, or their PR in a subject)",
    )
    how = p.add_mutually_exclusive_group()
    for verb, text in (
        ("continue", "go on after resolving and staging the conflict"),
        ("skip", "drop the conflicting patch (series.toml records why) and go on"),
        ("abort", "put refs, checkout, series.toml and patches/ back as they were"),
    ):
        how.add_argument(f"--{verb}", dest="action", action="store_const", const=verb, help=text)


def _run_rebase(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import rebase

    return rebase.run(
        series,
        ui,
        onto=a.onto,
        upstream_url=a.upstream,
        drop_merged=a.drop_merged,
        action=a.action,
        directory=a.dir,
    )


def _add_status(p: argparse.ArgumentParser) -> None:
    _dir(p)
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def _run_status(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import status

    return status.run(series, ui, directory=a.dir, as_json=a.json)


def _add_range_diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", metavar="ID", help="only this patch (default: all)")
    p.add_argument(
        "--since",
        metavar="REV",
        help="the old version: this commit of the project repository (default: docs/range-diff.md)",
    )
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def _run_range_diff(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import range_diff

    return range_diff.run(series, ui, patch_id=a.id, since=a.since, as_json=a.json)


COMMANDS: tuple[Command, ...] = (
    Command(
        "apply",
        "materialise the pinned upstream and apply the stack as commits",
        _add_apply,
        _run_apply,
    ),
    Command(
        "export",
        "write the checkout's commits back to patches/ and series.toml",
        _add_export,
        _run_export,
    ),
    Command(
        "check-conflicts",
        "merge-tree dry runs: the stack on its pin, pairwise, and --onto another upstream",
        _add_check_conflicts,
        _run_check_conflicts,
    ),
    Command(
        "branches",
        "one branch per patch (pin + patches 1..k) for stacked pull requests, pushed with leases",
        _add_branches,
        _run_branches,
    ),
    Command(
        "rebase",
        "move the series onto another upstream revision (--continue, --skip, --abort)",
        _add_rebase,
        _run_rebase,
    ),
    Command(
        "status",
        "where the checkout stands: pin, branch, applied, unexported, drift, a rebase",
        _add_status,
        _run_status,
    ),
    Command(
        "range-diff",
        "how each patch changed between two versions of the series (git range-diff form)",
        _add_range_diff,
        _run_range_diff,
    ),
    Command("list", "the series as a table", _add_list, _run_list),
    Command(
        "show",
        "one patch for review: message, upstream link, diffstat, subset",
        _add_show,
        _run_show,
    ),
    Command(
        "test",
        "each patch's test subset on torch, against the pin's results, cached and in parallel",
        _add_test,
        _run_test,
    ),
    Command(
        "lint",
        "ruff check and ruff format --check on the files each patch touches; its message",
        _add_lint,
        _run_lint,
    ),
    Command(
        "bench",
        "what each patch buys: timed side by side with the pin, with intervals and controls",
        _add_bench,
        _run_bench,
    ),
    Command(
        "scorecard",
        "graphs, graph breaks and recompiles under torch.compile, per stack state",
        _add_scorecard,
        _run_scorecard,
    ),
    Command(
        "prove",
        "whether each patch's tests fail without its production change, and how",
        _add_prove,
        _run_prove,
    ),
)


class _BadUsage(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.usage = parser.format_usage()
        self.text = f"{parser.prog}: error: {message}"
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error comes back to ``main`` (for the --json envelope)."""

    def error(self, message: str) -> NoReturn:
        raise _BadUsage(self, message)


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="series",
        description="Carry an ordered series of patches on a pinned upstream Keras.",
        epilog="exit codes: 0 ok, 1 failed, 2 bad input, 3 conflict, "
        "4 refused (would lose work), 70 internal error. Manual: docs/.",
    )
    top.add_argument("--version", action="version", version=f"series {__version__}")
    top.add_argument(
        "-C",
        dest="root",
        type=Path,
        metavar="DIR",
        help="the project directory holding series.toml (default: search upwards)",
    )
    top.add_argument("-v", "--verbose", action="store_true", help="log every git command")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add(p)
    return top


def main(
    argv: Sequence[str] | None = None,
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    ui = Ui(out, err, keep_json="--json" in words)
    try:
        args = parser().parse_args(words)
    except SystemExit as exc:  # argparse: --help and --version exit 0
        return int(exc.code or 0)
    except _BadUsage as exc:
        return _bad_usage(ui, exc, words)
    as_json = bool(getattr(args, "json", False))
    ui.keep_json = as_json
    _logging(args.verbose or bool(os.environ.get("SERIES_DEBUG")))
    command = next(c for c in COMMANDS if c.name == args.command)
    error: SeriesError | None = None
    try:
        try:
            series = Series.load(args.root, missing_ok=command.name == "export")
            code = int(command.run(series, ui, args))
        except SeriesError as exc:
            error, code = exc, _report(ui, exc, args.verbose)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            error = os_error(exc)
            code = _report(ui, error, args.verbose)
            if args.verbose or os.environ.get("SERIES_DEBUG"):
                ui.err.file.write(traceback.format_exc())
        except KeyboardInterrupt:
            error = SeriesError("interrupted", exit_code=Exit.INTERRUPTED)
            ui.err.file.write("series: interrupted\n")
            code = int(Exit.INTERRUPTED)
        except Exception:
            ui.err.file.write(
                "series: internal error (a bug in series; please report it with this output)\n"
                + traceback.format_exc()
            )
            error = InternalError("internal error (a bug in series)", why=traceback.format_exc())
            code = int(Exit.INTERNAL)
        if as_json:
            envelope.emit(ui, command.name, code, error)
        ui.out.file.flush()
    except BrokenPipeError:
        return _broken_pipe(ui)
    return code


def _bad_usage(ui: Ui, exc: _BadUsage, words: list[str]) -> int:
    ui.err.file.write(exc.usage + exc.text + "\n")
    if "--json" in words:
        known = [w for w in words if any(c.name == w for c in COMMANDS)]
        error = SeriesError(exc.message, hint="series --help, or series COMMAND --help")
        ui.payload = None
        envelope.emit(ui, known[0] if known else None, int(Exit.BAD_INPUT), error)
    return int(Exit.BAD_INPUT)


def _report(ui: Ui, exc: SeriesError, verbose: bool) -> int:
    ui.err.file.write(exc.render() + "\n")
    if isinstance(exc, InternalError):
        if verbose or os.environ.get("SERIES_DEBUG"):
            ui.err.file.write(traceback.format_exc())
        return int(Exit.INTERNAL)
    return int(exc.exit_code)


def _broken_pipe(ui: Ui) -> int:
    """The reader of stdout went away (``| head``): end quietly, as git does.

    git dies of SIGPIPE, which a shell reports as 128 + 13; stdout is
    pointed at /dev/null so that flushing it at exit cannot complain again.
    """
    if ui.out.file is sys.stdout:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return int(Exit.BROKEN_PIPE)


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
