"""Diffs: what changed between trees and commits, as paths, hunks, patches and patch ids.

Every diff here is hermetic (no user configuration, a repository's own
pinned to git's defaults: no colour, no renames, full blob ids; no
attributes: ``Runner.no_attributes``), so the same inputs give the same
bytes. A commit is written out with
``format-patch`` in the one canonical form series uses, with nothing
volatile in it, so the same commit always gives the same patch file.
"""

from __future__ import annotations

from collections.abc import Sequence

from series.errors import InternalError
from series.git.run import Part

_ZERO_FROM = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"


class Diffs(Part):
    """Differences between trees and commits, and commits as patch files."""

    def _env(self) -> dict[str, str]:
        """HERMETIC, and no attribute of the repository's (``diff=``, ``-diff``)."""
        return self._run.no_attributes()

    def changed_paths(self, old: str, new: str) -> list[str]:
        """Paths whose content differs between two commits or trees."""
        out = self._run.git(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new, env=self._env()
        )
        return [path for path in out.split("\0") if path]

    def changed_lines(self, old: str, new: str, path: str) -> list[tuple[int, int]]:
        """(first, count) of each hunk's new-side lines in ``path`` (``diff -U0``).

        A hunk that only deletes has count 0: ``first`` is the line after
        which the deleted lines stood.
        """
        out = self._run.git(
            "diff", "-U0", *_PLAIN, "--no-renames", old, new, "--", path, env=self._env()
        )
        hunks = []
        for line in out.splitlines():
            if line.startswith("@@ "):
                new_side = line.split(" ")[2].removeprefix("+")
                first, _, count = new_side.partition(",")
                hunks.append((int(first), int(count) if count else 1))
        return hunks

    def trees(self, old: str, new: str) -> bytes:
        """The patch from tree ``old`` to tree ``new`` (full blob ids, no renames)."""
        argv = ["diff-tree", "-p", "--full-index", "--binary", "--no-renames", "--no-color"]
        return self._run.git_bytes(*argv, old, new, env=self._env())

    def commits(self, commits: Sequence[str], paths: Sequence[str] = ()) -> dict[str, bytes]:
        """commit -> its diff against its parent, all with one ``diff-tree --stdin``.

        ``paths``: only these files' diffs (literal paths, no pattern); a commit that
        changes none of them is left out, as a commit that changes nothing is.
        """
        if not commits:
            return {}
        argv = ["diff-tree", "--stdin", "-p", "--full-index", "--no-renames", "--no-color"]
        env = self._env()
        if paths:
            argv += ["--", *paths]
            env = {**env, "GIT_LITERAL_PATHSPECS": "1"}
        out = self._run.git_input(*argv, data=("\n".join(commits) + "\n").encode(), env=env)
        wanted = set(commits)
        parts: dict[str, list[bytes]] = {}
        current: list[bytes] | None = None
        for line in out.splitlines(keepends=True):
            head = line.strip()
            if len(head) == 40 and not line.startswith((b"+", b"-", b" ")):
                name = head.decode("ascii", "replace")
                if name in wanted:
                    current = parts[name] = []
                    continue
            if current is not None:
                current.append(line)
        return {commit: b"".join(lines) for commit, lines in parts.items()}

    def raw_commits(self, commits: Sequence[str]) -> dict[str, bytes]:
        """commit -> its ``diff-tree --raw`` against its parent (mode, blob ids and path of
        each changed file; nothing for a commit that changes none), with one process.

        Two commits with the same raw diff have the same :meth:`commits` bytes, as that is
        made from these blobs alone: a caller compares these before asking for those.
        """
        if not commits:
            return {}
        argv = ["diff-tree", "--stdin", "-r", "--raw", "--full-index", "--no-renames"]
        out = self._run.git_input(*argv, data=("\n".join(commits) + "\n").encode(), env=self._env())
        wanted = set(commits)
        parts: dict[str, list[bytes]] = {c: [] for c in commits}
        current: list[bytes] | None = None
        for line in out.splitlines(keepends=True):
            if line.startswith(b":"):
                if current is None:
                    raise InternalError(f"diff-tree --raw: a change before any commit: {line!r}")
                current.append(line)
                continue
            name = line.strip().decode("ascii", "replace")
            if name not in wanted:
                raise InternalError(f"diff-tree --raw: not a commit asked for: {line!r}")
            current = parts[name] = []  # a commit asked for twice: its changes once
        return {commit: b"".join(lines) for commit, lines in parts.items()}

    @staticmethod
    def of_patch(patch: bytes, raw: bytes, paths: Sequence[str] = ()) -> bytes | None:
        """:func:`diff_of_patch`: a commit's :meth:`commits` answer from its exported patch."""
        return diff_of_patch(patch, raw, paths)

    def range_diff(self, old: str, new: str) -> str:
        """``git range-diff OLD NEW`` (two revision ranges), without colour."""
        return self._run.git(
            "range-diff", "--no-color", "--creation-factor=100", old, new, env=self._env()
        )

    def patch_ids(self, revs: Sequence[str], paths: Sequence[str] = ()) -> dict[str, str]:
        """commit -> ``patch-id --stable`` for the non-merge, non-root commits of ``revs``.

        ``paths`` limits which commits are read, not their diffs (--full-diff),
        so the ids are those of whole commits.
        """
        argv = ["log", "-p", "--min-parents=1", "--max-parents=1", "--full-diff", *_PLAIN]
        diff = self._run.git_bytes(
            *argv, "--format=commit %H", *revs, "--", *paths, env=self._env()
        )
        if not diff.strip():
            return {}
        out = self._run.git_input("patch-id", "--stable", data=diff, env=self._env()).decode()
        return {commit: pid for pid, commit in (line.split() for line in out.splitlines())}

    def patch_ids_of(self, commits: Sequence[str]) -> dict[str, str]:
        """commit -> ``patch-id --stable`` of each of ``commits`` (non-merge, non-root)."""
        if not commits:
            return {}
        argv = ["log", "-p", "--no-walk=unsorted", "--stdin", "--min-parents=1"]
        argv += ["--max-parents=1", *_PLAIN, "--format=commit %H"]
        data = ("\n".join(commits) + "\n").encode()
        diff = self._run.git_input(*argv, data=data, env=self._env())
        if not diff.strip():
            return {}
        out = self._run.git_input("patch-id", "--stable", data=diff, env=self._env()).decode()
        return {commit: pid for pid, commit in (line.split() for line in out.splitlines())}

    def format_patch(self, commit: str) -> bytes:
        """One commit as a patch file with no volatile content."""
        return self._run.git_bytes("format-patch", "-1", commit, *_FORMAT, env=self._env())

    def format_patches(self, base: str, tip: str) -> list[bytes]:
        """Every commit of base..tip as :meth:`format_patch` writes it, with one process."""
        out = self._run.git_bytes("format-patch", f"{base}..{tip}", *_FORMAT, env=self._env())
        parts = [_ZERO_FROM + part for part in out.split(_ZERO_FROM)[1:]]
        # Every patch but the last is followed by a blank line that separates it.
        return [p[:-1] if i < len(parts) - 1 else p for i, p in enumerate(parts)]


