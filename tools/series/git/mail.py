"""Patch files: splitting them as ``git am`` does, their stats, and writing them.

A patch file is read with ``git mailinfo`` (author, date, subject, body,
diff) and counted with ``git apply --numstat``; neither needs a
repository. Writing a commit as a patch file is :mod:`series.git.diffs`'.
"""

from __future__ import annotations

from pathlib import Path

from series.errors import Exit, SeriesError
from series.git.ident import Ident
from series.git.run import HERMETIC, GitFailed, input_file, run, scratch_dir
from series.records import NamedTuple  # not dataclasses: it imports inspect and ast


class MailInfo(NamedTuple):
    """A format-patch file split the way ``git am`` splits it."""

    author: Ident
    subject: str
    body: str  # message after the subject, without trailing blank lines
    diff: bytes  # the patch proper (empty for an empty commit)

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.body}\n" if self.body else f"{self.subject}\n"


def mailinfo(patch: Path, scratch: Path, data: bytes | None = None) -> MailInfo:
    """Split a format-patch file with ``git mailinfo``; the diff is left in scratch/diff.

    ``data``: the file's bytes as the caller read them (and keyed what it keeps by), split
    instead of what the file holds when git reads it; ``patch`` then only names it.
    """
    msg, diff = scratch / "msg", scratch / "diff"
    source = patch
    if data is not None:
        source = scratch / "patch"
        source.write_bytes(data)
    try:
        out = run(scratch, ["mailinfo", "-u", str(msg), str(diff)], env=HERMETIC, stdin=source)
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


def read_mail(patch: Path, data: bytes | None = None) -> MailInfo:
    """:func:`mailinfo` in its own scratch directory."""
    with scratch_dir("series-mail-") as tmp:
        return mailinfo(patch, tmp, data)


class FileStat(NamedTuple):
    path: str
    added: int | None  # None for binary files
    deleted: int | None


def patch_stat(patch: Path, data: bytes | None = None) -> list[FileStat]:
    """Per-file line counts of a patch file (``git apply --numstat``; no repo needed).

    ``data``: the file's bytes as the caller read them, counted instead of what the
    file holds when git reads it (on git's stdin); ``patch`` then only names it.
    """
    import tempfile  # only when it is used: a run that builds nothing does not load it

    # Run outside any repository: inside one, `git apply` ignores paths that
    # are not below the current directory, and patches/ has none.
    neutral = Path(tempfile.gettempdir())
    env = {**HERMETIC, "GIT_CEILING_DIRECTORIES": str(neutral.parent)}
    try:
        if data is None:
            out = run(neutral, ["apply", "--numstat", str(patch.resolve())], env=env)
        else:
            with input_file(data) as source:
                out = run(neutral, ["apply", "--numstat"], env=env, stdin=source)
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
