"""What the last plain ``series range-diff`` said, kept under a digest of all it read.

A range-diff answers from the project's files (series.toml and every
``patches/*.patch``), the earlier version of them (in the project's own
repository, or the snapshot ``series rebase`` kept in the checkout), the
two stacks built in the per-user cache (its pin refs and its memo) and
``git range-diff`` run there. The full run costs a Python start-up with the
project, two parses of series.toml, the git layer and five git processes;
``git range-diff`` alone costs less than half of that. So when a plain
``series [-C DIR] range-diff`` ends well (exit 0) in a pipe, what it wrote
on stdout and stderr is kept in the per-user cache
(``range-diff/<blake2b of the project's path>``) with the digest
(:func:`digest`) of:

* the project's path, the cache's path, the checkout's path (series.toml's
  ``[series] checkout``, kept with the entry), the Python that ran it (its
  path and version), the encodings of stdout and stderr, the user's id,
  series' code (series.code.code_digest);
* the environment, every variable but the shell's own ``_``, ``OLDPWD``,
  ``SHLVL`` and ``PWD`` (``GIT_*``, ``SERIES_*``, ``HOME``, ``XDG_*``,
  ``PATH``, colour and terminal variables among them);
* series.toml's bytes, and each ``patches/*.patch`` file's name and bytes
  (as the blake2b of them: the digest after a run takes a file's from the one
  before it when the file was not written since, :func:`_content`);
* the git the full run would start (its path, size and times), and, when
  that file is a wrapper script (series.git.itself), what the git behind
  it says of its version (one ``git version`` each run, as the check of
  the version asks a wrapper's git each run);
* the git configuration it reads besides the repositories' own: the system
  file (``/etc/gitconfig`` and the one under git's prefix, or
  ``GIT_CONFIG_SYSTEM``), the global ones (``~/.gitconfig``,
  ``$XDG_CONFIG_HOME/git/config``, or ``GIT_CONFIG_GLOBAL``) and the global
  attributes file;
* of each repository it reads (the project's own when ``.git`` is there, the
  checkout's, the cache's): HEAD, ``packed-refs``, every loose ref (but the
  cache's ``refs/series/proven/``, which only an export reads),
  ``config``, ``shallow``, ``info/grafts``, ``info/attributes``, and the
  owners of its directory and of its work tree (the directory holding
  ``.git``): git refuses a repository either of which is another user's
  ("dubious ownership"), unless ``safe.directory`` in the configuration
  files above takes it;
* the cache's object store as names: its packs and its loose objects.
  ``git range-diff`` abbreviates commit ids to be unique among them, and the
  object ids it names are the ones the refs lead to (git's objects are
  named by their content).

Anything it cannot tell from files takes the full run: no entry, another
digest, a repository that is not a plain directory (a ``.git`` file, a
``commondir``, alternates, reftable), a configuration that names other files
or programs (``include``, ``attributesFile``, ``orderFile``, ``mailmap``,
``textconv``, ``external``), a link on the way to series.toml or a patch file,
a temporary file of a killed series run to clear, another series command
holding the project lock, a git command of series' cut short in the checkout,
a URL remembered as unreachable, a terminal on stdout or stderr, no git on
PATH, ``SERIES_DEBUG`` or a fault injected, ``GIT_PYTHON_GIT_EXECUTABLE`` set
(the digest holds the variable, not the file it names, whose git the full run
checks up front: series.git.version). An entry is kept only when the
digest after the run is the one before it (a run that built a stack wrote
objects: it keeps nothing, the next one does), the pins were found in the
cache (not resolved anew), no log line was written, and series.toml as it is
then parses to the manifest the run answered from.

It imports what series.stack.branches_kept does, whose helpers it shares.
"""

from __future__ import annotations

import os
import sys
import time
from _blake2 import blake2b

from series.code import RACY_NS, code_digest
from series.git.itself import MINIMUM, ask, is_git_itself
from series.plain import read_plain
from series.refnames import PROVEN
from series.stack.branches_kept import (
    _FULL,
    CACHE_REPO,
    _busy,
    _configs,
    _git,
    _git_path,
    _held,
    _identity,
    _objects,
    _owners,
    _plain,
    _read,
    _refs,
    _unsafe,
    _Unsure,
    cache_dir,
    find_root,
    read_entry,
    say,
    seal,
)
from series.stack.branches_kept import (
    write as write,  # commands/range_diff keeps the entry through this module
)
from series.terminal import terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
DIR = "range-diff"
FIELDS = ("format", "key", "checkout", "stdout", "stderr")
# Set by the shell for each command, or naming the directory typed from: not read by
# series or git for a range-diff (the project's path is in the digest, resolved).
_SHELLS = frozenset({"_", "OLDPWD", "SHLVL", "PWD"})
_SET = {"GIT_PYTHON_REFRESH": "quiet"}  # series.git.run's os.environ.setdefault


