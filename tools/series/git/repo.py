"""The repository: one object made of narrow parts, and creating repositories.

:class:`Repo` is the one object through which series reaches git. It
holds no git operation of its own beyond creating and recognising a
repository: each area of git is a part, a small class in its own module
with only the methods its callers use, and every part of one ``Repo``
shares one :class:`~series.git.run.Runner` (one long-lived ``cat-file``
process per repository)::

    repo.refs      refs and compare-and-swap transactions   (git/refs.py)
    repo.objects   revisions, trees, blobs, writing objects (git/objects.py)
    repo.history   ranges, ancestry, messages, authors      (git/history.py)
    repo.diffs     diffs, patch ids, format-patch           (git/diffs.py)
    repo.index     scratch indexes: applying, building trees (git/index.py)
    repo.merge     batched merge-tree, merge-file           (git/mergetree.py)
    repo.worktree  the files of a work tree                  (git/worktree.py)
    repo.remote    other repositories: fetch, push, copy    (git/remote.py)

Each part's module is imported when the part is first used (``refs`` and
``objects`` excepted: every command uses them), so ``series rebase
--abort`` loads neither the merge batches nor the fetches it never runs
(docs/architecture.md, rule 12).
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from series.git import ref_files
from series.git.objects import Objects
from series.git.refs import Refs
from series.git.run import Runner, run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from series.git.diffs import Diffs
    from series.git.history import History
    from series.git.index import Index
    from series.git.mergetree import Merge
    from series.git.remote import Remote
    from series.git.worktree import Worktree


# What :meth:`Repo.is_repo` asks git: the git directory, and in the same process whether
# git takes the directory itself as the work tree (not bare, inside it, at its top).
IS_REPO = (
    "rev-parse",
    "--git-dir",
    "--is-bare-repository",
    "--is-inside-work-tree",
    "--show-prefix",
)


class Repo:
    """One repository, addressed by its work tree (or its git dir when bare)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._run = runner = Runner(path)
        self.refs = Refs(runner)
        self.objects = Objects(runner)
        self._git_dir: Path | None = None
        # What :meth:`is_repo` found: a bare repository; git's work tree is ``path`` itself
        # (neither ``core.bare`` nor a ``core.worktree`` elsewhere); git's error when it
        # could not open the repository in ``path/.git``.
        self.bare = False
        self.own_work_tree = False
        self.unopened: str | None = None

    # The other parts, each made (and its module imported) on first use.
    @cached_property
    def history(self) -> History:
        from series.git.history import History

        return History(self._run)

    @cached_property
    def diffs(self) -> Diffs:
        from series.git.diffs import Diffs

        return Diffs(self._run)

    @cached_property
    def index(self) -> Index:
        from series.git.index import Index

        return Index(self._run)

    @cached_property
    def merge(self) -> Merge:
        from series.git.mergetree import Merge

        return Merge(self._run)

    @cached_property
    def worktree(self) -> Worktree:
        from series.git.worktree import Worktree

        return Worktree(self._run)

    @cached_property
    def remote(self) -> Remote:
        from series.git.remote import Remote

        return Remote(self._run)

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
        run(path, ["remote", "remove", "origin"])
        return cls(path)

    def is_repo(self) -> bool:
        """Whether ``path`` is itself a repository (not a directory inside one).

        One with neither ``.git`` nor ``HEAD`` is not, without asking git: git takes
        as a repository a directory with one or the other (its ``.git``, or a bare
        repository's ``HEAD``, ``objects`` and ``refs``). A repository of git's plain
        making (series.git.ref_files.own_repository) is told from its files; any other
        is asked of git (``rev-parse``)."""
        if not self.path.is_dir():
            return False
        if not os.path.lexists(self.path / ".git") and not os.path.lexists(self.path / "HEAD"):
            return False
        if ref_files.own_repository(str(self.path)):  # what git would say, from its files
            self._git_dir = self.path.resolve() / ".git"
            self.bare, self.own_work_tree = False, True
            return True
        status, out, err = self._run.git_status(*IS_REPO)
        if status != 0:
            if os.path.isdir(self.path / ".git"):
                self.unopened = err.strip() or f"git rev-parse exit {status}"
            return False
        lines = out.split("\n")
        git_dir = (self.path / lines[0]).resolve()
        if git_dir not in (self.path.resolve() / ".git", self.path.resolve()):
            return False
        self._git_dir = git_dir  # what ``git_dir`` would ask next
        self.bare = lines[1] == "true"
        self.own_work_tree = lines[1:4] == ["false", "true", ""]
        return True

    @property
    def git_dir(self) -> Path:
        """The repository's git directory (asked of git once per ``Repo``)."""
        if self._git_dir is None:
            self._git_dir = (self.path / self._run.git("rev-parse", "--git-dir").strip()).resolve()
        return self._git_dir
