"""Work trees: the only part of series that writes files git tracks.

Two kinds: the user's checkout (moved with ``read-tree -m -u``, which
touches only files that differ and refuses to overwrite local changes) and
the linked work trees series owns for running tests (moved with a forced
checkout after a clean). Everything else in series works on objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from series.git.run import HERMETIC, Runner


class WorktreeMixin(Runner):
    def dirty(self) -> list[str]:
        """Uncommitted changes: modified, staged and untracked (not ignored) paths."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    def stash(self, message: str) -> None:
        """Stash every uncommitted change, untracked files included."""
        self.git("stash", "push", "--include-untracked", "-m", message)

    def checkout_tree(self, old: str | None, new: str) -> None:
        """Move index and work tree from commit ``old`` to ``new``.

        A two-tree ``read-tree -m -u`` touches only files that differ and
        refuses to overwrite local changes; a fresh repository takes --reset.
        """
        workers = ["-c", "checkout.workers=0"]  # one per core
        if old is None:
            self.git(*workers, "read-tree", "--reset", "-u", new)
        else:
            self.git(*workers, "read-tree", "-m", "-u", old, new)

    def index_tree(self) -> str | None:
        """The tree the index holds now, or None when it has unmerged entries."""
        status, out, _ = self.git_status("write-tree")
        return out.strip() if status == 0 else None

    def files_match_index(self) -> bool:
        """Whether no tracked file differs from the index (``diff-files --quiet``).

        The index's stat data is refreshed first, so a file that was only
        touched (copied, restored from a backup) does not count as changed.
        """
        self.git_status("update-index", "-q", "--refresh")
        return self.git_status("diff-files", "--quiet")[0] == 0

    def worktree_add(self, path: Path, commit: str) -> None:
        """A new detached linked work tree of this repository at ``path``."""
        self.git("worktree", "prune")
        argv = ["worktree", "add", "--detach", "--force", "--", str(path), commit]
        self.git(*argv, env=HERMETIC)

    def is_linked_worktree(self) -> bool:
        found = self.git_status("rev-parse", "-q", "--verify", "HEAD^{commit}")[0] == 0
        return (self.path / ".git").is_file() and found

    def move_worktree(self, commit: str, keep: Sequence[str] = ()) -> list[str]:
        """Put this work tree at ``commit``; return the paths whose content changed.

        Only for work trees series owns: untracked files (test droppings) are
        removed except those matching a ``keep`` pattern, and local edits to
        tracked files are discarded. Unchanged files are not rewritten, so
        their mtimes (and Python's bytecode caches) stay valid.
        """
        status, out, _ = self.git_status("rev-parse", "-q", "--verify", "HEAD^{commit}")
        old = out.strip() if status == 0 else None
        self.git("clean", "-ffdxq", *[a for pattern in keep for a in ("-e", pattern)])
        self.git("checkout", "-q", "--detach", "--force", commit, env=HERMETIC)
        if old is None or old == commit:
            return []
        out = self.git(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, commit, env=HERMETIC
        )
        return [path for path in out.split("\0") if path]

    def clear_stale_locks(self) -> None:
        """Remove the lock files a git killed mid-move (SIGKILL, a crash) left behind.

        Only for work trees series owns and holds the flock of: only the
        holder runs git in them, so any lock file there is stale.
        """
        for name in ("index.lock", "HEAD.lock"):
            lock = self.path / self.git("rev-parse", "--git-path", name).strip()
            lock.unlink(missing_ok=True)

    def unmerged(self) -> list[str]:
        """Paths with conflict stages in the index."""
        out = self.git("ls-files", "-u", "-z")
        return sorted({entry.split("\t", 1)[1] for entry in out.split("\0") if "\t" in entry})

    def stage_conflicts(self, entries: Sequence[tuple[str, str, int, str]]) -> None:
        """Put (mode, oid, stage, path) conflict stages in the index, as a stopped merge has."""
        paths = sorted({path for _, _, _, path in entries})
        lines = [f"0 {'0' * 40}\t{path}" for path in paths]
        lines += [f"{mode} {oid} {stage}\t{path}" for mode, oid, stage, path in entries]
        self.git_input("update-index", "--index-info", data=("\n".join(lines) + "\n").encode())

    def head(self) -> str | None:
        """The commit HEAD is at (detached or not), or None."""
        status, out, _ = self.git_status("rev-parse", "-q", "--verify", "HEAD^{commit}")
        return out.strip() if status == 0 else None
