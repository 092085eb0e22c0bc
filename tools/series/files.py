"""Writing the project's files: atomically, and only inside the project.

Every write to patches/, series.toml, resolutions/, .series/, caches and
state goes through :func:`write_atomic`: a temporary file in the same
directory, flushed to disk, then renamed into place. A failure (a full
disk, a kill) leaves the old file whole.

Every write and delete names the directory it must stay in (``within``:
the project root; ``None`` only for the per-user cache, which no commit
reaches). :func:`confined` checks the path first: below that root, and no
component between the root and the file a symlink that leads out of it
(a commit can add such a link, e.g. ``resolutions/P1 -> ~/.ssh``). A
symlink that stays inside the project is followed for directories (a
project may keep patches/ as a link to a subdirectory); the file itself
must not be a link when series writes or deletes it, since replacing it
would replace the link, not the file it names. Reading follows links that
stay inside and refuses the rest, so nothing outside is imported into a
commit either.

Temporary files are named ``.series-tmp-<pid>-<name>.<random>``, so what a
killed run left is recognisable: :func:`clear_stale_temps` removes those
whose process is gone (every command does, for the project's directories;
the first write of a process in a directory of the per-user cache does, for
that directory).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from series import faults
from series.errors import Exit, SeriesError
from series.pids import alive

TEMP_PREFIX = ".series-tmp-"
_swept: set[Path] = set()  # the cache's directories this process has cleared of temps


def confined(root: Path, path: Path, *, reading: bool = False) -> Path:
    """``path`` checked to stay in ``root`` (see the module docstring); returns it.

    Raises a SeriesError (exit 2: hostile or broken project content) that
    names the path and the symlink.
    """
    base = Path(os.path.abspath(root))
    return _confined(base, base.resolve(), path, reading, {})


def confined_all(root: Path, paths: Iterable[Path], *, reading: bool = False) -> None:
    """:func:`confined` of each of ``paths`` in turn (the first refused raises): the same
    checks, with the root resolved once and each directory between it and the files
    looked at once (``series rebase --abort`` checks every patch file before writing).
    Paths with no link at all below the root, the usual case, are told so with strings
    and ``lstat`` (:func:`_no_link_below`); any link, ``..`` or doubt takes the checks."""
    paths = list(paths)
    if _no_link_below(os.path.abspath(root), paths):
        return
    base = Path(os.path.abspath(root))
    real_root = base.resolve()
    plain: dict[Path, bool] = {}
    for path in paths:
        _confined(base, real_root, path, reading, plain)


def _no_link_below(base: str, paths: list[Path]) -> bool:
    """Whether each of ``paths`` is lexically below ``base`` (absolute), names no ``..``,
    and no component of it below ``base`` is a symlink (each directory looked at once):
    where :func:`_confined` finds nothing to refuse, told without pathlib. A component
    that does not exist ends its path's walk there, as there; any other error: False."""
    top = base.rstrip("/") + "/"
    plain: set[str] = set()
    for path in paths:
        text = os.fspath(path)
        full = os.path.abspath(text)
        if not full.startswith(top) or ".." in text.split("/"):
            return False
        current = base
        for part in full[len(top) :].split("/"):
            current = f"{current.rstrip('/')}/{part}"
            if current in plain:
                continue
            try:
                if stat.S_ISLNK(os.lstat(current).st_mode):
                    return False
            except FileNotFoundError:
                break  # nothing below a missing directory can be a link yet
            except OSError:
                return False
            if current != full:
                plain.add(current)
    return True


