"""Whether a stream is a terminal, as rich tells one, without importing rich.

series.ui asks it before a console is made, and the kept dry run of
``branches`` (series.stack.branches_kept) before anything else is loaded:
``TTY_COMPATIBLE`` ("0" or "1") first, then ``FORCE_COLOR`` (set and not
empty: a terminal), then the stream's own ``isatty``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported: the kept dry run loads this
if TYPE_CHECKING:
    from typing import Any


def terminal(stream: Any) -> bool:
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False
