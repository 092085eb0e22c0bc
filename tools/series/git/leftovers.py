"""git's lock files that a git process series started left when it was killed.

git takes ``index.lock`` to write the index (moving the checkout's files)
and ``shallow.lock`` to fetch into a shallow repository, and removes them
when it ends, also on an error; only a kill (of the process group, a
crash, power lost) leaves one, and it then blocks every
later git command in that repository. By its name alone series cannot tell
such a lock from the lock of a git the user is running at that moment.

So before each git command that takes one of them, series writes a record
in the repository's git directory, ``series-git-<pid>`` (its pid and the
command), and removes it when git has returned (a move of the checkout's
files that failed, on a full disk, keeps it, marked failed). Before the next such
command in that repository (:func:`clear_stale_locks`), a lock is removed
as series' own leftover only when all of these hold:

1. a record of a series process that no longer runs is there;
2. the lock is not older than that record (made by the git it started);
3. no process has the lock file open (a git writing it holds it open).

It is said on stderr. Any other lock is left alone (commands that write
the checkout then refuse, naming it: series.checkout.finish_cut_move). Records whose lock is gone
are removed, except a record of ``read-tree -u`` (a move of the checkout's
files cut short), which stays until the move is finished
(:meth:`series.git.worktree.Worktree.finish_move`).

A record's times are the evidence of what git wrote (the file system's clock, the
one of every file's change time): a killed move's record has the time it began (its
own, as :func:`begin` wrote it); one that failed is rewritten after git ended (its
time then), keeping the time it began (``begun_ns``). A file made between the two is
git's; one made before, or since, is not. A move's record also names the trees whose
bytes the files may hold before it that the command has kept or written itself (``held``,
:func:`holding`): a file the move, run again, writes over that holds none of them, nor
the target's, is someone's change since.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from series.json_text import dumps, loads
from series.logs import warning
from series.pids import alive
from series.plain import read_plain
from series.records import NamedTuple

RECORD_PREFIX = "series-git-"
LOCKS = ("index.lock", "shallow.lock")
# The git commands series runs that take one of LOCKS for a while.
LOCKING = frozenset({"fetch", "read-tree", "stash", "checkout", "update-index"})


class Record(NamedTuple):
    path: Path
    pid: int
    argv: list[str]
    mtime: float
    began_ns: int | None = None  # when the git command began (None: a record without it)
    ended_ns: int | None = None  # when it was seen to fail, git ended (None: killed)
    held: tuple[str, ...] = ()  # trees the files may hold before the move (:func:`holding`)


_HELD: list[tuple[str, ...]] = []  # the trees of the moves started within :func:`holding`


@contextmanager
def holding(trees: Sequence[str]) -> Iterator[None]:
    """Within it, a move of the checkout's files (:func:`is_move`) records ``trees``: what
    the files may hold before it that the caller has kept (a snapshot of the user's
    changes, series.backup) or written itself (the trees of a rebase stop). A finish of
    the move cut short tells from them, and from the target's and the index's, a file
    changed since, which the move run again would write over."""
    _HELD.append(tuple(trees))
    try:
        yield
    finally:
        _HELD.pop()


def verb(argv: Sequence[str]) -> str:
    """The git command of ``argv`` (after ``-c key=value`` and other options)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return ""


def git_dir(cwd: Path) -> Path | None:
    """The git directory of the repository in ``cwd`` (a work tree's ``.git``, or a bare one)."""
    dot = cwd / ".git"
    if dot.is_dir():
        return dot
    if (cwd / "HEAD").is_file() and (cwd / "objects").is_dir():
        return cwd
    return None  # a linked work tree (series owns those, and clears their locks) or none


def unfinished_move(cwd: Path) -> Record | None:
    """The move of the files of the checkout in ``cwd`` that a killed or failed series run
    left, if any."""
    where = git_dir(cwd)
    moves = [r for r in dead_records(where) if is_move(r.argv)] if where is not None else []
    return max(moves, key=lambda r: r.mtime, default=None)


def index_lock(cwd: Path) -> Path | None:
    """The index's lock file of the checkout in ``cwd``, when one is there after series
    cleared its own stale ones."""
    where = git_dir(cwd)
    if where is None:
        return None
    clear_stale_locks(where)
    lock = where / "index.lock"
    return lock if lock.exists() else None