def _confined(
    base: Path, real_root: Path, path: Path, reading: bool, plain: dict[Path, bool]
) -> Path:
    """:func:`confined` below ``base`` (the absolute root) and ``real_root`` (it resolved).
    ``plain``: directories found no symlink already, whether each exists; a file (the
    last component) is looked at every time."""
    full = Path(os.path.abspath(path))
    if not full.is_relative_to(base) and full.is_relative_to(real_root):
        base = real_root  # a path built from the resolved root
    if not full.is_relative_to(base):
        raise _outside(base, full, f"{full} is not below the project {base}", reading)
    if ".." in Path(path).parts and not _real(Path(path)).is_relative_to(real_root):
        # "link/../x" is lexically inside, but the system goes through the link
        raise _outside(base, full, f"{path} goes through '..' to {_real(Path(path))}", reading)
    parts = full.relative_to(base).parts
    current = base
    for n, part in enumerate(parts, 1):
        current = current / part
        known = plain.get(current) if n < len(parts) else None
        if known is not None or not current.is_symlink():
            exists = current.exists() if known is None else known
            if n < len(parts):
                plain[current] = exists
            if not exists:
                break  # nothing below a missing directory can be a link yet
            continue
        target = _real(current)
        rel = current.relative_to(base).as_posix()
        if not target.is_relative_to(real_root):
            raise _outside(
                base,
                full,
                f"{rel} is a symlink to {target}, outside the project",
                reading,
                hint=f"remove the symlink {current} (it points outside the project; a commit "
                "may have added it), then run the command again",
            )
        if n == len(parts) and not reading:
            raise SeriesError(
                f"refusing to replace {rel}: it is a symlink (to {target})",
                why="series writes and deletes the files it owns in place; replacing a "
                "link would replace the link, not the file it names",
                hint=f"put the file itself at {current} instead of the link, then run the "
                "command again",
                exit_code=Exit.BAD_INPUT,
            )
    return path


def _real(path: Path) -> Path:
    """``path`` with every symlink followed; a loop counts as leading nowhere inside."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        return Path("/") / "(a symlink loop)"


def _outside(base: Path, full: Path, why: str, reading: bool, hint: str = "") -> SeriesError:
    what = "read" if reading else "write"
    shown = full.relative_to(base).as_posix() if full.is_relative_to(base) else str(full)
    return SeriesError(
        f"refusing to {what} {shown}: it leads outside the project",
        why=f"{why}\nseries reads and writes only inside the project ({base})",
        hint=hint or "fix the path (or the file naming it) so it stays inside the project",
        exit_code=Exit.BAD_INPUT,
    )


def backup_dir(root: Path, what: str) -> Path:
    """A new ``.series/backups/<what>-<time>`` in ``root`` (``-2``, ``-3`` ... when that
    name is taken), not made yet."""
    import time

    stamp = time.strftime(f"{what}-%Y%m%dT%H%M%SZ", time.gmtime())
    backups = root / ".series" / "backups"
    candidate, n = backups / stamp, 1
    while candidate.exists():
        n += 1
        candidate = backups / f"{stamp}-{n}"
    return candidate


def keep_copies(root: Path, paths: list[Path], what: str) -> Path | None:
    """Copies of ``paths`` (files in ``root`` about to be replaced or removed) in a new
    :func:`backup_dir`, each at its place there; that directory relative to ``root``, or
    None when there is nothing to copy. A copy that fails raises before the caller has
    changed anything."""
    if not paths:
        return None
    import shutil

    backup = backup_dir(root, what)
    for path in paths:
        target = confined(root, backup / path.relative_to(root))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return backup.relative_to(root)


def remove(path: Path, *, within: Path) -> bool:
    """Delete the file ``path`` (confined to ``within``) if it exists; was there one?"""
    confined(within, path)
    if not path.is_file():
        return False
    path.unlink()
    return True


def write_atomic(
    path: Path, data: bytes | str, *, within: Path | None, durable: bool = True
) -> None:
    """Write ``data`` beside ``path``, flush it (``durable``: fsync), rename it into place.

    ``within`` is the project root the path must stay in (:func:`confined`),
    or ``None`` for a file of the per-user cache.
    """
    if within is not None:
        confined(within, path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    if within is None and path.parent not in _swept:  # the cache: no command sweeps it
        _swept.add(path.parent)
        clear_stale_temps(path.parent)
    fd, tmp = _mkstemp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if path.exists():
            _copymode(path, tmp)
        faults.point(f"write {path.name}: staged")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    faults.point(f"write {path.name}: renamed")


def replace_all(changes: dict[Path, bytes | None], *, within: Path) -> list[Path]:
    """Write (or, for ``None``, delete) several files, all or nothing on a write error.

    Every new content is first written and flushed to a temporary file beside
    its target; only when all of them are on disk are they renamed into place
    (a rename needs no space), then deletions follow. A full disk or a
    read-only directory therefore fails before any file changed: the temporary
    files are removed and the error is raised. Returns the paths changed, in
    order; a kill during the renames leaves each file old or new, never half.
    Every path is first checked to stay in ``within`` (:func:`confined`).
    """
    return stage_all(changes, within=within).commit()


class Staged:
    """The files of :func:`stage_all`, all on disk beside their targets, none renamed:
    :meth:`commit` renames them into place (then deletes), :meth:`discard` removes them."""

    def __init__(self, changes: dict[Path, bytes | None], staged: list[tuple[Path, str]]) -> None:
        self.changes, self.staged = changes, staged

    def commit(self) -> list[Path]:
        """:func:`replace_all`'s second half: the renames, then the deletions."""
        staged, self.staged = self.staged, []
        faults.point(f"replace {len(staged)} files: staged")
        done = []
        for path, tmp in staged:
            os.replace(tmp, path)
            done.append(path)
            faults.point(f"replace {path.name}: renamed")
        for path, data in self.changes.items():
            if data is None:
                path.unlink(missing_ok=True)
                done.append(path)
                faults.point(f"replace {path.name}: removed")
        return done

    def discard(self) -> None:
        """The temporary files removed; nothing changed (nothing after :meth:`commit`)."""
        staged, self.staged = self.staged, []
        for _, tmp in staged:
            Path(tmp).unlink(missing_ok=True)


