"""Running git: argv lists, an explicit directory, every argv logged.

GitPython is used only as a command runner (``git.cmd.Git.execute``): it
gives the exit status, both streams and good errors without a shell. This
module is the only place that starts a git process; the rest of the
package builds on :class:`Runner`.

A git failure whose cause is outside series (a lock file left by another
git, a full or read-only disk, a damaged object store or index, git missing
from PATH) is told apart from series' own mistakes here, from git's words
(:func:`environment_fault`): ``cli.main`` reports those as a clear exit 1
naming the file or repository, not as an internal error. A damaged index
that git would read as it is (it checks no checksum) is refused before git
starts (:func:`refuse_damaged_index`, series.git.index_file).

Commands that *produce content* (patch files, imported trees, applied
commits) run with the user's and the system's git configuration switched
off (``HERMETIC``), so the same inputs give the same bytes and the same
commit ids on every machine.

Every git process runs in the repository ``cwd`` names and nowhere else,
and reaches other repositories only by the transports ``ALLOWED_PROTOCOLS``
lists (docs/hardening.md, "Command execution and hostile URLs"):

* The variables that locate or configure a repository for one git process
  (``INHERITED``: ``GIT_DIR``, ``GIT_INDEX_FILE``, ``GIT_CONFIG_PARAMETERS``
  ...) are dropped from series' own environment before git starts. A git
  hook (the pre-push hook runs series) or a ``git -c ...`` alias passes
  them down, and they would point series' git calls at the repository
  being pushed, or configure its cache. GitPython builds a child's
  environment from ``os.environ`` and can add to it, not remove from it,
  so they are removed there; git drops the same list itself when it
  works in another repository (``git rev-parse --local-env-vars``).
* ``GIT_ALLOW_PROTOCOL`` limits fetch, ls-remote and push to ``file``
  (local paths), ``git``, ``http(s)`` and ``ssh``: no ``ext::`` command
  and no other remote helper, whatever ``protocol.*.allow`` the user's or
  a repository's configuration says (the variable wins over them). A
  user who needs a remote helper sets ``GIT_ALLOW_PROTOCOL`` themselves.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

# Without git on PATH, importing GitPython raises ImportError with a page of
# advice; "quiet" defers that to the first command, where execute() says it.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

from series.errors import InternalError, RefusedError, SeriesError
from series.faults import point as fault_step
from series.git import leftovers
from series.git.child import (
    Running,
    Spawned,
    end,
    finish_all,
    gitpython,
    reap_within,
    run_child,
    spawn,
)
from series.git.child import abandon as abandon_child
from series.git.child import start as start_child
from series.git.inherited import ALLOWED_PROTOCOLS, inherited
from series.git.version import ensure as _ensure_version
from series.logs import debug

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    import signal as _signal
    from typing import BinaryIO

    from git.cmd import Git as _Cmd
else:
    import _signal  # loaded at start-up: signal's numbers without its enums

# The keys of a repository's own configuration (.git/config: the checkout's, the cache
# repository's) that change the bytes a content-producing command writes or the answer it
# gives, each pinned to git's default (docs/hardening.md, "A repository's own git
# configuration"). Configuration from the environment (GIT_CONFIG_COUNT) wins over every
# file. A multi-valued key (format.to, format.cc, format.headers) or one with no value to
# reset it (format.attach, diff.external, textconv drivers) is switched off by a flag of
# the command instead (series.git.diffs).
PINNED = (
    ("apply.ignoreWhitespace", "no"),
    ("apply.whitespace", "warn"),
    ("am.keepcr", "false"),
    ("am.messageId", "false"),
    ("am.threeWay", "false"),
    ("color.diff", "false"),
    ("color.ui", "false"),
    ("commit.gpgSign", "false"),
    ("core.abbrev", "auto"),
    ("core.attributesFile", os.devnull),
    ("core.autocrlf", "false"),
    ("core.bigFileThreshold", "512m"),
    ("core.eol", "native"),
    ("core.quotePath", "true"),
    ("core.safecrlf", "warn"),
    ("core.whitespace", "blank-at-eol,blank-at-eof,space-before-tab"),
    ("diff.algorithm", "myers"),
    ("diff.context", "3"),
    ("diff.indentHeuristic", "true"),
    ("diff.interHunkContext", "0"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.noprefix", "false"),
    ("diff.orderFile", os.devnull),
    ("diff.relative", "false"),
    ("diff.renames", "true"),
    ("diff.submodule", "short"),
    ("diff.suppressBlankEmpty", "false"),
    ("format.coverLetter", "false"),
    ("format.encodeEmailHeaders", "true"),
    ("format.forceInBodyFrom", "false"),
    ("format.from", "false"),
    ("format.mboxrd", "false"),
    ("format.noprefix", "false"),
    ("format.notes", "false"),
    ("format.numbered", "auto"),
    ("format.signOff", "false"),
    ("format.subjectPrefix", "PATCH"),
    ("format.thread", "false"),
    ("format.useAutoBase", "false"),
    ("i18n.commitEncoding", "UTF-8"),
    ("i18n.logOutputEncoding", "UTF-8"),
    ("log.showSignature", "false"),
    ("mailinfo.scissors", "false"),
    ("merge.conflictStyle", "merge"),
    ("merge.directoryRenames", "conflict"),
    ("merge.renames", "true"),
    ("merge.renormalize", "false"),
)


def _pins() -> dict[str, str]:
    """:data:`PINNED` as git's configuration from the environment (git 2.31 and later)."""
    env = {"GIT_CONFIG_COUNT": str(len(PINNED))}
    for n, (key, value) in enumerate(PINNED):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


# Switches off ~/.gitconfig and /etc/gitconfig for content-producing commands, a
# GIT_DIFF_OPTS of the user's (its -uN wins even over -U3: patch files, patch-ids kept),
# and pins what a repository's own configuration could change (PINNED). The user's own
# GIT_CONFIG_COUNT/KEY_n/VALUE_n never reach git (INHERITED, _strip_inherited).
HERMETIC = {
    "GIT_ATTR_NOSYSTEM": "1",  # /etc/gitattributes (the user's: core.attributesFile, PINNED)
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_DIFF_OPTS": "",
    **_pins(),
}
ZERO = "0" * 40


class GitFailed(InternalError):
    """A git command failed in a way its caller did not expect.

    Callers that expect a failure catch it (or use ``Runner.git_status``);
    one that escapes to ``cli.main`` is reported as an internal error with
    git's own words, because series asked git for something it should not
    have, unless :meth:`fault` finds the cause outside series.
    ``cwd`` is the repository git ran in; ``source``, the one it fetched
    from (a damaged object there shows as git's ``remote:`` lines).
    """

    def __init__(
        self,
        argv: Sequence[str],
        status: int,
        stderr: str,
        *,
        cwd: Path | None = None,
        source: Path | None = None,
        message: str | None = None,
    ) -> None:
        super().__init__(
            message or f"git {' '.join(argv[:3])} failed unexpectedly (exit {status})",
            why=stderr.strip() or "(git printed nothing)",
        )
        self.argv = list(argv)
        self.status = status
        self.stderr = stderr
        self.cwd = cwd
        self.source = source
        self.doing = message or f"git {' '.join(argv[:3])}"

    def fault(self) -> EnvironmentFault | None:
        """The clear error for a cause outside series, or None for series' own mistake."""
        return environment_fault(
            self.stderr, self.cwd, source=self.source, doing=self.doing, status=self.status
        )


class EnvironmentFault(SeriesError):
    """git failed for a cause outside series: a lock, the disk, a damaged repository.

    ``kind`` is one of ``lock``, ``full``, ``read-only``, ``permission``,
    ``size-limit``, ``corrupt``, ``index`` (the work tree's index file:
    :func:`index_fault`); ``repo`` the repository concerned, when known (the caller
    may add a way on that only it knows, e.g. that a damaged cache can be
    deleted).
    """

    def __init__(
        self, kind: str, repo: Path | str | None, message: str, *, why: str, hint: str
    ) -> None:
        super().__init__(message, why=why, hint=hint)
        self.kind = kind
        self.repo = repo


