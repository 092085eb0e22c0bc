"""One git process: started in a session of its own, ended with series, bounded by silence.

git is started by GitPython (``as_process``) in a new session, so that it
and whatever it starts (``git-remote-https``, ``ssh``, a local
``upload-pack``) form one process group that series can end as a whole.
A terminal's Ctrl-C (and a hangup) reaches only series' own group, so
series ends the children itself: on any exception while it waits
(``KeyboardInterrupt``, which entry.py also raises for SIGTERM and
SIGHUP) the group gets SIGTERM, which lets git remove its lock files
(``shallow.lock``, ``*.lock`` of refs), then SIGKILL after ``GRACE``
seconds; signals that would stop series are held meanwhile. A child
without a controlling terminal cannot stop on a terminal prompt either:
it fails at once instead.

``stall`` bounds a network command by silence, whatever the transport:
git is stopped once neither it nor any process of its group has read,
written or computed anything for that many seconds (``/proc``: the bytes
read and written and the CPU time of each process of the group). A fetch
that is receiving data, however slowly, goes on; a server that accepted
the connection and says nothing, a local ``upload-pack`` that hangs, or a
connection that never opens, end after ``stall`` seconds. Where ``/proc``
cannot be read, a hard bound of ``20 * stall`` seconds (at least 60)
stands in.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

from git.cmd import Git as _Cmd

GRACE = 2.0  # seconds git has to clean up after SIGTERM before SIGKILL
TICK = 0.5  # seconds between two looks at the group's activity
_PROC = Path("/proc")
_STOPS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@dataclass(frozen=True)
class Outcome:
    status: int
    out: bytes
    err: bytes
    stalled: bool  # stopped by the ``stall`` bound


def run_child(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin: BinaryIO | None,
    stall: float | None,
) -> Outcome:
    """Run ``argv`` (``git ...``) to its end, or until ``stall`` seconds of silence."""
    held = _Held()
    with held:  # a signal while git starts would leave it running, out of reach
        handle = _Cmd(str(cwd)).execute(
            list(argv), istream=stdin, as_process=True, env=dict(env), start_new_session=True
        )
    proc = handle.proc
    assert proc is not None
    try:
        held.deliver()
        out, err, stalled = _wait(proc, stall)
    except BaseException:
        end(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        raise
    finally:
        handle.proc = None  # GitPython's finaliser must not touch it again
    return Outcome(int(proc.returncode), out or b"", err or b"", stalled)


class _Held:
    """Holds the signals that stop series while git starts, to deliver them once it has.

    Blocking them (``pthread_sigmask``) would hand the blocked mask down to
    git; so their handlers are swapped for one that only takes note. Only
    the main thread has signal handlers; elsewhere nothing is held.
    """

    def __init__(self) -> None:
        self.got: list[int] = []
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in _STOPS:
            handler = signal.getsignal(sig)
            if callable(handler):
                self.saved[sig] = signal.signal(sig, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.got.append(signum)

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        if kind is not None:  # git did not start: nothing to end first
            self.deliver()

    def deliver(self) -> None:
        """Let the signals that came run their own handlers now."""
        for sig in dict.fromkeys(self.got):
            signal.raise_signal(sig)


def _wait(proc: subprocess.Popen[bytes], stall: float | None) -> tuple[bytes, bytes, bool]:
    if stall is None:
        out, err = proc.communicate()
        return out, err, False
    quiet_since = time.monotonic()
    seen = activity(proc.pid)
    limit = stall if seen is not None else max(stall * 20, 60)  # no /proc: a hard bound
    while True:
        try:
            out, err = proc.communicate(timeout=TICK)
            return out, err, False
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        current = activity(proc.pid)
        if current != seen:
            seen, quiet_since = current, now
        if now - quiet_since >= limit:
            end(proc)
            try:
                out, err = proc.communicate(timeout=GRACE)
            except subprocess.TimeoutExpired:  # a helper that left the group holds a pipe
                out, err = b"", b""
            return out, err, True


def end(proc: subprocess.Popen[bytes]) -> None:
    """End git's whole process group: SIGTERM, then SIGKILL after ``GRACE`` seconds.

    The group is signalled only while git is not yet reaped (alive or a
    zombie), so its id cannot have been given to another process.
    """
    if proc.returncode is not None:
        return
    # A second Ctrl-C must not cut this short and leave the group running:
    # it is held until the group is gone, then raised.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and not _exited(proc.pid):
            time.sleep(0.02)
        _signal_group(proc.pid, signal.SIGKILL)  # what is left of the group, helpers too
        proc.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (its group id stays ours)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def activity(pgid: int) -> tuple[tuple[int, ...], ...] | None:
    """What the processes of group ``pgid`` have done so far; None without ``/proc``.

    For each member: its pid, CPU time (its own and its reaped children's)
    and bytes read and written (``rchar``/``wchar``, sockets and pipes
    included). Any change between two looks is activity.
    """
    if not (_PROC / "self" / "stat").exists():
        return None
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if int(fields[2]) != pgid:
                continue
            cpu = sum(int(f) for f in fields[11:15])
            io = _io(entry)
        except (OSError, ValueError, IndexError):
            continue
        found.append((int(entry.name), cpu, *io))
    return tuple(sorted(found))


def _io(entry: Path) -> tuple[int, int]:
    try:
        lines = (entry / "io").read_text().splitlines()
    except OSError:
        return (0, 0)
    values = dict(line.split(":", 1) for line in lines if ":" in line)
    return int(values.get("rchar", 0)), int(values.get("wchar", 0))
