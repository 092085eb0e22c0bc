"""Command-line entry point: parsing, the command table, errors to exit codes.

Each command is a row of ``COMMANDS`` (series.cli.table): its name, its
help, its module under series.commands (which declares its options and its
run) and whether it writes. A command's module is imported when its parser
is first used (series.cli.table.CommandParser), so ``series list`` does not
pay for importing what ``series test`` needs.
Only ``main`` catches ``SeriesError``; anything else is a bug and is printed
as an internal error with the traceback and exit code 70. A git failure
whose cause is outside series (``GitFailed.fault``: a lock file, a full or
read-only disk, a damaged repository) is not a bug: it ends with exit 1,
naming the file or repository and the way on.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import IO, NoReturn

from series import __version__, envelope
from series.cli.table import COMMANDS, Command, CommandParser
from series.errors import Exit, InternalError, SeriesError, os_error
from series.git import EnvironmentFault, GitFailed
from series.project import Series, default_cache_dir
from series.ui import Ui

__all__ = ["COMMANDS", "Command", "main", "parser"]


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


class _CommandParser(CommandParser, _Parser):
    """A command's parser: its arguments come from its module when it is used."""


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="series",
        description="Carry an ordered series of patches on a pinned upstream Keras.",
        epilog="exit codes: 0 ok, 1 failed, 2 bad input, 3 conflict, "
        "4 refused (would lose work), 70 internal error (a bug in series); 130 interrupted "
        "(143 terminated, 129 hung up), 141 stdout closed. Manual: docs/.",
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
    sub = top.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_CommandParser
    )
    for command in COMMANDS:
        sub.add_parser(command.name, help=command.help, description=command.help, command=command)
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
            with Series.session(
                args.root,
                writes=command.writes(args),
                command=shlex.join(["series", *words]),
                say=ui.status,
                missing_ok=command.name == "export",
            ) as series:
                code = int(command.run(series, ui, args))
        except SeriesError as exc:
            error = _outside_series(exc)
            code = _report(ui, error, args.verbose)
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


def _outside_series(exc: SeriesError) -> SeriesError:
    """A git failure caused by the machine, not by series, as a clear error (exit 1).

    The git layer recognises the cause from git's words; only here is it
    known that a damaged cache repository can simply be deleted.
    """
    fault = exc.fault() if isinstance(exc, GitFailed) else exc
    if not isinstance(fault, EnvironmentFault):
        return exc
    if fault.kind == "corrupt" and fault.repo is not None:
        return EnvironmentFault(
            fault.kind, fault.repo, fault.message, why=fault.why, hint=_repair(Path(fault.repo))
        )
    return fault


def _repair(repo: Path) -> str:
    cache = default_cache_dir().resolve()
    if repo.resolve().is_relative_to(cache):
        return (
            f"it is series' cache of the upstream: delete {repo} and run the command again; "
            "series fetches or imports the upstream base afresh"
        )
    return (
        f"see what is damaged: git -C '{repo}' fsck; `series apply --dir NEWDIR` makes a "
        f"fresh checkout from patches/ (commits not yet exported are only in {repo}: "
        "save them first, e.g. git format-patch)"
    )


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
