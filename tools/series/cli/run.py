"""Running a parsed command: the session, errors to exit codes, broken pipes, the JSON envelope.

series.cli parses (argparse and the table of commands, nothing more) and
imports this module only once the words parsed into a command, or failed
to parse under ``--json``: ``series --help`` and a usage error never pay
for the project, the git layer or rich. Only ``run`` catches
``SeriesError``; anything else is a bug and is printed as an internal
error with the traceback and exit code 70. A git failure whose cause is
outside series (``GitFailed.fault``: a lock file, a full or read-only
disk, a damaged repository) is not a bug: it ends with exit 1, naming the
file or repository and the way on.

This module does not import the git layer, but for the check of git's
version (series.git.version: a git older than series needs is refused
before the project is locked): a command answered without it (a re-run of
``apply`` or ``export`` that nothing changed since the last one,
series.stack.verified) does not load it, and a git failure can only come
from a git layer that was loaded (``_outside_series``). Nor the envelope
(series.envelope), but for a command under ``--json``: the others print none.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from series import logs
from series.cli.table import COMMANDS
from series.errors import Exit, InternalError, SeriesError, os_error
from series.git.version import check as check_git
from series.locks import command_line
from series.project import Series, default_cache_dir
from series.ui import Ui

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    import argparse
    from typing import IO

    from series.git.run import EnvironmentFault, GitFailed


def run(
    args: argparse.Namespace, words: list[str], out: IO[str] | None, err: IO[str] | None
) -> int:
    """The command ``args`` names, run in one session; its exit code."""
    as_json = bool(getattr(args, "json", False))
    ui = Ui(out, err, keep_json=as_json)
    logs.configure(args.verbose or bool(os.environ.get("SERIES_DEBUG")))
    command = next(c for c in COMMANDS if c.name == args.command)
    error: SeriesError | None = None
    try:
        try:
            _git_new_enough()
            with Series.session(
                args.root,
                writes=command.writes(args),
                command=command_line(["series", *words]),
                say=ui.status,
                missing_ok=command.name == "export",
                # a re-run of apply or export, or a rebase's --abort, may not parse it
                known=command.name in ("apply", "export", "rebase"),
                keep_parse=command.name != "cache",  # it empties the cache: nothing kept
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
                ui.err.file.write(_traceback())
        except KeyboardInterrupt:
            error = SeriesError("interrupted", exit_code=Exit.INTERRUPTED)
            ui.err.file.write("series: interrupted\n")
            code = int(Exit.INTERRUPTED)
        except Exception:
            ui.err.file.write(
                "series: internal error (a bug in series; please report it with this output)\n"
                + _traceback()
            )
            error = InternalError("internal error (a bug in series)", why=_traceback())
            code = int(Exit.INTERNAL)
        if as_json:
            _envelope(ui, command.name, code, error)
        ui.out.file.flush()
    except BrokenPipeError:
        return _broken_pipe(ui)
    return code


def _git_new_enough() -> None:
    """Refuse a git older than series needs, before the project is locked or anything
    written: the git on PATH and the one GIT_PYTHON_GIT_EXECUTABLE names, whose first use
    a command answered from what was kept never reaches (series.git.version: a record in
    the per-user cache, no git process when the git is known)."""
    check_git(default_cache_dir())


def bad_usage_json(message: str, words: list[str], out: IO[str] | None) -> None:
    """The envelope of a usage error under ``--json`` (the usage itself is on stderr)."""
    ui = Ui(out, None, keep_json=True)
    known = [w for w in words if any(c.name == w for c in COMMANDS)]
    error = SeriesError(message, hint="series --help, or series COMMAND --help")
    ui.payload = None
    _envelope(ui, known[0] if known else None, int(Exit.BAD_INPUT), error)


def _envelope(ui: Ui, command: str | None, code: int, error: SeriesError | None) -> None:
    """The one ``--json`` envelope (series.envelope, imported only for ``--json``)."""
    from series.envelope import emit

    emit(ui, command, code, error)


def _outside_series(exc: SeriesError) -> SeriesError:
    """A git failure caused by the machine, not by series, as a clear error (exit 1).

    The git layer recognises the cause from git's words; only here is it
    known that a damaged cache repository can simply be deleted. The git layer
    is not imported for this: a ``GitFailed`` or an ``EnvironmentFault`` can
    only come from it once loaded (series.git.run, where both are defined).
    """
    layer = sys.modules.get("series.git.run")
    if layer is None:
        return exc
    failed: type[GitFailed] = layer.GitFailed
    outside: type[EnvironmentFault] = layer.EnvironmentFault
    fault = exc.fault() if isinstance(exc, failed) else exc
    if not isinstance(fault, outside):
        return exc
    if fault.kind == "corrupt" and fault.repo is not None:
        return outside(
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
            ui.err.file.write(_traceback())
        return int(Exit.INTERNAL)
    return int(exc.exit_code)


def _traceback() -> str:
    import traceback  # only for an error: a command that went well does not load it

    return traceback.format_exc()


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
