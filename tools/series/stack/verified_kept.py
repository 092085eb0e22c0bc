"""A re-run of ``series apply`` answered before the CLI is imported, from what was verified.

series.stack.verified answers a re-run that nothing changed since from a
digest of what it reads and one ``git status``; but it is asked inside the
CLI's session (series.cli.run: the project, pathlib, json, the lock), whose
imports cost a plain ``series apply`` more than the answer itself (issue 23).
So when verified answers a re-run, or keeps what a full run said, it also
keeps, in the per-user cache (``verified/<blake2b of the project's path and
the command>``), what the next re-run needs to answer it from files alone:

* the project's path, the checkout's (as series.project resolves it), the
  branch, each patch's id and file (what series.known keeps of the parse);
* each patch file's identity and the blake2b of its bytes
  (series.stack.branches_kept.identities: the re-run reads again only
  the files whose identity moved since, by git's "racily clean" rule);
* verified's digest (:func:`digest`: series.toml's and the patch files'
  bytes, the checkout's refs, series' code) and the digest of the
  checkout's ``.git/series/verified.json`` (any change to it, and this
  entry is not taken);
* the git the full run would start (its path and its file's identity: the
  full run checks that it is new enough, series.git.version; a wrapper
  script is asked again before the answer, as the full run asks it);
* what the re-run writes on stderr and stdout.

The checkout, branch and patches are the run's parse of series.toml, and
the digest holds the file's bytes as read after that parse: the entry is
kept only when series.known holds those very values for the bytes then
(series.stack.verified), so a save in between keeps nothing.

``series [-C DIR] apply`` alone (series.entry) asks :func:`rerun`: when the
entry is there, the digest computed now is the one kept, and the project lock
can be shared (no series command is writing; one that wants to write waits
meanwhile), it runs the ``git status`` verified runs
(series.git.worktree.Worktree.dirty, read-only, started without subprocess:
series.git.child) and, when the files are clean, writes what was kept. That
``git status`` is started once the lock is held, before the digest is read, and
read after it: on a second core the two overlap. When the digest is not the one
kept, the run waits for that git to end before the CLI takes over (an exception
ends it: it never outlives series). Anything else takes the full run, which says
what it finds: no entry or another digest, a link on the way to series.toml, the
checkout or a patch file (series.known), a temporary file of a killed series run
to clear (series.project), what verified leaves to the full run (a git command
in progress or cut short, an export journal, refs not readable as files), a
repository variable in the environment (series.git.run strips those before git
runs), ``-v``, ``SERIES_DEBUG`` or an injected fault, ``GIT_PYTHON_GIT_EXECUTABLE``
set (the git GitPython starts, which the full run checks up front,
series.git.version: this answer starts only the git on PATH), no lock file yet, a
git that failed or found a change.

It imports what series.stack.branches_kept does, series.git.ref_files and
series.git.child and series.git.inprogress, and series.git.index_file (an index whose
bytes changed is read by git status as it is: it is checked here as the full run checks
it, which refuses it): not pathlib, json, re, hashlib or the git layer.
"""

from __future__ import annotations

import os
from _blake2 import blake2b
from stat import S_ISREG

