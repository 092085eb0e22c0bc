"""History: the commits of a range, their ancestry, messages and authors.

What series reads of commits it did not make (the checkout's, upstream's):
first-parent ranges, merge bases, the files each commit touched, and all a
replay needs of a commit (:class:`CommitInfo`), each range with one ``log``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from series.digests import is_hex
from series.git.ident import Ident
from series.git.run import HERMETIC, Part, Runner, Started, start_together
from series.records import NamedTuple  # not dataclasses: it imports inspect and ast

Head = tuple[str, tuple[str, ...], str]  # a commit, its parents and its subject (History.heads)


class LogEntry(NamedTuple):
    commit: str
    subject: str
    files: tuple[str, ...]
    parents: tuple[str, ...] | None = None  # None: not read


class CommitInfo(NamedTuple):
    commit: str
    tree: str
    parent: str
    author: Ident
    message: str


def _heads_argv(revs: Sequence[str], max_count: int | None) -> list[str]:
    argv = ["log", "--format=%x01%H%x00%P%x00%s"]
    argv += [f"--max-count={max_count}"] if max_count else []
    return [*argv, *revs, "--"]


def _infos_argv(base: str, tip: str) -> list[str]:
    fmt = "%x01%H%x00%T%x00%P%x00%an%x00%ae%x00%ad%x00%B"
    return ["log", "--reverse", "--first-parent", "--date=raw", f"--format={fmt}", f"{base}..{tip}"]


def start_infos(history: History, base: str, tip: str) -> Started:
    """``History.commit_infos``' ``log`` of base..tip, started now, beside other work that
    needs no answer from it (a rebase's resume: its checks); handed to it as ``early``,
    which reads it only for that very range, or ended by the caller (``abandon``)."""
    return history._run.start(*_infos_argv(base, tip), env=HERMETIC)


def _heads(out: str) -> list[tuple[str, tuple[str, ...], str]]:
    heads = []
    for chunk in out.split("\x01")[1:]:
        commit, parents, subject = chunk.rstrip("\n").split("\x00", 2)
        heads.append((commit, tuple(parents.split()), subject))
    return heads


class History(Part):
    """The commits of a repository, read with ``log``, ``rev-list`` and ``merge-base``."""

    _shallow_file: Path | None = None  # where git keeps the shallow roots, asked once

    def __init__(self, run: Runner) -> None:
        super().__init__(run)
        self._bases: dict[tuple[str, str, frozenset[str]], str | None] = {}
        # the heads of a range read whole by :meth:`base_and_heads`, kept as its merge base
        self._ranges: dict[tuple[tuple[str, ...], frozenset[str]], list[Head]] = {}

    def commits(self, base: str, tip: str) -> list[str]:
        """First-parent commits in base..tip, oldest first."""
        return self._run.git("rev-list", "--reverse", "--first-parent", f"{base}..{tip}").split()

    def merges(self, base: str, tip: str) -> list[str]:
        return self._run.git("rev-list", "--merges", f"{base}..{tip}").split()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self._run.git_status("merge-base", "--is-ancestor", ancestor, descendant)[0] == 0

    def merge_base(self, one: str, two: str) -> str | None:
        """The merge base of two commits, or None when they share no history here.

        Of two commit ids the answer is kept for as long as the shallow roots
        are the same (the ancestry of commits a repository has changes only
        where a fetch deepens it): a rebase asks it of REV and the pin after
        each deepening and again to describe the range. Kept only once the
        shallow roots were read (so that keeping costs no process).
        """
        key = self._base_key(one, two)
        if key is not None and key in self._bases:
            return self._bases[key]
        status, out, _ = self._run.git_status("merge-base", one, two)
        found = out.split()[0] if status == 0 and out.strip() else None
        if key is not None and status in (0, 1):  # 1: none; other codes are not an answer
            self._bases[key] = found
        return found

    def _keep_base(self, pair: tuple[str, str], found: str | None) -> None:
        """Keep ``found``, git's answer of :meth:`merge_base` of ``pair`` (status 0 or
        1), as :meth:`merge_base` keeps its own."""
        key = self._base_key(*pair)
        if key is not None:
            self._bases[key] = found

    def _base_key(self, one: str, two: str) -> tuple[str, str, frozenset[str]] | None:
        if self._shallow_file is not None and is_hex(one) and is_hex(two):
            return (one, two, self.shallow_roots())
        return None

    def message(self, commit: str) -> str:
        return self._run.git("log", "-1", "--format=%B", commit, env=HERMETIC).rstrip("\n") + "\n"

    def oneline(self, commit: str) -> str:
        """``commit`` on one line: its id cut to 12 characters, then its subject. The same
        whatever the user's configuration (``core.abbrev``, ``log.decorate``, colours) or
        the repository's size (git's own abbreviation grows with the number of objects),
        so that a report kept (series.status_memo) says what a full run says."""
        out = self._run.git("log", "-1", "--format=%H %s", commit, env=HERMETIC)
        full, _, subject = out.strip().partition(" ")
        return f"{full[:12]} {subject}"

    def author(self, commit: str) -> Ident:
        out = self._run.git("log", "-1", "--format=%an%x00%ae%x00%aD", commit, env=HERMETIC)
        name, email, date = out.rstrip("\n").split("\x00")
        return Ident(name, email, date)

    def log_files(
        self, revs: Sequence[str], paths: Sequence[str] = (), *, max_count: int | None = None
    ) -> list[LogEntry]:
        """Commits of ``revs`` (newest first): id, subject and the files each changed."""
        argv = ["-c", "core.quotePath=false", "log", "--no-renames", "--name-only"]
        argv += ["--format=%x01%H %s", *([f"--max-count={max_count}"] if max_count else [])]
        out = self._run.git(*argv, *revs, "--", *paths, env=HERMETIC)
        entries = []
        for chunk in out.split("\x01")[1:]:
            head, _, rest = chunk.partition("\n")
            commit, _, subject = head.partition(" ")
            files = tuple(line for line in rest.splitlines() if line)
            entries.append(LogEntry(commit, subject, files))
        return entries

    def heads(
        self, revs: Sequence[str], *, max_count: int | None = None
    ) -> list[tuple[str, tuple[str, ...], str]]:
        """(commit, parents, subject) of the commits of ``revs``, in :meth:`log_files`'
        order, without their diffs (no tree is read)."""
        return _heads(self._run.git(*_heads_argv(revs, max_count), env=HERMETIC))

    def base_and_heads(
        self, one: str, two: str, revs: Sequence[str], *, max_count: int | None = None
    ) -> BaseAndHeads:
        """:meth:`merge_base` of ``one`` and ``two`` and :meth:`heads` of ``revs`` (the
        range that answer asks for), their two processes started now, the ``log`` first,
        side by side (each walks the range: tens of milliseconds at thousands of upstream
        commits), beside what the caller does meanwhile; :meth:`BaseAndHeads.answer`
        gives both (the heads None when the merge base is: the ``log``, which may walk all
        of an unrelated history, is then ended unread).

        Neither is started where its answer is known: the merge base as
        :meth:`merge_base` keeps it, and the heads of a range read whole (no
        ``max_count``), kept with it (the fetch asks whether REV meets the pin, then the
        range since the pin asks both again: series.upstream)."""
        key = self._base_key(one, two)
        known = key is not None and key in self._bases
        none = key is not None and known and self._bases[key] is None  # known unrelated
        kept = None
        if key is not None and max_count is None:
            kept = self._ranges.get((tuple(revs), key[2]))
        log = None
        if kept is None and not none:
            log = start_together(self.path, [(_heads_argv(revs, max_count), HERMETIC)])
        try:
            bases = None if known else start_together(self.path, [(["merge-base", one, two], None)])
        except BaseException:
            if log is not None:
                log.abandon()
            raise
        return BaseAndHeads(self, (one, two), revs, max_count, bases, log, kept)

    def _keep_range(self, revs: Sequence[str], heads: list[Head]) -> None:
        """Keep the heads of ``revs``, a range read whole, as :meth:`merge_base` keeps its
        answers: while the shallow roots are the same, where the range is named by ids."""
        if self._shallow_file is not None and all(is_hex(r.removeprefix("^")) for r in revs):
            self._ranges[(tuple(revs), self.shallow_roots())] = heads

    def heads_later(self, revs: Sequence[str], *, max_count: int | None = None) -> HeadsLater:
        """:meth:`heads` of ``revs``, its ``log`` started now, beside what the caller does
        meanwhile; :meth:`HeadsLater.answer` reads it."""
        started = self._run.start(*_heads_argv(revs, max_count), env=HERMETIC)
        return HeadsLater(self, revs, max_count, started)

    def files_of(self, commits: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """commit -> the files it changes against its first parent, as :meth:`log_files`
        lists them, with one ``log --no-walk --stdin`` (a merge: none).

        Read by id through an empty repository (``Runner.no_attributes``): the commit's
        own parent, never the one the repository's replace refs or grafts give it. What
        this answers is kept in the per-user cache by commit id (series.upstream.rangelog)
        and read by every project that shares it."""
        if not commits:
            return {}
        argv = ["-c", "core.quotePath=false", "log", "--no-walk=unsorted", "--stdin"]
        argv += ["--no-renames", "--name-only", "--format=%x01%H"]
        data = ("\n".join(commits) + "\n").encode()
        env = self._run.no_attributes()
        out = self._run.git_input(*argv, data=data, env=env).decode("utf-8", "surrogateescape")
        found: dict[str, tuple[str, ...]] = {}
        for chunk in out.split("\x01")[1:]:
            head, _, rest = chunk.partition("\n")
            found[head.strip()] = tuple(line for line in rest.splitlines() if line)
        return found

    def commit_infos(
        self, base: str, tip: str, *, early: Started | None = None
    ) -> list[CommitInfo]:
        """First-parent commits of base..tip, oldest first, with all a replay needs.
        ``early``: its ``log``, started already for this very range (:func:`start_infos`)."""
        argv = _infos_argv(base, tip)
        if early is not None and list(early.calls[0][0]) == argv:
            out = early.result()
        else:
            if early is not None:
                early.abandon()
            out = self._run.git(*argv, env=HERMETIC)
        infos = []
        for chunk in out.split("\x01")[1:]:
            commit, tree, parents, name, email, date, body = chunk.split("\x00", 6)
            message = body.rstrip("\n") + "\n"
            infos.append(
                CommitInfo(commit, tree, parents.split()[0], Ident(name, email, date), message)
            )
        return infos

    def commit_infos_files(
        self, base: str, tip: str
    ) -> tuple[list[CommitInfo], dict[str, tuple[str, ...]]]:
        """:meth:`commit_infos` of base..tip, and the files each of those commits changes as
        :meth:`log_files` lists them, with one ``log``: a merge lists none, as there."""
        fmt = "%x01%H%x00%T%x00%P%x00%an%x00%ae%x00%ad%x00%B%x00"
        argv = ["-c", "core.quotePath=false", "log", "--reverse", "--first-parent"]
        argv += ["--diff-merges=off", "--no-renames", "--name-only", "--date=raw"]
        out = self._run.git(*argv, f"--format={fmt}", f"{base}..{tip}", env=HERMETIC)
        infos, files = [], {}
        for chunk in out.split("\x01")[1:]:
            head, _, names = chunk.rpartition("\x00")
            commit, tree, parents, name, email, date, body = head.split("\x00", 6)
            message = body.rstrip("\n") + "\n"
            infos.append(
                CommitInfo(commit, tree, parents.split()[0], Ident(name, email, date), message)
            )
            files[commit] = tuple(line for line in names.splitlines() if line)
        return infos, files

    def last_change(self, path: str) -> str | None:
        """The newest commit of HEAD that changed ``path``, or None."""
        status, out, _ = self._run.git_status("log", "-1", "--format=%H", "HEAD", "--", path)
        return out.strip() or None if status == 0 else None

    def shallow_roots(self) -> frozenset[str]:
        """The commits whose parents this (shallow) repository does not have."""
        if self._shallow_file is None:  # the file's place is fixed, its content is not
            where = self._run.git("rev-parse", "--git-path", "shallow").strip()
            self._shallow_file = self.path / where
        path = self._shallow_file
        if not path.is_file():
            return frozenset()
        return frozenset(path.read_text(encoding="ascii").split())


class BaseAndHeads:
    """:meth:`History.base_and_heads` started: read once (:meth:`answer`), or ended
    unread (:meth:`abandon`). ``bases``, ``log``: None where the answer was known
    (``kept``: the heads)."""

    def __init__(
        self,
        history: History,
        pair: tuple[str, str],
        revs: Sequence[str],
        max_count: int | None,
        bases: Started | None,
        log: Started | None,
        kept: list[Head] | None = None,
    ) -> None:
        self.history, self.pair, self.revs, self.max_count = history, pair, revs, max_count
        self.bases, self.log, self.kept = bases, log, kept

    def answer(self) -> tuple[str | None, list[Head] | None]:
        """The merge base (None: no shared history here) and, when there is one, the heads.

        What git said otherwise than plainly (a merge-base that is no answer, a log that
        failed) is asked again as :meth:`History.merge_base` and :meth:`History.heads`
        ask it, which say why: the answers are theirs."""
        try:
            found = self._base()
        except BaseException:
            self.abandon()
            raise
        if found is None:
            self.abandon()
            return None, None
        if self.kept is not None:
            return found, self.kept
        if self.log is None:  # the merge base was known to be none when it was started
            heads = self.history.heads(self.revs, max_count=self.max_count)
        else:
            ((log_status, log, _),) = self.log.finish()
            if log_status != 0:
                heads = self.history.heads(self.revs, max_count=self.max_count)
            else:
                heads = _heads(log.decode("utf-8", "surrogateescape"))
        if self.max_count is None:
            self.history._keep_range(self.revs, heads)
        return found, heads

    def _base(self) -> str | None:
        if self.bases is None:  # known: the kept answer
            return self.history.merge_base(*self.pair)
        ((status, out, _),) = self.bases.finish()
        if status not in (0, 1):
            return self.history.merge_base(*self.pair)
        text = out.decode("ascii", "replace")
        found = text.split()[0] if status == 0 and text.strip() else None
        self.history._keep_base(self.pair, found)
        return found

    def abandon(self) -> None:
        for started in (self.log, self.bases):
            if started is not None:
                started.abandon()


class HeadsLater:
    """:meth:`History.heads_later` started: read once (:meth:`answer`), or ended unread
    (:meth:`abandon`)."""

    def __init__(
        self, history: History, revs: Sequence[str], max_count: int | None, started: Started
    ) -> None:
        self.history, self.revs, self.max_count, self.started = history, revs, max_count, started

    def answer(self) -> list[tuple[str, tuple[str, ...], str]]:
        """The heads; a ``log`` that failed is asked again as :meth:`History.heads` asks it,
        which says why."""
        ((status, out, _),) = self.started.finish()
        if status != 0:
            return self.history.heads(self.revs, max_count=self.max_count)
        return _heads(out.decode("utf-8", "surrogateescape"))

    def abandon(self) -> None:
        self.started.abandon()