def is_move(argv: Sequence[str]) -> bool:
    """Whether ``argv`` moves the files of a work tree (``read-tree -u``)."""
    return verb(argv) == "read-tree" and "-u" in argv


def move_start(argv: Sequence[str]) -> str | None:
    """The tree a two-tree move (``read-tree -m -u OLD NEW``) starts from; None for a
    ``--reset`` move (it writes every path the index holds otherwise)."""
    return argv[-2] if is_move(argv) and "-m" in argv and len(argv) > 2 else None


def begin(cwd: Path, argv: Sequence[str], env: Mapping[str, str] | None) -> Path | None:
    """Before a git command: clear stale locks, record it when it takes one (module docstring).

    A command on a scratch index (``GIT_INDEX_FILE``) takes no lock of the
    repository's.
    """
    scratch = env is not None and "GIT_INDEX_FILE" in env
    where = git_dir(cwd) if verb(argv) in LOCKING and not scratch else None
    if where is None:
        return None
    clear_stale_locks(where)
    record = where / f"{RECORD_PREFIX}{os.getpid()}"
    data: dict[str, object] = {"pid": os.getpid(), "argv": list(argv), "started": time.time()}
    if _HELD and is_move(argv):
        data["held"] = list(_HELD[-1])
    try:
        record.write_text(dumps(data) + "\n", encoding="utf-8")
    except OSError:
        return None  # an unwritable git directory: the git command says so
    return record


def end(record: Path | None, argv: Sequence[str], status: int) -> None:
    """After it: the record goes, unless a move of the checkout failed half way (kept)."""
    if record is None:
        return
    if status != 0 and is_move(argv):  # it ended: finished by the next command, this one's too
        try:
            data = loads(read_plain(record))
            begun = record.stat().st_mtime_ns  # as begin wrote it: before git started
            data = {**data, "failed": True, "begun_ns": begun}
            record.write_text(dumps(data) + "\n", encoding="utf-8")
        except (OSError, ValueError):
            pass
        return
    record.unlink(missing_ok=True)


def _object_id(text: object) -> bool:
    """Whether ``text`` is an object id, full (SHA-1 or SHA-256): no option, no revision
    expression of a record someone wrote reaches git."""
    return isinstance(text, str) and len(text) in (40, 64) and not text.strip("0123456789abcdef")


def dead_records(where: Path) -> list[Record]:
    """The records in ``where`` of git commands that ended without cleaning up after them.

    Those of series processes that no longer run, and moves that failed.
    """
    found = []
    try:
        names = [n for n in os.listdir(where) if n.startswith(RECORD_PREFIX)]
    except OSError:
        return []
    for name in names:
        path = where / name
        try:
            data = loads(read_plain(path))  # a FIFO there: not series' record
            pid, argv, st = int(data["pid"]), list(data["argv"]), path.stat()
            failed = bool(data.get("failed"))
            begun = data.get("begun_ns") if failed else st.st_mtime_ns
            began = None if begun is None else int(begun)
            held = tuple(t for t in data.get("held", ()) if _object_id(t))  # nothing else
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if failed or not alive(pid):
            ended = st.st_mtime_ns if failed else None
            argv = [str(a) for a in argv]
            found.append(Record(path, pid, argv, st.st_mtime, began, ended, held))
    return found


def clear_stale_locks(where: Path) -> list[Path]:
    """Remove the locks that killed git processes of series left in ``where``; the removed."""
    records = dead_records(where)
    if not records:
        return []
    removed = []
    for name in LOCKS:
        lock = where / name
        try:
            made = lock.stat().st_mtime
        except OSError:
            continue
        owner = min((r for r in records if r.mtime <= made), key=lambda r: r.mtime, default=None)
        if owner is None or _open_by_anyone(lock):
            continue
        lock.unlink(missing_ok=True)
        removed.append(lock)
        warning(
            "series",
            "removed %s, left by `git %s` that series (pid %d) started and was killed",
            lock,
            verb(owner.argv),
            owner.pid,
        )
    for record in records:
        if not is_move(record.argv):
            record.path.unlink(missing_ok=True)
    return removed


def _open_by_anyone(path: Path) -> bool:
    """Whether a process has ``path`` open (Linux's /proc; elsewhere: assumed, to be safe)."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return True
    target = str(path.resolve())
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) == target:
                    return True
            except OSError:
                continue
    return False
    return True
