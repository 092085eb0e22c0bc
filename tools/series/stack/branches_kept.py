"""What the last ``series branches --dry-run`` said, kept under a digest of all it read.

A dry run answers from series.toml, the patch files, the checkout's refs
(its branches, HEAD, its state and the record of the branches series
made, ``refs/series/branches``), the cache's ref of the pin and its memo
of the built stack, and series' own code. Recomputing it costs a Python
start-up with the project, the manifest's parse and the git layer, and
four or five git processes; git's own commands asked the same question
cost a few milliseconds. So when a dry run ends well (exit 0), what it
wrote on stdout and stderr is kept in the per-user cache
(``branches/<blake2b of the project's path and the options>``) with the digest (:func:`digest`) of:

* the project's path, the cache's path, the options, the checkout's path
  and the Python that ran it, series' code (series.code.code_digest);
* series.toml's bytes and each patch file's (the manifest's parse, the
  names of the branches, the pin, the stack's patches), a patch file's
  as the blake2b of its bytes, which the entry keeps with the file's
  identity (:func:`identities`): a re-run reads again only the files whose
  identity moved since (:func:`contents`);
* the checkout's refs read as files (HEAD, packed-refs, every loose ref:
  the branches, the one checked out, the state, the record) and its
  ``config``;
* the owners of the checkout's directory, of its ``.git`` and of the
  cache's repository, and who this user is to git (:func:`_owners`): git
  refuses a repository or a work tree of another user ("dubious
  ownership") unless ``safe.directory`` names it, in the files below;
* git's system and global configuration files and its global attributes
  file, as series.stack.rangediff_kept reads them, and
  ``GIT_CONFIG_NOSYSTEM`` (:func:`_configs`);
* the git the full run would start (its path, size and time);
* in the cache, the pin's ref and the memo refs of the stack's steps
  (their names, a function of the pin, the patches and the code, are
  kept with the entry), as loose files and ``packed-refs``, and its
  ``config``;
* the cache's object store as names, its packs and its loose objects
  (:func:`_objects`, as series.stack.rangediff_kept's): a ref there says
  nothing of whether the objects it leads to are still there, and with
  a pack or a loose object gone the full run fetches the pin again, or
  fails where it cannot. The names are enough: git's objects are named
  by their content.

``series branches --dry-run`` (with ``--json``, ``--prefix P``,
``--alone``, ``--prune``, ``--force`` and ``-C DIR`` only, in a pipe:
:func:`words`) asks :func:`rerun` before the CLI is imported
(series.entry); when the digest is the one kept, it writes again what
was written, and starts no git process. Anything it cannot tell from
files takes the full run: no entry, another digest, a ref that cannot
be read as a file (reftable, a ``.git`` file), a link on the way to
series.toml, a patch file, ``.series`` or the checkout, a temporary
file of a killed series run to clear, another series command holding
the project lock (the full run says so), a git configuration file that
names other files or programs (``include``: :data:`_ELSEWHERE`), a lock
or record of a git command cut short in the checkout, a URL remembered
as unreachable, a terminal on stdout or stderr (tables have boxes
there), no git on PATH (the full run says so), ``GIT_PYTHON_GIT_EXECUTABLE``
set (the git GitPython starts, which the full run checks up front,
series.git.version, and no kept answer knows). An entry is kept only
when the digest after the run is the one before it (nothing
changed under the run; a run that built or fetched keeps nothing, the
next one does), no log line was written, the run did not fail, and
series.toml as it is then parses to the manifest the run answered from
(the digest reads its bytes after the run's parse: a save in between
would key the old answer by the new bytes).

What the full dry run does besides answering is not done again: it
copies the stack's commits from the cache into the checkout (no ref
written), which the run that kept the answer did, and which a run
without ``--dry-run`` does itself.

This module imports only what Python's start-up has loaded already,
series.code, series.git.itself (and, to ask a wrapper script on PATH,
series.git.child, how it starts git), ``fcntl``, ``time`` and ``_blake2``
(hashlib's ``blake2b``: it hashes half a megabyte of patches three times
faster than the builtin ``_sha256``, and OpenSSL's import costs more than
that).
"""

from __future__ import annotations

import os
import sys
import time
from _blake2 import blake2b
from stat import S_ISREG

from series.code import RACY_NS, code_digest
from series.git.itself import MINIMUM, ask, is_git_itself
from series.plain import plain_tree, read_plain
from series.terminal import terminal

