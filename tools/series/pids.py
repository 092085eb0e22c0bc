"""Whether a process still runs: how series tells its own leftovers from a live run's.

A killed run leaves files named with its pid (temporary files, git lock
records, the project lock's holder record); they are series' to clear only
once that pid no longer runs. Imported by the git layer too, so it imports
nothing of series.
"""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (one of another user counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
