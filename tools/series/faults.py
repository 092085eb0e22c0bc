"""Fault injection for the kill tests: ``SERIES_FAULT_KILL_AT=N`` kills the run at its Nth step.

A step is every git call (``series.git.run``) and every named point
between them where series itself writes: a temporary file written but not
yet renamed, a rename done, export's journal, the checkout's move recorded
and done. The count is deterministic (a choice made by the machine's load takes one
path while steps are counted: :func:`counting`), so a test can kill a
command at every step in turn (tests/test_rebase_kill.py, tests/test_trust_recover.py,
docs/hardening.md). With ``SERIES_DEBUG`` (or ``-v``) each step is logged
as ``series.faults: step N: NAME``, which is how a test counts them.

The kill is SIGKILL of the whole process group when series leads it (the
tests start it with ``start_new_session``): the git it is running dies too,
as under a real ``kill -9 -PGID``, a closed terminal or an OOM killer. When
series does not lead its group only series itself is killed.

When neither variable is set a step costs one dictionary lookup.
"""

from __future__ import annotations

import os

from series.logs import debug, debugging

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal  # the functions of _signal, typed
else:
    import _signal  # SIGKILL alone: signal would add its enums and wrappers to every command

_steps = 0


def counting() -> bool:
    """Whether this run counts its steps (a kill is armed, or they are logged). A choice
    made by the load of the moment that changes how many git processes a run starts
    (series.git.mergetree: a batch split over two when a core is idle) takes its one
    path then, so a run's steps are numbered the same however busy the machine is."""
    return "SERIES_FAULT_KILL_AT" in os.environ or debugging("series.faults")


def point(name: str) -> None:
    """One step of the run: counted, logged in debug, and the kill when it is the Nth."""
    global _steps
    at = os.environ.get("SERIES_FAULT_KILL_AT")
    if at is None and not debugging("series.faults"):
        return
    _steps += 1
    debug("series.faults", "step %d: %s", _steps, name)
    if at == str(_steps):
        if os.getpgrp() == os.getpid():
            os.killpg(0, _signal.SIGKILL)
        os.kill(os.getpid(), _signal.SIGKILL)