_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO opens at once (then refused)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

FORMAT = 2
BROKEN_PIPE = 141  # series.errors.Exit.BROKEN_PIPE
DIR = "branches"
TEMP_PREFIX = ".series-tmp-"  # series.files.TEMP_PREFIX
LOCK = os.path.join(".series", "lock")  # series.project.LOCK
UNREACHABLE = "unreachable"  # series.upstream.unreachable: a URL remembered as unreachable
CACHE_REPO = "upstream.git"  # series.upstream.cache_repo
# In the checkout's git directory: a git command in progress or one of series' cut short.
BUSY = ("index.lock", "packed-refs.lock", "HEAD.lock", "shallow.lock")
RECORDS = "series-git-"  # series.git.leftovers
LEGACY_STATE = os.path.join("series", "state.json")  # series.checkout.LEGACY_STATE
_FLAGS = {"--dry-run": "dry_run", "--json": "json", "--alone": "alone", "--prune": "prune"}
_FLAGS["--force"] = "force"
# A log asked for, a fault injected, GitPython's own git named (series.git.version checks
# it up front; no kept answer starts it, nor knows it by its file): the full run.
_FULL = ("SERIES_DEBUG", "SERIES_FAULT_", "GIT_PYTHON_GIT_EXECUTABLE")


def words(argv: list[str]) -> tuple[str | None, dict[str, Any]] | None:
    """``-C DIR`` (or None) and the options, when ``argv`` is ``[-C DIR] branches
    --dry-run`` with only the options this module answers for, each once; else None.

    The values are argparse's for the same words (tests/test_branches_kept.py).
    """
    rest, root = list(argv), None
    if len(rest) > 2 and rest[0] == "-C" and not rest[1].startswith("-"):
        root, rest = rest[1], rest[2:]
    if not rest or rest[0] != "branches":
        return None
    opts: dict[str, Any] = {"dry_run": False, "json": False, "prefix": "", "alone": False}
    opts.update(prune=False, force=False)
    seen: set[str] = set()
    i = 1
    while i < len(rest):
        word = rest[i]
        if word in seen:
            return None
        seen.add(word)
        if word in _FLAGS:
            opts[_FLAGS[word]] = True
        elif word == "--prefix" and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
            opts["prefix"] = rest[i + 1]
            i += 1
        else:
            return None
        i += 1
    return (root, opts) if opts["dry_run"] else None


def options(opts: dict[str, Any]) -> str:
    """The options as the entry's name: every one that changes the answer."""
    return repr(tuple(opts[k] for k in ("json", "prefix", "alone", "prune", "force")))


def cache_dir() -> str:
    """series.project.default_cache_dir, as an absolute path."""
    if os.environ.get("SERIES_CACHE_DIR"):
        return os.path.abspath(os.environ["SERIES_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(xdg, "keras-series"))


def find_root(start: str) -> str | None:
    """series.project.find_root, resolved; None where it would fail (the CLI says why)."""
    here = start
    while True:
        if os.path.isfile(os.path.join(here, "series.toml")):
            return os.path.realpath(here)
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up


def record_path(root: str, cache: str, opts: str) -> str:
    """Where the entry of ``opts`` in the project ``root`` is kept."""
    name = blake2b(f"{root}\0{opts}".encode(), digest_size=32).hexdigest()
    return os.path.join(cache, DIR, name)


def _read(path: str) -> bytes | None:
    """The bytes of ``path``, None when there is no such file (series.plain.read_plain:
    a FIFO or a link raises OSError, and the full run answers)."""
    try:
        return read_plain(path)
    except FileNotFoundError:
        return None


def _refs(git_dir: str, digest: Any, skip: frozenset[str] = frozenset()) -> None:
    """HEAD, packed-refs and every loose ref of ``git_dir``, and its config (series.git.refs.
    files_key without the index), but the directories of refs ``skip`` names (relative to
    ``git_dir``, ending in ``/``). Raises OSError where they cannot be read as files."""
    if not os.path.isdir(git_dir) or os.path.exists(os.path.join(git_dir, "reftable")):
        raise OSError("refs not readable as files")
    for name in ("HEAD", "packed-refs", "config"):
        data = _read(os.path.join(git_dir, name))
        digest.update(f"{name}\0".encode() + (b"-" if data is None else data))
    plain_tree(os.path.join(git_dir, "refs"), "refs/", digest, skip)


# What the kept answers' digests read besides refs (this one's and rangediff_kept's).
_HEX = "0123456789abcdef"
# Configuration that names other files or programs, whose contents the digest cannot
# hold: the full run.
_ELSEWHERE = (b"include", b"attributesfile", b"orderfile", b"mailmap", b"textconv", b"external")


class _Unsure(OSError):
    """What the digest cannot hold: the full run, nothing kept."""


def _plain(path: str, data: bytes | None) -> bytes:
    """``data``, the bytes of the configuration file ``path``: refused when it names
    other files or programs."""
    if data is not None and any(word in data.lower() for word in _ELSEWHERE):
        raise _Unsure(f"{path} names other files or programs")
    return b"-" if data is None else data


def _configs(h: Any, git: str) -> None:
    """The system and global configuration files, and the global attributes file; and
    ``GIT_CONFIG_NOSYSTEM``, which has git read the system file or not (the variables
    that name other files name the paths hashed)."""
    h.update(f"\0nosystem\0{os.environ.get('GIT_CONFIG_NOSYSTEM')}".encode())
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    system = os.environ.get("GIT_CONFIG_SYSTEM")
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(git)))
    paths = [system] if system else ["/etc/gitconfig", os.path.join(prefix, "etc", "gitconfig")]
    glob = os.environ.get("GIT_CONFIG_GLOBAL")
    paths += [glob] if glob else [os.path.join(home, ".gitconfig")]
    paths += [os.path.join(xdg, "git", "config"), os.path.join(xdg, "git", "attributes")]
    for path in paths:
        h.update(f"\0{path}\0".encode() + _plain(path, _read(path)))


