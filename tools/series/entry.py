"""The console entry point: SIGINT is handled before anything heavy is imported.

Importing the CLI pulls in rich and GitPython, which takes a noticeable
moment; a Ctrl-C in that window would print a ``KeyboardInterrupt``
traceback from the middle of an import. Until ``cli`` is imported, SIGINT
ends the process quietly with 130; from then on ``cli.main`` turns it into
"series: interrupted" after the ``finally`` blocks ran.
"""

from __future__ import annotations

import os
import signal
from types import FrameType


def _early_interrupt(signum: int, frame: FrameType | None) -> None:
    os.write(2, b"series: interrupted\n")
    os._exit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGINT, _early_interrupt)
    from series.cli import main as cli_main

    signal.signal(signal.SIGINT, signal.default_int_handler)
    return cli_main()
