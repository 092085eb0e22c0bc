"""The only door to git.

Everything series does to a repository goes through :class:`Repo`, which
runs git through GitPython's command runner (argv lists, never a shell, an
explicit working directory, every argv logged at debug level). Plumbing is
preferred over porcelain: patches are applied to a temporary index with
``apply --cached``, commits are made with ``commit-tree`` and refs moved with
compare-and-swap ``update-ref``, so nothing touches a work tree until the end
of a command, and then only through ``read-tree -m -u``.

Commands that *produce content* (patch files, imported trees, applied
commits) run with the user's and the system's git configuration switched
off, so the same inputs give the same bytes and the same commit ids on every
machine.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from git.cmd import Git as _Cmd

from series.errors import SeriesError

log = logging.getLogger("series.git")

# Switches off ~/.gitconfig and /etc/gitconfig for content-producing commands.
HERMETIC = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
ZERO = "0" * 40
_SHA = re.compile(r"^[0-9a-f]{40}$")


def is_sha(text: str) -> bool:
    return bool(_SHA.match(text))


class GitFailed(SeriesError):
    """A git command failed in a way the caller did not expect."""

    def __init__(self, argv: Sequence[str], status: int, stderr: str) -> None:
        super().__init__(
            f"git {' '.join(argv[:3])} failed (exit {status})",
            why=stderr.strip() or "(git printed nothing)",
            hint="run again with -v to see every git command",
        )
        self.argv = list(argv)
        self.status = status
        self.stderr = stderr


@dataclass(frozen=True)
class Ident:
    """An author or committer: name, email and a git date string."""

    name: str
    email: str
    date: str

    def env(self, role: str) -> dict[str, str]:
        return {
            f"GIT_{role}_NAME": self.name,
            f"GIT_{role}_EMAIL": self.email,
            f"GIT_{role}_DATE": self.date,
        }


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


@dataclass(frozen=True)
class ApplyResult:
    ok: bool
    three_way: bool
    conflicted: tuple[str, ...]  # paths left unmerged by a 3-way apply
    failed: tuple[str, ...]  # "path:line" hunks that did not apply
    stderr: str


def git_version() -> tuple[int, int, int]:
    out = _run(Path.cwd(), ["version"])
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    if not match:
        raise SeriesError(f"cannot read the git version from {out!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def _run(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
    check: bool = True,
    raw: bool = False,
) -> str:
    status, out, err = _exec(cwd, argv, env=env, stdin=stdin, raw=raw)
    if check and status != 0:
        raise GitFailed(argv, status, err)
    return out if isinstance(out, str) else out.decode("utf-8", "surrogateescape")


def _exec(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
    raw: bool = False,
) -> tuple[int, str | bytes, str]:
    log.debug("git %s  (in %s)", " ".join(argv), cwd)
    cmd = _Cmd(str(cwd))
    stream = stdin.open("rb") if stdin is not None else None
    try:
        status, out, err = cmd.execute(
            ["git", *argv],
            istream=stream,
            with_extended_output=True,
            with_exceptions=False,
            env=dict(env or {}),
            stdout_as_string=not raw,
            strip_newline_in_stdout=False,
        )
    finally:
        if stream is not None:
            stream.close()
    return (
        int(status),
        out or b"" if raw else out or "",
        err if isinstance(err, str) else err.decode(),
    )


def mailinfo(patch: Path, scratch: Path) -> MailInfo:
    """Split a format-patch file with ``git mailinfo``, as ``git am`` does."""
    msg, diff = scratch / "msg", scratch / "diff"
    out = _run(scratch, ["mailinfo", "-u", str(msg), str(diff)], env=HERMETIC, stdin=patch)
    fields: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(": ")
        fields[key] = value
    if not fields.get("Author") or not fields.get("Date"):
        raise SeriesError(
            f"{patch} is not a format-patch file",
            why="it has no From:/Date: header",
            hint="make patch files with `series export` or `git format-patch`",
        )
    body = msg.read_text(encoding="utf-8").rstrip("\n")
    return MailInfo(
        author=Ident(fields["Author"], fields.get("Email", ""), fields["Date"]),
        subject=fields.get("Subject", ""),
        body=body,
        diff=diff.read_bytes(),
    )


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int | None  # None for binary files
    deleted: int | None


def patch_stat(patch: Path) -> list[FileStat]:
    """Per-file line counts of a patch file (``git apply --numstat``; no repo needed)."""
    out = _run(patch.parent, ["apply", "--numstat", str(patch)], env=HERMETIC)
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


class Repo:
    """One repository, addressed by its work tree (or git dir when bare)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    # -- running -----------------------------------------------------------
    def git(
        self,
        *argv: str,
        env: Mapping[str, str] | None = None,
        stdin: Path | None = None,
        check: bool = True,
    ) -> str:
        return _run(self.path, argv, env=env, stdin=stdin, check=check)

    def git_bytes(self, *argv: str, env: Mapping[str, str] | None = None) -> bytes:
        status, out, err = _exec(self.path, argv, env=env, raw=True)
        if status != 0:
            raise GitFailed(argv, status, err)
        assert isinstance(out, bytes)
        return out

    def git_status(self, *argv: str, env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
        status, out, err = _exec(self.path, argv, env=env)
        assert isinstance(out, str)
        return status, out, err

    # -- creation ----------------------------------------------------------
    @classmethod
    def init(cls, path: Path, *, bare: bool = False) -> Repo:
        path.mkdir(parents=True, exist_ok=True)
        _run(path, ["init", "-q", *(["--bare"] if bare else []), str(path)])
        return cls(path)

    @classmethod
    def find(cls, path: Path) -> Repo | None:
        status, out, _ = _exec(path, ["rev-parse", "--show-toplevel"])
        if status != 0:
            return None
        assert isinstance(out, str)
        return cls(Path(out.strip()))

    def is_repo(self) -> bool:
        if not self.path.is_dir():
            return False
        status, out, _ = _exec(self.path, ["rev-parse", "--git-dir"])
        if status != 0 or not isinstance(out, str):
            return False
        git_dir = (self.path / out.strip()).resolve()
        return git_dir in (self.path.resolve() / ".git", self.path.resolve())

    @property
    def git_dir(self) -> Path:
        return (self.path / self.git("rev-parse", "--git-dir").strip()).resolve()

    # -- refs and objects ---------------------------------------------------
    def rev(self, rev: str) -> str | None:
        status, out, _ = _exec(self.path, ["rev-parse", "-q", "--verify", f"{rev}^{{commit}}"])
        return out.strip() if status == 0 and isinstance(out, str) else None

    def has_object(self, sha: str) -> bool:
        return _exec(self.path, ["cat-file", "-e", sha])[0] == 0

    def update_ref(self, ref: str, new: str, old: str | None, reason: str) -> None:
        """Compare-and-swap: fails if ``ref`` is not at ``old`` (ZERO: absent)."""
        argv = ["update-ref", "-m", reason, ref, new]
        if old is not None:
            argv.append(old)
        status, _, err = _exec(self.path, argv)
        if status != 0:
            raise SeriesError(
                f"{ref} moved while series was working",
                why=err.strip(),
                hint="someone else changed the branch; look at it and run the command again",
            )

    def delete_ref(self, ref: str) -> None:
        self.git("update-ref", "-d", ref)

    def refs(self, prefix: str) -> dict[str, str]:
        out = self.git("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        pairs = (line.split(" ", 1) for line in out.splitlines() if line)
        return {name: sha for name, sha in pairs}

    def symbolic_head(self) -> str | None:
        status, out, _ = _exec(self.path, ["symbolic-ref", "-q", "HEAD"])
        return out.strip() if status == 0 and isinstance(out, str) else None

    def tree_of(self, commit: str) -> str:
        return self.git("rev-parse", f"{commit}^{{tree}}").strip()

    def commits(self, base: str, tip: str) -> list[str]:
        """First-parent commits in base..tip, oldest first."""
        out = self.git("rev-list", "--reverse", "--first-parent", f"{base}..{tip}")
        return out.split()

    def merges(self, base: str, tip: str) -> list[str]:
        return self.git("rev-list", "--merges", f"{base}..{tip}").split()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return _exec(self.path, ["merge-base", "--is-ancestor", ancestor, descendant])[0] == 0

    def message(self, commit: str) -> str:
        return self.git("log", "-1", "--format=%B", commit, env=HERMETIC).rstrip("\n") + "\n"

    def author(self, commit: str) -> Ident:
        out = self.git("log", "-1", "--format=%an%x00%ae%x00%aD", commit, env=HERMETIC)
        name, email, date = out.rstrip("\n").split("\x00")
        return Ident(name, email, date)

    def changed_files(self, commit: str) -> list[str]:
        out = self.git(
            "diff-tree",
            "--no-commit-id",
            "-r",
            "--name-only",
            "--root",
            commit,
            env=HERMETIC,
        )
        return out.split()

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, author: Ident) -> str:
        """A commit whose committer is its author, so ids depend on content only."""
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", delete=False) as fh:
            fh.write(message)
        try:
            argv = [
                "commit-tree",
                tree,
                *[a for p in parents for a in ("-p", p)],
                "-F",
                fh.name,
            ]
            env = {**HERMETIC, **author.env("AUTHOR"), **author.env("COMMITTER")}
            return self.git(*argv, env=env).strip()
        finally:
            os.unlink(fh.name)

    # -- applying patches on a scratch index --------------------------------
    @contextmanager
    def scratch_index(self, tree: str) -> Iterator[dict[str, str]]:
        """An environment whose GIT_INDEX_FILE is a fresh index holding ``tree``."""
        tmp = Path(tempfile.mkdtemp(prefix="series-index-"))
        env = {**HERMETIC, "GIT_INDEX_FILE": str(tmp / "index")}
        try:
            self.git("read-tree", tree, env=env)
            yield env
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def apply_to_index(self, env: Mapping[str, str], diff: Path) -> ApplyResult:
        status, _, err = self.git_status(
            "apply", "--cached", "--whitespace=nowarn", str(diff), env=env
        )
        if status == 0:
            return ApplyResult(True, False, (), (), "")
        failed = tuple(_failed_hunks(err))
        status3, _, err3 = self.git_status(
            "apply", "--cached", "--3way", "--whitespace=nowarn", str(diff), env=env
        )
        unmerged = self.git("ls-files", "-u", env=env)
        conflicted = tuple(sorted({line.split("\t", 1)[1] for line in unmerged.splitlines()}))
        if status3 == 0 and not conflicted:
            return ApplyResult(True, True, (), failed, "")
        return ApplyResult(False, True, conflicted, failed, (err + err3).strip())

    def write_tree(self, env: Mapping[str, str]) -> str:
        return self.git("write-tree", env=env).strip()

    # -- work tree ------------------------------------------------------------
    def dirty(self) -> list[str]:
        """Uncommitted changes: modified, staged and untracked (not ignored) paths."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    def checkout_tree(self, old: str | None, new: str) -> None:
        """Move index and work tree from commit ``old`` to ``new``.

        A two-tree ``read-tree -m -u`` touches only files that differ and
        refuses to overwrite local changes; a fresh repository takes --reset.
        """
        if old is None:
            self.git("read-tree", "--reset", "-u", new)
        else:
            self.git("read-tree", "-m", "-u", old, new)

    def format_patch(self, commit: str) -> bytes:
        """One commit as a patch file with no volatile content."""
        return self.git_bytes(
            "format-patch",
            "-1",
            commit,
            "--stdout",
            "--zero-commit",
            "--full-index",
            "--no-signature",
            "--no-numbered",
            "--encode-email-headers",
            "--stat=80",
            "--find-renames",
            "--diff-algorithm=myers",
            "--no-color",
            env=HERMETIC,
        )


def _failed_hunks(stderr: str) -> list[str]:
    hunks = re.findall(r"error: patch failed: (\S+)", stderr)
    missing = re.findall(r"error: (\S+): (?:does not exist in index|No such file)", stderr)
    return hunks + [f"{m} (missing)" for m in missing]
