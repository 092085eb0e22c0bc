"""The console entry point: SIGINT is handled before anything heavy is imported.

Importing the CLI pulls in rich and GitPython, which takes a noticeable
moment; a Ctrl-C in that window would print a ``KeyboardInterrupt``
traceback from the middle of an import. Until ``cli`` is imported, SIGINT
ends the process quietly with 130; from then on ``cli.main`` turns it into
"series: interrupted" after the ``finally`` blocks ran. (A Ctrl-C during
Python's own start-up, before this module runs, is Python's to report.)
``SERIES_TEST_IMPORT_WINDOW=SECONDS`` is for the tests: it announces on
stderr that the handler is installed, then waits, so a test can interrupt
the import deterministically.

stdout and stderr escape what their encoding cannot hold (a commit subject
with "é" under an ASCII locale prints as ``\\xe9``) instead of ending the
command with ``UnicodeEncodeError``.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import time
from types import FrameType


def _early_interrupt(signum: int, frame: FrameType | None) -> None:
    os.write(2, b"series: interrupted\n")
    os._exit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGINT, _early_interrupt)
    window = os.environ.get("SERIES_TEST_IMPORT_WINDOW")
    if window:  # tests only: say the handler is in place, and hold the window open
        os.write(2, b"series: test: importing\n")
        time.sleep(float(window))
    _lenient_streams()
    from series.cli import main as cli_main

    signal.signal(signal.SIGINT, signal.default_int_handler)
    return cli_main()


def _lenient_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
