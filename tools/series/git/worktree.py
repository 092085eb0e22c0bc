"""Work trees: the only part of series that writes files git tracks.

Two kinds: the user's checkout (moved with ``read-tree -m -u``, which
touches only files that differ and refuses to overwrite local changes, or
``--reset`` where the index is not the move's start, which does not refuse:
what is in the way is refused first) and the linked work trees series owns
for running tests (moved with a forced checkout after a clean). Everything
else in series works on objects.

A move of the checkout that was cut short (series killed with its git, or
git failing on a full disk) is recorded (series.git.leftovers: the record
of the ``read-tree`` stays) and finished by :meth:`Worktree.finish_move`:
the files git had already written are exactly the target's, so they are
taken as moved, not as the user's changes; a file git created but could
not fill (a full disk: it is left empty where content was due) is written
again. Such a file is told from an empty one the user made there by its change
time against the record's times (series.git.leftovers): git's was made while the
move ran; one made before it began or since it failed is the user's, refused; one
after a kill (no time it ended) is kept aside by the caller first. A file git was
killed in the middle of writing (part of its content) cannot be told from an edit,
and is left to the user.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from series.digests import blob_id
from series.errors import RefusedError, SeriesError
from series.faults import point as fault_step
from series.git import leftovers
from series.git.inprogress import unreadable
from series.git.ref_files import loose_ref
from series.git.run import HERMETIC, EnvironmentFault, GitFailed, Part, refuse_not_plain
from series.plain import read_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from series.git.run import Started

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
# What Worktree.changed asks: git status, read-only, every path that is not HEAD's
_CHANGED = (
    "--no-optional-locks",
    "status",
    "--porcelain=v1",
    "-z",
    "--no-renames",
    "--untracked-files=all",
)
# What Worktree._added_by asks, then the tree: the paths a move there adds (the index lacks)
_ADDS = ("diff-index", "--cached", "-z", "--no-renames", "--diff-filter=D")


def refuse_blocking(git_dir: Path | None) -> None:
    """Refuse, naming it, a file of ``git_dir`` that ``git status`` opens and that is no
    plain file (series.git.inprogress.unreadable): a FIFO there makes git wait for ever.
    The refusal is series.git.run.refuse_not_plain's, as for the files every git opens."""
    found = unreadable(str(git_dir)) if git_dir is not None else None
    if found is not None:
        refuse_not_plain(found, "plain file", "git status")


def _kept_by_nothing(root: Path, paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """Of ``paths`` (each where a move writes a file), the repositories of their own at
    or below those that are directories, and what is no file, link or directory (a FIFO,
    a socket, a device) at or below them: neither is in a snapshot of the user's work (git
    status shows a repository as a directory, and a snapshot holds only its commit's id; it
    lists no FIFO), and ``read-tree -u`` writes over them or removes them with the
    directory that holds them (``--reset`` always, ``-m`` where git sees nothing else
    there). Links are not followed; a directory that cannot be read is git's to fail on."""
    nested, special = [], []
    for top in paths:
        try:
            mode = os.lstat(root / top).st_mode
        except OSError:
            continue
        if not stat.S_ISDIR(mode):
            if not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):
                special.append(top)
            continue
        for where, dirs, files in os.walk(root / top):
            at = Path(where).relative_to(root).as_posix()
            if ".git" in dirs or ".git" in files:
                nested.append(at)
                dirs.clear()
                continue
            for name in files:
                with contextlib.suppress(OSError):
                    mode = os.lstat(os.path.join(where, name)).st_mode
                    if not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):
                        special.append(f"{at}/{name}")
    return sorted(nested), sorted(special)


def _is_directory(path: Path) -> bool:
    """Whether ``path`` is a directory itself (not a link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _link_blobs(root: Path, paths: Iterable[str], like: str) -> dict[str, str]:
    """The blob id of each symbolic link of ``paths`` (its target's bytes, as git keeps a
    link), others left out. Hashed here: ``hash-object`` reads the file a link leads to.
    ``like``: an object id of the repository (its width: SHA-1 or SHA-256)."""
    found = {}
    for path in paths:
        try:
            target = os.readlink(os.fsencode(root / path))
        except OSError:  # not a link (or gone)
            continue
        found[path] = blob_id(target, len(like))
    return found


# What Worktree._added_by read: (index file, tree) -> (the index's identity before the
# read, diff-index's output)
_ADDED: dict[tuple[str, str], tuple[tuple[int, ...], str]] = {}
# The same diff-index started early (start_added), not read yet: (index file,
# tree) -> (the index's identity before it started, the process)
_STARTED: dict[tuple[str, str], tuple[tuple[int, ...], Started]] = {}


def _identity(path: str) -> tuple[int, ...] | None:
    """The index file's identity (device, inode, size, times); None where it is not there."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


class Seen:
    """The checkout's index file (its identity) and HEAD's file (its bytes) as they were
    just before a ``git status`` started (:meth:`Worktree.start_changed`): taken by
    :func:`seen`, compared by :func:`adds_nothing`."""

    __slots__ = ("head", "index")

    def __init__(self, index: tuple[int, ...], head: bytes) -> None:
        self.index, self.head = index, head