# Patterns, compiled when first searched (re's cache): only a failed git command needs them,
# and compiling them cost every command that imports this module about a millisecond.
_LOCK = r"Unable to create '([^']+\.lock)': File exists"
# git's words where it could not read a file: read_in_full's open ("error: open(...)"),
# hash-object's "could not open '...' for reading"
_READING = r"""for reading: Permission denied$|^(error: |fatal: )?open\("""
_FAULTS = (  # (kind, git's words); the first that matches a line wins
    ("full", r"No space left on device|Disk quota exceeded"),
    ("read-only", r"Read-only file system"),
    ("permission", r"Permission denied$"),  # not ssh's "(publickey)."
    (
        "index",  # the work tree's index (read-cache.c), not a pack's .idx ("index file X is")
        r"index file smaller than expected|bad signature 0x[0-9a-f]{8}$|bad index version|"
        r"index file corrupt|bad index file sha1 signature|unknown index entry format|"
        r"malformed name field in the index|extension, which we do not understand|"
        r"broken index, expect|unordered stage entries|multiple stage entries for merged|"
        r"index file open failed",
    ),
    (
        "corrupt",  # not "corrupt patch": that is a patch file, not the repository
        r"corrupt loose object|(loose|packed) object .* is corrupt|repository corruption|"
        r"inflate: data stream error|unable to unpack [0-9a-f]+ header|"
        r"unable to read [0-9a-f]{40}|packfile .* cannot be accessed|"
        r"bad object [0-9a-f]{40}|object file .* is empty",
    ),
)


# a git killed by SIGXFSZ: -25 from Python, 128 + 25 through a shell (a wrapper on PATH)
_SIZE_LIMIT = (-_signal.SIGXFSZ, 128 + _signal.SIGXFSZ)
# a git child killed so (a fetch's unpack-objects or index-pack), as its parent says it
_CHILD_SIZE_LIMIT = rf"died of signal {int(_signal.SIGXFSZ)}$"  # compiled where used


def _fsize_limit() -> str:
    """The file size limit of this process (``ulimit -f``), in bytes, as words."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return "unlimited now" if soft == resource.RLIM_INFINITY else f"{soft} bytes"


def lock_fault(path: Path | str, repo: Path | str | None, context: str = "") -> EnvironmentFault:
    """A git lock file that exists and is not series' own: what to say, one way everywhere."""
    return EnvironmentFault(
        "lock",
        repo,
        f"git cannot lock {path}: the file exists",
        why="another git process may be running in that repository (an editor opened "
        "by git commit, an IDE), or one crashed and left the lock file behind (series "
        f"removes only the locks of its own killed runs){context}",
        hint="wait for that git process to end; if none is running, remove the file "
        f"(rm '{path}') and run the command again",
    )


def environment_fault(
    stderr: str,
    repo: Path | None,
    *,
    source: Path | str | None = None,
    doing: str = "",
    status: int | None = None,
) -> EnvironmentFault | None:
    """The error to show when git's ``stderr`` says the cause is outside series, else None.

    ``repo`` is where git ran, ``source`` the repository it fetched from;
    ``doing`` what series was doing, kept in the why; ``status`` git's exit
    status. Only git's own wording of faults in the machine (locks, disk,
    permissions, damaged objects) counts, and a git killed by SIGXFSZ (a
    file size limit, ``ulimit -f``: it says nothing, its status is -25, or
    153 through a shell), or a child of git's so killed (a fetch's
    ``unpack-objects``: git says it "died of signal 25"); anything else stays
    an internal error.
    """
    import re  # a git that failed: not the everyday path (re imports enum: 2 ms)

    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    context = f"\n(while: {doing})" if doing else ""
    if status in _SIZE_LIMIT or any(
        "File too large" in line or re.search(_CHILD_SIZE_LIMIT, line) for line in lines
    ):
        named = str(repo) if repo is not None else "a git repository"
        said = lines[-1] if lines else f"nothing (killed by SIGXFSZ, exit status {status})"
        return EnvironmentFault(
            "size-limit",
            repo,
            f"file size limit exceeded (ulimit -f) while git wrote in {named}",
            why=f"a file git was writing grew past the limit on the size of files this "
            f"process may write (ulimit -f is {_fsize_limit()}); git said: {said}{context}",
            hint="raise the limit (ulimit -f unlimited, or ask whoever set it), then run the "
            "command again",
        )
    lock = re.search(_LOCK, stderr)
    if lock:
        return lock_fault(lock.group(1), repo, context)
    for kind, words in _FAULTS:
        hit = next((line for line in lines if re.search(words, line)), None)
        if hit is None:
            continue
        # upload-pack's own "remote:" lines reach us or not (a side band that
        # may be cut when it dies); its last words always say "remote side"
        remote = hit.startswith("remote:") or "on the remote side" in hit
        where = source if source is not None and remote else repo
        named = str(where) if where is not None else "a git repository"
        git_said = f"git said: {hit.removeprefix('remote:').strip()}{context}"
        if kind == "full":
            return EnvironmentFault(
                kind,
                where,
                f"no space left on the device holding {named}",
                why=git_said,
                hint=f"free some space there (df -h '{named}'), then run the command again",
            )
        if kind == "read-only":
            return EnvironmentFault(
                kind,
                where,
                f"{named} is on a read-only file system",
                why=git_said,
                hint="remount it read-write or work on a writable copy, then run the command again",
            )
        if kind == "permission" and re.search(_READING, hit):
            # a file git reads (an untracked file of the user's a snapshot or a check
            # hashes, one it stashes): "writing" and "make it writable" sent the user
            # to the wrong permission
            return EnvironmentFault(
                kind,
                where,
                f"permission denied reading a file in {named}",
                why=git_said,
                hint="make the file git names readable by you (ls -l), or move it away, "
                "then run the command again",
            )
        if kind == "permission":
            return EnvironmentFault(
                kind,
                where,
                f"permission denied writing in {named}",
                why=git_said,
                hint=f"make it writable by you (ls -l '{named}'), then run the command again",
            )
        if kind == "index":
            return index_fault(where, git_said)
        return EnvironmentFault(
            kind,
            where,
            f"the git repository {named} is damaged",
            why=git_said,
            hint=f"see what is damaged: git -C '{named}' fsck",
        )
    return None


def index_fault(work_tree: Path | str | None, said: str) -> EnvironmentFault:
    """An index git cannot use as it is (series.git.index_file): what to say, one way
    everywhere. ``said``: what is wrong, in git's words. The way on keeps the damaged
    file and lets git make the index again from HEAD (``reset``: the files are left as
    they are; what was staged shows as changes not staged)."""
    named = str(work_tree) if work_tree is not None else "the checkout"
    index = os.path.join(named, ".git", "index")
    return EnvironmentFault(
        "index",
        work_tree,
        f"the index of {named} is damaged",
        why=f"{said}\nseries changed nothing: it reads the checkout's index (its uncommitted "
        "changes) before it writes anything, and stopped there; the commits, branches, HEAD "
        "and files of the checkout, patches/ and series.toml are as they were",
        hint="keep a copy, and have git make the index again from HEAD (it leaves your "
        f"files as they are):\nmv '{index}' '{index}.damaged' && git -C '{named}' reset -q\n"
        "what was staged then shows as changes not staged (a staged version that differed "
        f"from its file is still among the repository's objects: git -C '{named}' fsck "
        "--lost-found lists it); then run the command again",
    )


# git writes a loose object as a temporary file in its fan-out directory
# (objects/xx/), creating that directory first when it is missing; a ``repack -d`` in
# another process (another series run's series.upstream.pack_cache, a ``git gc``)
# removes the fan-out directories it emptied, and one removed between the two fails
# the write with these words. ``apply --cached`` then says the patch does not apply.
_RACED = "unable to create temporary file: No such file or directory"
# The commands that write nothing lasting but objects (and a scratch index, written
# at their end only): run again whole, they give the same answer.
_RERUNNABLE = frozenset({"hash-object", "write-tree", "commit-tree", "mktree", "merge-tree"})
RERUNS = 4  # a second run almost always succeeds: the window is a few instructions wide


def _raced(argv: Sequence[str], err: str) -> bool:
    """Whether ``git argv``, which printed ``err``, failed only by that race and is run
    again."""
    command = leftovers.verb(argv)
    rerunnable = command in _RERUNNABLE or (command == "apply" and "--cached" in argv)
    return rerunnable and _RACED in err


