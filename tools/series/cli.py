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
from typing import IO

from series import __version__
from series.errors import Exit, InternalError, SeriesError
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
    )


def _run_export(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import export

    return export.run(series, ui, directory=a.dir)


def _add_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def _run_list(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import list as list_cmd

    return list_cmd.run(series, ui, as_json=a.json)


def _add_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="the patch id, e.g. P1")
    p.add_argument("--diff", action="store_true", help="include the diff")
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def _run_show(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import show

    return show.run(series, ui, patch_id=a.id, diff=a.diff, as_json=a.json)


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
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")


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
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML for CI")
    p.add_argument(
        "--no-cache", action="store_true", help="run everything again, ignoring cached results"
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
    )


def _add_lint(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="the patches to lint (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def _run_lint(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import lint as lint_cmd

    return lint_cmd.run(series, ui, ids=a.ids, as_json=a.json)


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
        _dir,
        _run_export,
    ),
    Command(
        "check-conflicts",
        "merge-tree dry runs: the stack on its pin, pairwise, and --onto another upstream",
        _add_check_conflicts,
        _run_check_conflicts,
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
        "ruff check and ruff format --check on the files each patch touches",
        _add_lint,
        _run_lint,
    ),
)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
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
    ui = Ui(out, err)
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help exits 0, bad usage 2
        return int(exc.code or 0)
    _logging(args.verbose or bool(os.environ.get("SERIES_DEBUG")))
    command = next(c for c in COMMANDS if c.name == args.command)
    try:
        series = Series.load(args.root)
        return int(command.run(series, ui, args))
    except InternalError as exc:
        ui.err.file.write(exc.render() + "\n")
        if args.verbose or os.environ.get("SERIES_DEBUG"):
            ui.err.file.write(traceback.format_exc())
        return int(Exit.INTERNAL)
    except SeriesError as exc:
        ui.err.file.write(exc.render() + "\n")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        ui.err.file.write("series: interrupted\n")
        return 130
    except Exception:
        ui.err.file.write(
            "series: internal error (a bug in series; please report it with this output)\n"
            + traceback.format_exc()
        )
        return int(Exit.INTERNAL)


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