def words(argv: list[str]) -> tuple[str | None] | None:
    """``(DIR,)`` for ``-C DIR range-diff``, ``(None,)`` for ``range-diff``; None for any
    other command line (DIR is taken as series.cli.plain takes it: not starting with -)."""
    if argv == ["range-diff"]:
        return (None,)
    if len(argv) == 3 and argv[0] == "-C" and not argv[1].startswith("-"):
        return (argv[1],) if argv[2] == "range-diff" else None
    return None


def record_path(root: str, cache: str) -> str:
    """Where the entry of the project ``root`` is kept."""
    name = blake2b(f"{root}\0range-diff".encode(), digest_size=32).hexdigest()
    return os.path.join(cache, DIR, name)


# Read by memo.proven for an export alone: a range-diff, and the git it runs, never read
# them (series.builder.memo), and a cache holds one directory of them per patch built.
_UNREAD = frozenset({PROVEN})

# A file the first digest of a run read (its path): its identity then, and the blake2b of
# its bytes, when that identity was safely in the past (branches_kept.identities).
Seen = dict[str, tuple[str, bytes]]


def digest(root: str, cache: str, checkout: str, seen: Seen | None = None) -> str | None:
    """The digest of all a plain range-diff reads (the module's docstring); None when it
    cannot be told from files, or the full run has more to do than answer.

    ``checkout``: series.toml's ``[series] checkout``, resolved here as series.project
    does (a link on the way may lead elsewhere since). ``seen``: filled by a run's
    digest before its work, read by the one after it (:func:`_content`), so the patch
    files are read and hashed once a run where none was written meanwhile."""
    where = os.path.realpath(os.path.join(root, checkout))
    git = _git()
    try:
        names = sorted(os.listdir(os.path.join(root, "patches")))
    except FileNotFoundError:
        names = []
    except OSError:
        return None
    files = [f"patches/{name}" for name in names if name.endswith(".patch")]
    if git is None or _unsafe(root, files) or _busy(where, cache):
        return None
    streams = f"{_encoding(sys.stdout)}\0{_encoding(sys.stderr)}"
    h = blake2b(
        f"{FORMAT}\0{root}\0{cache}\0{where}\0{sys.executable}\0{sys.version}\0{streams}"
        f"\0{os.geteuid()}\0".encode()
    )
    h.update(git.encode())
    h.update(f"\0git says\0{_wrapped()[0]}".encode())
    h.update(code_digest())
    env = {**_SET, **os.environ}  # as the full run has it, once series.git.run is loaded
    for name in sorted(env):
        if name not in _SHELLS:
            h.update(f"\0env\0{name}\0{env[name]}".encode("utf-8", "surrogateescape"))
    try:
        toml = os.path.join(root, "series.toml")
        h.update(b"\0series.toml\0" + (_content(toml, seen) if os.path.lexists(toml) else b"-"))
        for file in files:
            h.update(f"\0{file}\0".encode() + _content(os.path.join(root, file), seen))
        _configs(h, git.split("\0", 1)[0])
        project = os.path.join(root, ".git")
        if os.path.lexists(project):
            _repo(project, h)
        elif os.path.lexists(os.path.join(root, "HEAD")):
            raise _Unsure("a repository whose directory is the project's")
        else:
            h.update(b"\0no project repository")
        _repo(os.path.join(where, ".git"), h)
        repo = os.path.join(cache, CACHE_REPO)
        _repo(repo, h, _UNREAD, bare=True)
        _objects(os.path.join(repo, "objects"), h)
    except OSError:
        return None
    return h.hexdigest()


def _content(path: str, seen: Seen | None) -> bytes:
    """The blake2b of the bytes of ``path``: from ``seen`` when the file's identity is the
    one kept there, else read now (and kept in ``seen`` when its identity is settled).

    git's "racily clean" rule, as branches_kept.identities: any write sets a file's
    change time to now, so a file whose identity was kept (its change time more than
    RACY_NS before the moment before its read) and is the same before and after the read
    was not written since. Raises OSError where the file cannot be read as a plain file
    (series.plain.read_plain, links followed as a project's patch file may be one)."""
    if seen is not None and path in seen and _identity(os.stat(path)) == seen[path][0]:
        return seen[path][1]
    now = time.time_ns()
    before = os.stat(path)
    content = blake2b(read_plain(path, follow=True)).digest()  # a FIFO: OSError, not a wait
    after = os.stat(path)
    identity = _identity(before)
    if seen is not None and identity == _identity(after) and 0 < before.st_ctime_ns < now - RACY_NS:
        seen[path] = (identity, content)
    return content