def execute(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
    raw: bool = False,
    stall: float | None = None,
    light: bool = False,
) -> tuple[int, str | bytes, str]:
    """Run ``git argv`` in ``cwd``: (status, stdout, stderr); never raises on status.

    git, and whatever it starts, ends with series (series.git.child).
    ``stall``: stop git once it and its helpers have been silent that many
    seconds (network operations); its stderr then begins with ``no
    answer: no data for N s``. ``light``: a read-only query started without
    GitPython (series.git.child.plain), for a command whose only git process
    it may be. A command that only writes objects and lost its object's
    directory to a concurrent repack (``_RACED``) is run again, up to RERUNS times.
    """
    for _ in range(RERUNS):
        done = _execute_once(cwd, argv, env=env, stdin=stdin, raw=raw, stall=stall, light=light)
        if done[0] == 0 or not _raced(argv, done[2]):
            return done
        debug("series.git", "git %s: %s: run again", leftovers.verb(argv), _RACED)
    return _execute_once(cwd, argv, env=env, stdin=stdin, raw=raw, stall=stall, light=light)


def _execute_once(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    stdin: Path | None,
    raw: bool,
    stall: float | None,
    light: bool,
) -> tuple[int, str | bytes, str]:
    """:func:`execute`, one git process."""
    debug("series.git", "git %s  (in %s)", " ".join(argv), cwd)
    light = light or _LIGHT[0]
    _ensure_version(_executable(light))  # an old git is refused before anything is written
    refuse_blocking_files(cwd)
    refuse_blocking_refs(cwd, argv, stdin)
    refuse_damaged_index(cwd, argv, env)
    record = leftovers.begin(cwd, argv, env)
    _fault_point(argv)
    _strip_inherited()
    stream = stdin.open("rb") if stdin is not None else None
    status = -1  # git did not end by itself: interrupted, or it could not start
    try:
        done = run_child(
            cwd, ["git", *argv], env=_environment(env), stdin=stream, stall=stall, light=light
        )
        status = done.status
    except Exception as exc:  # no git, or (GitPython says the same) no such cwd
        _why_not_started(exc, cwd)
        raise
    finally:
        if stream is not None:
            stream.close()
        leftovers.end(record, argv, status)
    err = _utf8(done.err).removesuffix("\n")
    if done.stalled:
        err = f"no answer: no data for {stall:g} s, so git was stopped\n{err}"
    return done.status, done.out if raw else _utf8(done.out), err


def execute_together(
    cwd: Path, calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]]
) -> list[tuple[int, bytes, str]]:
    """:func:`execute` (raw) of each ``(argv, env)`` of ``calls``, all running at once:
    their (status, raw stdout, stderr), in order. For independent commands, one on each
    core: the export's two halves (series.stack.rebase_finish), the ``merge-file`` of
    each conflicted file of one merge (series.git.mergetree)."""
    return start_together(cwd, calls).finish()


class Fed:
    """An input of :func:`start_together`: git's stdin a pipe the caller writes later
    (:meth:`Started.feed`)."""

    __slots__ = ()


FED = Fed()


def start_together(
    cwd: Path,
    calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]],
    inputs: Sequence[bytes | Fed | None] = (),
) -> Started:
    """Each ``(argv, env)`` of ``calls`` started now (its stdin ``inputs``' bytes, where
    given; :data:`FED`: a pipe the caller writes later, :meth:`Started.feed`), to be read
    by :meth:`Started.finish` (or :meth:`Started.result`) once the caller has done other
    work meanwhile; the caller calls :meth:`Started.abandon` on any exception between
    the two.

    Each is started as :func:`execute` starts one (the same checks, the record of a
    command that takes a lock, the fault step, one after the other, in order), without
    GitPython (series.git.child.start).
    """
    started = Started(cwd, calls)
    try:
        for k, (argv, env) in enumerate(calls):
            debug("series.git", "git %s  (in %s, started beside)", " ".join(argv), cwd)
            _ensure_version(_executable(True))
            refuse_blocking_files(cwd)
            refuse_blocking_refs(cwd, argv, None)
            refuse_damaged_index(cwd, argv, env)
            record = leftovers.begin(cwd, argv, env)
            try:
                _fault_point(argv)
                _strip_inherited()
                data = inputs[k] if k < len(inputs) else None
                if data is None:
                    running = start_child(cwd, ["git", *argv], _environment(env))
                elif isinstance(data, Fed):
                    running = _start_fed(started, k, cwd, argv, env)
                else:
                    with input_file(data) as path, path.open("rb") as stream:
                        running = start_child(cwd, ["git", *argv], _environment(env), stream)
            except BaseException as exc:
                leftovers.end(record, argv, -1)
                if isinstance(exc, Exception):
                    _why_not_started(exc, cwd)
                raise
            started.running.append((running, record))
    except BaseException:
        started.abandon()
        raise
    return started


def _start_fed(
    started: Started, k: int, cwd: Path, argv: Sequence[str], env: Mapping[str, str] | None
) -> Running:
    """``git argv`` started with its stdin a pipe whose writing end ``started`` keeps (not
    inherited by git nor by any other process series starts: git sees its end of input
    when series closes it, or ends)."""
    source, sink = os.pipe()
    try:
        with os.fdopen(source, "rb", buffering=0) as stream:  # git's copy stays open
            running = start_child(cwd, ["git", *argv], _environment(env), stream)
    except BaseException:
        os.close(sink)
        raise
    started.sinks[k] = sink
    return running


def start(
    cwd: Path, argv: Sequence[str], *, env: Mapping[str, str] | None = None, fed: bool = False
) -> Started:
    """:func:`run` of ``git argv`` in ``cwd``, started now (:func:`start_together`) and
    read by :meth:`Started.result`: the caller works on the other core meanwhile
    (``series rebase --abort``: its ``git status`` while it reads the rebase's state, its
    ``read-tree`` while it puts the project files back). Only for a light process
    (within :func:`light_processes`, subprocess not imported); else git runs to its end
    here, as :func:`run` runs it. ``fed``: git reads its stdin, written later
    (:meth:`Started.feed`: an ``update-ref --stdin`` started while the files move, its
    transaction written once they have); not light, git runs to its end when fed."""
    if not _LIGHT[0] or "subprocess" in sys.modules:
        if fed:
            return Started(cwd, [(argv, env)], deferred=True)
        status, out, err = execute(cwd, argv, env=env, raw=True)
        assert isinstance(out, bytes)
        return Started(cwd, [(argv, env)], [(status, out, err)])
    return start_together(cwd, [(argv, env)], [FED] if fed else [])


def _why_not_started(exc: Exception, cwd: Path) -> None:
    """Raise what stopped git from starting (``exc``): git missing, or no such ``cwd``;
    nothing when ``exc`` is not that (the caller raises it)."""
    if not _not_started(exc):
        return
    import shutil  # only to say why git did not start

    if shutil.which("git") is None:
        raise GitMissing() from None
    raise FileNotFoundError(errno.ENOENT, "no such directory to run git in", str(cwd)) from None


