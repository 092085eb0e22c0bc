"""Advisory file locks, so two series runs can share one cache safely.

A lock that another run holds is waited for, with one line saying who holds
it, and given up after a bound (``SERIES_LOCK_TIMEOUT`` seconds, default
300): a stuck run must not make every later command hang in silence.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from series.errors import SeriesError


def lock_timeout() -> float:
    try:
        return float(os.environ.get("SERIES_LOCK_TIMEOUT", "300"))
    except ValueError:
        return 300.0


@contextmanager
def exclusive(
    lock: Path, *, say: Callable[[str], None] | None = None, what: str = ""
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock`` (created if missing), waiting a bounded time."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, lock, say, what)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:  # a full disk: name the file in the error
            raise OSError(exc.errno, exc.strerror, str(lock)) from None
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _acquire(fd: int, lock: Path, say: Callable[[str], None] | None, what: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    bound = lock_timeout()
    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
    if say is not None:
        say(
            f"waiting for another series run (pid {holder}) that holds {lock}"
            + (f" ({what})" if what else "")
            + f"; giving up after {bound:g} s"
        )
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue
    raise SeriesError(
        f"gave up waiting for {lock} after {bound:g} s",
        why=f"another series run (pid {holder}) still holds it" + (f" ({what})" if what else ""),
        hint="wait for that run to finish (or stop it), then run the command again; "
        "SERIES_LOCK_TIMEOUT=SECONDS waits longer",
    )