def diff_of_patch(patch: bytes, raw: bytes, paths: Sequence[str] = ()) -> bytes | None:
    """What :meth:`Diffs.commits` answers for a commit, taken from its patch file as
    :meth:`Diffs.format_patches` wrote it (the same diff machinery, options and pinned
    configuration: each file's part is the same bytes), or None where it cannot be.

    ``raw``: the commit's :meth:`Diffs.raw_commits`; ``paths``: as for ``commits``. The
    diff is where the part of the first file ``raw`` names begins (its last ``diff --git``
    line: a message may quote one, the diff comes after it), and its parts must be those
    of ``raw``'s files, in its order, each headed ``diff --git a/PATH b/PATH``: a rename
    or copy the patch found (``--find-renames``), a quoted path, a binary file (a
    ``GIT binary patch`` there, ``Binary files ... differ`` from ``diff-tree``) answer None.
    """
    files = [line.split(b"\t", 1)[1] for line in raw.splitlines() if b"\t" in line]
    if not files:
        return b""  # a commit that changes nothing: commits() leaves it out
    start = patch.rfind(b"\ndiff --git a/%s b/%s\n" % (files[0], files[0]))
    if start < 0:
        return None
    parts = patch[start + 1 :].split(b"\ndiff --git ")
    parts = [parts[0], *(b"diff --git " + part for part in parts[1:])]
    if len(parts) != len(files):
        return None
    wanted = {p.encode("utf-8", "surrogateescape") for p in paths}
    kept = []
    for n, (part, path) in enumerate(zip(parts, files, strict=True)):
        head, _, body = part.partition(b"\n")
        if head != b"diff --git a/%s b/%s" % (path, path) or b"\nGIT binary patch\n" in part:
            return None
        if body.startswith((b"similarity index", b"dissimilarity index", b"copy from")):
            return None
        if b"\nBinary files " in b"\n" + body:
            return None
        if not paths or path in wanted:
            kept.append(part if n == len(parts) - 1 else part + b"\n")
    return b"".join(kept)


_FORMAT = (
    "--stdout",
    "--always",  # an empty commit (a patch kept for its message) is a patch too
    "--zero-commit",
    "--full-index",
    "--no-signature",
    "--no-numbered",
    "--encode-email-headers",
    "--stat=80",
    "--find-renames",
    "--diff-algorithm=myers",
    "--no-color",
    # what a repository's configuration adds that no pin resets (series.git.run.PINNED)
    "--no-to",
    "--no-cc",
    "--no-add-header",
    "--no-attach",
)
# git diff and git log -p, unlike plumbing, run a repository's diff.external and textconv
# drivers (its .git/info/attributes and .git/config): never for content or patch-ids.
_PLAIN = ("--no-color", "--no-ext-diff", "--no-textconv")
