"""The repository: creating it, reading objects and history, making commits.

:class:`Repo` is the one object through which series reaches git. It is
assembled from one mixin per area (refs, index, merge-tree, work trees,
patch files, remotes and fetching), each in its own module; this module
holds what is left: creation, revisions, history and commits.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from series.errors import InternalError
from series.git.index import IndexMixin
from series.git.mail import MailMixin
from series.git.mergetree import MergeTreeMixin
from series.git.refs import RefsMixin
from series.git.remote import RemoteMixin
from series.git.run import HERMETIC, GitFailed, Ident, input_file, run
from series.git.worktree import WorktreeMixin
from series.refnames import ROOT as SERIES_REFS


@dataclass(frozen=True)
class LogEntry:
    commit: str
    subject: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class CommitInfo:
    commit: str
    tree: str
    parent: str
    author: Ident
    message: str


class Repo(RefsMixin, IndexMixin, MergeTreeMixin, WorktreeMixin, MailMixin, RemoteMixin):
    """One repository, addressed by its work tree (or its git dir when bare)."""

    # -- creation ----------------------------------------------------------
    @classmethod
    def init(cls, path: Path, *, bare: bool = False) -> Repo:
        path.mkdir(parents=True, exist_ok=True)
        run(path, ["init", "-q", *(["--bare"] if bare else []), "--", str(path)])
        return cls(path)

    @classmethod
    def clone_local(cls, source: Repo, path: Path) -> Repo:
        """A new repository sharing ``source``'s objects through hard links.

        Far cheaper than init + fetch (no pack is written), and unlike
        ``--shared`` the clone keeps working if ``source`` is deleted.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        run(
            path.parent,
            ["clone", "--quiet", "--local", "--no-checkout", "--", str(source.path), str(path)],
        )
        repo = cls(path)
        repo.git("remote", "remove", "origin")
        return repo

    def is_repo(self) -> bool:
        """Whether ``path`` is itself a repository (not a directory inside one)."""
        if not self.path.is_dir():
            return False
        status, out, _ = self.git_status("rev-parse", "--git-dir")
        if status != 0:
            return False
        git_dir = (self.path / out.strip()).resolve()
        if git_dir not in (self.path.resolve() / ".git", self.path.resolve()):
            return False
        self.__dict__["_git_dir"] = git_dir  # what ``git_dir`` would ask next
        return True

    @property
    def git_dir(self) -> Path:
        """The repository's git directory (asked of git once per ``Repo``)."""
        known = self.__dict__.get("_git_dir")
        if known is None:
            known = (self.path / self.git("rev-parse", "--git-dir").strip()).resolve()
            self.__dict__["_git_dir"] = known
        return Path(known)

    def repack(self) -> None:
        """Everything in one pack: clones made with ``clone_local`` hard-link it."""
        self.git("repack", "-a", "-d", "-q")

    # -- revisions and objects ------------------------------------------------
    def rev(self, rev: str) -> str | None:
        """The commit ``rev`` names, or None."""
        found = self.lookup(f"{rev}^{{commit}}")
        return found[0] if found else None

    def has_object(self, sha: str) -> bool:
        return self.lookup(sha) is not None

    def tree_of(self, commit: str) -> str:
        found = self.lookup(f"{commit}^{{tree}}")
        if found is None:
            raise InternalError(f"{commit} has no tree here", why=f"in {self.path}")
        return found[0]

    def blob(self, rev: str, path: str) -> bytes:
        """The content of ``path`` in ``rev``."""
        return self.git_bytes("cat-file", "blob", "--end-of-options", f"{rev}:{path}")

    def read_blob(self, oid: str) -> bytes:
        """The content of the blob ``oid`` (asked of the long-lived ``cat-file``)."""
        data = self.object_data(oid, "blob")
        return data if data is not None else self.git_bytes("cat-file", "blob", oid)

    def top_level(self, rev: str) -> list[tuple[str, str]]:
        """(kind, name) of the entries at the root of ``rev``'s tree."""
        entries = []
        for entry in self.git("ls-tree", "-z", "--end-of-options", rev).split("\0"):
            if entry:
                entries.append((entry.split(" ")[1], entry.split("\t", 1)[1]))
        return entries

    def tree_files(self, rev: str) -> dict[str, str]:
        """path -> blob id of every file in ``rev`` (recursively)."""
        out = self.git("ls-tree", "-r", "-z", "--full-tree", "--end-of-options", rev)
        files = {}
        for entry in out.split("\0"):
            if entry:
                head, path = entry.split("\t", 1)
                files[path] = head.split(" ")[2]
        return files

    def existing_paths(self, rev: str, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` (files or directories) exist in ``rev``'s tree; one process."""
        if not paths:
            return set()
        data = "".join(f"{rev}:{path}\n" for path in paths).encode()
        with input_file(data) as stdin:
            out = self.git("cat-file", "--batch-check", stdin=stdin)
        answers = zip(paths, out.splitlines(), strict=True)
        return {path for path, line in answers if not line.endswith(" missing")}

    def changed_paths(self, old: str, new: str) -> list[str]:
        """Paths whose content differs between two commits or trees."""
        out = self.git(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new, env=HERMETIC
        )
        return [path for path in out.split("\0") if path]

    def index_entries(self, rev: str, paths: Sequence[str]) -> list[str]:
        """``update-index --index-info`` lines that give ``paths`` their state in ``rev``.

        A path that ``rev`` does not have gets a removal line (mode 0), so
        applying the lines to another tree makes those paths exactly as in ``rev``.
        """
        if not paths:
            return []
        out = self.git("ls-tree", "-z", "--full-tree", rev, "--", *paths, env=HERMETIC)
        found = {}
        for entry in out.split("\0"):
            if entry:
                meta, _, path = entry.partition("\t")
                mode, _, sha = meta.split(" ")
                found[path] = f"{mode} {sha}\t{path}"
        return [found.get(path, f"0 {'0' * 40}\t{path}") for path in paths]

    def changed_lines(self, old: str, new: str, path: str) -> list[tuple[int, int]]:
        """(first, count) of each hunk's new-side lines in ``path`` (``diff -U0``).

        A hunk that only deletes has count 0: ``first`` is the line after
        which the deleted lines stood.
        """
        out = self.git(
            "diff", "-U0", "--no-color", "--no-renames", old, new, "--", path, env=HERMETIC
        )
        hunks = []
        for line in out.splitlines():
            if line.startswith("@@ "):
                new_side = line.split(" ")[2].removeprefix("+")
                first, _, count = new_side.partition(",")
                hunks.append((int(first), int(count) if count else 1))
        return hunks

    # -- history ------------------------------------------------------------------
    def commits(self, base: str, tip: str) -> list[str]:
        """First-parent commits in base..tip, oldest first."""
        return self.git("rev-list", "--reverse", "--first-parent", f"{base}..{tip}").split()

    def last_change(self, path: str) -> str | None:
        """The newest commit of HEAD that changed ``path``, or None."""
        status, out, _ = self.git_status("log", "-1", "--format=%H", "HEAD", "--", path)
        return out.strip() or None if status == 0 else None

    def merges(self, base: str, tip: str) -> list[str]:
        return self.git("rev-list", "--merges", f"{base}..{tip}").split()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.git_status("merge-base", "--is-ancestor", ancestor, descendant)[0] == 0

    def message(self, commit: str) -> str:
        return self.git("log", "-1", "--format=%B", commit, env=HERMETIC).rstrip("\n") + "\n"

    def oneline(self, commit: str) -> str:
        return self.git("log", "--oneline", "-1", commit).strip()

    def author(self, commit: str) -> Ident:
        out = self.git("log", "-1", "--format=%an%x00%ae%x00%aD", commit, env=HERMETIC)
        name, email, date = out.rstrip("\n").split("\x00")
        return Ident(name, email, date)

    def log_files(
        self, revs: Sequence[str], paths: Sequence[str] = (), *, max_count: int | None = None
    ) -> list[LogEntry]:
        """Commits of ``revs`` (newest first): id, subject and the files each changed."""
        argv = ["-c", "core.quotePath=false", "log", "--no-renames", "--name-only"]
        argv += ["--format=%x01%H %s", *([f"--max-count={max_count}"] if max_count else [])]
        out = self.git(*argv, *revs, "--", *paths, env=HERMETIC)
        entries = []
        for chunk in out.split("\x01")[1:]:
            head, _, rest = chunk.partition("\n")
            commit, _, subject = head.partition(" ")
            files = tuple(line for line in rest.splitlines() if line)
            entries.append(LogEntry(commit, subject, files))
        return entries

    def patch_ids(self, revs: Sequence[str], paths: Sequence[str] = ()) -> dict[str, str]:
        """commit -> ``patch-id --stable`` for the non-merge, non-root commits of ``revs``.

        ``paths`` limits which commits are read, not their diffs (--full-diff),
        so the ids are those of whole commits.
        """
        argv = ["log", "-p", "--min-parents=1", "--max-parents=1", "--full-diff", "--no-color"]
        diff = self.git_bytes(*argv, "--format=commit %H", *revs, "--", *paths, env=HERMETIC)
        if not diff.strip():
            return {}
        out = self.git_input("patch-id", "--stable", data=diff, env=HERMETIC).decode()
        return {commit: pid for pid, commit in (line.split() for line in out.splitlines())}

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, author: Ident) -> str:
        """A commit whose committer is its author, so ids depend on content only."""
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", delete=False) as fh:
            fh.write(message)
        try:
            argv = ["commit-tree", tree, *[a for p in parents for a in ("-p", p)], "-F", fh.name]
            env = {**HERMETIC, **author.env("AUTHOR"), **author.env("COMMITTER")}
            return self.git(*argv, env=env).strip()
        finally:
            os.unlink(fh.name)

    def commit_infos(self, base: str, tip: str) -> list[CommitInfo]:
        """First-parent commits of base..tip, oldest first, with all a replay needs."""
        fmt = "%x01%H%x00%T%x00%P%x00%an%x00%ae%x00%ad%x00%B"
        argv = ["log", "--reverse", "--first-parent", "--date=raw", f"--format={fmt}"]
        out = self.git(*argv, f"{base}..{tip}", env=HERMETIC)
        infos = []
        for chunk in out.split("\x01")[1:]:
            commit, tree, parents, name, email, date, body = chunk.split("\x00", 6)
            message = body.rstrip("\n") + "\n"
            infos.append(
                CommitInfo(commit, tree, parents.split()[0], Ident(name, email, date), message)
            )
        return infos

    def write_commits(self, chain: Sequence[tuple[str, str, Ident]], parent: str) -> list[str]:
        """Commits of (tree, message, author) each on the one before, the first on ``parent``.

        One ``hash-object`` for all of them: the ids are computed here (a
        commit's id is the SHA-1 of its bytes, which name its parent), and
        git's answer must agree. Committer = author, as ``commit_tree``.
        Author dates must be raw (``<epoch> <tz>``).
        """
        payloads, ids = [], []
        for tree, message, who in chain:
            person = f"{who.name} <{who.email}> {who.date}".encode()
            body = b"tree %s\nparent %s\nauthor %s\ncommitter %s\n\n" % (
                tree.encode(),
                parent.encode(),
                person,
                person,
            ) + message.encode("utf-8")
            parent = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
            payloads.append(body)
            ids.append(parent)
        written = self.write_objects("commit", payloads)
        if written != ids:
            raise InternalError("git computed other commit ids than series", why=f"{written}")
        return ids

    def commit_diffs(self, commits: Sequence[str]) -> dict[str, bytes]:
        """commit -> its diff against its parent, all with one ``diff-tree --stdin``."""
        if not commits:
            return {}
        argv = ["diff-tree", "--stdin", "-p", "--full-index", "--no-renames", "--no-color"]
        out = self.git_input(*argv, data=("\n".join(commits) + "\n").encode(), env=HERMETIC)
        diffs: dict[str, bytes] = {}
        current = None
        for line in out.splitlines(keepends=True):
            head = line.strip().decode("ascii", "replace")
            if len(head) == 40 and head in commits and not line.startswith((b"+", b"-", b" ")):
                current = head
                diffs[current] = b""
            elif current is not None:
                diffs[current] += line
        return diffs

    def apply_all(self, tree: str, patches: Sequence[Path]) -> str | None:
        """``tree`` with every patch file applied in order (one ``apply --cached``), or None."""
        with self.scratch_index(tree) as env:
            argv = ["apply", "--cached", "--whitespace=nowarn", *map(str, patches)]
            status, _, _ = self.git_status(*argv, env=env)
            return self.write_tree(env) if status == 0 else None

    def diff_trees(self, old: str, new: str) -> bytes:
        """The patch from tree ``old`` to tree ``new`` (full blob ids, no renames)."""
        argv = ["diff-tree", "-p", "--full-index", "--binary", "--no-renames", "--no-color"]
        return self.git_bytes(*argv, old, new, env=HERMETIC)

    def range_diff(self, old: str, new: str) -> str:
        """``git range-diff OLD NEW`` (two revision ranges), without colour."""
        return self.git("range-diff", "--no-color", "--creation-factor=100", old, new, env=HERMETIC)

    def apply_exact(
        self, tree: str, diff: bytes, env: Mapping[str, str] | None = None
    ) -> str | None:
        """``tree`` with ``diff`` applied exactly (no fuzz, no 3-way), or None.

        ``env``: a scratch-object environment ``tree`` lives in, if any.
        """
        with self.scratch_index(tree, env) as index, input_file(diff) as path:
            status, _, _ = self.git_status("apply", "--cached", str(path), env=index)
            return self.write_tree(index) if status == 0 else None

    # -- history boundaries and copies --------------------------------------------
    def shallow_roots(self) -> frozenset[str]:
        """The commits whose parents this (shallow) repository does not have."""
        path = self.path / self.git("rev-parse", "--git-path", "shallow").strip()
        if not path.is_file():
            return frozenset()
        return frozenset(path.read_text(encoding="ascii").split())

    def merge_base(self, one: str, two: str) -> str | None:
        status, out, _ = self.git_status("merge-base", one, two)
        return out.split()[0] if status == 0 and out.strip() else None

    def fetch_from(self, source: Repo, commit: str) -> None:
        """Copy ``commit`` and its history from ``source`` (which has a ref on it)."""
        if self.has_object(commit):
            return
        names = source.refs_pointing_at(commit, SERIES_REFS)
        if not names:
            raise InternalError(f"{commit[:12]} has no ref in {source.path}")
        status, err = self.fetch(str(source.path), [names[0]])
        if status != 0:
            what = f"cannot copy {commit[:12]} from {source.path}"
            raise GitFailed(["fetch"], status, err, cwd=self.path, source=source.path, message=what)
