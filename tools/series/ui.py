"""Output: results and tables on stdout, status lines and errors on stderr.

One ``Ui`` is made by ``cli.main`` and handed to commands, so tests can run
commands in-process and capture both streams.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from rich.console import Console
from rich.table import Table


class Ui:
    def __init__(self, out: IO[str] | None = None, err: IO[str] | None = None) -> None:
        self.out = Console(file=out or sys.stdout, highlight=False, soft_wrap=True)
        self.err = Console(file=err or sys.stderr, highlight=False, soft_wrap=True)

    def status(self, text: str) -> None:
        """One line per state change, for people, on stderr."""
        self.err.print(text, markup=False)

    def result(self, text: str) -> None:
        self.out.print(text, markup=False)

    def table(self, table: Table) -> None:
        self.out.print(table)

    def json(self, data: Any) -> None:
        self.out.file.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
