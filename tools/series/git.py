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

from series.errors import Exit, SeriesError

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
        out = _run(neutral, ["apply", "--numstat", str(patch.resolve())], env=env)
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
    def clone_local(cls, source: Repo, path: Path) -> Repo:
        """A new repository sharing ``source``'s objects through hard links.

        Far cheaper than init + fetch (no pack is written), and unlike
        ``--shared`` the clone keeps working if ``source`` is deleted.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        _run(
            path.parent,
            ["clone", "--quiet", "--local", "--no-checkout", str(source.path), str(path)],
        )
        repo = cls(path)
        repo.git("remote", "remove", "origin")
        return repo

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

    def fetch_from(self, source: Repo, commit: str) -> None:
        """Copy ``commit`` and its history from ``source`` (which has a ref on it)."""
        if self.has_object(commit):
            return
        names = source.git(
            "for-each-ref", "--format=%(refname)", "--points-at", commit, "refs/series/"
        ).split()
        if not names:
            raise SeriesError(f"internal: {commit[:12]} has no ref in {source.path}")
        self.git("fetch", "--quiet", "--no-tags", str(source.path), names[0])

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
        return ApplyResult(False, True, conflicted, failed, (err + "\n" + err3).strip())

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
        workers = ["-c", "checkout.workers=0"]  # one per core
        if old is None:
            self.git(*workers, "read-tree", "--reset", "-u", new)
        else:
            self.git(*workers, "read-tree", "-m", "-u", old, new)

    # -- work trees that series owns (series test runs tests in them) ---------
    def worktree_add(self, path: Path, commit: str) -> Repo:
        """A new detached linked work tree of this repository at ``path``."""
        self.git("worktree", "prune")
        self.git("worktree", "add", "--detach", "--force", str(path), commit, env=HERMETIC)
        return Repo(path)

    def move_worktree(self, commit: str, keep: Sequence[str] = ()) -> list[str]:
        """Put this work tree at ``commit``; return the paths whose content changed.

        Only for work trees series owns: untracked files (test droppings) are
        removed except those matching a ``keep`` pattern, and local edits to
        tracked files are discarded. Unchanged files are not rewritten, so
        their mtimes (and Python's bytecode caches) stay valid.
        """
        old = self.rev("HEAD")
        self.git("clean", "-ffdxq", *[a for pattern in keep for a in ("-e", pattern)])
        self.git("checkout", "-q", "--detach", "--force", commit, env=HERMETIC)
        if old is None or old == commit:
            return []
        return self.changed_paths(old, commit)

    def changed_paths(self, old: str, new: str) -> list[str]:
        """Paths whose content differs between two commits or trees."""
        out = self.git(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new, env=HERMETIC
        )
        return [path for path in out.split("\0") if path]

    def existing_paths(self, rev: str, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` (files or directories) exist in ``rev``'s tree; one process."""
        if not paths:
            return set()
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", delete=False) as fh:
            fh.write("".join(f"{rev}:{path}\n" for path in paths))
        try:
            out = self.git("cat-file", "--batch-check", stdin=Path(fh.name))
        finally:
            os.unlink(fh.name)
        answers = zip(paths, out.splitlines(), strict=True)
        return {path for path, line in answers if not line.endswith(" missing")}

    def blob(self, rev: str, path: str) -> bytes:
        """The content of ``path`` in ``rev``."""
        return self.git_bytes("cat-file", "blob", f"{rev}:{path}")

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

    # -- bulk work for check-conflicts: few processes, many objects ----------
    def git_input(self, *argv: str, data: bytes, env: Mapping[str, str] | None = None) -> bytes:
        """Run git with ``data`` on stdin; its raw stdout."""
        with _input_file(data) as path:
            status, out, err = _exec(self.path, argv, env=env, stdin=path, raw=True)
        if status != 0:
            raise GitFailed(argv, status, err)
        assert isinstance(out, bytes)
        return out

    @contextmanager
    def scratch_objects(self) -> Iterator[dict[str, str]]:
        """A hermetic environment whose new objects go to a temporary store.

        Reads still see the repository's objects (as an alternate), so merges
        and synthetic commits made under it leave nothing behind. The store
        is in RAM when the machine has a tmpfs: a run writes hundreds of
        loose objects, and on a busy disk that was most of its time.
        """
        objects = self.path / "objects"
        if not (self.path / "HEAD").is_file() or not objects.is_dir():
            objects = self.path / self.git("rev-parse", "--git-path", "objects").strip()
        tmp = Path(tempfile.mkdtemp(prefix="series-objects-", dir=_ram_dir()))
        try:
            yield {
                **HERMETIC,
                "GIT_OBJECT_DIRECTORY": str(tmp),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects.resolve()),
            }
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def write_objects(
        self, kind: str, payloads: Sequence[bytes], env: Mapping[str, str] | None = None
    ) -> list[str]:
        """Write many objects with one ``hash-object --stdin-paths``; ids in order."""
        if not payloads:
            return []
        with tempfile.TemporaryDirectory(prefix="series-objects-", dir=_ram_dir()) as tmp:
            names = []
            for i, payload in enumerate(payloads):
                path = Path(tmp) / str(i)
                path.write_bytes(payload)
                names.append(str(path))
            data = ("\n".join(names) + "\n").encode()
            out = self.git_input(
                "hash-object", "-w", "-t", kind, "--stdin-paths", data=data, env=env
            )
        return out.decode().split()

    def merge_trees(
        self, lines: Sequence[str], env: Mapping[str, str] | None = None
    ) -> list[TreeMerge]:
        """Many merges in one ``merge-tree --write-tree --stdin``, one per input line."""
        if not lines:
            return []
        data = ("\n".join(lines) + "\n").encode()
        results = parse_merge_tree(
            self.git_input("merge-tree", "--write-tree", "-z", "--stdin", data=data, env=env)
        )
        if len(results) != len(lines):
            raise SeriesError(
                f"internal: merge-tree gave {len(results)} results for {len(lines)} merges"
            )
        return results

    def merge_base_on_stdin(self, commit: str, env: Mapping[str, str] | None = None) -> bool:
        """Whether this git takes ``<base> -- <one> <two>`` on ``merge-tree --stdin``.

        That is the batch form of ``--merge-base`` (newer than 2.39); probing
        it answers for the git actually installed, whatever its version says.
        """
        argv = ["merge-tree", "--write-tree", "-z", "--stdin"]
        with _input_file(f"{commit} -- {commit} {commit}\n".encode()) as path:
            status, _, _ = _exec(self.path, argv, env=env, stdin=path, raw=True)
        return status == 0

    def read_blobs(
        self, oids: Sequence[str], env: Mapping[str, str] | None = None
    ) -> dict[str, bytes]:
        """Blob contents by id, with one ``cat-file --batch``."""
        if not oids:
            return {}
        out = self.git_input("cat-file", "--batch", data=("\n".join(oids) + "\n").encode(), env=env)
        blobs: dict[str, bytes] = {}
        pos = 0
        while pos < len(out):
            end = out.index(b"\n", pos)
            oid, kind, size = out[pos:end].decode().split(" ")
            if kind != "blob":
                raise SeriesError(f"internal: {oid} is a {kind}, not a blob")
            blobs[oid] = out[end + 1 : end + 1 + int(size)]
            pos = end + 1 + int(size) + 1
        return blobs

    def merge_file(self, base: bytes, ours: bytes, theirs: bytes, *, favour: str) -> bytes:
        """``git merge-file -p --ours|--theirs``: a content merge with no markers left."""
        with tempfile.TemporaryDirectory(prefix="series-merge-file-") as tmp:
            names = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                (Path(tmp) / name).write_bytes(data)
                names.append(str(Path(tmp) / name))
            argv = ["merge-file", "-p", f"--{favour}", *names]
            status, out, err = _exec(self.path, argv, env=HERMETIC, raw=True)
        if not 0 <= status < 128:
            raise GitFailed(argv, status, err)
        assert isinstance(out, bytes)
        return out

    def update_refs(self, commands: Sequence[str], reason: str) -> None:
        """One ``update-ref --stdin`` transaction ("update REF NEW [OLD]", "delete REF")."""
        if commands:
            data = ("\n".join(commands) + "\n").encode()
            self.git_input("update-ref", "-m", reason, "--stdin", data=data)

    def ref_commits(self, prefix: str) -> dict[str, tuple[str, str, str]]:
        """refname -> (commit, tree, first parent or "") for commit refs under ``prefix``."""
        fmt = "%(refname) %(objectname) %(tree) %(parent)"
        out = self.git("for-each-ref", f"--format={fmt}", prefix)
        found = {}
        for line in out.splitlines():
            name, commit, tree, *parents = line.split(" ")
            found[name] = (commit, tree, parents[0] if parents else "")
        return found

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


