"""Advisory file locks: the project lock and the cache's, with who holds them.

A lock is an ``flock`` on a file. It dies with the process that holds it
(a ``kill -9`` included), so a lock file left behind is never a lock held:
only the ``flock`` says so, and the file's content is read only when the
lock is held. That content is one JSON line naming the holder (its pid,
its command line, since when), written when the lock is taken and cleared
when it is let go, so that whoever waits can name who it waits for.

A lock that another run holds is waited for, with one line saying who holds
it, and given up after a bound (``SERIES_LOCK_TIMEOUT`` seconds, default
300; 0 refuses at once): a stuck run must not make every later command hang
in silence.

A lock file is a plain file series made: one that is a link, a FIFO or a
device is refused, naming it, and never opened through (series writes its
record into the file and empties it when it lets go: through a link, the
file the link names, wherever it is).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from series import json_text
from series.errors import RefusedError, SeriesError
from series.records import NamedTuple

# A shared-lock probe (``holder``) makes a taker's first try fail for an
# instant: it tries again quietly this long before saying it waits.
_QUIET = 0.3


def lock_timeout() -> float:
    try:
        return max(0.0, float(os.environ.get("SERIES_LOCK_TIMEOUT", "300")))
    except ValueError:
        return 300.0


def this_command() -> str:
    """This process's command line, as the user would type it."""
    return command_line(["series", *sys.argv[1:]])


# What shlex.quote leaves unquoted: ASCII letters, digits, "_" and "@%+=:,./-".
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def command_line(words: list[str]) -> str:
    """``shlex.join(words)``, without shlex, whose import (with its class and its regex)
    every command paid for this one line (tests/test_fixed_cost.py compares them)."""
    return " ".join(
        word if word and _SAFE.issuperset(word) else "'" + word.replace("'", "'\"'\"'") + "'"
        for word in words
    )


class Holder(NamedTuple):
    """Who holds a lock, as it recorded itself (empty fields: not recorded)."""

    pid: str
    command: str = ""
    since: str = ""

    def describe(self) -> str:
        text = f"pid {self.pid}"
        if self.command:
            text += f": `{self.command}`"
        if self.since:
            text += f", running since {self.since}"
        return text


@contextmanager
def exclusive(
    lock: Path,
    *,
    say: Callable[[str], None] | None = None,
    what: str = "",
    command: str | None = None,
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock`` (created if missing), waiting a bounded time.

    ``command``: the command line recorded as the holder (default: this process's).
    """
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = _open(lock)
    try:
        _acquire(fd, lock, say, what)
        try:
            _record(fd, command or this_command())
            yield
        finally:
            with suppress(OSError):  # the record is a courtesy; the flock goes below
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def attempt(lock: Path) -> Iterator[bool]:
    """:func:`exclusive` without waiting: True within it when the lock was free and is now
    held, False when another run holds it (for work that may be left to another time)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = _open(lock)
    try:
        if not _try(fd):
            yield False
            return
        try:
            _record(fd, this_command())
            yield True
        finally:
            with suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holder(lock: Path) -> Holder | None:
    """Who holds ``lock`` now, or None when nobody does; never waits, never creates it."""
    try:  # no link followed, no FIFO waited on: no one's lock (the writer refuses it)
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _open(lock: Path) -> int:
    """``lock`` opened to be locked, created if missing: a plain file, never a link (the
    module's docstring); else refused."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW: the last part is a symbolic link
            _refuse(lock, "a symbolic link")
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        _refuse(lock, "not a plain file")
    return fd


def _refuse(lock: Path, what: str) -> None:
    raise RefusedError(
        f"refusing to take the lock {lock}: it is {what}",
        why="series makes its lock files as plain files, writes who holds one into it and "
        "empties it when done: through a link, into the file the link names",
        hint=f"see what it is (ls -l '{lock}'); if no program of yours put it there, remove "
        f"it (rm '{lock}'), then run the command again",
    )


def _record(fd: int, command: str) -> None:
    """Say who holds the lock: best effort (on a full disk the lock holds all the same).

    Written first, then cut to length, so a reader sees one whole first line.
    """
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    line = json_text.dumps({"pid": os.getpid(), "command": command, "since": since}) + "\n"
    data = line.encode()
    with suppress(OSError):
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))


def _read(fd: int) -> Holder:
    first = os.pread(fd, 4096, 0).decode(errors="replace").split("\n", 1)[0].strip()
    try:
        data = json_text.loads(first)
        return Holder(str(data["pid"]), str(data.get("command", "")), str(data.get("since", "")))
    except (ValueError, KeyError, TypeError):
        return Holder(first if first.isdigit() else "?")


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _wait(fd: int, until: float) -> bool:
    while time.monotonic() < until:
        time.sleep(0.05)
        if _try(fd):
            return True
    return False


def _acquire(fd: int, lock: Path, say: Callable[[str], None] | None, what: str) -> None:
    if _try(fd):
        return
    bound = lock_timeout()
    start = time.monotonic()
    if _wait(fd, start + min(_QUIET, bound)):
        return
    who = _read(fd).describe()
    about = f" ({what})" if what else ""
    if say is not None and bound > _QUIET:
        say(
            f"waiting for another series run ({who}) that holds {lock}{about}; "
            f"giving up after {bound:g} s"
        )
    if _wait(fd, start + bound):
        return
    raise SeriesError(
        f"gave up waiting for {lock} after {bound:g} s",
        why=f"another series run ({who}) still holds it{about}",
        hint="wait for that run to finish (or stop it), then run the command again; "
        "SERIES_LOCK_TIMEOUT=SECONDS waits longer",
    )