def read_known(path: str, seen: Seen) -> tuple[bytes, bytes | None]:
    """The bytes of ``path``, and their blake2b when ``seen`` (:func:`digest`'s) holds it:
    when the file's identity before and after this read is the one kept there, the file
    was not written since that digest read it (:func:`_content`'s rule), so these are
    the bytes it hashed (series.builder.memo.content_digest: the same blake2b). None
    for a file it did not keep."""
    kept = seen.get(path)
    if kept is None:
        with open(path, "rb") as fh:
            return fh.read(), None
    before = _identity(os.stat(path))
    with open(path, "rb") as fh:
        data = fh.read()
    same = before == kept[0] == _identity(os.stat(path))
    return data, kept[1] if same else None


# What the git a wrapper script runs said, and its version: asked once a process.
_ASKED: list[tuple[str, tuple[int, ...] | None]] = []


def _wrapped() -> tuple[str, tuple[int, ...] | None]:
    """What ``git version`` says, and the version, when the git on PATH is a wrapper
    script (a version manager's shim), whose file does not name the git it runs: git's
    own range-diff text is the answer, and another git may write it otherwise. Asked once
    a process (one ``git version``, as branches_kept's check of the version asks it);
    ("", None) for git itself, which its file names (:func:`digest` holds its identity),
    or no git."""
    if not _ASKED:
        path = _git_path()
        itself = path is None or is_git_itself(path)
        _ASKED.append(("", None) if itself or path is None else ask(path))
    return _ASKED[0]


def _new_enough() -> bool:
    """branches_kept.git_new_enough, asking a wrapper's git only once a process."""
    path = _git_path()
    if path is None:
        return False
    if is_git_itself(path):
        return True
    version = _wrapped()[1]
    return version is not None and version >= MINIMUM


def _encoding(stream: object) -> str:
    return f"{getattr(stream, 'encoding', None)}/{getattr(stream, 'errors', None)}"


def _repo(git_dir: str, h: Any, skip: frozenset[str] = frozenset(), bare: bool = False) -> None:
    """A repository's refs and config (branches_kept's ``_refs``; but the directories of
    refs ``skip`` names), and what else changes what git reads in it: its owners, the
    git directory's and, unless it is ``bare``, its work tree's (the directory holding
    ``.git``), whose owner git checks too. Raises OSError where that cannot be told from
    these files."""
    if os.path.islink(git_dir) or not os.path.isdir(git_dir):
        raise _Unsure(f"{git_dir}: not a directory")
    for name in ("commondir", os.path.join("objects", "info", "alternates")):
        if os.path.lexists(os.path.join(git_dir, name)):
            raise _Unsure(f"{git_dir}: {name}")
    _refs(git_dir, h, skip)
    _plain(git_dir, _read(os.path.join(git_dir, "config")))
    _owners(h, git_dir, *(() if bare else (os.path.dirname(git_dir),)))
    for name in ("shallow", os.path.join("info", "grafts"), os.path.join("info", "attributes")):
        data = _read(os.path.join(git_dir, name))
        h.update(f"\0{name}\0".encode() + (b"-" if data is None else data))


def rerun(argv: list[str]) -> int | None:
    """Write again what the last plain range-diff wrote, when nothing it read changed
    since (exit 0); None: the CLI runs the command."""
    parsed = words(argv)
    if parsed is None or any(v.startswith(_FULL) for v in os.environ):
        return None
    if terminal(sys.stdout) or terminal(sys.stderr):
        return None
    where = parsed[0]
    root = find_root(os.getcwd()) if where is None else os.path.realpath(where)
    if root is None or _held(root):
        return None
    cache = cache_dir()
    entry = read_entry(record_path(root, cache), FIELDS, FORMAT)
    if entry is None:
        return None
    key = digest(root, cache, entry["checkout"])
    if key is None or key != entry["key"] or not _new_enough():
        return None
    return say(entry["stdout"], entry["stderr"])


def entry(key: str, checkout: str, stdout: str, stderr: str) -> str | None:
    """The entry that keeps what a run wrote under ``key``, sealed (branches_kept.seal);
    None when a field holds a NUL (nothing is kept)."""
    return seal([str(FORMAT), key, checkout, stdout, stderr])
