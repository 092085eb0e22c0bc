"""The command line parsed by argparse: the top-level parser and each command's.

Each command's parser is made, and given its arguments from its module's
declaration (series.commands.options), when its word is parsed
(``_Commands``, ``CommandParser``), so ``series --help`` and ``series
list`` import no other command. series.cli imports this module for every
command line but the plain re-runs it parses itself (``series [-C DIR]
apply`` or ``export``: argparse, with gettext and the help formatter's
shutil, is a few ms of such a run).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from series import __version__
from series.cli.table import COMMANDS, Command
from series.commands.options import Declared, Exclusive, Option, path

TYPE_CHECKING = False  # neither typing nor pathlib is imported to parse
if TYPE_CHECKING:
    from typing import Any, NoReturn


class BadUsage(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.usage = parser.format_usage()
        self.text = f"{parser.prog}: error: {message}"
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error comes back to ``main`` (for the --json envelope), and
    a help or version whose reader went away ends with 141, as every command does."""

    def error(self, message: str) -> NoReturn:
        raise BadUsage(self, message)

    def _print_message(self, message: str, file: Any = None) -> None:
        """argparse's, but a reader gone (``BrokenPipeError``) reaches series.cli.main,
        which ends with 141 quietly, where argparse said nothing and exited 0 (and the
        help kept for series.entry, which writes it as series.stack.branches_kept.
        say_text, ended otherwise). No stream at all (stdout closed): stderr; any other
        failure to write: nothing said, as argparse."""
        stream = file or sys.stderr
        if message and stream is not None:
            try:
                stream.write(message)
                stream.flush()
            except BrokenPipeError:
                raise
            except OSError:  # argparse's: any other failure to write is not said
                pass


class CommandParser(argparse.ArgumentParser):
    """The parser of one command, given its arguments the first time it parses or
    prints its usage: ``series --help`` and ``series list`` import no other command."""

    def __init__(self, *args: Any, command: Command, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command = command
        self.ready = False

    def declare(self) -> None:
        if not self.ready:
            self.ready = True
            module = self.command.load()
            self.epilog = getattr(module, "EPILOG", None)
            add_arguments(self, module.OPTIONS)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.declare()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.declare()
        return super().format_usage()

    def format_help(self) -> str:
        self.declare()
        return super().format_help()


def add_arguments(p: argparse.ArgumentParser, declared: Declared) -> None:
    for item in declared:
        if isinstance(item, Exclusive):
            group = p.add_mutually_exclusive_group()
            for option in item.options:
                group.add_argument(*_names(option), **_settings(option))
        else:
            p.add_argument(*_names(item), **_settings(item))


def _names(o: Option) -> tuple[str, ...]:
    return (o.dest,) if o.positional else o.names


def _settings(o: Option) -> dict[str, Any]:
    given: dict[str, Any] = {
        "action": o.action,
        "help": o.help,
        "type": o.type,
        "default": o.default,
        "metavar": o.shown if o.positional else o.metavar,
        "choices": o.choices,
        "nargs": o.nargs,
        "const": o.const,
    }
    if not o.positional:
        given["dest"] = o.dest
    return {k: v for k, v in given.items() if v is not None}


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
