"""A checkout's refs (and index) read as files, as a digest: series.git.refs.files_key.

A link among the loose refs (to a file or to a directory) is refused (None: git is
asked): git follows it, and a digest that did not read where it leads would stay the
same while a ref under it moved.

Apart from series.git.refs (which imports the git layer) so that a re-run
answered before the CLI is imported (series.stack.verified_kept) computes
the same digest: it imports only series.plain (``os``) and ``_blake2`` (hashlib's ``blake2b``,
without OpenSSL's import), which the kept answers load already for the
patch files and series' code (another hash would be one more extension
module to load, and hashes the index more slowly).
"""

from __future__ import annotations

import os
import stat
from _blake2 import blake2b

from series.plain import plain_tree, read_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass


def files_key(work_tree: str, *, index: bool = True) -> str | None:
    """series.git.refs.files_key of the checkout at ``work_tree`` (its docstring)."""
    git_dir = os.path.join(work_tree, ".git")
    if not os.path.isdir(git_dir) or os.path.exists(os.path.join(git_dir, "reftable")):
        return None
    digest = blake2b()
    try:
        # config and config.worktree: where git's work tree is (core.bare, core.worktree:
        # series.checkout refuses a checkout that is not its own work tree); shallow,
        # alternates and grafts: which commits git walks (what is unexported); the state
        # file of a checkout series 0.1 made, read where its ref is not (series.checkout)
        for name in (
            "HEAD",
            "packed-refs",
            "config",
            "config.worktree",
            "shallow",
            "objects/info/alternates",
            "info/grafts",
            "series/state.json",
        ):
            path = os.path.join(git_dir, name)
            digest.update(f"{name}\0".encode() + (_bytes(path) if os.path.isfile(path) else b"-"))
        plain_tree(os.path.join(git_dir, "refs"), "refs/", digest)
        if index:  # its bytes: a size, time and inode can be kept by a write in place
            data = _bytes(os.path.join(git_dir, "index"))
            digest.update(b"\0index\0" + blake2b(data).digest())
    except OSError:
        return None  # a ref being written meanwhile, no index yet: ask git
    return digest.hexdigest()


def _bytes(path: str) -> bytes:
    return read_plain(path)  # a FIFO, a link (git's own are files): OSError, ask git


def loose_refs(git_dir: str, prefix: str = "refs/") -> dict[str, str] | None:
    """refname -> object id of every ref under ``prefix``, from the loose ref files alone.

    Only where the files certainly hold every ref, as git writes them: a
    repository of its own (no ``commondir``), no ``packed-refs`` and no
    reftable, every entry under ``prefix`` a directory or a plain file whose
    name git accepts without question (letters, digits, ``-``, ``_``, inner
    dots, no ``.lock``) and whose bytes are an object id and a newline (not a
    symbolic ref). Anything else (a link, a FIFO, a file being written, a
    ref moved meanwhile) is None: the caller asks git (``for-each-ref``).
    Sorted by name, as git lists them. Whether each object exists is the
    caller's to check (git leaves out a ref to a missing object).
    """
    if not prefix.startswith("refs/") or not prefix.endswith("/"):
        return None
    for name in ("packed-refs", "reftable", "commondir"):
        if os.path.lexists(os.path.join(git_dir, name)):
            return None
    found: dict[str, str] = {}
    try:
        if not _walk(os.path.join(git_dir, prefix), prefix, found):
            return None
    except FileNotFoundError:
        if os.path.lexists(os.path.join(git_dir, prefix.rstrip("/"))):
            return None  # a file where the directory would be, or a ref removed meanwhile
    except OSError:
        return None
    return dict(sorted(found.items()))


def loose_ref(git_dir: str, name: str) -> str | None:
    """The object id a branch or other ref ``name`` (``refs/heads/series``) holds in its
    loose file, or None where that file is not certainly the ref's value as git reads
    it: no such file (the ref packed, or none), a linked work tree's (no ``commondir``:
    its refs live elsewhere), a reftable, a component git would question, or bytes that
    are no object id and a newline (a symbolic ref, a file being written). A hint for
    work started early, never the answer: the caller compares it with what git says."""
    parts = name.split("/")
    if parts[0] != "refs" or not all(_plain_component(part) for part in parts):
        return None
    for other in ("reftable", "commondir"):
        if os.path.lexists(os.path.join(git_dir, other)):
            return None
    try:
        data = read_plain(os.path.join(git_dir, *parts))
    except OSError:
        return None
    oid = data[:-1]
    if data[-1:] != b"\n" or len(oid) not in (40, 64) or oid.strip(_HEX):
        return None
    return oid.decode()