def _objects(objects: str, h: Any) -> None:
    """The names of the packs and of the loose objects: what git's abbreviations are
    unique among (a range-diff's), and which objects are still there (the refs say
    nothing of it)."""
    for entry in sorted(os.listdir(objects)):
        if entry == "pack" or (len(entry) == 2 and all(c in _HEX for c in entry)):
            path = os.path.join(objects, entry)
            if os.path.isdir(path):
                listed = "/".join(sorted(os.listdir(path)))
                h.update(f"\0{entry}\0{listed}".encode())


def _owners(h: Any, *paths: str) -> None:
    """Who owns each of ``paths`` (a repository's directory, its work tree's), and who this
    user is to git. git refuses a repository ("dubious ownership") whose directory, or
    whose work tree's top directory, is another user's, unless ``safe.directory`` in the
    system or global configuration (:func:`_configs`) takes it; root's git takes the user
    ``SUDO_UID`` names for its own. Raises OSError where a path cannot be read."""
    sudo = os.environ.get("SUDO_UID") if os.geteuid() == 0 else None
    h.update(f"\0owners\0{os.geteuid()}\0{sudo}".encode())
    for path in paths:
        h.update(f"\0{os.stat(path).st_uid}".encode())


def digest(
    root: str,
    cache: str,
    opts: str,
    where: str,
    files: list[str],
    cache_refs: list[str],
    known: str = "",
) -> str | None:
    """The digest of all a dry run with ``opts`` reads (the module's docstring); None
    when it cannot be told from files, or the full run has more to do than answer.

    ``where``: series.toml's ``[series] checkout``, resolved here as series.project does
    (a link on the way may lead elsewhere since). ``known``: what an entry kept of the
    patch files (:func:`identities`), to read again only those whose identity moved."""
    checkout = os.path.realpath(os.path.join(root, where))
    git = _git()
    if git is None or _unsafe(root, files) or _busy(checkout, cache):
        return None
    h = blake2b(f"{FORMAT}\0{root}\0{cache}\0{opts}\0{checkout}\0{sys.version}\0".encode())
    h.update(git.encode())
    h.update(code_digest())
    try:
        h.update(b"\0series.toml\0" + (_read(os.path.join(root, "series.toml")) or b"-"))
        for file, content in zip(files, contents(root, files, known), strict=True):
            h.update(f"\0{file}\0".encode() + content)
        _refs(os.path.join(checkout, ".git"), h)
        legacy = _read(os.path.join(checkout, ".git", LEGACY_STATE))  # series 0.1's state
        h.update(b"\0legacy state\0" + (b"-" if legacy is None else legacy))
        repo = os.path.join(cache, CACHE_REPO)
        _configs(h, git.split("\0", 1)[0])  # safe.directory, among the rest
        _owners(h, os.path.join(checkout, ".git"), checkout, repo)
        for name in ("packed-refs", "config"):
            found = _read(os.path.join(repo, name))
            h.update(f"\0cache {name}\0".encode() + (b"-" if found is None else found))
        listed: dict[str, set[str]] = {}  # a directory of refs, listed once
        for ref in cache_refs:
            where, name = os.path.split(os.path.join(repo, ref))
            if where not in listed:
                listed[where] = set(os.listdir(where)) if os.path.isdir(where) else set()
            found = _read(os.path.join(where, name)) if name in listed[where] else None
            h.update(f"\0{ref}\0".encode() + (b"-" if found is None else found))
        _objects(os.path.join(repo, "objects"), h)
    except OSError:
        return None
    return h.hexdigest()


