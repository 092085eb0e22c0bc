"""Refs: reading them, and changing them in compare-and-swap transactions.

Every change series makes to a ref goes through a :class:`Transaction`:
each update names the value the ref must still have (``ZERO`` for "must
not exist"), all of a command's updates go to git in one
``update-ref --stdin``, and git applies all of them or none. The reflog
message is ``series <verb>: ...``. A ref that moved while series was
working fails the whole transaction with :class:`RefMoved`, and nothing
is changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from series.errors import SeriesError
from series.git import ref_files
from series.git.run import ZERO, GitFailed, Part, Runner, Started, environment_fault
from series.plain import read_plain
from series.refnames import STOP as STOP_REFS

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from collections.abc import Sequence


_UNDER = ("for-each-ref", "--format=%(refname) %(objectname)")


def _listed(out: str) -> dict[str, str]:
    pairs = (line.split(" ", 1) for line in out.splitlines() if line)
    return {name: sha for name, sha in pairs}


class Listing:
    """A ``for-each-ref`` started beside series (:meth:`Refs.under_later`)."""

    def __init__(self, started: Started) -> None:
        self._started = started

    def result(self) -> dict[str, str]:
        return _listed(self._started.result())

    def abandon(self) -> None:
        self._started.abandon()


class RefMoved(SeriesError):
    """A compare-and-swap failed: someone else changed a ref series was changing."""


class Transaction:
    """The ref changes of one command; applied by :meth:`commit`, all or none."""

    def __init__(self, repo: Runner, reason: str) -> None:
        # The one other form: git's own entry for a checkout, naming a stop of
        # series (refnames.STOP), which `git status` shows: "HEAD detached at ...".
        stop = reason.startswith("checkout: moving from ") and f" to {STOP_REFS}" in reason
        if not reason.startswith("series ") and not stop:
            raise ValueError(f"reflog message must start with 'series <verb>:': {reason!r}")
        self.repo = repo
        self.reason = reason
        self.lines: list[str] = []
        self._started: Started | None = None  # its update-ref, started already (start)

    def update(self, ref: str, new: str, old: str | None) -> None:
        """Set ``ref`` to ``new`` if it is at ``old`` (None or ZERO: must not exist)."""
        self.lines.append(f"update {ref} {new} {old or ZERO}")

    def delete(self, ref: str, old: str) -> None:
        self.lines.append(f"delete {ref} {old}")

    def detach_head(self, new: str, old: str) -> None:
        """Point HEAD itself (not its branch) at commit ``new``, if it resolves to ``old``."""
        self.lines += ["option no-deref", f"update HEAD {new} {old}"]

    def planned(self) -> dict[str, str | None]:
        """ref -> the value it will have once committed (None: deleted); HEAD as ``HEAD``."""
        found: dict[str, str | None] = {}
        for line in self.lines:
            verb, *args = line.split(" ")
            if verb == "update":
                found[args[0]] = args[1]
            elif verb == "delete":
                found[args[0]] = None
        return found

    def start(self) -> None:
        """Start its ``update-ref --stdin`` now, beside the caller's work (series.git.run
        ``start``; git waits for the changes, which :meth:`commit` writes): the commit then
        costs git's work alone, not its start. The caller calls :meth:`abandon` on any
        exception before the commit. The changes are written framed (``start`` ...
        ``commit``): git applies them only once it has read the last line, so a series
        killed while writing them changes nothing (git aborts a transaction whose input
        ends before ``commit``), as one killed before writing them."""
        if self._started is None:
            self._started = self.repo.start("update-ref", "-m", self.reason, "--stdin", fed=True)

    def abandon(self) -> None:
        """End the ``update-ref`` :meth:`start` started, nothing written (nothing changes)."""
        started, self._started = self._started, None
        if started is not None:
            started.abandon()

    def commit(self) -> None:
        started, self._started = self._started, None
        if not self.lines:
            if started is not None:
                started.abandon()
            return
        try:
            if started is None:
                data = ("\n".join(self.lines) + "\n").encode()
                self.repo.git_input("update-ref", "-m", self.reason, "--stdin", data=data)
            else:
                started.feed(("start\n" + "\n".join(self.lines) + "\ncommit\n").encode())
                started.result()
        except GitFailed as exc:
            raise _moved(exc.stderr, self.repo) from None
        self.lines = []


def _moved(stderr: str, repo: Runner) -> SeriesError:
    fault = environment_fault(stderr, repo.path)
    if fault is not None:  # a stale ref lock or the disk, not another writer: say that
        return RefMoved(
            fault.message,
            why=f"{fault.why}\nnothing was changed in {repo.path}",
            hint=fault.hint,
        )
    import re  # a ref update refused: not the everyday path

    match = re.search(r"cannot lock ref '([^']+)'", stderr)
    ref = match.group(1) if match else "a ref"
    return RefMoved(
        f"{ref} moved while series was working",
        why=f"{stderr.strip()}\nnothing was changed in {repo.path}",
        hint="someone else changed it meanwhile: look at it "
        f"(git -C {repo.path} log -1 {ref}), then run the command again",
    )


class Refs(Part):
    """The refs of a repository: reading them, and changing them in transactions."""

    @contextmanager
    def transaction(self, reason: str) -> Iterator[Transaction]:
        """Collect ref changes in the block; commit them together when it ends."""
        txn = self.begin(reason)
        yield txn
        txn.commit()

    def begin(self, reason: str) -> Transaction:
        """A transaction to fill now and commit later (:meth:`Transaction.commit`): the
        changes of :meth:`transaction`, made while other work goes on before they apply
        (and its git started meanwhile: :meth:`Transaction.start`)."""
        return Transaction(self._run, reason)

    def update(self, reason: str, lines: Sequence[str]) -> None:
        """One transaction of ready-made ``update``/``delete`` lines (caches only)."""
        txn = Transaction(self._run, reason)
        txn.lines = list(lines)
        txn.commit()

    def value(self, ref: str) -> str | None:
        """What ``ref`` points at (any object), or None when it does not exist."""
        found = self._run.lookup(ref)
        return found[0] if found else None

    def under(self, prefix: str, *more: str) -> dict[str, str]:
        """refname -> object id of every ref under ``prefix`` (and each of ``more``)."""
        return _listed(self._run.git(*_UNDER, prefix, *more))

    def under_later(self, prefix: str) -> Listing:
        """:meth:`under`, its ``for-each-ref`` started now, beside series (within
        series.git.run.light_processes; else run to its end here, as :meth:`under`), read
        by :meth:`Listing.result` (or ended by :meth:`Listing.abandon`)."""
        return Listing(self._run.start(*_UNDER, prefix))

    def under_read(self, git_dir: Path, prefix: str) -> dict[str, str]:
        """:meth:`under`, from the loose ref files where they certainly hold every ref.

        series.git.ref_files.loose_refs says where (no packed refs, no
        reftable, no symbolic ref, link or FIFO, only names git takes without
        question); each object is looked up in the long-lived ``cat-file`` (git
        leaves out a ref to a missing object: such a ref, like anything
        unusual, sends the question to git's ``for-each-ref``), all asked at once.
        """
        found = ref_files.loose_refs(str(git_dir), prefix)
        if found is None or not all(self._run.lookups(list(found.values()))):
            return self.under(prefix)
        return found

    def branches(self) -> tuple[dict[str, str], str | None]:
        """refname -> commit of every branch, and the branch HEAD is on (None: detached, or
        on a branch with no commit yet): one ``for-each-ref`` (its ``%(HEAD)`` marks it)."""
        out = self._run.git(
            "for-each-ref", "--format=%(HEAD)%(objectname) %(refname)", "refs/heads/"
        )
        found, head = {}, None
        for line in out.splitlines():
            if not line:
                continue
            sha, name = line[1:].split(" ", 1)
            found[name] = sha
            if line[0] == "*":
                head = name
        return found, head

    def commits_under(self, prefix: str) -> dict[str, tuple[str, str, str]]:
        """refname -> (commit, tree, first parent or "") for commit refs under ``prefix``."""
        fmt = "%(refname) %(objectname) %(tree) %(parent)"
        out = self._run.git("for-each-ref", f"--format={fmt}", prefix)
        found = {}
        for line in out.splitlines():
            name, commit, tree, *parents = line.split(" ")
            found[name] = (commit, tree, parents[0] if parents else "")
        return found

    def unreachable(
        self,
        tips: Sequence[str],
        planned: Mapping[str, str | None],
        every: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Commits reachable from ``tips`` that no ref reaches once ``planned`` is applied.

        ``planned`` maps refs to their coming values (None: deleted; HEAD
        and extra ids to count as kept may be given too). ``refs/stash`` is
        not counted: older stash entries live only in its reflog. ``every``:
        ``under("refs/")`` read already (several questions, one listing).
        """
        if not tips:
            return []
        listed = self.under("refs/") if every is None else every
        kept: dict[str, str | None] = {n: v for n, v in listed.items() if n != "refs/stash"}
        kept.update(planned)
        data = [*tips, *(f"^{v}" for v in sorted({v for v in kept.values() if v}))]
        out = self._run.git_input("rev-list", "--stdin", data=("\n".join(data) + "\n").encode())
        return out.decode().split()

    def symbolic_head(self) -> str | None:
        status, out, _ = self._run.git_status("symbolic-ref", "-q", "HEAD")
        return out.strip() if status == 0 else None

    def set_head(self, ref: str) -> None:
        """Point HEAD at branch ``ref`` (git has no compare-and-swap for symbolic refs)."""
        self._run.git("symbolic-ref", "HEAD", ref)

    def head(self) -> str | None:
        """The commit HEAD is at (detached or not), or None."""
        status, out, _ = self._run.git_status("rev-parse", "-q", "--verify", "HEAD^{commit}")
        return out.strip() if status == 0 else None

    def head_and_ref(self) -> tuple[str | None, str | None]:
        """:meth:`head` and :meth:`symbolic_head` together: one process where HEAD has a
        commit (``rev-parse`` answers both; "HEAD" for the branch when detached)."""
        argv = ["rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD", "--"]
        status, out, _ = self._run.git_status(*argv)
        lines = out.split("\n")
        if status == 0 and len(lines) >= 2 and len(lines[0]) in (40, 64):
            return lines[0], (lines[1] if lines[1].startswith("refs/") else None)
        return None, self.symbolic_head()  # unborn: no commit, maybe a branch to be

    def head_and_ref_read(
        self, git_dir: Path, listed: Mapping[str, str]
    ) -> tuple[str | None, str | None] | None:
        """:meth:`head_and_ref` without a process, or None where it cannot be told so.

        HEAD's file in ``git_dir`` names a branch (``ref: refs/...``), whose
        commit ``listed`` (every ref under ``refs/``, read already in this run)
        holds, or is itself an object id (detached); either is peeled to its
        commit by the long-lived ``cat-file``, as ``rev-parse HEAD^{commit}``
        does. An unborn branch, a HEAD that names no commit, another form (the
        reftable backend's placeholder names a ref not listed) or an unreadable
        file: None, and :meth:`head_and_ref` asks git.
        """
        try:
            text = read_plain(git_dir / "HEAD").decode("ascii").strip()  # a FIFO: OSError
        except (OSError, UnicodeDecodeError):
            return None
        ref = text[5:].strip() if text.startswith("ref: ") else None
        target = listed.get(ref) if ref is not None else text
        if ref is not None and not ref.startswith("refs/"):
            return None
        if not target or len(target) not in (40, 64) or target.strip("0123456789abcdef"):
            return None
        found = self._run.lookup(f"{target}^{{commit}}")
        return (found[0], ref) if found else None

    def valid_branch(self, name: str) -> bool:
        """Whether ``name`` is a valid branch name (``check-ref-format``).

        A name of the plain kind every series.toml uses (:data:`_PLAIN`)
        is valid without asking: ``series branches`` names a branch per
        patch, and a process per name was most of its time. Any other name
        is git's to judge.
        """
        if _plain(name):
            return True
        return self._run.git_status("check-ref-format", f"refs/heads/{name}")[0] == 0


# Components of letters, digits, '-' and '_', joined by single '.' and '/': none of what
# git-check-ref-format(1) forbids (control characters, space, ~^:?*[\\, "..", "@{", a
# component that starts with '.' or ends with ".lock", '//', a trailing '/' or '.').
_PLAIN = r"[A-Za-z0-9_][A-Za-z0-9_-]*(?:[./][A-Za-z0-9_][A-Za-z0-9_-]*)*"  # compiled on first use


def _plain(name: str) -> bool:
    import re  # here, not as the module loads: a command that names no branch needs none

    return re.fullmatch(_PLAIN, name) is not None and not any(
        part.endswith(".lock") for part in name.split("/")
    )


def files_key(work_tree: Path, *, index: bool = True) -> str | None:
    """A digest of what git reads to answer about ``work_tree``'s refs and index, no git started.

    HEAD, every loose ref, ``packed-refs``, the repository's own configuration
    (``config``, ``config.worktree``: where git takes the work tree to be), the
    files that change which commits git walks (``shallow``, alternates, grafts),
    the state file of a checkout series 0.1 made, and the index's bytes, as the
    files of its ``.git`` directory hold them: while the
    digest is the same, no ref moved and the index was not written, so an
    answer computed from them still holds (series.status_memo). None where
    that cannot be told from files (no ``.git`` directory, reftable refs, a link among
    the loose refs: git follows a linked directory of refs, which a walk of the
    directories would not read).
    ``index=False``: the refs alone, for a caller that asks ``git status``
    about the index anyway (a ``git status`` may rewrite it, unchanged).
    """
    return ref_files.files_key(str(work_tree), index=index)
