"""Command-line entry point: parsing and the command table; running in series.cli.run.

Each command is a row of ``COMMANDS`` (series.cli.table): its name, its
help, its module under series.commands (which declares its options and its
run) and whether it writes. A command's module is imported when its parser
is first used (series.cli.parse), so ``series list`` does not pay for
importing what ``series test`` needs.
Parsing needs only argparse and the declarations: ``main`` imports
series.cli.run (the session, the project, the git layer, rich) once the
words parsed into a command, so ``series --help``, ``series CMD --help``
and a usage error import no engine.

A plain re-run, ``series [-C DIR] [-v] apply``, ``export`` or ``range-diff``
and no other word, is parsed here without argparse (:func:`plain`): the
first two are the commands typed most often to be told "nothing changed",
and argparse (with gettext and its help formatter's shutil) was a tenth of
such a run (of a ``range-diff``, about a twentieth of its CPU time). So is
``series [-C DIR] [-v] rebase --abort`` (``--skip``, ``--continue``): a
command to be within 2x of git's own (issue 23); and so are ``series [-C DIR]
[-v] status`` and ``list`` alone (issue 23: under 0.2 s). Its namespace is
argparse's for the same words (tests/test_fixed_cost.py compares them);
any other word, or form of one, is argparse's to parse.
series.help_kept (the ``--help`` text kept for series.entry) is imported
only for a command line with ``--help`` or ``-h`` in it.
The imports inside ``main``, ``parser`` and the help's functions are the designed
function-local imports of docs/architecture.md (rule 12).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import SimpleNamespace  # argparse.Namespace's behaviour, without argparse

from series.cli.table import COMMANDS, Command
from series.commands.options import flat, path
from series.errors import Exit

TYPE_CHECKING = False  # neither typing nor pathlib is imported to parse
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import IO

__all__ = ["COMMANDS", "Command", "main", "parser", "plain"]

# The commands whose plain re-run is parsed here; the words accepted before them.
PLAIN = ("apply", "export", "range-diff", "status", "list")
# The commands parsed here when followed by one of their sequencer's words alone.
RESUMED = ("rebase",)
_RESUME_WORDS = ("--continue", "--skip", "--abort")
_VERBOSE = ("-v", "--verbose")
HELP = ("--help", "-h")  # series.help_kept.HELP (a test checks they are the same)


def parser() -> argparse.ArgumentParser:
    """The whole command line's argparse parser (series.cli.parse)."""
    from series.cli.parse import parser as full

    return full()


def plain(words: Sequence[str]) -> argparse.Namespace | None:
    """The namespace argparse gives ``words`` when they are ``[-C DIR] [-v] apply`` (or
    ``export``, ``range-diff``, ``status``, ``list``), or ``[-C DIR] [-v] rebase
    --abort`` (``--skip``, ``--continue``), and nothing else; None for any other
    command line (argparse parses it).

    Each option of the command has argparse's default: its declared default, or, for a
    switch, off; an optional positional (``range-diff [ID]``) not given, None; the one
    sequencer word given sets its constant. ``DIR`` is taken as argparse takes it after
    ``-C``: any word that does not start with ``-``.
    """
    values: dict[str, object] = {"root": None, "verbose": False}
    rest = list(words)
    given: str | None = None  # the sequencer's word (rebase --abort), when it ends the words
    if len(rest) > 1 and rest[-2] in RESUMED and rest[-1] in _RESUME_WORDS:
        given, rest = rest[-1], rest[:-1]
    taken = False
    while len(rest) > 1:
        if rest[0] == "-C" and not rest[1].startswith("-"):
            values["root"] = path(rest[1])
            rest = rest[2:]
        elif rest[0] in _VERBOSE:
            values["verbose"] = True
            rest = rest[1:]
        else:
            return None
    if len(rest) != 1 or rest[0] not in (RESUMED if given else PLAIN):
        return None
    command = next(c for c in COMMANDS if c.name == rest[0])
    values["command"] = command.name
    for option in flat(command.load().OPTIONS):
        if option.action == "store_const" and given is not None:
            if given in option.names:
                values[option.dest] = option.const
                taken = True
            else:
                values.setdefault(option.dest, option.default)
            continue
        if option.positional and option.nargs == "?" and option.default is None:
            values[option.dest] = None  # argparse's value for an optional one not given
            continue
        if option.action not in ("store", "store_true") or option.positional:
            return None  # not one whose default is known here: argparse's to say
        if option.action == "store_true":
            values[option.dest] = bool(option.default)
        elif option.default is None or not isinstance(option.default, str):
            values[option.dest] = option.default
        else:
            return None  # argparse converts a string default by the option's type
    if given is not None and not taken:
        return None  # the word is none of the command's options
    parsed: argparse.Namespace = SimpleNamespace(**values)  # type: ignore[assignment]
    return parsed


def _help() -> int:
    """``series --help``: argparse's, as its ``-h`` action prints it; kept (series.help_kept)."""
    from series.help_kept import keep, say_text

    text = parser().format_help()  # what print_help writes
    code = say_text(text)  # as series.entry writes the text kept: no stdout, a reader gone
    keep(text)
    return code


def _asks_help(words: list[str]) -> bool:
    """series.help_kept.words; help_kept (with the reading of kept answers it shares with
    series.stack.branches_kept) is imported only for a command line with ``--help`` or
    ``-h`` in it: any other command does not load it."""
    if not any(w in HELP for w in words):
        return False
    from series.help_kept import words as asks

    return asks(words)


def main(
    argv: Sequence[str] | None = None,
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    imported: Callable[[], None] | None = None,
) -> int:
    """Parse ``argv`` (the process's words by default) and run the command.

    ``imported``: called once the modules needed to start the command are imported,
    just before it runs (series.entry turns the garbage collector on there)."""
    words = list(sys.argv[1:] if argv is None else argv)
    if out is None and _asks_help(words):  # argparse's help, kept for series.entry
        return _help()
    args = plain(words)
    if args is None:
        from series.cli.parse import BadUsage, parser

        try:
            args = parser().parse_args(words)
        except SystemExit as exc:  # argparse: --help and --version exit 0
            return int(exc.code or 0)
        except BrokenPipeError:  # their reader went away (series.cli.parse): 141, quietly
            from series.help_kept import gone

            return gone()
        except BadUsage as exc:
            (err or sys.stderr).write(exc.usage + exc.text + "\n")
            if "--json" in words:
                from series.cli.run import bad_usage_json

                bad_usage_json(exc.message, words, out)
            return int(Exit.BAD_INPUT)
    from series.cli.run import run

    if imported is not None:
        imported()
    return run(args, words, out, err)