def _identity(stat: os.stat_result) -> str:
    return f"{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"


def identities(root: str, files: Sequence[str]) -> str:
    """What a later run may take for the bytes of each of ``files`` (under ``root``)
    without reading them (:func:`contents`): the file's identity (device, inode, size,
    modification and change times) and the blake2b of its bytes; ``-`` for a file whose
    identity is not safely in the past. Items joined by SEP, in the order of ``files``.

    git's "racily clean" rule, as series.code.module_key: any write, and any
    ``os.utime``, sets a file's change time to now, so a file written after its
    bytes were read here has another identity, unless the write came in the same
    tick of the file system's clock as the change time read. So an identity is kept
    only when that change time is more than RACY_NS older than the moment before
    the read; and only when the file's status after the read is the one before it
    (a write meanwhile: the next run reads it). A change time of 0 (a file system
    that keeps none) is never taken."""
    said = []
    for file in files:
        now = time.time_ns()
        try:  # not waiting on a FIFO put there since (O_NONBLOCK): a plain file only
            fd = os.open(os.path.join(root, file), _READ)
        except OSError:
            said.append("-")
            continue
        try:
            before = os.fstat(fd)
            if not S_ISREG(before.st_mode):
                said.append("-")
                continue
            with open(fd, "rb", closefd=False) as fh:
                data = fh.read()
            after = os.fstat(fd)
        except OSError:
            said.append("-")
            continue
        finally:
            os.close(fd)
        identity = _identity(before)
        settled = 0 < before.st_ctime_ns < now - RACY_NS
        if identity != _identity(after) or not settled:
            said.append("-")
        else:
            said.append(f"{identity}={blake2b(data).hexdigest()}")
    return SEP.join(said)


def contents(root: str, files: Sequence[str], known: str) -> list[bytes]:
    """The blake2b of each of ``files``' bytes (under ``root``), in order: from ``known``
    (what :func:`identities` kept) for a file whose identity is the one kept there, else
    read now. Raises OSError where a file cannot be read."""
    kept = known.split(SEP) if known else []
    if len(kept) != len(files):
        kept = ["-"] * len(files)
    said = []
    for file, was in zip(files, kept, strict=True):
        path = os.path.join(root, file)
        identity, _, content = was.partition("=")
        if content and _identity(os.stat(path)) == identity:
            try:
                said.append(bytes.fromhex(content))
                continue
            except ValueError:  # not hex: an entry spoilt, read the file
                pass
        said.append(blake2b(read_plain(path, follow=True)).digest())
    return said


