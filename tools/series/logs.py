"""series' log lines (``-v`` or ``SERIES_DEBUG``: debug; always: warnings), written
through :mod:`logging`, which is imported only when a line is written.

Importing logging costs more than a re-run's own work, and a command
without ``-v`` writes no debug line: a debug line is dropped, without
importing logging, when logging was never imported (then nothing set a
level that shows it). A warning imports it, with the configuration the
command asked for (:func:`configure`): the same lines, the same stream.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from typing import Any

_WANTED: list[dict[str, Any]] = []  # the configuration asked for, not made yet


def configure(verbose: bool) -> None:
    """The command's logging: every level with ``verbose``, warnings only without.

    Made at once where logging is loaded or wanted; else on the first warning.
    """
    wanted: dict[str, Any] = {
        "level": 10 if verbose else 30,  # logging.DEBUG, logging.WARNING
        "format": "%(name)s: %(message)s",
        "stream": sys.stderr,
        "force": True,
    }
    _WANTED[:] = [wanted]
    if verbose or "logging" in sys.modules:
        _made()


def _made() -> Any:
    import logging

    if _WANTED:
        logging.basicConfig(**_WANTED.pop())
    return logging


def debugging(name: str) -> bool:
    """Whether ``name``'s debug lines are written (logging not imported: they are not)."""
    if "logging" not in sys.modules:
        return False
    logging = _made()
    return bool(logging.getLogger(name).isEnabledFor(logging.DEBUG))


def debug(name: str, message: str, *args: object) -> None:
    if debugging(name):
        _made().getLogger(name).debug(message, *args)


def warning(name: str, message: str, *args: object) -> None:
    _made().getLogger(name).warning(message, *args)


__all__ = ["configure", "debug", "debugging", "warning"]
