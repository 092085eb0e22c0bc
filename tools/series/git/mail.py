"""Patch files: splitting them as ``git am`` does, their stats, and writing them.

A patch file is read with ``git mailinfo`` (author, date, subject, body,
diff) and counted with ``git apply --numstat``; neither needs a
repository. A commit is written out with ``format-patch`` in the one
canonical form series uses, with nothing volatile in it, so the same
commit always gives the same bytes.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from series.errors import Exit, SeriesError
from series.git.run import HERMETIC, GitFailed, Ident, Runner, run


@dataclass(frozen=True)
class MailInfo:
    """A format-patch file split the way ``git am`` splits it."""

    author: Ident
    subject: str
    body: str  # message after the subject, without trailing blank lines
    diff: bytes  # the patch proper (empty for an empty commit)

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.body}\n" if self.body else f"{self.subject}\n"


def mailinfo(patch: Path, scratch: Path) -> MailInfo:
    """Split a format-patch file with ``git mailinfo``; the diff is left in scratch/diff."""
    msg, diff = scratch / "msg", scratch / "diff"
    try:
        out = run(scratch, ["mailinfo", "-u", str(msg), str(diff)], env=HERMETIC, stdin=patch)
    except GitFailed as exc:  # e.g. "empty patch": a file with nothing but blank lines
        raise SeriesError(
            f"{patch} is not a format-patch file",
            why=exc.stderr.strip(),
            hint="restore it from git, or make patch files with `series export`",
            exit_code=Exit.BAD_INPUT,
        ) from None
    fields: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(": ")
        fields[key] = value
    if not fields.get("Author") or not fields.get("Date"):
        raise SeriesError(
            f"{patch} is not a format-patch file",
            why="it has no From:/Date: header",
            hint="restore it from git, or make patch files with `series export`",
            exit_code=Exit.BAD_INPUT,
        )
    body = msg.read_text(encoding="utf-8").rstrip("\n")
    return MailInfo(
        author=Ident(fields["Author"], fields.get("Email", ""), fields["Date"]),
        subject=fields.get("Subject", ""),
        body=body,
        diff=diff.read_bytes(),
    )


def read_mail(patch: Path) -> MailInfo:
    """:func:`mailinfo` in its own scratch directory."""
    with tempfile.TemporaryDirectory(prefix="series-mail-") as tmp:
        return mailinfo(patch, Path(tmp))


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int | None  # None for binary files
    deleted: int | None


def patch_stat(patch: Path) -> list[FileStat]:
    """Per-file line counts of a patch file (``git apply --numstat``; no repo needed)."""
    # Run outside any repository: inside one, `git apply` ignores paths that
    # are not below the current directory, and patches/ has none.
    neutral = Path(tempfile.gettempdir())
    env = {**HERMETIC, "GIT_CEILING_DIRECTORIES": str(neutral.parent)}
    try:
        out = run(neutral, ["apply", "--numstat", str(patch.resolve())], env=env)
    except GitFailed as exc:
        raise SeriesError(
            f"{patch} is not a patch git can read",
            why=exc.stderr.strip(),
            hint="restore it from git (git checkout -- FILE), or re-export it with `series export`",
            exit_code=Exit.BAD_INPUT,
        ) from None
    stats = []
    for line in out.splitlines():
        added, deleted, path = line.split("\t", 2)
        stats.append(
            FileStat(
                path,
                None if added == "-" else int(added),
                None if deleted == "-" else int(deleted),
            )
        )
    return stats


_ZERO_FROM = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"


class MailMixin(Runner):
    def format_patch(self, commit: str) -> bytes:
        """One commit as a patch file with no volatile content."""
        return self.git_bytes("format-patch", "-1", commit, *_FORMAT, env=HERMETIC)

    def format_patches(self, base: str, tip: str) -> list[bytes]:
        """Every commit of base..tip as :meth:`format_patch` writes it, with one process."""
        out = self.git_bytes("format-patch", f"{base}..{tip}", *_FORMAT, env=HERMETIC)
        parts = [_ZERO_FROM + part for part in out.split(_ZERO_FROM)[1:]]
        # Every patch but the last is followed by a blank line that separates it.
        return [p[:-1] if i < len(parts) - 1 else p for i, p in enumerate(parts)]


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
)
