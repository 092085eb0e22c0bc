"""Output: results and tables on stdout, status lines and errors on stderr.

One ``Ui`` is made by ``cli.main`` and handed to commands, so tests can run
commands in-process and capture both streams.

What people see depends on where stdout goes, the way git does it: on a
terminal, tables have boxes, long diffs go through the pager and long
work shows progress; in a pipe, under ``NO_COLOR`` or ``TERM=dumb``, or
when a table is wider than the terminal, tables are plain aligned columns
that never cut a path, and there is no progress and no colour. A closed
pipe (``series show P1 --diff | head -1``) surfaces as ``BrokenPipeError``
for ``cli.main`` to end quietly, as git does.

Lines are written to the stream as they are; rich (its ``Console``, its
tables, its spinner) is imported only when a terminal gets a boxed table
or a spinner: ``series list`` or ``status`` in a pipe never import it.

With ``--json``, ``cli.main`` owns stdout: :meth:`Ui.json` keeps the
command's payload and ``cli.main`` prints it inside the one envelope
(docs/json.md), also when the command fails.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext

from series import json_text
from series.terminal import terminal

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from typing import IO, Any

    from rich.console import Console
    from rich.table import Table


def plain_env() -> bool:
    """Whether the environment asks for no colour and no box drawing."""
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


class Stream:
    """One output stream: lines are written to ``file`` as they are; rich's ``console``
    is made only when a table for a terminal or a spinner needs it (importing rich
    costs more than a short command's own work)."""

    def __init__(self, file: IO[str]) -> None:
        self.file = file
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = _console(self.file)
        return self._console

    @property
    def is_terminal(self) -> bool:
        """A terminal, as rich tells one (``TTY_COMPATIBLE``, ``FORCE_COLOR``, then isatty)."""
        if self._console is not None:
            return self._console.is_terminal
        return terminal(self.file)

    def line(self, text: str) -> None:
        if self._console is not None:  # a spinner may be live on it: rich prints above it
            self._console.print(text, markup=False)
        else:
            self.file.write(text + "\n")


def _console(file: IO[str]) -> Console:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich turns a closed pipe into SystemExit(1); cli.main ends it like git.
            self.quiet = True
            raise BrokenPipeError

    return _Console(file=file, highlight=False, soft_wrap=True)


class Grid:
    """A table of text cells for ``Ui.table``, rich's ``Table`` built only for a terminal.

    Columns fold long cells on a terminal; in a pipe every cell is whole."""

    def __init__(self, title: str, headers: Sequence[str]) -> None:
        self.title = title
        self.headers = list(headers)
        self.rows: list[list[str]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def rich(self) -> Table:
        from rich.table import Table

        table = Table(title=self.title)
        for header in self.headers:
            table.add_column(header, overflow="fold")
        for row in self.rows:
            table.add_row(*row)
        return table


def _nowhere() -> IO[str]:
    """Where a closed standard stream's text goes (``series apply >&-``: Python makes it
    None): nowhere, as git's output then (git ends with 0). The command does its work, and
    its exit status says how it went; what it would have printed is lost, as asked."""
    return open(os.devnull, "w", encoding="utf-8")


class Ui:
    def __init__(
        self,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
        *,
        keep_json: bool = False,
    ) -> None:
        self.out = Stream(out or sys.stdout or _nowhere())
        self.err = Stream(err or sys.stderr or _nowhere())
        self.keep_json = keep_json  # cli.main prints the payload in the envelope
        self.payload: dict[str, Any] | None = None

    @property
    def fancy(self) -> bool:
        """A terminal on stdout that may get colour and boxes."""
        return self.out.is_terminal and not plain_env()

    def status(self, text: str) -> None:
        """One line per state change, for people, on stderr."""
        self.err.line(text)

    def result(self, text: str) -> None:
        # Under --json, stdout holds the one JSON document: the sentence goes to stderr.
        (self.err if self.keep_json else self.out).line(text)

    def table(self, table: Table | Grid) -> None:
        if self.keep_json:  # stdout holds the one JSON document: the table is for people
            self.err.file.write(plain_table(table))
            return
        if self.fancy:
            shown = table.rich() if isinstance(table, Grid) else table
            console = self.out.console
            if _natural_width(console, shown) <= console.width:
                console.print(shown)
                return
        self.out.file.write(plain_table(table))

    def json(self, data: dict[str, Any]) -> None:
        if self.keep_json:
            self.payload = data
        else:
            self.out.file.write(json_text.dumps(data, indent=2, sort_keys=False) + "\n")

    def progress(self, text: str) -> Any:
        """A spinner on a terminal's stderr while long work runs; nothing in a pipe."""
        if self.err.is_terminal and not plain_env():
            return self.err.console.status(text)
        return nullcontext()

    def page(self, text: str, *, pager: bool = True) -> None:
        """Long text (a diff) through the user's pager on a terminal, like git."""
        if not (pager and self.out.is_terminal and self.out.file is sys.stdout):
            self.out.file.write(text)
            return
        shown = colour_diff(text) if self.fancy else text
        command = os.environ.get("GIT_PAGER") or os.environ.get("PAGER") or "less"
        import shlex  # a pager is started only here: not imported by every command
        import shutil

        argv = shlex.split(command) if command.strip() not in ("", "cat") else []
        if argv and shutil.which(argv[0]):
            with _pager(argv) as stdin:
                stdin.write(shown)
        else:  # no pager asked for, or none installed: print, as git does
            self.out.file.write(shown)


@contextmanager
def _pager(argv: list[str]) -> Iterator[IO[str]]:
    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX"), "LV": "-c"}
    import subprocess

    sys.stdout.flush()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None
    try:
        yield proc.stdin
        proc.stdin.close()
    except BrokenPipeError:  # the user quit the pager early: not an error
        pass
    finally:
        proc.wait()


def _natural_width(console: Console, table: Table) -> int:
    """The width the table needs to show every cell on one line, unclamped."""
    from rich.measure import Measurement

    wide = console.options.update_width(1_000_000)
    return Measurement.get(console, wide, table).maximum


_COLOURS = (("+++", "1"), ("---", "1"), ("+", "32"), ("-", "31"), ("@@", "36"), ("diff ", "1"))


def colour_diff(text: str) -> str:
    """ANSI colours for a unified diff, the way ``git diff --color`` marks lines."""
    out = []
    for line in text.splitlines(keepends=True):
        code = next((c for prefix, c in _COLOURS if line.startswith(prefix)), None)
        body = line.rstrip("\n")
        out.append(f"\x1b[{code}m{body}\x1b[m" + line[len(body) :] if code else line)
    return "".join(out)


def plain_table(table: Table | Grid) -> str:
    """A table as aligned columns with no box drawing; cells are never cut or wrapped."""
    if isinstance(table, Grid):
        columns = table.headers
        texts = [[row[i] for row in table.rows] for i in range(len(columns))]
    else:
        columns = [str(c.header) for c in table.columns]
        texts = [[str(cell) for cell in c._cells] for c in table.columns]
    cells = [[cell.splitlines() or [""] for cell in column] for column in texts]
    rows = max((len(c) for c in cells), default=0)
    grid: list[list[str]] = [columns]
    for r in range(rows):
        height = max(len(col[r]) for col in cells)
        for k in range(height):
            grid.append([col[r][k] if k < len(col[r]) else "" for col in cells])
    widths = [max(len(line[i]) for line in grid) for i in range(len(columns))]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in grid
    ]
    title = f"{table.title}\n" if table.title else ""
    return title + "\n".join(lines) + "\n"