class Started:
    """git commands :func:`start_together` (or :func:`start`) started: read by
    :meth:`finish` (or :meth:`result`) or ended by :meth:`abandon` (each once; after one,
    the other does nothing). ``answers``: what a command run to its end already said."""

    def __init__(
        self,
        cwd: Path,
        calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]],
        answers: list[tuple[int, bytes, str]] | None = None,
        *,
        deferred: bool = False,
    ) -> None:
        self.cwd = cwd
        self.calls = calls
        self.running: list[tuple[Running, Path | None]] = []  # each, and its record
        self.answers = answers
        self.done = answers is not None
        self.sinks: dict[int, int] = {}  # the writing end of each stdin fed later, by call
        self.deferred = deferred  # one fed call, not started: run to its end when fed

    def feed(self, data: bytes, k: int = 0) -> None:
        """Write ``data`` to the stdin of call ``k`` (started with :data:`FED`) and close
        it: git reads its end of input. The refs an ``update-ref --stdin`` names there
        are looked at first, as :func:`execute` looks at its stdin's
        (:func:`refuse_blocking_refs`); a git that ended meanwhile stops the writing, and
        :meth:`finish` says how it ended."""
        argv, env = self.calls[k]
        try:
            _refuse_blocking_input(self.cwd, argv, data)
        except BaseException:
            self.abandon()
            raise
        if self.deferred:
            self.deferred = False
            with input_file(data) as path:
                status, out, err = execute(self.cwd, argv, env=env, stdin=path, raw=True)
            assert isinstance(out, bytes)
            self.answers, self.done = [(status, out, err)], True
            return
        sink = self.sinks.pop(k)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(sink, view) :]
        except BrokenPipeError:
            pass  # git ended without reading it all: finish says how
        except BaseException:
            os.close(sink)
            self.abandon()
            raise
        os.close(sink)

    def _close_sinks(self) -> None:
        """The stdin of each call not fed: its end of input (git ends with nothing read)."""
        while self.sinks:
            with contextlib.suppress(OSError):
                os.close(self.sinks.popitem()[1])

    def finish(self) -> list[tuple[int, bytes, str]]:
        """(status, raw stdout, stderr) of each, in order, read in one loop (none waits
        on a full pipe while another is read). One that lost its object's directory to
        a concurrent repack (``_RACED``) is run again alone. A stdin not fed ends
        empty."""
        if self.deferred:
            self.feed(b"")
        if self.answers is not None:
            return self.answers
        assert not self.done, "series.git.run.Started: abandoned already"
        self._close_sinks()
        try:
            outcomes = finish_all([running for running, _ in self.running])
        except BaseException:
            self.abandon()
            raise
        self.done = True
        results: list[tuple[int, bytes, str]] = []
        for (argv, env), (_, record), outcome in zip(
            self.calls, self.running, outcomes, strict=True
        ):
            leftovers.end(record, argv, outcome.status)
            err = _utf8(outcome.err).removesuffix("\n")
            if outcome.status != 0 and _raced(argv, err):
                status, out, err = execute(self.cwd, argv, env=env, raw=True)
                assert isinstance(out, bytes)
                results.append((status, out, err))
                continue
            results.append((outcome.status, outcome.out, err))
        self.answers = results
        return results

    def result(self) -> str:
        """The one command's stdout, as :func:`run` gives it (``GitFailed`` on a non-zero
        status)."""
        ((status, out, err),) = self.finish()
        if status != 0:
            raise GitFailed(self.calls[0][0], status, err, cwd=self.cwd)
        return _utf8(out)

    def abandon(self) -> None:
        """End every one still running, unread (series.git.child.abandon), with what it
        started; a move of the checkout cut short so stays recorded (series.git.leftovers),
        as when series is interrupted in :func:`run`."""
        self._close_sinks()
        self.deferred = False
        if self.done:
            return
        self.done = True
        for (argv, _), (running, record) in zip(self.calls, self.running, strict=False):
            try:
                abandon_child(running)
            finally:
                leftovers.end(record, argv, -1)


_CHECKED: set[str] = set()  # the directories refuse_blocking_files found nothing in


def refuse_blocking_files(cwd: Path | str) -> None:
    """Refuse (refuse_not_plain) to start git in ``cwd`` when a file every git command opens
    there is no plain file (series.git.inprogress.blocking: a FIFO at HEAD, config,
    packed-refs, the loose ref of HEAD ... makes git wait for ever), nor when a
    configuration file git reads first, outside any repository, is one git would wait on
    (series.git.inprogress.config_blocking: ``~/.gitconfig``, ``/etc/gitconfig`` ...).
    Looked at once per directory and process (the configuration files once per process):
    the few ``stat`` calls are paid by the first git there only."""
    key = str(cwd)
    if key in _CHECKED:
        return
    from series.git.inprogress import blocking, config_blocking  # rule 12: not for list

    config = config_blocking()
    if config is not None:
        refuse_blocking_config(*config)
    found = blocking(key)
    if found is not None:
        refuse_not_plain(*found, "git")
    _CHECKED.add(key)


# The git commands series runs in a checkout that read its index (unless their environment
# names a scratch index, GIT_INDEX_FILE): status and the moves of the files (read-tree,
# checkout, stash), the looks at it (diff-index, diff-files, ls-files, check-ignore), and
# the writes that start from it (update-index, write-tree, add, apply --cached). The rest
# of git's index readers are listed too, so that a command series adds later is checked.
READS_INDEX = frozenset(
    {
        *("add", "am", "apply", "check-ignore", "checkout", "checkout-index", "cherry-pick"),
        *("clean", "commit", "diff-files", "diff-index", "ls-files", "merge", "merge-index"),
        *("mv", "read-tree", "rebase", "reset", "restore", "revert", "rm", "stash", "status"),
        *("switch", "update-index", "write-tree"),
    }
)
# The index files found sound, each with the identity (inode, size, times) it had then.
_INDEX_SOUND: dict[str, tuple[int, ...]] = {}