def _git_path() -> str | None:
    """The git the full run would start: the first on PATH, as ``shutil.which``."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or ".", "git")
        if os.access(path, os.X_OK) and os.path.isfile(path):
            return path
    return None


def _git() -> str | None:
    """The git the full run would start, as its path and its file's identity (device,
    inode, size, times: series.git.version's key): another git may judge a branch name
    otherwise. None: no git (the full run says so)."""
    path = _git_path()
    try:
        stat = os.stat(path) if path is not None else None
    except OSError:
        return None
    if path is None or stat is None:
        return None
    return (
        f"{os.path.abspath(path)}\0{stat.st_dev}\0{stat.st_ino}\0{stat.st_size}"
        f"\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}"
    )


def git_new_enough() -> bool:
    """Whether the git on PATH may answer now, as series.git.version would judge it.

    A kept answer was made by a run that checked git's version, and the git it
    names is known by its file (:func:`_git`). That file is git itself
    (series.git.itself) or the same verdict holds; a wrapper script (a version
    manager's shim) is not: the git it runs may have changed since, so it is
    asked again here, as the full run asks it every run (one ``git version``)."""
    path = _git_path()
    if path is None:
        return False
    if is_git_itself(path):
        return True
    version = ask(path)[1]
    return version is not None and version >= MINIMUM


def _unsafe(root: str, files: list[str]) -> bool:
    """A link on the way (the full run judges where it leads), or a temporary file of a
    killed series run that the full run would clear (series.project)."""
    dirs = {root, os.path.join(root, ".series"), os.path.join(root, "patches")}
    plain: set[str] = set()  # paths under root checked to be no link
    for file in ("series.toml", ".series", *files):
        parts = file.split("/")
        if file.startswith("/") or any(p in ("", ".", "..") for p in parts):
            return True
        path = root
        for part in parts:
            path = os.path.join(path, part)
            if path not in plain:
                if os.path.islink(path):
                    return True
                plain.add(path)
        dirs.add(os.path.dirname(path))
    resolutions = os.path.join(root, "resolutions")
    if os.path.isdir(resolutions):
        if os.path.islink(resolutions):
            return True
        dirs.add(resolutions)
        try:
            dirs |= {e.path for e in os.scandir(resolutions) if e.is_dir(follow_symlinks=False)}
        except OSError:
            return True
    for directory in dirs:
        try:
            if any(e.name.startswith(TEMP_PREFIX) for e in os.scandir(directory)):
                return True
        except FileNotFoundError:
            continue
        except OSError:
            return True
    return False


def _busy(checkout: str, cache: str) -> bool:
    """A git command of series' cut short, or one of the user's, in the checkout; a URL
    remembered as unreachable (the full run forgets it)."""
    git_dir = os.path.join(checkout, ".git")
    try:
        if any(n.startswith(RECORDS) or n in BUSY for n in os.listdir(git_dir)):
            return True
        return bool(os.listdir(os.path.join(cache, UNREACHABLE)))
    except FileNotFoundError:
        return False
    except OSError:
        return True


def _held(root: str) -> bool:
    """Whether another series command holds the project lock (series.locks.holder)."""
    import fcntl

    try:
        fd = os.open(os.path.join(root, LOCK), _READ | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            return True  # a FIFO or a link, no lock of series': the full run says
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


# An entry: these fields, NUL-separated, the lists' items joined by SEP (no field holds
# either: :func:`keep` keeps nothing else), then the seal (:func:`seal`). Read without
# json, whose import (and re's) cost more than the rest of the answer.
FIELDS = ("format", "key", "checkout", "files", "cache_refs", "identities", "stdout", "stderr")
SEP = "\x1f"


def seal(fields: list[str]) -> str | None:
    """The text of an entry of ``fields``: NUL-separated, then the blake2b of them, so that
    an entry cut short or damaged on the disk (written without fsync, then a crash) is
    never read as an answer (:func:`read_entry`); None when a field holds a NUL."""
    if any("\0" in value for value in fields):
        return None
    text = "\0".join(fields)
    return f"{text}\0{blake2b(text.encode()).hexdigest()}"


def read_entry(path: str, fields: tuple[str, ...], version: int) -> dict[str, str] | None:
    """An entry kept as ``fields``' values (:func:`seal`), the first its format
    ``version``; None when it is missing, unreadable, of another shape or format, or its
    seal is not the digest of its values, or another user could have written it (not
    this user's file, or one others may write: a cache directory shared by mistake), or it
    is no plain file (series writes entries by renaming a file into place: a link, or a
    FIFO, whose ``open`` would wait for a writer for ever, is not one)."""
    try:
        text = read_plain(path, mine=True).decode()
    except (OSError, ValueError):
        return None
    body, _, sealed = text.rpartition("\0")
    values = body.split("\0")
    if len(values) != len(fields) or values[0] != str(version):
        return None
    if blake2b(body.encode()).hexdigest() != sealed:
        return None
    return dict(zip(fields, values, strict=True))


def _load(path: str) -> dict[str, Any] | None:
    found = read_entry(path, FIELDS, FORMAT)
    if found is None:
        return None
    entry: dict[str, Any] = dict(found)
    for name in ("files", "cache_refs"):
        entry[name] = entry[name].split(SEP) if entry[name] else []
    return entry


def rerun(argv: list[str]) -> int | None:
    """Write again what the last dry run with these words wrote, when nothing it read
    changed since (exit 0); None: the CLI runs the command."""
    parsed = words(argv)
    if parsed is None or any(v.startswith(_FULL) for v in os.environ):
        return None
    if terminal(sys.stdout) or terminal(sys.stderr):
        return None
    where, opts = parsed
    root = find_root(os.getcwd()) if where is None else os.path.realpath(where)
    if root is None or _held(root):
        return None
    cache = cache_dir()
    entry = _load(record_path(root, cache, options(opts)))
    if entry is None:
        return None
    key = digest(
        root,
        cache,
        options(opts),
        entry["checkout"],
        entry["files"],
        entry["cache_refs"],
        entry["identities"],
    )
    if key is None or key != entry["key"] or not git_new_enough():
        return None
    return say(entry["stdout"], entry["stderr"])


def say(stdout: str, stderr: str) -> int:
    """Write a kept answer (its stderr, then its stdout), and the exit status: 0, or
    :data:`BROKEN_PIPE` when the reader went away (``| head``), as series.cli.run ends."""
    try:
        if sys.stderr is not None:  # closed (``2>&-``): said nowhere, as the full run
            sys.stderr.write(stderr)
        if sys.stdout is not None:
            sys.stdout.write(stdout)
            sys.stdout.flush()
    except BrokenPipeError:
        return gone()
    return 0


def say_text(text: str) -> int:
    """Write ``text`` (what argparse prints: the help, the version) as the CLI writes it
    (series.cli: the same function, and argparse's own through series.cli.parse): on
    stdout, or on stderr when there is no stdout at all (closed, ``>&-``: argparse's
    choice); and the exit status: 0, or :data:`BROKEN_PIPE` when the reader went away,
    quietly, as every command ends then (docs/workflow.md)."""
    if sys.stdout is None:
        try:
            if sys.stderr is not None:
                sys.stderr.write(text)
        except OSError:
            pass
        return 0
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        return gone()
    except OSError:  # as argparse (series.cli.parse): any other failure is not said
        pass
    return 0


def gone() -> int:
    """The reader of stdout went away: stdout pointed at /dev/null (flushing it at exit
    cannot complain again), and :data:`BROKEN_PIPE`, as series.cli.run ends."""
    try:  # noqa: SIM105 (contextlib: its import, collections', on kept answers)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return BROKEN_PIPE


class Tee:
    """A stream that writes through to ``file`` and keeps what was written."""

    def __init__(self, file: Any) -> None:
        self.file = file
        self.said: list[str] = []

    def write(self, text: str) -> int:
        self.said.append(text)
        return int(self.file.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)


def entry(key: str, checkout: str, said: dict[str, Any]) -> str | None:
    """The entry that keeps what a run wrote (``said``: files, cache_refs, identities
    (of the files: :func:`identities`), stdout, stderr) under ``key``; None when a field
    holds a separator (nothing is kept)."""
    values = {"format": str(FORMAT), "key": key, "checkout": checkout, **said}
    for name in ("files", "cache_refs"):
        if any(SEP in item or not item for item in values[name]):
            return None
        values[name] = SEP.join(values[name])
    return seal([values[name] for name in FIELDS])


def write(path: str, text: str) -> None:
    """Keep ``text`` at ``path``, whole or not at all (a temporary file renamed over it,
    without tempfile, whose import a kept answer does not otherwise pay): for help_kept
    and rangediff_kept. An entry that cannot be written costs only speed."""
    tmp = os.path.join(os.path.dirname(path), f"{TEMP_PREFIX}{os.getpid()}")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(tmp, flags, 0o644)  # a FIFO there: ENXIO at once, not a wait
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            return


def may_keep(out: object, err: object) -> bool:
    """Whether a run writing to the streams ``out`` and ``err`` may keep what it wrote for
    a kept answer (branches --dry-run, range-diff): not when a log is asked for (``-v``,
    ``SERIES_DEBUG``: lines a kept answer would not write), a fault is injected,
    ``GIT_PYTHON_GIT_EXECUTABLE`` is set (no kept answer is taken then: :data:`_FULL`), or
    either stream is a terminal (colour, width: kept answers are said to pipes and files
    only)."""
    if "logging" in sys.modules:
        return False
    if any(name.startswith(_FULL) for name in os.environ):
        return False
    return not (terminal(out) or terminal(err))