from series.code import code_digest
from series.git.child import abandon, finish, start
from series.git.index_file import damage
from series.git.inherited import ALLOWED_PROTOCOLS, inherited
from series.git.inprogress import blocking, in_progress, unreadable
from series.git.ref_files import files_key
from series.plain import NotPlain, read_plain
from series.stack.branches_kept import (
    _FULL,  # a log asked for, a fault injected, GitPython's own git named: the full run
    _git,
    _unsafe,
    cache_dir,
    contents,
    find_root,
    git_new_enough,
    identities,
    read_entry,
    say,
    seal,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from series.git.child import Outcome, Running

FORMAT = 2
DIR = "verified"
COMMANDS = ("apply",)
VERIFIED_FORMAT = 1  # series.stack.verified.FORMAT: part of its digest
VERIFIED = os.path.join(".git", "series", "verified.json")  # series.stack.verified.NAME
JOURNAL = os.path.join(".series", "export-journal.json")  # series.stack.export_files.JOURNAL
LOCK = os.path.join(".series", "lock")  # series.project.LOCK
# In the git directory: a git command writing the index, or one of series' cut short (and
# series/state.json: a checkout of series 0.1, whose state is not in the refs); a git
# command of the user's in progress is series.git.inprogress's.
BUSY = ("index.lock", "series/state.json")
RECORDS = "series-git-"  # series.git.leftovers: a git command of series' cut short
# series.git.worktree.Worktree.dirty(read_only=True)
STATUS = ("git", "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all")
FIELDS = (
    *("format", "root", "where", "checkout", "branch", "named", "key", "verified", "git"),
    *("identities", "stderr", "stdout"),
)
SEP = "\x1f"
PAIR = "\x1e"


def digest(
    root: str,
    checkout: str,
    branch: str,
    named: Sequence[tuple[str, str]],
    command: str,
    known: str = "",
) -> str | None:
    """The digest of all that ``command`` reads in the checkout at ``checkout`` (resolved)
    of the project at ``root``, each patch's id and file in ``named``; None when it cannot
    be told (series.stack.verified's docstring says when). ``known``: what an entry kept
    of the patch files (series.stack.branches_kept.identities): the files whose identity
    is the one kept there are not read again.

    blake2b (builtin, as series.code's): it hashes the patch files about twice as fast
    as the builtin sha256, and OpenSSL's import costs more than either."""
    git_dir = os.path.join(checkout, ".git")
    if os.path.lexists(os.path.join(root, JOURNAL)) or _busy(git_dir):  # a link too
        return None
    refs = files_key(checkout, index=False)  # the index: git status, each time
    if refs is None:
        return None
    h = blake2b(f"{VERIFIED_FORMAT}\0{command}\0{checkout}\0{branch}\0{refs}\0".encode())
    h.update(code_digest())
    files = [os.path.join(root, "series.toml"), *(os.path.join(root, f) for _, f in named)]
    if any(os.path.islink(path) for path in files):
        return None  # the full run says what it does with a link (docs/hardening.md)
    try:
        h.update(_read(files[0]))
        read = contents(root, [file for _, file in named], known)
        for (patch_id, file), content in zip(named, read, strict=True):
            h.update(f"\0{patch_id}\0{file}\0".encode() + content)
    except OSError:
        return None
    return h.hexdigest()


def _busy(git_dir: str) -> bool:
    if not os.path.isdir(git_dir) or any(os.path.lexists(os.path.join(git_dir, n)) for n in BUSY):
        return True
    if in_progress(git_dir) is not None or unreadable(git_dir) is not None:
        return True  # (a FIFO git status waits on: its git is abandoned, the full run says)
    if damage(os.path.join(git_dir, "index")) is not None:
        return True  # git status reads it as it is, and may find it clean: the full run says
    try:
        return any(name.startswith(RECORDS) for name in os.listdir(git_dir))
    except OSError:
        return True


def _read(path: str) -> bytes:
    return read_plain(path)  # a link is refused before; a FIFO: OSError, the full run


def entry_path(root: str, cache: str, command: str) -> str:
    """Where the entry of ``command`` in the project ``root`` is kept."""
    name = blake2b(f"{root}\0{command}".encode(), digest_size=32).hexdigest()
    return os.path.join(cache, DIR, name)


def keep(
    root: str,
    where: str,
    checkout: str,
    branch: str,
    named: Sequence[tuple[str, str]],
    command: str,
    key: str,
    said: tuple[list[str], str],
) -> str | None:
    """The entry to keep for ``command`` in the project ``root`` (``where``: the manifest's
    checkout, ``checkout`` as series.project resolves it; verified's digest ``key``;
    ``said``: the status lines and the result line of its answer), as its text; None when
    nothing can be kept (a field holds a separator, no verified.json, no git). The caller
    writes it to :func:`entry_path`."""
    try:
        verified = blake2b(_read(os.path.join(checkout, VERIFIED))).hexdigest()
    except OSError:
        return None
    git = _git_kept()
    if git is None:
        return None
    lines, result = said
    values = {
        "format": str(FORMAT),
        "root": root,
        "where": where,
        "checkout": checkout,
        "branch": branch,
        "named": PAIR.join(f"{i}{SEP}{f}" for i, f in named),
        "key": key,
        "verified": verified,
        "git": git,
        "identities": identities(root, [file for _, file in named]),
        "stderr": "".join(f"{line}\n" for line in lines),
        "stdout": f"{result}\n",
    }
    if any(SEP in i or PAIR in i or SEP in f or PAIR in f for i, f in named):
        return None
    return seal([values[name] for name in FIELDS])


def _git_kept() -> str | None:
    """The git the full run would start, as a field of an entry (branches_kept's ``_git``)."""
    git = _git()
    return None if git is None else git.replace("\0", SEP)


def _load(path: str) -> dict[str, str] | None:
    return read_entry(path, FIELDS, FORMAT)


def _named(text: str) -> list[tuple[str, str]] | None:
    pairs = []
    for pair in text.split(PAIR) if text else ():
        parts = pair.split(SEP)
        if len(parts) != 2 or not all(parts):
            return None
        pairs.append((parts[0], parts[1]))
    return pairs or None


def words(argv: Sequence[str]) -> tuple[str | None, str] | None:
    """``-C DIR`` (or None) and the command, when ``argv`` is ``[-C DIR] apply``; else None
    (series.cli.plain parses the same words; ``-v`` asks for a log: the full run)."""
    rest, root = list(argv), None
    if len(rest) == 3 and rest[0] == "-C" and not rest[1].startswith("-"):
        root, rest = rest[1], rest[2:]
    if len(rest) != 1 or rest[0] not in COMMANDS:
        return None
    return root, rest[0]


def rerun(argv: Sequence[str]) -> int | None:
    """Write again what the last re-run (or verifying run) of the command in ``argv`` said,
    when nothing it read changed since and the files are clean (exit 0); None: the CLI
    runs the command."""
    parsed = words(argv)
    if parsed is None or any(k.startswith(_FULL) or inherited(k) for k in os.environ):
        return None
    where, command = parsed
    root = find_root(os.getcwd()) if where is None else os.path.realpath(where)
    if root is None:
        return None
    entry = _load(entry_path(root, cache_dir(), command))
    if entry is None or entry["root"] != root:
        return None
    named = _named(entry["named"])
    checkout, branch = entry["checkout"], entry["branch"]
    if named is None or _unsafe(root, [f for _, f in named]):
        return None
    # series.known: a path through a link is parsed. root is resolved (find_root, realpath)
    # and _unsafe found no link on the way to a patch file, nor "." or "..": each is where
    # the parse found it. The checkout, which _unsafe does not look at, is resolved here.
    at = os.path.join(root, entry["where"])
    if at != checkout or os.path.realpath(at) != checkout:
        return None
    lock = _shared(root)
    if lock is None:
        return None
    try:
        if entry["git"] != _git_kept() or not git_new_enough():
            return None
        if blocking(checkout) is not None:
            return None  # a FIFO every git waits on: the full run refuses it (series.git.run)
        # The git status starts now, read-only: it runs on the other core while the
        # digest is read, and is read last (any other way out waits for its end, or
        # ends it: it never outlives this run).
        status = _status(checkout)
        if status is None:
            return None
        try:
            if not _same(entry, root, checkout, branch, named, command):
                if unreadable(os.path.join(checkout, ".git")) is None:
                    finish(status)  # it ends: the full run's git does not share the cores
                return None  # else it waits on a FIFO (_busy): ended unread below
            if not _clean(finish(status)):
                return None
        finally:
            abandon(status)  # an exception: git ends with series
    finally:
        os.close(lock)  # the lock goes with the descriptor
    return say(entry["stdout"], entry["stderr"])


def _same(
    entry: dict[str, str],
    root: str,
    checkout: str,
    branch: str,
    named: Sequence[tuple[str, str]],
    command: str,
) -> bool:
    """Whether all the entry was kept under is as it was, git and its status aside."""
    if digest(root, checkout, branch, named, command, entry["identities"]) != entry["key"]:
        return False
    try:
        verified = blake2b(_read(os.path.join(checkout, VERIFIED))).hexdigest()
    except OSError:
        return False
    return verified == entry["verified"]


def _shared(root: str) -> int | None:
    """The project lock file's descriptor, shared-locked: no series command writes while
    this one reads (one that wants to write waits); None when another holds it, or there
    is no lock file yet (the full run creates it)."""
    import fcntl

    try:
        fd = os.open(os.path.join(root, LOCK), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not S_ISREG(os.fstat(fd).st_mode):  # a FIFO opened at once: no lock of series'
            raise NotPlain(0, "not a plain file", LOCK)
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _status(checkout: str) -> Running | None:
    """verified's ``git status`` of the checkout, started (series.git.child.start); None
    when it cannot start (no git, no such directory: the full run says so)."""
    env = {"GIT_ALLOW_PROTOCOL": os.environ.get("GIT_ALLOW_PROTOCOL") or ALLOWED_PROTOCOLS}
    try:
        return start(checkout, STATUS, env=env)  # type: ignore[arg-type]
    except OSError:
        return None


def _clean(done: Outcome) -> bool:
    """Whether verified's ``git status`` ended well and found nothing."""
    return done.status == 0 and not any(len(e) > 3 for e in done.out.split(b"\0"))