def seen(path: Path) -> Seen | None:
    """:class:`Seen` of the checkout at ``path`` now; None where either file cannot be read."""
    where = leftovers.git_dir(path)
    index = _identity(str(where / "index")) if where is not None else None
    if where is None or index is None:
        return None
    try:
        head = read_plain(str(where / "HEAD"))
    except OSError:
        return None
    return Seen(index, head)


def resolution_recorded(path: Path, stages: Sequence[tuple[str, str, int, str]]) -> bool | None:
    """Whether the index of the checkout at ``path`` holds git's record that the conflict
    ``stages`` ((mode, oid, stage, path), as :meth:`Worktree.stage_conflicts` writes them)
    were resolved there; None where the index cannot be read.

    A command that takes a path's conflict stages out of the index (``git add``, ``rm``,
    ``checkout -- path``, ``update-index``, ``restore``, ``reset -- path``) records them in
    its resolve-undo extension (``REUC``, what ``git ls-files --resolve-undo`` lists), and
    git 2.39 keeps it through ``commit`` and a mixed ``reset``; ``read-tree`` (every move
    of series), ``reset --hard`` and ``stash`` drop it. The extension's entry of a path is
    its name, the three modes in octal and the ids of the stages there, each exactly as
    git writes it: sought in the file's bytes, no process (the ids alone cannot be
    anywhere else by chance)."""
    where = leftovers.git_dir(path)
    try:
        data = read_plain(str(where / "index")) if where is not None else None
    except OSError:
        data = None
    if data is None:
        return None
    if b"REUC" not in data:
        return False
    by_path: dict[str, dict[int, tuple[str, str]]] = {}
    for mode, oid, stage, name in stages:
        by_path.setdefault(name, {})[stage] = (mode, oid)
    for name, staged in by_path.items():
        have = [staged.get(stage) for stage in (1, 2, 3)]
        modes = b"".join(b"%o\0" % (int(s[0], 8) if s else 0) for s in have)
        entry = os.fsencode(name) + b"\0" + modes + b"".join(bytes.fromhex(s[1]) for s in have if s)
        if entry in data:
            return True
    return False


def adds_nothing(path: Path, before: Seen | None, status: Started | None, commit: str) -> bool:
    """Whether a move of the checkout at ``path`` to ``commit`` adds no path to its index
    (``diff-index --cached --diff-filter=D`` would list nothing), told without a process
    by a ``git status`` this run made (:meth:`Worktree.start_changed`), where it says so:
    HEAD's file named ``commit`` (detached) and the index file was the same file
    (:func:`_identity`) before that status started (``before``) and now, and the status
    lists no path the index lacks that HEAD has ("D " in its first column; renames are
    not told apart in it, an unmerged path is no such one for either). Then the status
    compared this very index with ``commit``'s tree, as the ``diff-index`` would. False
    where any of that is not known: the caller asks git."""
    if before is None or status is None or before.head != f"{commit}\n".encode():
        return False
    now = seen(path)
    if now is None or now.index != before.index or now.head != before.head:
        return False
    entries = status.result().split("\0")
    return not [e for e in entries if len(e) > 3 and e[:2] == "D "]


def _some(paths: Sequence[str]) -> str:
    return ", ".join(paths[:10]) + (" ..." if len(paths) > 10 else "")


def start_added(
    worktree: Worktree, new: str | None = None, *, ref: str | None = None
) -> Started | None:
    """``Worktree._added_by``'s ``diff-index`` for a move of the files of ``worktree`` to
    ``new``, started now, beside other work that needs no answer from it (``series
    rebase --abort``: the stop's status; a stop's write: its transaction). ``ref``
    instead of ``new``: the commit that ref (a branch) holds, read from its own file
    (series.git.ref_files ``loose_ref``; None where it is not read so: git is asked at
    the move). Taken by the move's check only for that tree, and where the index file
    is still the very one it read (its identity before it started: git rewrites an
    index by renaming a new file over it); else ended unread and asked again. None
    where there is no index file to key it by, or one is started already. The caller
    ends it (``Started.abandon``) once the move is done or will not come: an answer
    ended unread is never taken. A function of the module, not a member of the part:
    ``Worktree`` keeps to its sixteen (tests/test_architecture_repo.py)."""
    where = leftovers.git_dir(worktree.path)
    if where is not None and new is None and ref is not None:
        new = loose_ref(str(where), ref)
    if where is None or new is None:
        return None
    key = (str(where / "index"), new)
    before = _identity(key[0])
    pending = _STARTED.get(key)
    if before is None or (pending is not None and not _ended_unread(pending[1])):
        return None  # one started already, to be taken by the move
    started = worktree._run.start(*_ADDS, new)
    _STARTED[key] = (before, started)
    return started


def _ended_unread(started: Started) -> bool:
    return started.done and started.answers is None