def stage_all(changes: dict[Path, bytes | None], *, within: Path) -> Staged:
    """:func:`replace_all`'s first half: every path checked, every new content written
    and flushed to disk beside its target (on an error, those removed and the error
    raised); the caller then commits them (:meth:`Staged.commit`) or discards them, and
    may work meanwhile (a rebase's end checks the exported patches while they are
    flushed)."""
    for path in changes:
        confined(within, path)
    staged: list[tuple[Path, str]] = []
    try:
        for path, data in changes.items():
            if data is not None:
                staged.append((path, _stage(path, data)))
        _sync_all([tmp for _, tmp in staged])
    except BaseException:
        for _, tmp in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    return Staged(changes, staged)


def _stage(path: Path, data: bytes) -> str:
    """``data`` written beside ``path``, not yet flushed to disk (:func:`_sync_all`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _mkstemp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if path.exists():
            _copymode(path, tmp)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _sync_all(names: list[str]) -> None:
    """fsync every file of ``names``, all at once; the first error raised.

    Each fsync waits for a commit of the file system's journal (a few ms on ext4):
    one after the other, the 20 patch files of a rebase's end waited about 90 ms,
    more than git's whole ``rebase --continue``. Started together, they share the
    commits (about 15 ms). Every file is on disk before any is renamed, as before.
    """
    if len(names) < 2:
        for name in names:
            _fsync(name)
        return
    import threading  # already loaded by subprocess: nothing to import

    errors: list[BaseException] = []

    def sync(name: str) -> None:
        try:
            _fsync(name)
        except BaseException as exc:  # raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=sync, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _fsync(name: str) -> None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# The characters of a temporary file's random part, as tempfile's names have them.
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
_EXCLUSIVE = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _mkstemp(path: Path) -> tuple[int, str]:
    """``tempfile.mkstemp(prefix=_temp_prefix(path), dir=path.parent)`` without tempfile,
    whose import (shutil, random, bz2, lzma: a few ms) was most of a rebase --skip's own
    writing: a new file of this user alone (0600, created exclusively, no link followed),
    an absolute name of the prefix and 8 random characters, another on a clash."""
    prefix = os.path.abspath(os.path.join(path.parent, _temp_prefix(path)))
    for _ in range(10000):  # tempfile's TMP_MAX
        name = prefix + "".join(_NAME_CHARS[b % len(_NAME_CHARS)] for b in os.urandom(8))
        try:
            return os.open(name, _EXCLUSIVE, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", prefix)


def _copymode(source: Path, target: str) -> None:
    """``shutil.copymode(source, target)`` without shutil: the permission bits."""
    os.chmod(target, stat.S_IMODE(os.stat(source).st_mode))


def _temp_prefix(path: Path) -> str:
    return f"{TEMP_PREFIX}{os.getpid()}-{path.name}."


def clear_stale_temps(*directories: Path | str) -> list[Path]:
    """Remove the temporary files of series runs that are gone (killed mid-write).

    Only files named as :func:`write_atomic` names them, and only those whose
    process no longer runs: a run writing beside us keeps its own. Returns
    what went.
    """
    gone = []
    for directory in directories:
        try:
            names = [e.name for e in os.scandir(directory) if e.name.startswith(TEMP_PREFIX)]
        except OSError:
            continue
        for name in names:
            pid = name[len(TEMP_PREFIX) :].partition("-")[0]
            if not pid.isdigit() or alive(int(pid)):
                continue
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                continue
            gone.append(Path(directory, name))
    return gone
    return True