def refuse_damaged_index(
    cwd: Path | str, argv: Sequence[str], env: Mapping[str, str] | None
) -> None:
    """Refuse (:func:`index_fault`) to start ``git argv`` in ``cwd`` when it reads the work
    tree's own index (:data:`READS_INDEX`; not a scratch one, ``GIT_INDEX_FILE``)
    and that file is damaged, as git would say if it checked (series.git.index_file.damage:
    git 2.39 reads an index whose bytes changed as it is). Checked again only when the
    file's identity moved since it was found sound: once per command and index git writes."""
    if env is not None and ("GIT_INDEX_FILE" in env or "GIT_DIR" in env):
        return
    if leftovers.verb(argv) not in READS_INDEX:
        return
    from series.git import index_file  # rule 12: only a command that reads an index

    path = index_file.index_path(str(cwd))
    if path is None:
        return
    try:
        found = os.stat(path)
    except OSError:
        return  # none (git reads that as empty), or git's to fail on
    identity = (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    if _INDEX_SOUND.get(path) == identity:
        return
    damage = index_file.damage(path)
    if damage is not None:
        doing = f"git {' '.join(argv[:3])}"
        raise index_fault(cwd, f"{path}: {damage}\n(found before: {doing})")
    _INDEX_SOUND[path] = identity


# git commands that read every ref of the repository: a fetch's negotiation, a push,
# a repack or gc keeping what the refs reach (for-each-ref: those under its patterns)
_LIST_EVERY_REF = frozenset({"fetch", "push", "repack", "gc", "pack-refs", "show-ref"})
_REFS_CHECKED: set[tuple[str, str]] = set()  # (directory, ref or prefix) found not waiting


def refuse_blocking_refs(cwd: Path | str, argv: Sequence[str], stdin: Path | None) -> None:
    """Refuse (refuse_not_plain) ``git argv`` in ``cwd`` when it would read a loose ref file
    that makes it wait for ever (a FIFO: series.git.inprogress.refs_blocking): under the
    patterns of a ``for-each-ref``, anywhere under ``refs/`` for a command that reads every
    ref (``fetch``, ``repack`` ...), each ref an ``update-ref --stdin`` changes (git reads
    its value). The refs a command names otherwise are looked at as it asks for them
    (:func:`refuse_blocking_ref`). Only commands that read those refs anyway, each
    directory and ref once per process."""
    command = leftovers.verb(argv)
    if command == "for-each-ref":
        after = list(argv[list(argv).index(command) + 1 :])
        patterns = [a for a in after if not a.startswith("-")] or ["refs/"]
        if any(not p.startswith("refs/") or "*" in p or "?" in p or "[" in p for p in patterns):
            patterns = ["refs/"]  # git matches them against every ref
        _refuse_walk(str(cwd), patterns)
    elif command in _LIST_EVERY_REF:
        _refuse_walk(str(cwd), ["refs/"])
    elif stdin is not None:
        _refuse_blocking_input(cwd, argv, stdin.read_bytes())


def _refuse_blocking_input(cwd: Path | str, argv: Sequence[str], data: bytes) -> None:
    """:func:`refuse_blocking_refs` of ``data``, ``git argv``'s stdin: each ref an
    ``update-ref --stdin`` changes."""
    if leftovers.verb(argv) != "update-ref" or "--stdin" not in argv:
        return
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        words = line.split(" ")
        if len(words) > 1 and words[0] in ("update", "create", "delete", "verify"):
            refuse_blocking_ref(cwd, words[1])


def _refuse_walk(cwd: str, prefixes: Sequence[str]) -> None:
    from series.git.inprogress import refs_blocking  # rule 12: not for list

    for prefix in prefixes:
        key = (cwd, prefix)
        if key in _REFS_CHECKED:
            continue
        found = refs_blocking(cwd, prefix)
        if found is not None:
            refuse_not_plain(found, "plain file", "git")
        _REFS_CHECKED.add(key)


def refuse_blocking_ref(cwd: Path | str, name: str) -> None:
    """Refuse (refuse_not_plain) to ask git in ``cwd`` for the revision ``name`` when the
    loose ref file it would read is a FIFO (series.git.inprogress.ref_blocking): a branch
    of the series while HEAD is detached, one of series' own refs. Once per name and
    process: a few ``stat`` calls the first time."""
    key = (str(cwd), name)
    if key in _REFS_CHECKED:
        return
    from series.git.inprogress import ref_blocking  # rule 12: not for list

    found = ref_blocking(key[0], name)
    if found is not None:
        refuse_not_plain(found, "plain file", "git")
    _REFS_CHECKED.add(key)


def refuse_blocking_config(scope: str, path: str) -> None:
    """Raise the refusal of a configuration file outside any repository that every git
    reads first (``scope``: ``system``, ``global``) and would wait on for ever."""
    other = "GIT_CONFIG_NOSYSTEM=1" if scope == "system" else "GIT_CONFIG_GLOBAL=FILE"
    raise RefusedError(
        f"refusing to run git: {path} is not a plain file",
        why=f"every git command reads it first (git's {scope} configuration, "
        "`git config --show-origin --list`); a FIFO or a device in its place makes every git "
        "wait for ever",
        hint=f"see what it is (ls -l '{path}'); if no program of yours put it there, "
        f"remove it (rm '{path}'), or have git read no such file ({other}), "
        "then run the command again",
    )


def refuse_not_plain(found: str, kind: str, command: str) -> None:
    """Raise the refusal of a file ``command`` (git, git status) opens that is no plain
    file, or of a directory git looks in that is no directory: its path, and the way on."""
    raise RefusedError(
        f"refusing to run {command}: {found} is not a {kind}",
        why=f"{command} opens it (git keeps its state there as plain files and "
        "directories); a FIFO, a socket or a device in its place makes git wait for ever",
        hint=f"see what it is (ls -l '{found}'); if no program of yours put it there, "
        f"remove it (rm '{found}'), then run the command again",
    )


_LIGHT = [False]  # every git process started without GitPython (within light_processes)


@contextmanager
def light_processes() -> Iterator[None]:
    """Within it, start every git process without importing GitPython (``light``), the
    long-lived ``cat-file`` of :meth:`Runner.lookup` and :meth:`Runner.object_data` too.

    For a command whose git work is a few queries (``series branches``, ``series
    range-diff``): importing GitPython (and its two ``git version``) costs more than
    that work. The processes are the same ones (series.git.child.plain), but for the
    long-lived ``cat-file``: one ``--batch-command`` per repository answers both.
    """
    before = _LIGHT[0]
    _LIGHT[0] = True
    try:
        yield
    finally:
        _LIGHT[0] = before


_AT_ONCE = 256  # questions to cat-file written at once: their answers fit in a pipe


class _PlainBatch:
    """A long-lived ``cat-file --batch-command`` started without GitPython: one process
    answering both what GitPython's ``get_object_header`` (``info``) and
    ``get_object_data`` (``contents``) answer, one name at a time.

    Started by series.git.child.spawn (as ``plain`` starts a process, without
    importing subprocess, and its threading, selectors and locale: a tenth of
    an ``--abort``'s own work), its stdin a pipe series writes the requests to;
    its stderr a pipe nobody reads until it ends, as before.
    """

    def __init__(self, cwd: Path) -> None:
        _strip_inherited()
        _ensure_version("git")
        refuse_blocking_files(cwd)
        argv = ["git", "cat-file", "--batch-command"]
        source, requests = os.pipe()
        try:
            with os.fdopen(source, "rb", buffering=0) as stdin:  # git's copy stays open
                self.proc, out, self.err = spawn(cwd, argv, _environment(None), stdin)
        except BaseException:
            os.close(requests)
            raise
        self.stdin = os.fdopen(requests, "wb")
        self.stdout = os.fdopen(out, "rb")

    def ask(self, name: str, data: bool) -> tuple[str, str, bytes | None] | None:
        """(id, type, data: None unless ``data``) of ``name``, None when git has none.
        Raises OSError or ValueError when the process is gone."""
        command = b"contents " if data else b"info "
        self.stdin.write(command + name.encode("utf-8", "surrogateescape") + b"\n")
        self.stdin.flush()
        return self._answer(data)

    def infos(self, names: Sequence[str]) -> list[tuple[str, str, bytes | None] | None]:
        """:meth:`ask` (``info``) of each of ``names``, the questions written at once and
        the answers read after: one round trip per ``_AT_ONCE`` names, not one per name
        (so many that git's answers would fill the pipe before series reads them are
        never written at once: neither would then wait for the other)."""
        found: list[tuple[str, str, bytes | None] | None] = []
        for k in range(0, len(names), _AT_ONCE):
            chunk = names[k : k + _AT_ONCE]
            lines = (b"info " + n.encode("utf-8", "surrogateescape") + b"\n" for n in chunk)
            self.stdin.write(b"".join(lines))
            self.stdin.flush()
            found += [self._answer(False) for _ in chunk]
        return found

    def _answer(self, data: bool) -> tuple[str, str, bytes | None] | None:
        stdout = self.stdout
        head = stdout.readline()
        if not head.endswith(b"\n"):
            raise ValueError("cat-file ended")
        parts = head[:-1].decode("utf-8", "surrogateescape").rsplit(" ", 2)
        if len(parts) != 3 or not parts[2].isdigit():  # "<name> missing", "<name> ambiguous"
            return None
        sha, kind, size = parts
        if not data:
            return sha, kind, None
        body = stdout.read(int(size) + 1)
        if len(body) != int(size) + 1:
            raise ValueError("cat-file ended")
        return sha, kind, body[:-1]

    def close_input(self) -> None:
        """The end of cat-file's input: it exits, not waited for here (:meth:`__del__`
        reaps it)."""
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()

    def __del__(self) -> None:
        """End cat-file with this object, as GitPython's own does (end of input: it exits),
        killed if it has not within a second."""
        proc = self.__dict__.get("proc")
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()
            self.stdout.close()
            os.close(self.err)
        with contextlib.suppress(OSError):
            status = reap_within(proc.pid, 1)
            if status is None:
                end(proc)
            else:
                proc.returncode = status


class LongLived:
    """A long-lived git process started by :func:`start_long_lived`: its stdin (requests),
    its stdout (answers), and the process (series.git.child.Spawned: what
    series.git.child.end ends)."""

    __slots__ = ("proc", "stdin", "stdout")

    def __init__(self, proc: Spawned, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self.proc = proc
        self.stdin = stdin
        self.stdout = stdout

    @property
    def pid(self) -> int:
        return self.proc.pid


def end_long_lived(proc: LongLived | None, timeout: float) -> None:
    """End a long-lived git process: end of its input (it exits), killed if it has not
    within ``timeout`` seconds (series.git.child.reap_within)."""
    if proc is None or proc.proc.returncode is not None:
        return
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError, ValueError):
            stream.close()
    try:
        status = reap_within(proc.pid, timeout)
    except ChildProcessError:  # reaped already
        proc.proc.returncode = -1
        return
    if status is None:
        end(proc.proc)  # killed, with what it started, and reaped
    else:
        proc.proc.returncode = status


def _not_started(exc: Exception) -> bool:
    """Whether ``exc`` says git could not be started (no git, or no such directory)."""
    if isinstance(exc, FileNotFoundError):  # started without GitPython
        return True
    from git.exc import GitCommandNotFound  # imported by now: run_child started GitPython

    return isinstance(exc, GitCommandNotFound)


class GitMissing(SeriesError):
    """No git to run: every command needs one."""

    def __init__(self) -> None:
        super().__init__(
            "git is not installed or not on PATH",
            why="series runs git for its work; no `git` was found on PATH "
            f"({os.environ.get('PATH', '')})",
            hint="install git (or add the directory holding it to PATH), then run the command "
            "again",
        )


def _utf8(value: str | bytes) -> str:
    """git's output as text: UTF-8 whatever the locale (commit messages are UTF-8).

    GitPython decodes stderr with the locale's encoding (ASCII under
    ``LC_ALL=C``); that is undone, so non-ASCII text stays itself.
    """
    if isinstance(value, str):
        from git.compat import defenc

        value = value.encode(defenc, "surrogateescape")
    return value.decode("utf-8", "surrogateescape")


def _strip_inherited() -> None:
    """Drop the inherited repository variables (GitPython builds on ``os.environ``)."""
    for key in [k for k in os.environ if inherited(k)]:
        del os.environ[key]


def _command(cwd: Path) -> _Cmd:
    """GitPython's runner for ``cwd`` (its long-lived ``cat-file``), with the inherited
    repository variables gone, and refused where a git there would wait for ever."""
    _strip_inherited()
    _ensure_version(_executable(False))
    refuse_blocking_files(cwd)
    return gitpython(cwd)


def _executable(light: bool) -> str:
    """The git a process is started as: ``git`` on PATH, or GitPython's own choice."""
    return "git" if light else os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git"


def net_timeout() -> int:
    """Seconds without data before a network git command gives up (``SERIES_NET_TIMEOUT``).

    Here, not in the remote part that bounds fetches by it (series.git.remote), so that
    the record of unreachable upstreams reads it without importing that part."""
    try:
        return max(1, int(os.environ.get("SERIES_NET_TIMEOUT", "30")))
    except ValueError:
        return 30


def _environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    """What a git process gets on top of series' environment: the transports, no replace
    refs and no grafts, then ``extra``.

    series names commits and trees by id and keeps records by id, so git reads the
    objects themselves, never what ``refs/replace/`` puts in their place
    (``GIT_NO_REPLACE_OBJECTS``) nor the parents ``info/grafts`` gives a commit
    (``GIT_GRAFT_FILE``: an empty file); its diffs never did (series.git.diffs). Read by
    some commands and not by others, a replacement listed every patch as drifting and
    export wrote its content into patch files the branch's commits did not hold; a graft
    made export drop a patch and fold its change into the next one's file."""
    allowed = os.environ.get("GIT_ALLOW_PROTOCOL") or ALLOWED_PROTOCOLS
    return {"GIT_ALLOW_PROTOCOL": allowed, **_OBJECTS_THEMSELVES, **(extra or {})}


_OBJECTS_THEMSELVES = {"GIT_NO_REPLACE_OBJECTS": "1", "GIT_GRAFT_FILE": os.devnull}


_calls = 0


def _fault_point(argv: Sequence[str]) -> None:
    """Fault injection for tests, before each git call.

    ``SERIES_FAULT_KILL_AT=N``: a step of the kill tests (series.faults,
    which counts git calls and series' own writes alike).

    ``SERIES_FAULT_PAUSE_AT=N`` with ``SERIES_FAULT_PAUSE_FILE=F`` pauses
    before the Nth git call instead: it creates ``F.paused``, then waits
    until ``F`` exists, so a test can run a second command while this one
    is held mid-run at a known step (tests/test_trust_lock.py).
    """
    global _calls
    fault_step(f"git {leftovers.verb(argv)}")
    pause_at = os.environ.get("SERIES_FAULT_PAUSE_AT")
    if not pause_at:
        return
    _calls += 1
    go = os.environ.get("SERIES_FAULT_PAUSE_FILE")
    if str(_calls) == pause_at and go:
        Path(go + ".paused").touch()
        while not os.path.exists(go):
            time.sleep(0.02)


def start_long_lived(
    cwd: Path, argv: Sequence[str], env: Mapping[str, str] | None, prefix: Sequence[str] = ()
) -> LongLived:
    """``git argv`` started as :class:`_PlainBatch` starts ``cat-file`` (series.git.child.
    spawn: no GitPython, no subprocess): a long-lived process asked one request at a time
    through its stdin, its stderr discarded; ``prefix``: a command that runs git
    (``stdbuf -o0``)."""
    _strip_inherited()
    _ensure_version("git")
    refuse_blocking_files(cwd)
    full = [*prefix, "git", *argv]
    source, requests = os.pipe()
    try:
        with os.fdopen(source, "rb", buffering=0) as stdin:  # git's copy stays open
            proc, out, _ = spawn(cwd, full, _environment(env), stdin, quiet=True)
    except BaseException:
        os.close(requests)
        raise
    return LongLived(proc, os.fdopen(requests, "wb"), os.fdopen(out, "rb"))


def fault_point(argv: Sequence[str]) -> None:
    """The fault-injection step of a git call (:func:`_fault_point`), for a request to a
    long-lived process that stands in for a git call (series.git.mergetree.MergeStream)."""
    _fault_point(argv)


def run(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
    light: bool = False,
) -> str:
    """Run git and return its stdout as text; GitFailed on a non-zero status."""
    status, out, err = execute(cwd, argv, env=env, stdin=stdin, light=light)
    if status != 0:
        raise GitFailed(argv, status, err, cwd=cwd)
    return out if isinstance(out, str) else out.decode("utf-8", "surrogateescape")


def ram_dir() -> str | None:
    """A RAM-backed directory for throwaway files, or None for the default."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None


# Scratch directories and stdin files (series-*) live while their maker holds a flock on
# them: a killed maker's lock is released by the kernel, whatever pid namespace it ran in,
# so the next series that makes one removes them (_sweep). SCRATCH_MARK ends their names:
# a series-* without it was made before this protocol and is removed only when a day old.
SCRATCH_MARK = ".held"
GRACE = 5.0  # a held name younger than this is left (its maker may not have locked it yet)
OLD_AGE = 86400.0  # a series-* with no lock protocol: removed when older than this
UNMARKED_EVERY = 3600.0  # and looked at (a stat each) at most this often (a stamp file)
SWEEP_EVERY = 60.0  # a base directory is swept at most this often (the stamp's time)
_HELD: dict[str, int] = {}  # path -> the fd holding its lock, closed on removal
_SWEPT: list[str] = []  # the bases swept by this process


def _scratch_base(ram: bool) -> str:
    where = ram_dir() if ram else None
    if where is None:
        import tempfile  # only where there is no RAM-backed directory (or a large scratch)

        where = tempfile.gettempdir()
    return where


def private_dir(prefix: str, *, ram: bool = True) -> str:
    """A new directory for throwaway files, made as ``tempfile.mkdtemp`` makes one (a new
    name, created exclusively, readable by its owner only), in the RAM-backed directory
    (``ram=False``: the temporary directory, for what may be large); tempfile itself
    (with random, shutil, bz2 and lzma: a tenth of a ``--skip``'s own work) only where
    there is none. It is locked (flock) while this process lives, so that a series
    killed leaves it to the next one (:func:`_sweep`). :func:`remove_tree` removes it."""
    where = _scratch_base(ram)
    _sweep(where)
    while True:
        path = os.path.join(where, f"{prefix}{os.urandom(6).hex()}{SCRATCH_MARK}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        if _hold(path):
            return path


def _hold(path: str) -> bool:
    """Lock ``path``, just made by this process; False when a sweep took it between the
    mkdir and the lock (it is the sweep's then: make another)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:  # no file descriptor left, ...: not a race, say it
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise
    try:
        _lock(fd)
        held = os.fstat(fd)
        now = os.lstat(path)
    except (BlockingIOError, FileNotFoundError):
        os.close(fd)  # a sweep holds it, or removed it
        return False
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise
    if held.st_nlink == 0 or (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino):
        os.close(fd)  # removed (and perhaps made again by another) before the lock
        return False
    _HELD[path] = fd
    return True


def _lock(fd: int) -> None:
    """flock ``fd``, BlockingIOError when another holds it. Where the file system has no
    flock (ENOLCK, EOPNOTSUPP: some network ones) nothing is locked, and no sweep can
    take a lock there either: nothing made there is ever swept."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            raise


def _release(path: str) -> None:
    fd = _HELD.pop(path, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


# What series made before its scratch was locked (no SCRATCH_MARK): its own prefixes and
# the random part tempfile (8 of [a-z0-9_]) or private_dir (12 hex digits) gave them. A
# user's own /tmp/series-notes is none of them, whatever its age.
_OLD_NAME = (  # compiled on first use (re's cache): only a sweep of unmarked names uses it
    r"series-(?:import|index|lint|mail|merge-file|no-attributes-[0-9]+|objects|range-diff"
    r"|rebase|run|stack|stdin|stream|verify)-(?:[0-9a-f]{12}|[a-z0-9_]{8})\Z"
)


def _sweep(base: str) -> None:
    """Remove the ``series-*`` scratch files and directories of this user in ``base``
    that no live process holds: held ones (``SCRATCH_MARK``) whose lock can be taken and
    that are older than ``GRACE``; others (made before the lock) only when older than
    ``OLD_AGE``. No link is followed, nothing of another user is touched, nothing whose
    lock is held is removed. Once per process and base, and only when no sweep there
    began in the last ``SWEEP_EVERY`` seconds (:func:`_due`): listing thousands of
    leftovers was a tenth of an ``--abort``; the unmarked ones, a stat each, are looked
    at once every ``UNMARKED_EVERY``."""
    if base in _SWEPT:
        return
    _SWEPT.append(base)
    now = time.time()
    uid = os.getuid()
    unmarked = _due(base, uid, now)
    if unmarked is None:
        return
    try:
        names = [n for n in os.listdir(base) if n.startswith("series-")]
    except OSError:
        return
    if unmarked:
        import re  # once every UNMARKED_EVERY: not the everyday path

        old = re.compile(_OLD_NAME).match
    else:
        old = None
    for name in names:
        held = name.endswith(SCRATCH_MARK)
        if not held and not (old and old(name)):
            continue  # only names: thousands of them cost no stat
        path = os.path.join(base, name)
        if path in _HELD or path in _EMPTY:
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid != uid or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            continue  # another user's, a link, a FIFO, ...: never ours to remove
        if now - st.st_mtime < (GRACE if held else OLD_AGE):
            continue
        if not held:
            _remove(path, st)
            continue
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(path, flags)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            mine = os.fstat(fd)
            if (mine.st_dev, mine.st_ino, mine.st_uid) == (st.st_dev, st.st_ino, uid):
                _remove(path, st)  # under the lock: its maker, if it comes back, makes another
        except OSError:
            pass  # held by a live process
        finally:
            os.close(fd)


def _due(base: str, uid: int, now: float) -> bool | None:
    """None when a sweep of ``base`` began less than ``SWEEP_EVERY`` seconds ago (the
    time of this user's stamp file there, ``.series-swept-UID``); else whether the
    unmarked ``series-*`` are to be looked at too (the stamp holds when they last were),
    the stamp written anew. A stamp that is not this user's plain file is no stamp."""
    stamp = os.path.join(base, f".series-swept-{uid}")
    last = 0.0
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(stamp, flags)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                if 0 <= now - st.st_mtime < SWEEP_EVERY:
                    return None
                with contextlib.suppress(ValueError):
                    last = float(os.read(fd, 32) or b"0")
        except OSError:
            pass
        finally:
            os.close(fd)
    unmarked = not 0 <= now - last < UNMARKED_EVERY
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    with contextlib.suppress(OSError):
        fd = os.open(stamp, flags, 0o600)
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                data = repr(now if unmarked else last).encode()
                os.write(fd, data)
                os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    return unmarked


def _remove(path: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        remove_tree(path)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


@contextmanager
def scratch_dir(prefix: str, *, ram: bool = True) -> Iterator[Path]:
    """:func:`private_dir`, removed with what it holds at the end of the block (as
    ``tempfile.TemporaryDirectory``, without tempfile)."""
    path = private_dir(prefix, ram=ram)
    try:
        yield Path(path)
    finally:
        remove_tree(path)


@contextmanager
def input_file(data: bytes) -> Iterator[Path]:
    """``data`` in a temporary file, for a git process's stdin.

    Made as tempfile makes one (a new name, created exclusively, readable by its
    owner only), in the RAM-backed directory; tempfile itself (with random,
    shutil, bz2 and lzma: a tenth of an ``--abort``'s own work) only where there
    is none. Locked while it lives, as :func:`private_dir`'s directories are.
    """
    where = _scratch_base(True)
    _sweep(where)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        name = os.path.join(where, f"series-stdin-{os.urandom(6).hex()}{SCRATCH_MARK}")
        try:
            fd = os.open(name, flags, 0o600)
        except FileExistsError:
            continue
        try:
            _lock(fd)
        except BlockingIOError:
            os.close(fd)  # a sweep took it before the lock: it is the sweep's
            continue
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(name)
            raise
        if os.fstat(fd).st_nlink:
            break
        os.close(fd)
    try:
        with open(fd, "wb", closefd=False) as fh:
            fh.write(data)
        yield Path(name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        os.close(fd)


_BARE = b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n"


def make_bare(where: Path) -> None:
    """An empty bare repository in the existing directory ``where``, written by hand (no
    git process): what :meth:`Runner.no_attributes` points git at."""
    (where / "refs").mkdir(exist_ok=True)
    (where / "objects").mkdir(exist_ok=True)
    (where / "HEAD").write_bytes(b"ref: refs/heads/none\n")
    (where / "config").write_bytes(_BARE)


_EMPTY: list[str] = []  # this process's empty bare repository (Runner.no_attributes)


def _empty_repository() -> str:
    """This process's empty bare repository, made on first use (a private directory,
    in RAM where the machine has a tmpfs) and removed when series ends. Not with
    tempfile: range-diff, whose diffs run through it, does not load tempfile."""
    if not _EMPTY:
        import atexit

        where = private_dir("series-no-attributes-")
        atexit.register(remove_tree, where)
        make_bare(Path(where))
        _EMPTY.append(where)
    return _EMPTY[0]


def remove_tree(where: str) -> None:
    """``shutil.rmtree(where, ignore_errors=True)`` without shutil, whose import (bz2,
    lzma, zlib) was most of what a range-diff's exit cost: every file and link removed,
    no link followed (a link to a directory is removed, not entered; ``where`` itself a
    link is left alone, as rmtree refuses one), what cannot be removed left. The lock
    of a :func:`private_dir` is let go once it is removed."""
    try:
        if os.path.islink(where):
            return
        for top, dirs, files in os.walk(where, topdown=False):
            for name in files:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(top, name))
            for name in dirs:
                path = os.path.join(top, name)
                with contextlib.suppress(OSError):
                    if os.path.islink(path):
                        os.unlink(path)
                    else:
                        os.rmdir(path)
        with contextlib.suppress(OSError):
            os.rmdir(where)
    finally:
        _release(where)


def _text(value: str | bytes) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else value


class Runner:
    """Runs git in one repository: the base every part of :class:`series.git.Repo` shares.

    The parts (refs, objects, index, ...) are built on these methods; the
    ``Repo`` does not offer them, so raw argv stays inside this package.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def git(
        self,
        *argv: str,
        env: Mapping[str, str] | None = None,
        stdin: Path | None = None,
        light: bool = False,
    ) -> str:
        return run(self.path, argv, env=env, stdin=stdin, light=light)

    def start(self, *argv: str, env: Mapping[str, str] | None = None, fed: bool = False) -> Started:
        """:meth:`git`, started now and read later (module's :func:`start`); ``fed``: its
        stdin written later (``Started.feed``)."""
        return start(self.path, argv, env=env, fed=fed)

    def git_path(self, name: str) -> Path:
        """``git rev-parse --git-path NAME`` (``objects``, ``shallow``): found by hand in a
        bare repository or a work tree's ``.git`` directory, asked of git elsewhere (a
        linked work tree)."""
        for gitdir in (self.path, self.path / ".git"):
            if (gitdir / "HEAD").is_file() and (gitdir / "objects").is_dir():
                return gitdir / name
        return self.path / self.git("rev-parse", "--git-path", name).strip()

    def no_attributes(self) -> dict[str, str]:
        """:data:`HERMETIC`, and this repository's objects and history read through an
        empty bare repository: no attribute of the repository's applies (its work tree's
        ``.gitattributes`` files, its ``info/attributes``, which no configuration switches
        off in git 2.39), nor its ``config`` (docs/hardening.md, "A repository's own
        attributes"). For commands that read commits by id and write no ref: diffs,
        patch files, patch-ids, merges. Its refs are not seen (nor its replace refs)."""
        found = self.__dict__.get("_no_attributes")
        if found is None:
            objects = self.git_path("objects").resolve()
            found = {
                **HERMETIC,
                "GIT_DIR": _empty_repository(),
                "GIT_OBJECT_DIRECTORY": str(objects),
                # a shallow repository's boundary (the cache's fetches): git would walk
                # into parents it does not have
                "GIT_SHALLOW_FILE": str(self.git_path("shallow").resolve()),
            }
            self.__dict__["_no_attributes"] = found
        return dict(found)

    def warm(self) -> None:
        """Start the long-lived ``cat-file`` of :meth:`lookup` and :meth:`object_data` now,
        within :func:`light_processes` (else nothing): its start runs beside the caller's
        work, not in its first question's wait. Where it cannot start, the first question
        does as without this (``rev-parse`` and ``cat-file`` answer)."""
        if _LIGHT[0]:
            with contextlib.suppress(OSError, ValueError):
                self._cat_file()

    def _cat_file(self) -> _PlainBatch:
        """This repository's long-lived :class:`_PlainBatch`, started on first use (OSError
        or ValueError where it cannot start: the caller asks git otherwise)."""
        batch = self.__dict__.get("_plain")
        if batch is None:
            batch = self.__dict__["_plain"] = _PlainBatch(self.path)
        return batch

    def rest(self) -> None:
        """End the long-lived ``cat-file`` of :meth:`warm` now, its exit not waited for:
        it exits while the caller waits for other work (``series rebase --abort``: its
        move of the files), not at series' own end. Reaped with this runner; a later
        question starts another."""
        batch = self.__dict__.pop("_plain", None)
        if batch is not None:
            batch.close_input()
            self.__dict__.setdefault("_resting", []).append(batch)

    def lookup(self, name: str) -> tuple[str, str] | None:
        """(id, type) of the object ``name`` names, or None; asks one long-lived process.

        ``rev-parse`` costs a process per question, and a command asks
        dozens; ``cat-file --batch-check`` answers them all, reading refs
        and objects afresh each time (a ref another process moved meanwhile
        is seen moved). Where that process cannot run, ``rev-parse`` does.
        """
        debug(
            "series.git",
            "lookup %s (git cat-file --batch-check, one process)  (in %s)",
            name,
            self.path,
        )
        refuse_blocking_ref(self.path, name)
        if _LIGHT[0]:
            found = self._plain_ask(name, data=False)
            return (found[0], found[1]) if found is not None else None
        cmd = self.__dict__.get("_batch")
        if cmd is None:
            cmd = self.__dict__["_batch"] = _command(self.path)
        try:
            sha, kind, _ = cmd.get_object_header(name)
        except ValueError:
            return None  # missing or ambiguous
        except Exception:  # the process could not start, or died: ask git directly
            self.__dict__.pop("_batch", None)
            argv = ["rev-parse", "-q", "--verify", "--end-of-options", name]
            status, out, _ = execute(self.path, argv)
            if status != 0 or not isinstance(out, str):
                return None
            status, kind_out, _ = execute(self.path, ["cat-file", "-t", out.strip()])
            return (out.strip(), str(kind_out).strip()) if status == 0 else None
        return _text(sha), _text(kind)

    def lookups(self, names: Sequence[str]) -> list[tuple[str, str] | None]:
        """:meth:`lookup` of each of ``names``, asked of the long-lived process at once
        (within :func:`light_processes`: one round trip); one at a time elsewhere."""
        if not _LIGHT[0] or any("\n" in name for name in names):
            return [self.lookup(name) for name in names]
        for name in names:
            debug("series.git", "lookup %s (git cat-file, one process)  (in %s)", name, self.path)
            refuse_blocking_ref(self.path, name)
        try:
            found = self._cat_file().infos(names)
        except (OSError, ValueError):
            self.__dict__.pop("_plain", None)
            return [self.lookup(name) for name in names]
        return [(f[0], f[1]) if f is not None else None for f in found]

    def object_data(self, oid: str, kind: str) -> bytes | None:
        """Object ``oid`` if it is a ``kind``, from one long-lived ``cat-file --batch``.

        None when it is missing, of another type, or the process cannot
        run (callers then ask git directly, and get its error).
        """
        debug("series.git", "read %s (git cat-file --batch, one process)  (in %s)", oid, self.path)
        refuse_blocking_ref(self.path, oid)
        if _LIGHT[0]:
            found = self._plain_ask(oid, data=True)
            return found[2] if found is not None and found[1] == kind else None
        cmd = self.__dict__.get("_batch")
        if cmd is None:
            cmd = self.__dict__["_batch"] = _command(self.path)
        try:
            _, got, _, data = cmd.get_object_data(oid)
        except Exception:  # missing, or the process died: let the caller ask git itself
            self.__dict__.pop("_batch", None)
            return None
        return bytes(data) if _text(got) == kind else None

    def _plain_ask(self, name: str, *, data: bool) -> tuple[str, str, bytes | None] | None:
        """:class:`_PlainBatch`'s answer for ``name`` (one process per repository); where
        it cannot run, ``rev-parse`` and ``cat-file`` answer."""
        if "\n" in name:
            return None
        try:
            return self._cat_file().ask(name, data)
        except (OSError, ValueError):
            self.__dict__.pop("_plain", None)
        argv = ["rev-parse", "-q", "--verify", "--end-of-options", name]
        status, out, _ = execute(self.path, argv)
        if status != 0 or not isinstance(out, str):
            return None
        sha = out.strip()
        status, kind, _ = execute(self.path, ["cat-file", "-t", sha])
        if status != 0 or not isinstance(kind, str):
            return None
        if not data:
            return sha, kind.strip(), None
        status, body, _ = execute(self.path, ["cat-file", kind.strip(), sha], raw=True)
        return (sha, kind.strip(), body) if status == 0 and isinstance(body, bytes) else None

    def git_bytes(self, *argv: str, env: Mapping[str, str] | None = None) -> bytes:
        status, out, err = execute(self.path, argv, env=env, raw=True)
        if status != 0:
            raise GitFailed(argv, status, err, cwd=self.path)
        assert isinstance(out, bytes)
        return out

    def git_status(self, *argv: str, env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
        """(status, stdout, stderr) for commands whose failure is an answer.

        Except a failure caused outside series (a lock file, the disk, a
        damaged object): that is no answer, and is raised as
        :class:`EnvironmentFault` (a patch "not applying" to a full disk
        would otherwise read as a conflict).
        """
        status, out, err = execute(self.path, argv, env=env)
        assert isinstance(out, str)
        fault = (
            environment_fault(err, self.path, doing=f"git {' '.join(argv[:3])}", status=status)
            if status
            else None
        )
        if fault is not None:
            raise fault
        return status, out, err

    def git_together(
        self, calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]]
    ) -> list[tuple[int, bytes, str]]:
        """(status, raw stdout, stderr) of each ``(argv, env)``, run at once
        (:func:`execute_together`); a failure caused outside series is raised as
        :meth:`git_status` raises it."""
        return self.checked(calls, execute_together(self.path, calls))

    def start_together(
        self, calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]]
    ) -> Started:
        """:meth:`git_together`, started now (module's :func:`start_together`): read by
        ``Started.finish`` and :meth:`checked`, or ended by ``Started.abandon``."""
        return start_together(self.path, calls)

    def checked(
        self,
        calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]],
        done: list[tuple[int, bytes, str]],
    ) -> list[tuple[int, bytes, str]]:
        """``done``, the answers to ``calls``, once no failure among them was caused
        outside series (raised as :meth:`git_status` raises it)."""
        for (argv, _), (status, _, err) in zip(calls, done, strict=True):
            if not status:
                continue
            doing = f"git {' '.join(argv[:3])}"
            fault = environment_fault(err, self.path, doing=doing, status=status)
            if fault is not None:
                raise fault
        return done

    def git_input(self, *argv: str, data: bytes, env: Mapping[str, str] | None = None) -> bytes:
        """Run git with ``data`` on stdin; its raw stdout."""
        with input_file(data) as path:
            status, out, err = execute(self.path, argv, env=env, stdin=path, raw=True)
        if status != 0:
            raise GitFailed(argv, status, err, cwd=self.path)
        assert isinstance(out, bytes)
        return out


class Part:
    """One narrow part of a :class:`series.git.Repo` (its refs, objects, index...).

    Every part of one ``Repo`` shares its :class:`Runner`, so the
    long-lived ``cat-file`` process is one per repository, not one per part.
    """

    def __init__(self, run: Runner) -> None:
        self._run = run
        self.path = run.path
