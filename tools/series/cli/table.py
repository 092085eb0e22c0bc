"""The table of commands: one row per command, its name, help, module and whether it writes.

A command is its module under series.commands, which declares its options
and its ``run`` (series.commands.options), plus one row here.
series.cli.parse builds the command's argparse arguments from the
declaration, and ``Command.run`` calls the module's ``run`` with the parsed values as
keywords. The module is imported only when its row is used: ``series
--help`` needs only the rows, and a command module keeps what it needs to
run out of its top-level imports. A test runs every row for real
(tests/test_cli.py); tests/test_architecture.py checks that every row's
module declares its options and a ``run`` taking exactly their keys.
"""

from __future__ import annotations

import sys
from types import ModuleType

from series.commands.options import flat
from series.errors import Exit

TYPE_CHECKING = False  # typing itself is not imported: ``series --help`` reads this table
if TYPE_CHECKING:  # argparse neither: a plain re-run of apply or export is parsed without it
    import argparse
    from collections.abc import Callable

    from series.project import Series
    from series.ui import Ui

    Writes = Callable[[argparse.Namespace], bool]


def reads(a: argparse.Namespace) -> bool:
    return False


def writes(a: argparse.Namespace) -> bool:
    return True


class Command:
    """``module``: the dotted name of the command's module.

    ``writes``: whether this run writes the checkout, series.toml, patches/ or
    resolutions/; such a run holds the project lock from start to end (series.project).
    The checks (test, lint, prove, bench, scorecard, check-conflicts) read the
    project and write only in the cache, their own work trees there, and
    files named on their command line (--junit, --chart), so they take no lock.
    """

    __slots__ = ("help", "module", "name", "writes")

    def __init__(self, name: str, help: str, module: str, writes: Writes = reads) -> None:
        self.name = name
        self.help = help
        self.module = module
        self.writes = writes

    def load(self) -> ModuleType:
        """The command's module (imported on first use; importlib itself is not imported)."""
        __import__(self.module)
        return sys.modules[self.module]

    def run(self, series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
        module = self.load()
        options = {o.keyword: getattr(a, o.dest) for o in flat(module.OPTIONS)}
        return Exit(module.run(series, ui, **options))


COMMANDS: tuple[Command, ...] = (
    Command(
        "apply",
        "materialise the pinned upstream and apply the stack as commits",
        "series.commands.apply",
        writes,
    ),
    Command(
        "export",
        "write the checkout's commits back to patches/ and series.toml",
        "series.commands.export",
        writes,
    ),
    Command(
        "check-conflicts",
        "merge-tree dry runs: the stack on its pin, pairwise, and --onto another upstream",
        "series.commands.check_conflicts",
    ),
    Command(
        "branches",
        "one branch per patch (pin + patches 1..k) for stacked pull requests, pushed with leases",
        "series.commands.branches",
        lambda a: not a.dry_run,
    ),
    Command(
        "rebase",
        "move the series onto another upstream revision (--continue, --skip, --abort)",
        "series.commands.rebase",
        writes,
    ),
    Command(
        "edit",
        "change any patch in place: stop at it, insert, drop, move, squash fixups; exported",
        "series.commands.edit",
        writes,
    ),
    Command(
        "status",
        "where the checkout stands: pin, branch, applied, unexported, drift, a rebase",
        "series.commands.status",
    ),
    Command(
        "range-diff",
        "how each patch changed between two versions of the series (git range-diff form)",
        "series.commands.range_diff",
    ),
    Command("list", "the series as a table", "series.commands.list"),
    Command(
        "show",
        "one patch for review: message, upstream link, diffstat, subset",
        "series.commands.show",
    ),
    Command(
        "test",
        "each patch's test subset on torch, against the pin's results, cached and in parallel",
        "series.commands.test",
    ),
    Command(
        "lint",
        "ruff check and ruff format --check on the files each patch touches; its message",
        "series.commands.lint",
    ),
    Command(
        "bench",
        "what each patch buys: timed side by side with the pin, with intervals and controls",
        "series.commands.bench",
    ),
    Command(
        "scorecard",
        "graphs, graph breaks and recompiles under torch.compile, per stack state",
        "series.commands.scorecard",
    ),
    Command(
        "prove",
        "whether each patch's tests fail without its production change, and how",
        "series.commands.prove",
    ),
    Command(
        "cache",
        "the per-user cache: `clean` removes what series can rebuild, saying how much",
        "series.commands.cache",
    ),
)