class Worktree(Part):
    """The files of a work tree: the user's checkout, and the linked ones series owns."""

    def dirty(self, *, read_only: bool = False, staged: bool = True) -> list[str]:
        """Uncommitted changes: modified, staged and untracked (not ignored) paths.

        ``read_only``: the index is not refreshed on the way (no write, so
        a full disk or a lock left behind does not make it fail), and git
        is started without GitPython: it is all a status or a re-run
        answered from what was kept asks of git (series.git.child.plain).
        ``staged`` False: not the paths whose only change is staged (the index unlike
        HEAD, the file like the index): at a rebase stop saved but never written, HEAD
        is the stop's, the index and files still the ones the rebase moved from.
        """
        refuse_blocking(leftovers.git_dir(self.path))
        optional = ["--no-optional-locks"] if read_only else []
        renames = [] if staged else ["--no-renames"]  # one entry a path: "XY PATH"
        argv = [*optional, "status", "--porcelain=v1", "-z", "--untracked-files=all", *renames]
        out = self._run.git(*argv, light=read_only)
        entries = [entry for entry in out.split("\0") if len(entry) > 3]
        return [entry[3:] for entry in entries if staged or entry[1] != " "]

    def changed(self, started: Started | None = None) -> tuple[list[str], list[str]]:
        """Every path whose file or index entry differs from HEAD's tree, and the untracked
        ones (not ignored): the only paths a snapshot of the files on HEAD has to read; and
        the index's own entries (``update-index --index-info`` lines, stage 0) of the paths
        among them staged apart from their files: the index entry differs from HEAD's and
        the file from that entry (staged, then changed, deleted or restored in the work
        tree), so the files alone do not hold what was staged. Unmerged paths are not among
        them (their stages are a conflict's); where there is none, no process more.

        Read without writing the index (its stat data answers for unchanged files),
        with the ignore rules ``Index.files_tree`` has (HERMETIC). ``started``: that
        ``git status``, started earlier by :meth:`start_changed`.
        """
        if started is None:
            refuse_blocking(leftovers.git_dir(self.path))
            out = self._run.git(*_CHANGED, env=HERMETIC)
        else:
            out = started.result()
        entries = [entry for entry in out.split("\0") if len(entry) > 3]
        apart = sorted({e[3:] for e in entries if e[0] in "MAT" and e[1] in "MDT"})
        return sorted({entry[3:] for entry in entries}), self._staged(apart)

    def _staged(self, paths: Sequence[str]) -> list[str]:
        if not paths:
            return []
        literal = {**HERMETIC, "GIT_LITERAL_PATHSPECS": "1"}
        out = self._run.git("ls-files", "-s", "-z", "--", *paths, env=literal)
        lines = []
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            fields = meta.split()
            if len(fields) == 3 and fields[2] == "0":
                lines.append(f"{fields[0]} {fields[1]}\t{path}")
        return lines

    def start_changed(self) -> Started | None:
        """:meth:`changed`'s ``git status``, started now (series.git.run.start) for the
        caller to hand to it later; None where git status would be refused (a file it
        opens is no plain file: :meth:`changed` refuses it then, in its turn)."""
        where = leftovers.git_dir(self.path)
        if where is None or unreadable(str(where)) is not None:
            return None
        return self._run.start(*_CHANGED, env=HERMETIC)

    def stash(self, message: str) -> None:
        """Stash every uncommitted change, untracked files included."""
        self._run.git("stash", "push", "--include-untracked", "-m", message)

    def checkout_tree(
        self, old: str | None, new: str, *, parallel: bool = True, dry_run: bool = False
    ) -> None:
        """Move index and work tree from commit ``old`` to ``new``.

        A two-tree ``read-tree -m -u`` touches only files that differ and
        refuses to overwrite local changes; ``old`` None (a fresh repository, the
        end of a rebase from a detached HEAD) takes ``--reset``, which writes over
        them and over untracked files: the caller has checked the tracked ones, and
        what is in the way is refused here (``_refuse_what_is_in_the_way``).
        ``parallel``: git writes the files with a worker process per core (when
        more than 100 change); without, in its own process, as ``git rebase
        --abort`` does. Writing a file is mostly the kernel's work (the unlink,
        the create: ``read-tree --reset -u`` of the 128 files of an abort at P18
        spent 39 ms in the kernel, 14 ms in git): the workers share it out when
        a core is free, and only add their start when none is (:func:`core_idle`).
        ``dry_run``: only the refusal of what is in the way, nothing moved (a command that
        checks before it writes anything; the move checks again).
        """
        self._refuse_what_is_in_the_way(new)
        if dry_run:
            return
        workers = ["-c", f"checkout.workers={0 if parallel else 1}"]  # 0: one per core
        argv = ["read-tree", "--reset", "-u", new] if old is None else ["read-tree", "-m", "-u"]
        try:
            self._run.git(*workers, *(argv if old is None else [*argv, old, new]))
        except GitFailed as exc:
            raise self._move_failed(new, exc) from None

    def start_reset(
        self,
        new: str,
        *,
        kept: bool,
        held: Sequence[str] = (),
        parallel: bool = False,
        adds: str | None = None,
    ) -> Moving:
        """``checkout_tree(None, new, parallel=...)`` started now (series.git.run.start):
        :meth:`Moving.wait` waits for it. The caller works meanwhile on what the move does
        not touch (``series rebase --abort``: the project files). ``parallel``: with the
        workers when a core is idle (:func:`core_idle`) as git starts. ``kept``: the
        untracked files are in the caller's snapshot (``_refuse_what_is_in_the_way``).
        ``held``: the trees whose bytes the files may hold that the caller kept or wrote
        (series.git.leftovers.holding): a finish of the move cut short keeps a file that
        holds none of them before it writes over it (:meth:`finish_move`). ``adds``: the
        paths the move adds, known already in this run (:func:`adds_nothing`), else read."""
        self._refuse_what_is_in_the_way(new, kept=kept, adds=adds)
        parallel = parallel and core_idle()
        workers = f"checkout.workers={0 if parallel else 1}"  # 0: one per core
        with leftovers.holding(held):
            started = self._run.start("-c", workers, "read-tree", "--reset", "-u", new)
        return Moving(self, started, new)

    def _refuse_what_is_in_the_way(
        self, new: str, *, kept: bool = False, adds: str | None = None
    ) -> None:
        """Refuse a move to ``new`` that would write over what no backup holds.

        ``read-tree -u`` (``-m`` and ``--reset``) writes over an ignored file (or
        directory) at a path ``new`` tracks and the index does not, silently; and ``git
        status``, which series' backups of the user's work read, does not list it.
        ``--reset`` (git 2.39) writes over any untracked file there too, and removes an
        untracked directory where ``new`` has a file, with what it holds: one holding a
        repository of its own (a ``.git``, at any depth: git status shows the directory,
        not its files, and a snapshot holds only its commit's id) was deleted with its
        history; a FIFO there (or in such a directory: git status lists none, and ``-m``
        removes a directory that holds nothing else) was replaced silently; a file
        made at a rebase stop where a later patch adds one was replaced when
        ``--continue`` ended the rebase (the end moves a detached HEAD with ``--reset``).
        ``-m`` refuses those itself, after series has moved the branch: refused here
        first, in series' words, for both. ``kept``: the caller's snapshot of the user's
        work (``git status --untracked-files=all``, series.backup) holds the untracked
        files that are not ignored: only ignored ones, repositories and FIFOs are refused. A
        file that holds what the move writes there loses nothing. One ``diff-index`` (the
        paths the move adds; none where this process read them for the same tree from the
        same index file: :meth:`_added_by`); more only when one of them is there.
        """
        if adds is not None:
            fault_step("worktree: the paths the move adds, known already")  # as _added_by's
        out = self._added_by(new) if adds is None else adds
        fields = out.split("\0")
        blobs = {}  # path -> the regular file's blob that ``new`` writes there
        links = {}  # path -> the link's
        there: set[str] = set()
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            head = meta.split()  # ":MODE MODE OID OID D", then the path
            if len(head) == 5 and head[0] in (":100644", ":100755"):
                blobs[path] = head[2]
            elif len(head) == 5 and head[0] == ":120000":
                links[path] = head[2]
            parts = path.split("/")
            for end in range(1, len(parts) + 1):  # or a file (a link) where it needs a directory
                at = "/".join(parts[:end])
                try:
                    st_mode = os.lstat(self.path / at).st_mode
                except OSError:  # not there (or not to be seen: git fails there itself)
                    break
                if end == len(parts) or not stat.S_ISDIR(st_mode):
                    there.add(at)
                    break
        if not there:
            return
        # 0: some are ignored, as git prints them (quoted where unusual); 1: none. (-z would
        # need --stdin. A list past the system's limit fails before any move.)
        status, found, err = self._run.git_status("check-ignore", "--no-index", "--", *there)
        if status not in (0, 1):
            raise GitFailed(["check-ignore"], status, err, cwd=self.path)
        # an ignored directory holds nothing itself: what is in it is told below (its
        # ignored files, untracked ones, repositories, FIFOs), and a file in it staged
        # (`git add -f`) is kept by the caller's snapshot or refused as a change
        ignored = sorted(p for p in found.splitlines() if not _is_directory(self.path / p))
        nested, special = _kept_by_nothing(self.path, there)
        inside, untracked = self._untracked_in(sorted(set(there) - set(nested)), blobs, links)
        ignored = sorted({*ignored, *inside})
        if kept:
            untracked = []
        if not ignored and not nested and not untracked and not special:
            return
        why = []
        if untracked:
            why.append(
                f"{len(untracked)} untracked path(s) are where the move writes files, and git "
                f"would write over them: {_some(untracked)}"
            )
        if ignored:
            why.append(
                f"git would write over {len(ignored)} path(s) it ignores (.gitignore, "
                f".git/info/exclude) and that no commit or backup holds: {_some(ignored)}"
            )
        if nested:
            why.append(
                f"git would remove {len(nested)} repositor(ies) of their own (a .git in "
                f"them), with their history, where the files go: {_some(nested)}"
            )
        if special:
            why.append(
                f"git would write over {len(special)} path(s) that are no file, link or "
                f"directory (a FIFO, a socket, a device), or remove them with the directory "
                f"that holds them, where the files go: {_some(special)}"
            )
        # `git add -f` lets only a command that keeps what is staged first go on (--abort,
        # --skip: their snapshot holds it), and only for files: git adds a repository as
        # its commit id alone, and no FIFO. Elsewhere the file staged is a change: apply
        # refuses it as uncommitted, and at a stop it becomes part of the resolution.
        add = kept and not nested and not special
        raise RefusedError(
            f"refusing to move the files of {self.path} to {new[:12]}",
            why="; ".join(why),
            hint="move them out of the way"
            + (" (or `git add -f` them: the command keeps what is staged first)" if add else "")
            + ", then run the command again; where the branch moved already (`series "
            "status`: interrupted), the command run again finishes the move",
        )

    def _added_by(self, new: str) -> str:
        """The paths a move to ``new`` adds (those the index lacks): ``diff-index --cached
        --diff-filter=D new``'s output. Asked once per tree and index file: a command that
        checks before it writes anything (``dry_run``) and again at its move reads the
        same answer where the index file is the very one the first read (its identity:
        git rewrites an index only by renaming a new file over it, which a new inode and
        change time tell, as series.git.run ``refuse_damaged_index`` takes it); what is on
        disk at those paths is looked at every time."""
        where = leftovers.git_dir(self.path)
        key = (str(where / "index"), new) if where is not None else None
        before = _identity(key[0]) if key is not None else None
        early = _STARTED.pop(key, None) if key is not None else None
        if early is not None and _ended_unread(early[1]):
            early = None  # ended unread by its caller: asked below
        if early is not None and key is not None and before is not None and early[0] == before:
            _ADDED[key] = (before, early[1].result())  # started before: the same index
        elif early is not None:
            early[1].abandon()  # another index since it started: asked again below
        known = _ADDED.get(key) if key is not None else None
        if known is not None and before is not None and known[0] == before:
            # a step where the process was (series.faults): a kill here, before the move
            # starts, is one the kill tests still reach
            fault_step("worktree: the paths the move adds, read already")
            return known[1]
        out = self._run.git(*_ADDS, new)
        if key is not None and before is not None:
            _ADDED[key] = (before, out)
        return out

    def _untracked_in(
        self, paths: Sequence[str], blobs: dict[str, str], links: dict[str, str]
    ) -> tuple[list[str], list[str]]:
        """Of ``paths`` (each a file, link or directory where a move writes), the ignored
        files inside those that are directories, and the paths holding an untracked file
        git does not ignore (a file, or a link, that is what the move writes there
        excepted: ``blobs``, ``links``; one a move cut short had written is no user's).
        Tracked files are the move's to change; git's pathspecs taken literally."""
        if not paths:
            return [], []
        literal = {**HERMETIC, "GIT_LITERAL_PATHSPECS": "1"}
        every = self._run.git("ls-files", "-z", "--others", "--", *paths, env=literal)
        plain = self._run.git(
            "ls-files", "-z", "--others", "--exclude-standard", "--", *paths, env=literal
        )
        shown = {f for f in plain.split("\0") if f}
        inside = sorted(f for f in every.split("\0") if f and f not in shown)
        held = [p for p in paths if any(f == p or f.startswith(p + "/") for f in shown)]
        same = self._file_blobs([p for p in held if p in blobs])
        if links:
            same |= _link_blobs(
                self.path, [p for p in held if p in links], next(iter(links.values()))
            )
        wanted = {**blobs, **links}
        untracked = [p for p in held if p not in wanted or same.get(p) != wanted[p]]
        return inside, untracked

    def _move_failed(self, new: str, exc: GitFailed) -> SeriesError:
        return SeriesError(
            f"could not move the files of {self.path} to {new[:12]}",
            why=f"git read-tree failed: {exc.stderr.strip()}\nthe files are partly moved; "
            "series recorded the move, to finish it",
            hint="free some space (or fix what git names), then run the command again "
            "(or `series apply`): it finishes the move; `series status` says where it stands",
        )

    def _move_changes(self, target: str) -> list[tuple[str, str, str, str]]:
        """(path, mode, blob, blob in the index) of what a move to ``target`` changes."""
        # Read the index as it is: write-tree would need the index.lock a kill may have left.
        out = self._run.git("diff-index", "--cached", "-R", "-z", "--no-renames", target)
        fields = out.split("\0")
        changes = []
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            parts = meta.lstrip(":").split()
            if len(parts) == 5:
                changes.append((path, parts[1], parts[3], parts[2]))
        return changes

    def _file_blobs(self, paths: Sequence[str]) -> dict[str, str]:
        """The blob id of each regular file of ``paths`` in the work tree (others left out)."""
        files = [
            p
            for p in paths
            if "\n" not in p and (self.path / p).is_file() and not (self.path / p).is_symlink()
        ]
        if not files:
            return {}
        data = "".join(f"{p}\n" for p in files).encode()
        out = self._run.git_input("hash-object", "--stdin-paths", data=data).decode().split()
        return dict(zip(files, out, strict=True))

    def _moved_already(self, move: leftovers.Record) -> dict[str, tuple[str, str]]:
        """The files the cut move had written: path -> (mode, blob) of its target.

        Only paths the move changes whose file is exactly the target's
        content (and executable bit; a link, its target); any other file is
        left as it is.
        """
        if "--reset" in move.argv:  # it is run again whole
            return {}
        every = self._move_changes(move.argv[-1])
        changes = [c for c in every if c[1].startswith("100")]
        blobs = self._file_blobs([path for path, _, _, _ in changes])
        done = {}
        for path, mode, oid, _ in changes:
            if blobs.get(path) == oid:
                executable = bool(os.lstat(self.path / path).st_mode & stat.S_IXUSR)
                if executable == (mode == "100755"):
                    done[path] = (mode, oid)
        # a link written already: git's -m refuses it as untracked where the index lacks it
        links = [c for c in every if c[1] == "120000"]
        if links:
            found = _link_blobs(self.path, [c[0] for c in links], links[0][2])
            done |= {path: (mode, oid) for path, mode, oid, _ in links if found.get(path) == oid}
        return done

    def half_moved(self, target: str, start: str | None = None) -> set[str]:
        """Paths that differ from HEAD or the index only because a move to ``target`` was cut.

        Paths the move changes whose file is gone (removed, to be written
        or deleted), still the index's (not reached yet) or already the
        target's: ``series status`` does not count them as uncommitted. A
        file unlike both sides is someone's change, and counts. ``start``: the tree a
        two-tree move started from (series.git.leftovers ``move_start``), which changes
        only the paths that differ between the two: a path staged beside it is not its.
        """
        changes = self._move_changes(target)
        if start is not None:
            moves = self._run.git(
                "diff-tree", "-r", "-z", "--name-only", "--no-renames", start, target
            )
            changes = [c for c in changes if c[0] in set(moves.split("\0"))]
        blobs = self._file_blobs([path for path, _, _, _ in changes])
        if changes:  # a link written already, or not replaced yet
            blobs |= _link_blobs(self.path, [c[0] for c in changes], changes[0][2])
        empty = self._empty_where_due(changes, blobs)
        gits, _, unknown = self._cut_writes(leftovers.unfinished_move(self.path), empty)
        return {
            path
            for path, _, oid, old in changes
            if blobs.get(path) in (oid, old) or not os.path.lexists(self.path / path)
        } | {*gits, *unknown}

    @staticmethod
    def _empty_where_due(
        changes: list[tuple[str, str, str, str]], blobs: dict[str, str]
    ) -> list[str]:
        """Files empty where a move writes content (git creates a file, then fills it: a
        full disk, or a kill between the two, leaves it so; or someone made it)."""
        return [
            path
            for path, mode, oid, old in changes
            if mode.startswith("100")
            and blobs.get(path) == EMPTY_BLOB
            and EMPTY_BLOB not in (oid, old)
        ]

    def _cut_writes(
        self, move: leftovers.Record | None, empty: Sequence[str]
    ) -> tuple[list[str], list[str], list[str]]:
        """Of ``empty`` (:meth:`_empty_where_due`), git's, the user's, and those nothing
        tells: each file's change time against ``move``'s record (series.git.leftovers).
        git makes its files after the move began and before the record of its failure: one
        made in between is git's; one made before it began (git creates the files it writes)
        or since it failed is not. A move killed has no time it ended: a file made since it
        began may be git's or the user's."""
        began = move.began_ns if move is not None else None
        ended = move.ended_ns if move is not None else None
        gits, users, unknown = [], [], []
        for path in empty:
            try:
                made = os.lstat(self.path / path).st_ctime_ns
            except OSError:
                continue
            if (began is not None and made < began) or (ended is not None and made > ended):
                users.append(path)
            elif began is not None and ended is not None:
                gits.append(path)
            else:
                unknown.append(path)
        return gits, users, unknown

    def finish_move(self, keep: Callable[[Sequence[str], str], None] | None = None) -> str | None:
        """Finish a move of the checkout's files that was cut short; the commit it reached.

        Stale git locks of the killed run go first (series.git.leftovers),
        the files git created and could not fill are removed (it writes them again),
        the files already moved are taken into the index, then the same
        ``read-tree`` runs again: it writes the rest, and refuses, as the
        first did, where a file of the user's would be overwritten. An empty file
        where content is due that is the user's (:meth:`_cut_writes`) is refused; one
        that may be either (a move killed) is handed to ``keep`` (which keeps a copy,
        and says where) before it is removed, or refused where there is no ``keep``.
        A ``--reset`` move runs again whole and writes over every tracked file: one
        changed since the cut (bytes the command did not account for:
        :meth:`_changed_since_cut`) is handed to ``keep`` first, or refused.
        """
        move = leftovers.unfinished_move(self.path)
        if move is None:
            return None
        where = leftovers.git_dir(self.path)
        assert where is not None
        leftovers.clear_stale_locks(where)
        target = move.argv[-1]
        changes = self._move_changes(target) if "--reset" not in move.argv else []
        blobs = self._file_blobs([c[0] for c in changes])
        gits, users, unknown = self._cut_writes(move, self._empty_where_due(changes, blobs))
        if users or (unknown and keep is None):
            raise self._not_cut_writes(target, users, unknown)
        if unknown and keep is not None:
            keep(
                unknown,
                f"empty file(s) found where the files of {self.path} were being moved (git "
                "leaves one so when killed as it writes it; one of yours made there since "
                "would look the same)",
            )
        edited = self._changed_since_cut(move) if "--reset" in move.argv else []
        if edited and keep is None:
            raise RefusedError(
                f"refusing to finish moving the files of {self.path} to {target[:12]} "
                "(an earlier series run was cut short while moving them)",
                why=f"{len(edited)} file(s) were changed since, and the move, run again, "
                f"writes over them: {_some(edited)}",
                hint=f"`git -C {self.path} stash` them (or copy them aside), then run the "
                "command again: it finishes the move",
            )
        if edited and keep is not None:
            keep(
                edited,
                f"file(s) of {self.path} changed since a move of its files was cut short, "
                "which the move, run again, writes over",
            )
        for path in [*gits, *unknown]:
            (self.path / path).unlink()  # git writes it again
        done = self._moved_already(move)
        if done:
            lines = "".join(f"{mode} {oid}\t{path}\n" for path, (mode, oid) in done.items())
            self._run.git_input("update-index", "--index-info", data=lines.encode())
        self._run.git_status("update-index", "-q", "--refresh")  # read-tree -m trusts stat data
        self._refuse_what_is_in_the_way(target)  # what it wrote is in the index now
        try:
            self._run.git(*move.argv)
        except GitFailed as exc:
            raise SeriesError(
                f"cannot finish moving the files of {self.path} to {target[:12]} "
                "(an earlier series run was cut short while moving them)",
                why=f"git read-tree failed: {exc.stderr.strip()}",
                hint="free some space, or move away the files git names (they are not "
                "series'), then run the command again",
            ) from None
        for record in leftovers.dead_records(where):
            if leftovers.is_move(record.argv):
                record.path.unlink(missing_ok=True)
        return target

    def _changed_since_cut(self, move: leftovers.Record) -> list[str]:
        """Regular files that the cut ``read-tree --reset -u`` ``move``, run again whole,
        would write over and that hold bytes the command that started it did not account
        for: neither the target's (what git had written), nor those of a tree the record
        holds (``held``: the snapshot of the user's changes the command kept, the trees of a
        stop it wrote), nor the index's (the command checked the files against it; not
        trusted once the index was written since the move began: an edit staged since).
        Someone's change since. No change time is taken: a copy of the checkout (a
        backup put back) changes them all and keeps the bytes."""
        target = move.argv[-1]
        trusted = self._index_older_than(move)
        # a file staged since is the index's too: then every tracked file is looked at
        argv = ["diff-files", "-z", "--name-only"] if trusted else ["ls-files", "-z"]
        listed = self._run.git(*argv)
        blobs = self._file_blobs(sorted({p for p in listed.split("\0") if p}))
        known: dict[str, set[str]] = {p: set() for p in blobs}
        if blobs and trusted:
            for entry in self._run.git("ls-files", "-s", "-z").split("\0"):
                meta, _, path = entry.partition("\t")
                if path in known and len(meta.split()) == 3:
                    known[path].add(meta.split()[1])
        for tree in (target, *move.held) if blobs else ():
            for entry in self._run.git("ls-tree", "-r", "-z", tree).split("\0"):
                meta, _, path = entry.partition("\t")
                if path in known and len(meta.split()) == 3:
                    known[path].add(meta.split()[2])
        return [p for p, oid in blobs.items() if oid not in known[p]]

    def _index_older_than(self, move: leftovers.Record) -> bool:
        """Whether the checkout's index was last written before ``move`` began (or in the
        same tick of the file system's clock: by the command that started it), so holds what
        that command checked the files against: a cut ``read-tree`` leaves it as it was (it
        writes ``index.lock``, renamed at its end)."""
        where = leftovers.git_dir(self.path)
        try:
            written = os.stat(where / "index").st_mtime_ns if where is not None else None
        except OSError:
            return False
        return written is not None and move.began_ns is not None and written <= move.began_ns

    def _not_cut_writes(self, target: str, users: list[str], unknown: list[str]) -> RefusedError:
        """The refusal of empty files where a cut move writes content that are not git's
        (``users``), or that may not be (``unknown``: no ``keep`` for them)."""
        why = []
        if users:
            why.append(
                f"{len(users)} empty file(s) are where the move writes content, made since "
                "the move was cut short (or before it began), so not by git, which made its "
                f"files while it ran: {_some(users)}"
            )
        if unknown:
            why.append(
                f"{len(unknown)} empty file(s) are where the move writes content, made since "
                "it began: git leaves such a file when killed as it writes it, and one of "
                f"yours made there since looks the same: {_some(unknown)}"
            )
        return RefusedError(
            f"refusing to finish moving the files of {self.path} to {target[:12]} "
            "(an earlier series run was cut short while moving them)",
            why="; ".join(why),
            hint="move them out of the way (remove those that are not yours), then run the "
            "command again: it finishes the move",
        )

    def index_tree(self) -> str | None:
        """The tree the index holds now, or None when it has unmerged entries.

        None too when ``write-tree`` cannot take ``index.lock`` (a git killed
        mid-move left it): the index is then not the answer, and the move
        cut short is recognised from the records of ``git/leftovers.py``.
        """
        try:
            status, out, _ = self._run.git_status("write-tree")
        except EnvironmentFault:
            return None
        return out.strip() if status == 0 else None

    def files_match_index(self) -> bool:
        """Whether no tracked file differs from the index (``diff-files --quiet``).

        A file that was only touched (copied, restored from a backup) does not
        count as changed: where ``diff-files`` sees a difference, the index's stat
        data is refreshed and it is asked again. Where it sees none, a refresh
        could not change that answer (it changes stat data, not contents; a racily
        clean file is compared by content either way), nor leave a stat that a
        later ``read-tree -m`` would not trust: one process, when the checkout is
        clean, as it is when a resolution is taken.
        """
        if self._run.git_status("diff-files", "--quiet")[0] == 0:
            return True
        self._run.git_status("update-index", "-q", "--refresh")
        return self._run.git_status("diff-files", "--quiet")[0] == 0

    def add(self, path: Path, commit: str) -> None:
        """A new detached linked work tree of this repository at ``path``."""
        self._run.git("worktree", "prune")
        argv = ["worktree", "add", "--detach", "--force", "--", str(path), commit]
        self._run.git(*argv, env=HERMETIC)

    def is_linked(self) -> bool:
        found = self._run.git_status("rev-parse", "-q", "--verify", "HEAD^{commit}")[0] == 0
        return (self.path / ".git").is_file() and found

    def move(self, commit: str, keep: Sequence[str] = ()) -> list[str]:
        """Put this work tree at ``commit``; return the paths whose content changed.

        Only for work trees series owns: untracked files (test droppings) are
        removed except those matching a ``keep`` pattern, and local edits to
        tracked files are discarded. Unchanged files are not rewritten, so
        their mtimes (and Python's bytecode caches) stay valid.
        """
        status, out, _ = self._run.git_status("rev-parse", "-q", "--verify", "HEAD^{commit}")
        old = out.strip() if status == 0 else None
        self._run.git("clean", "-ffdxq", *[a for pattern in keep for a in ("-e", pattern)])
        self._run.git("checkout", "-q", "--detach", "--force", commit, env=HERMETIC)
        if old is None or old == commit:
            return []
        out = self._run.git(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, commit, env=HERMETIC
        )
        return [path for path in out.split("\0") if path]

    def clear_stale_locks(self) -> None:
        """Remove the lock files a git killed mid-move (SIGKILL, a crash) left behind.

        Only for work trees series owns and holds the flock of: only the
        holder runs git in them, so any lock file there is stale.
        """
        for name in ("index.lock", "HEAD.lock"):
            lock = self.path / self._run.git("rev-parse", "--git-path", name).strip()
            lock.unlink(missing_ok=True)

    def unmerged(self) -> list[str]:
        """Paths with conflict stages in the index."""
        out = self._run.git("ls-files", "-u", "-z")
        return sorted({entry.split("\t", 1)[1] for entry in out.split("\0") if "\t" in entry})

    def stage_conflicts(self, entries: Sequence[tuple[str, str, int, str]]) -> None:
        """Put (mode, oid, stage, path) conflict stages in the index, as a stopped merge has."""
        paths = sorted({path for _, _, _, path in entries})
        lines = [f"0 {'0' * 40}\t{path}" for path in paths]
        lines += [f"{mode} {oid} {stage}\t{path}" for mode, oid, stage, path in entries]
        self._run.git_input("update-index", "--index-info", data=("\n".join(lines) + "\n").encode())