def _failed_hunks(stderr: str) -> list[str]:
    hunks = re.findall(r"error: patch failed: (\S+)", stderr)
    missing = re.findall(r"error: (\S+): (?:does not exist in index|No such file)", stderr)
    return hunks + [f"{m} (missing)" for m in missing]


def _ram_dir() -> str | None:
    """A RAM-backed directory for throwaway files, or None for the default."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None


@contextmanager
def _input_file(data: bytes) -> Iterator[Path]:
    with tempfile.NamedTemporaryFile(prefix="series-stdin-", dir=_ram_dir(), delete=False) as fh:
        fh.write(data)
    try:
        yield Path(fh.name)
    finally:
        os.unlink(fh.name)


@dataclass(frozen=True)
class LogEntry:
    commit: str
    subject: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class StageEntry:
    """One conflicted index entry from merge-tree: stage 1 base, 2 ours, 3 theirs."""

    mode: str
    oid: str
    stage: int
    path: str


@dataclass(frozen=True)
class MergeMessage:
    paths: tuple[str, ...]
    kind: str  # git's stable type string, e.g. "CONFLICT (contents)"
    text: str


@dataclass(frozen=True)
class TreeMerge:
    """The outcome of one ``merge-tree --write-tree`` merge."""

    clean: bool
    tree: str  # on conflict, files in it carry conflict markers
    entries: tuple[StageEntry, ...] = ()
    messages: tuple[MergeMessage, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({e.path for e in self.entries}))

    @property
    def conflicts(self) -> tuple[MergeMessage, ...]:
        return tuple(m for m in self.messages if m.kind.startswith("CONFLICT"))


def parse_merge_tree(out: bytes) -> list[TreeMerge]:
    """Split ``merge-tree --write-tree -z --stdin`` output into its merges.

    Per merge: status NUL, tree NUL; when conflicted, the stage entries each
    NUL-terminated, an empty field, then message records (count, paths,
    type, text); then an empty field ends the merge.
    """
    fields = [f.decode("utf-8", "surrogateescape") for f in out.split(b"\0")]
    results: list[TreeMerge] = []
    i = 0
    while i + 1 < len(fields) and fields[i] != "":
        status, tree = int(fields[i]), fields[i + 1]
        i += 2
        if status < 0:
            raise SeriesError(f"git merge-tree could not merge (status {status})")
        entries: list[StageEntry] = []
        messages: list[MergeMessage] = []
        if status == 0:
            while fields[i] != "":
                head, path = fields[i].split("\t", 1)
                mode, oid, stage = head.split(" ")
                entries.append(StageEntry(mode, oid, int(stage), path))
                i += 1
            i += 1
            while fields[i] != "":
                count = int(fields[i])
                paths = tuple(fields[i + 1 : i + 1 + count])
                kind, text = fields[i + 1 + count], fields[i + 2 + count]
                messages.append(MergeMessage(paths, kind, text.rstrip("\n")))
                i += count + 3
        i += 1
        results.append(TreeMerge(status == 1, tree, tuple(entries), tuple(messages)))
    return results