def replaced(git_dir: str) -> bool:
    """Whether the repository at ``git_dir`` may hold a replace ref (git then reads another
    object in the place of the one named): a ``refs/replace`` there, or one packed, or
    a ``packed-refs`` that cannot be read. False only where it certainly holds none."""
    if os.path.lexists(os.path.join(git_dir, "refs", "replace")):
        return True
    try:
        packed = read_plain(os.path.join(git_dir, "packed-refs"))
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return b" refs/replace/" in packed


def _walk(path: str, name: str, found: dict[str, str]) -> bool:
    with os.scandir(path) as entries:
        for entry in entries:
            if not _plain_component(entry.name):
                return False
            if entry.is_dir(follow_symlinks=False):
                if not _walk(entry.path, f"{name}{entry.name}/", found):
                    return False
                continue
            data = read_plain(entry.path)  # a link, a FIFO: NotPlain (OSError)
            oid = data[:-1]
            if data[-1:] != b"\n" or len(oid) not in (40, 64) or oid.strip(_HEX):
                return False  # a symbolic ref, a half-written file: git's to read
            found[name + entry.name] = oid.decode()
    return True


_HEX = b"0123456789abcdef"
_COMPONENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _plain_component(name: str) -> bool:
    """A path component git takes as a ref name's without question (git-check-ref-format)."""
    return (
        bool(name)
        and name[0] != "."
        and name[-1] != "."
        and ".." not in name
        and not name.endswith(".lock")
        and _COMPONENT.issuperset(name)
    )


# The keys of [core] a repository of git's own making holds (git init, git clone), and
# the values that leave git's view of the repository as a plain one: anything else in
# the configuration (core.worktree, an [include], an extension, another value) is git's
# to read.
_CORE = {
    "repositoryformatversion": ("0",),
    "filemode": ("true", "false"),
    "bare": ("false",),
    "logallrefupdates": ("true", "false"),
    "symlinks": ("true", "false"),
    "ignorecase": ("true", "false"),
    "precomposeunicode": ("true", "false"),
}
_SECTIONS = ("[remote ", "[branch ")  # named sections that say nothing of where the repository is


def own_repository(work_tree: str) -> bool:
    """Whether ``work_tree`` is, by its files alone, a repository of its own whose work tree
    it is, at its top, as ``git rev-parse --git-dir --is-bare-repository
    --is-inside-work-tree --show-prefix`` would say (``.git``, ``false``, ``true``, ``""``).

    Only for the plain case git's ``init`` and ``clone`` make: ``.git`` a directory (no
    link, no ``gitdir:`` file, no ``commondir``: not a linked work tree) owned, as the work
    tree, by this user (git's ``safe.directory`` check passes without configuration), with
    ``objects/`` and ``refs/`` directories, a ``HEAD`` naming a ref under ``refs/`` or an
    object id, and a ``config`` whose every line is a ``[core]`` key of :data:`_CORE` with
    one of its values, a ``[remote "..."]`` or ``[branch "..."]`` section and its keys,
    blank or a comment. False is never wrong, only the slower way: anything else (an
    unusual line, a file that is no plain file) is git's to answer.
    """
    git_dir = os.path.join(work_tree, ".git")
    if os.geteuid() == 0 and "SUDO_UID" in os.environ:
        return False  # git takes the owner to be SUDO_UID's user then: its check to make
    try:
        top, own = os.stat(work_tree), os.lstat(git_dir)
        if not (stat.S_ISDIR(own.st_mode) and top.st_uid == own.st_uid == os.geteuid()):
            return False
        for name in ("objects", "refs"):
            if not stat.S_ISDIR(os.lstat(os.path.join(git_dir, name)).st_mode):
                return False
        if os.path.lexists(os.path.join(git_dir, "commondir")):
            return False
        head = read_plain(os.path.join(git_dir, "HEAD"))
        config = read_plain(os.path.join(git_dir, "config")).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return False
    target = head[5:-1] if head.startswith(b"ref: ") else head[:-1]
    if head[-1:] != b"\n" or not (
        (head.startswith(b"ref: refs/") and b" " not in target)
        or (len(target) in (40, 64) and not target.strip(_HEX))
    ):
        return False
    return _plain_config(config)


def _plain_config(text: str) -> bool:
    """Whether every line of a repository's ``config`` is one :func:`own_repository` takes."""
    section = ""
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            lowered = line.lower()
            if lowered == "[core]":
                section = "core"
            elif lowered.startswith(_SECTIONS) and line.endswith('"]') and "\\" not in line:
                section = "named"
            else:
                return False
            continue
        if section == "named":
            continue
        key, equals, value = line.partition("=")
        values = _CORE.get(key.strip().lower()) if section == "core" and equals else None
        if values is None or value.strip().lower() not in values:
            return False
    return True