def core_idle() -> bool:
    """Whether a core is idle beside this process at this moment: fewer tasks runnable
    than cores, this one among them (Linux's ``/proc/loadavg``, its fourth field: a count
    taken now, not an average); False where that cannot be read.

    git's workers share the writing of the files out when a core is free (the move of
    an abort at P18 alone: 59 -> 43 ms at load 0.3, 89 -> 69 ms at load 1.2, medians of
    10 and 16); on a machine whose every core is busy they only add their start and
    hand-over (the whole abort with them: 38 ms more, paired median of 30 at load 3.5).
    Either way git writes the same files and index. ci/abort_floor.py keeps a copy of
    this test (the floor imports nothing of series): change both."""
    try:
        with open("/proc/loadavg", "rb") as loadavg:
            runnable = int(loadavg.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return False
    return runnable < (os.cpu_count() or 1)


class Moving:
    """A move of the files started by :meth:`Worktree.start_reset`, not waited for yet."""

    def __init__(self, worktree: Worktree, started: Started, new: str) -> None:
        self.worktree, self.started, self.new = worktree, started, new

    def wait(self) -> None:
        """The end of the move, refused as :meth:`Worktree.checkout_tree`'s."""
        try:
            self.started.result()
        except GitFailed as exc:
            raise self.worktree._move_failed(self.new, exc) from None

    def abandon(self) -> None:
        """End the move unread (a move cut short stays recorded: series.git.leftovers)."""
        self.started.abandon()
