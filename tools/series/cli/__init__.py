"""Command-line entry point: parsing and the command table; running in series.cli.run.

Each command is a row of ``COMMANDS`` (series.cli.table): its name, its
help, its module under series.commands (which declares its options and its
run) and whether it writes. A command's module is imported when its parser
is first used (series.cli.table.CommandParser), so ``series list`` does not
pay for importing what ``series test`` needs.
Parsing needs only argparse and the declarations: ``main`` imports
series.cli.run (the session, the project, the git layer, rich) once the
words parsed into a command, so ``series --help``, ``series CMD --help``
and a usage error import no engine. That import inside ``main`` is one of
the designed function-local imports of docs/architecture.md (rule 12).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from series import __version__
from series.cli.table import COMMANDS, Command, CommandParser
from series.commands.options import path
from series.errors import Exit

TYPE_CHECKING = False  # neither typing nor pathlib is imported to parse
if TYPE_CHECKING:
    from typing import IO, Any, NoReturn

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


class _Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The commands' words: a command's parser is made when its word is parsed.

    ``series --help`` lists each command's name and one-line help, and
    ``series list`` parses with one command's parser: neither needs the
    other fifteen parsers, whose making was most of a ``--help``'s work.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rows: dict[str, Command] = {}

    def add_command(self, command: Command) -> None:
        """``command`` as a choice, shown in the top-level help; its parser made later."""
        shown = self._ChoicesPseudoAction(command.name, (), command.help)
        self._choices_actions.append(shown)
        self._name_parser_map[command.name] = None  # its parser: made when its word is parsed
        self.rows[command.name] = command

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name = values[0]
        if name in self.rows and self._name_parser_map.get(name) is None:
            command = self.rows[name]
            self._name_parser_map[name] = self._parser_class(
                prog=f"{self._prog_prefix} {name}", description=command.help, command=command
            )
        super().__call__(parser, namespace, values, option_string)


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
        type=path,
        metavar="DIR",
        help="the project directory holding series.toml (default: search upwards)",
    )
    top.add_argument("-v", "--verbose", action="store_true", help="log every git command")
    sub = top.add_subparsers(
        dest="command",
        metavar="COMMAND",
        required=True,
        parser_class=_CommandParser,
        action=_Commands,
    )
    assert isinstance(sub, _Commands)
    for command in COMMANDS:
        sub.add_command(command)
    return top


def main(
    argv: Sequence[str] | None = None,
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser().parse_args(words)
    except SystemExit as exc:  # argparse: --help and --version exit 0
        return int(exc.code or 0)
    except _BadUsage as exc:
        (err or sys.stderr).write(exc.usage + exc.text + "\n")
        if "--json" in words:
            from series.cli.run import bad_usage_json

            bad_usage_json(exc.message, words, out)
        return int(Exit.BAD_INPUT)
    from series.cli.run import run

    return run(args, words, out, err)
