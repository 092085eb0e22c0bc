"""Running git: argv lists, an explicit directory, every argv logged.

GitPython is used only as a command runner (``git.cmd.Git.execute``): it
gives the exit status, both streams and good errors without a shell. This
module is the only place that starts a git process; the rest of the
package builds on :class:`Runner`.

Commands that *produce content* (patch files, imported trees, applied
commits) run with the user's and the system's git configuration switched
off (``HERMETIC``), so the same inputs give the same bytes and the same
commit ids on every machine.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from git.cmd import Git as _Cmd

from series.errors import InternalError
from series.faults import point as fault_step
from series.git import leftovers

log = logging.getLogger("series.git")

# Switches off ~/.gitconfig and /etc/gitconfig for content-producing commands.
HERMETIC = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
ZERO = "0" * 40


class GitFailed(InternalError):
    """A git command failed in a way its caller did not expect.

    Callers that expect a failure catch it (or use ``Runner.git_status``);
    one that escapes to ``cli.main`` is reported as an internal error with
    git's own words, because series asked git for something it should not
    have.
    """

    def __init__(self, argv: Sequence[str], status: int, stderr: str) -> None:
        super().__init__(
            f"git {' '.join(argv[:3])} failed unexpectedly (exit {status})",
            why=stderr.strip() or "(git printed nothing)",
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


def execute(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
    raw: bool = False,
    timeout: float | None = None,
) -> tuple[int, str | bytes, str]:
    """Run ``git argv`` in ``cwd``: (status, stdout, stderr); never raises on status.

    ``timeout``: kill git after that many seconds (network operations).
    """
    log.debug("git %s  (in %s)", " ".join(argv), cwd)
    record = leftovers.begin(cwd, argv, env)
    _fault_point(argv)
    cmd = _Cmd(str(cwd))
    stream = stdin.open("rb") if stdin is not None else None
    status = -1
    try:
        status, out, err = cmd.execute(
            ["git", *argv],
            istream=stream,
            with_extended_output=True,
            with_exceptions=False,
            env=dict(env or {}),
            stdout_as_string=not raw,
            strip_newline_in_stdout=False,
            kill_after_timeout=timeout,
        )
    finally:
        if stream is not None:
            stream.close()
        leftovers.end(record, argv, int(status))
    return (
        int(status),
        out or b"" if raw else out or "",
        err if isinstance(err, str) else err.decode(),
    )


def _fault_point(argv: Sequence[str]) -> None:
    """A step of the kill tests before each git call (series.faults: SERIES_FAULT_KILL_AT=N)."""
    fault_step(f"git {leftovers.verb(argv)}")


def run(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
) -> str:
    """Run git and return its stdout as text; GitFailed on a non-zero status."""
    status, out, err = execute(cwd, argv, env=env, stdin=stdin)
    if status != 0:
        raise GitFailed(argv, status, err)
    return out if isinstance(out, str) else out.decode("utf-8", "surrogateescape")


def ram_dir() -> str | None:
    """A RAM-backed directory for throwaway files, or None for the default."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None


@contextmanager
def input_file(data: bytes) -> Iterator[Path]:
    """``data`` in a temporary file, for a git process's stdin."""
    with tempfile.NamedTemporaryFile(prefix="series-stdin-", dir=ram_dir(), delete=False) as fh:
        fh.write(data)
    try:
        yield Path(fh.name)
    finally:
        os.unlink(fh.name)


def _text(value: str | bytes) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else value


class Runner:
    """The base of :class:`series.git.Repo`: runs git in one repository.

    Each area of git (refs, index, merge-tree, work trees, objects) is a
    mixin in its own module built on these four methods.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def git(
        self,
        *argv: str,
        env: Mapping[str, str] | None = None,
        stdin: Path | None = None,
    ) -> str:
        return run(self.path, argv, env=env, stdin=stdin)

    def lookup(self, name: str) -> tuple[str, str] | None:
        """(id, type) of the object ``name`` names, or None; asks one long-lived process.

        ``rev-parse`` costs a process per question, and a command asks
        dozens; ``cat-file --batch-check`` answers them all, reading refs
        and objects afresh each time (a ref another process moved meanwhile
        is seen moved). Where that process cannot run, ``rev-parse`` does.
        """
        log.debug("lookup %s (git cat-file --batch-check, one process)  (in %s)", name, self.path)
        cmd = self.__dict__.get("_batch")
        if cmd is None:
            cmd = self.__dict__["_batch"] = _Cmd(str(self.path))
        try:
            sha, kind, _ = cmd.get_object_header(name)
        except ValueError:
            return None  # missing or ambiguous
        except Exception:  # the process could not start, or died: ask git directly
            self.__dict__.pop("_batch", None)
            status, out, _ = execute(self.path, ["rev-parse", "-q", "--verify", name])
            if status != 0 or not isinstance(out, str):
                return None
            status, kind_out, _ = execute(self.path, ["cat-file", "-t", out.strip()])
            return (out.strip(), str(kind_out).strip()) if status == 0 else None
        return _text(sha), _text(kind)

    def object_data(self, oid: str, kind: str) -> bytes | None:
        """Object ``oid`` if it is a ``kind``, from one long-lived ``cat-file --batch``.

        None when it is missing, of another type, or the process cannot
        run (callers then ask git directly, and get its error).
        """
        log.debug("read %s (git cat-file --batch, one process)  (in %s)", oid, self.path)
        cmd = self.__dict__.get("_batch")
        if cmd is None:
            cmd = self.__dict__["_batch"] = _Cmd(str(self.path))
        try:
            _, got, _, data = cmd.get_object_data(oid)
        except Exception:  # missing, or the process died: let the caller ask git itself
            self.__dict__.pop("_batch", None)
            return None
        return bytes(data) if _text(got) == kind else None

    def git_bytes(self, *argv: str, env: Mapping[str, str] | None = None) -> bytes:
        status, out, err = execute(self.path, argv, env=env, raw=True)
        if status != 0:
            raise GitFailed(argv, status, err)
        assert isinstance(out, bytes)
        return out

    def git_status(self, *argv: str, env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
        """(status, stdout, stderr) for commands whose failure is an answer."""
        status, out, err = execute(self.path, argv, env=env)
        assert isinstance(out, str)
        return status, out, err

    def git_input(self, *argv: str, data: bytes, env: Mapping[str, str] | None = None) -> bytes:
        """Run git with ``data`` on stdin; its raw stdout."""
        with input_file(data) as path:
            status, out, err = execute(self.path, argv, env=env, stdin=path, raw=True)
        if status != 0:
            raise GitFailed(argv, status, err)
        assert isinstance(out, bytes)
        return out
