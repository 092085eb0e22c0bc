"""One git process: ended with series, whatever it started, and bounded by silence.

git is started by GitPython (``as_process``), or for a read-only query
that may be a command's only git process, the same way without importing
GitPython (:func:`plain`), in series' own process group and session: a
terminal's Ctrl-C or hangup reaches git and its helpers too, a terminal
prompt works, and a kill of series' process group takes
them all. A signal sent to series alone (``kill -INT PID``, a supervisor's
SIGTERM) does not reach them, so on any exception while it waits
(``KeyboardInterrupt``, which entry.py also raises for SIGTERM and SIGHUP)
series ends git and every process below it (``git-remote-https``,
``ssh``, a local ``upload-pack``, found through ``/proc``): SIGTERM first,
which lets git remove its lock files (``shallow.lock``, the ``*.lock`` of
refs), then SIGKILL after ``GRACE`` seconds to what is left. Signals that
would stop series are held meanwhile, and while git is being started (a
signal then would leave git running out of reach).

``stall`` bounds a network command by silence, whatever the transport:
git is stopped once neither it nor any process below it has read,
written or computed anything for that many seconds (``/proc``: the bytes
read and written and the CPU time of each). A fetch that is receiving
data, however slowly, goes on; a server that accepted the connection and
says nothing, a local ``upload-pack`` that hangs, or a connection that
never opens, end after ``stall`` seconds. Where ``/proc`` cannot be
read, a hard bound of ``20 * stall`` seconds (at least 60) stands in.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:  # nor pathlib: a re-run answered before the CLI loads this (series.entry)
    import signal
    import signal as _signal  # the functions of _signal, typed
    import subprocess
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from types import FrameType
    from typing import Any, BinaryIO

    from git.cmd import Git as _Cmd
else:
    import _signal  # signal's functions without its enums and wrappers (a re-run: spawn)

GRACE = 2.0  # seconds git has to clean up after SIGTERM before SIGKILL
TICK = 0.5  # seconds between two looks at what git does
_PROC = "/proc"
_STOPS = {_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP}


def gitpython(cwd: Path) -> _Cmd:
    """GitPython's command runner for ``cwd``, GitPython imported on first use.

    Importing GitPython costs more than a short command's whole work, so a
    command that starts no git (``series --version``, ``--help``, a usage
    error) does not pay for it; and it is imported without its two ``git
    version`` (:func:`_import_quietly`).
    """
    if "git.cmd" not in sys.modules:
        _import_quietly()
    from git.cmd import Git

    return Git(str(cwd))


def _import_quietly() -> None:
    """Import GitPython without the two ``git version`` its import runs.

    GitPython's import ends with ``git.refresh()``: ``Git.refresh`` runs ``git
    version`` to learn whether git can be started, and ``FetchInfo.refresh``
    runs it again to pick a flag of GitPython's own ``fetch`` (git 2.10 or
    later), which series never calls (it runs ``git fetch`` itself). Two git
    processes for nothing series uses: with ``GIT_PYTHON_REFRESH=quiet``
    (series.git.run) a git that cannot be started is not refused by the
    import anyway, but by the first command (``GitCommandNotFound``, said as
    series.git.run.GitMissing), and that stays so. For that import only,
    the two refreshes set what they would set for a git found on PATH
    (series needs git 2.39 or later: series.git.version checks it), without
    starting it; GitPython's own refresh is left in place for anyone who
    calls it later. A
    ``GIT_PYTHON_GIT_EXECUTABLE`` in the environment keeps GitPython's own
    import (it checks that path).
    """
    if os.environ.get("GIT_PYTHON_GIT_EXECUTABLE"):
        return
    import importlib.abc
    import importlib.machinery

    def no_version(cls: Any, path: Any = None) -> bool:
        if path is not None:  # never by the import itself
            return bool(kept["git.cmd"].__func__(cls, path))
        cls.GIT_PYTHON_GIT_EXECUTABLE = cls.git_exec_name
        cls._refresh_token = object()
        return True

    def fetch_flags(cls: Any) -> bool:
        cls._flag_map.pop("-", None)
        cls._flag_map["t"] = cls.TAG_UPDATE  # git 2.10 or later
        return True

    kept: dict[str, Any] = {}
    quiet = {"git.cmd": ("Git", no_version), "git.remote": ("FetchInfo", fetch_flags)}

    class Loader(importlib.abc.Loader):
        def __init__(self, real: Any) -> None:
            self.real = real

        def create_module(self, spec: Any) -> Any:
            return self.real.create_module(spec)

        def exec_module(self, module: Any) -> None:
            self.real.exec_module(module)
            name, method = quiet[module.__name__]
            owner = getattr(module, name)
            kept[module.__name__] = owner.__dict__["refresh"]
            owner.refresh = classmethod(method)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname not in quiet:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = Loader(spec.loader)
            return spec

    finder = Finder()
    sys.meta_path.insert(0, finder)
    try:
        import git  # noqa: F401  (its refresh() runs here)
    finally:
        sys.meta_path.remove(finder)
        for module, (name, _method) in quiet.items():
            if module in kept:
                getattr(sys.modules[module], name).refresh = kept[module]


def plain(
    cwd: Path,
    argv: Sequence[str],
    env: Mapping[str, str],
    stdin: BinaryIO | int | None,
    stderr: BinaryIO | int | None = None,
) -> subprocess.Popen[bytes]:
    """git started as GitPython starts it, without importing GitPython: for a read-only
    query that may be a command's only git process (``git status`` after what was kept).

    The same process: ``argv`` as given (no shell), in ``cwd``, GitPython's C locale
    (``LANGUAGE``, ``LC_ALL``) over series' environment and ``env`` over both, stdin
    from /dev/null unless given (a file, or ``subprocess.PIPE`` for a long-lived
    ``cat-file``), both streams piped (stderr to ``stderr`` when given: a long-lived
    process whose stderr nobody reads until it ends), no inherited descriptors. git
    missing from PATH (or ``cwd`` missing) raises ``FileNotFoundError``.
    """
    import subprocess  # (with threading, selectors, locale) not for a one-shot query: spawn

    full = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **env}
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=full,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stderr is None else stderr,
        close_fds=True,
    )


class Outcome:
    """How a git process ended. A plain class, not a series.records.NamedTuple: that is
    ``collections.namedtuple``, whose import (collections, operator, keyword, reprlib)
    a re-run of apply answered from what was kept (series.stack.verified_kept, whose
    one ``git status`` this is) would pay for nothing else."""

    __slots__ = ("err", "out", "stalled", "status")

    def __init__(self, status: int, out: bytes, err: bytes, stalled: bool) -> None:
        self.status = status
        self.out = out
        self.err = err
        self.stalled = stalled  # stopped by the ``stall`` bound

    def _fields(self) -> tuple[int, bytes, bytes, bool]:
        return (self.status, self.out, self.err, self.stalled)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outcome) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # equal by value and mutable: not hashable

    def __repr__(self) -> str:
        return f"Outcome{self._fields()!r}"


def run_child(
    cwd: Path,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin: BinaryIO | None,
    stall: float | None,
    light: bool = False,
) -> Outcome:
    """Run ``argv`` (``git ...``) to its end, or until ``stall`` seconds of silence.

    ``light``: GitPython not imported for it; started by :func:`spawn` while subprocess
    is not imported (a one-shot query that would import it for one process), by
    :func:`plain` once it is: subprocess starts git with ``vfork`` and runs nothing in
    the child but C, as spawn's ``posix_spawn`` does, and also where spawn would have
    to fork (another thread running, a stream of series' closed, a PATH of its own),
    which copies series' page tables and runs Python in the child: about 4 ms more CPU
    per git process, a tenth of the CPU time of a rebase that starts sixty.
    """
    held = _Held()
    handle = None
    if light and stall is None and "subprocess" not in sys.modules:
        return _run_spawned(held, cwd, argv, env, stdin)
    with held:  # a signal while git starts would leave it running, out of reach
        if light:
            started: subprocess.Popen[bytes] | None = plain(cwd, argv, env, stdin)
        else:
            handle = gitpython(cwd).execute(
                list(argv), istream=stdin, as_process=True, env=dict(env)
            )
            started = handle.proc
    proc = started
    assert proc is not None
    try:
        held.deliver()
        out, err, stalled = _wait(proc, stall)
    except BaseException:
        end(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        raise
    finally:
        if handle is not None:
            handle.proc = None  # GitPython's finaliser must not touch it again
    return Outcome(int(proc.returncode), out or b"", err or b"", stalled)


class Spawned:
    """A git process started by :func:`spawn`: what :func:`end` needs of a ``Popen``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


def spawn(
    cwd: Path,
    argv: Sequence[str],
    env: Mapping[str, str],
    stdin: BinaryIO | None,
    *,
    quiet: bool = False,
) -> tuple[Spawned, int, int]:
    """git started as :func:`plain` starts it, without importing subprocess: the process,
    and the read ends of its stdout and stderr (``quiet``: its stderr goes to /dev/null,
    as a long-lived process's that nobody reads: -1 for that end).

    For a one-shot query (the ``git status`` of a re-run answered from what was
    verified, series.stack.verified): subprocess, with the threading, selectors
    and locale it imports, cost a tenth of such a run. The same process as
    ``plain``'s (the same argv, directory, environment, stdin from /dev/null
    unless given, no descriptor inherited but the three, SIGPIPE and SIGXFSZ
    as the system's default), started by ``posix_spawnp`` where it can be
    (:func:`_spawnable`: a fork copied series' memory and ran Python in the
    child, three times the CPU of a short git of its own), else forked and executed
    as subprocess does it: an exec that fails (no git on PATH, no such ``cwd``)
    raises its ``OSError`` (``FileNotFoundError``) here.
    """
    full = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **env}
    out_r, out_w = os.pipe()  # created non-inheritable: closed in git by its exec
    err_r, err_w = (-1, os.open(os.devnull, os.O_WRONLY)) if quiet else os.pipe()
    source = stdin.fileno() if stdin is not None else os.open(os.devnull, os.O_RDONLY)
    streams = (source, out_w, err_w)
    try:
        pid = _posix_spawn(cwd, argv, full, streams) if _spawnable(full, streams) else None
    except BaseException:
        for fd in (out_r, err_r, out_w, err_w, *([source] if stdin is None else [])):
            if fd >= 0:
                os.close(fd)
        raise
    if pid is not None:
        for fd in (out_w, err_w, *([source] if stdin is None else [])):
            os.close(fd)
        return Spawned(pid), out_r, err_r
    failed_r, failed_w = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child: its coverage ends at the exec)
            _exec_child(cwd, argv, full, streams, failed_w)
    except BaseException:
        for fd in (out_r, err_r, failed_r):
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, failed_w, *([source] if stdin is None else [])):
            os.close(fd)
    proc = Spawned(pid)
    with os.fdopen(failed_r, "rb") as pipe:
        failure = pipe.read()  # empty once git runs (the exec closed its end)
    if failure:
        proc.wait()
        os.close(out_r)
        if err_r >= 0:
            os.close(err_r)
        number, step, message = failure.decode("ascii", "replace").split(":", 2)
        raise OSError(int(number), message, cwd if step == "chdir" else argv[0])
    return proc, out_r, err_r


def _spawnable(env: Mapping[str, str], streams: tuple[int, int, int]) -> bool:
    """Whether :func:`_posix_spawn` starts the very process the fork would: no other
    thread (it changes series' directory a moment), none of the three streams on a
    descriptor below 3, and git looked up on the PATH series has (posix_spawnp's)."""
    threading = sys.modules.get("threading")
    return (
        (threading is None or threading.active_count() == 1)
        and min(streams) >= 3
        and env.get("PATH") == os.environ.get("PATH") is not None
        and hasattr(os, "posix_spawnp")
    )


def _posix_spawn(
    cwd: Path, argv: Sequence[str], env: dict[str, str], streams: tuple[int, int, int]
) -> int | None:
    """git started by ``posix_spawnp`` (a vfork: nothing of series' memory is copied,
    no Python runs in the child), as :func:`_exec_child` starts it: in ``cwd`` (series
    goes there for the spawn and back), the three streams, no other descriptor
    inherited, SIGPIPE and SIGXFSZ as the system's default. Its pid; None when
    series' own directory cannot be kept to come back to (the fork does it then).

    A missing ``cwd`` raises from the chdir, a git not on PATH from the spawn: the
    same ``FileNotFoundError`` (its filename the directory, the program) as the fork's.
    """
    try:
        back = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        actions: list[tuple[int, ...]] = [
            (os.POSIX_SPAWN_DUP2, fd, number) for number, fd in enumerate(streams)
        ]
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _handed()]
        try:
            os.chdir(cwd)
        except OSError as exc:  # named as the fork's child names it (and subprocess)
            raise OSError(exc.errno, exc.strerror, cwd) from None
        try:
            return os.posix_spawnp(
                argv[0],
                list(argv),
                env,
                file_actions=actions,
                setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ),
            )
        finally:
            os.fchdir(back)
    finally:
        os.close(back)


def _handed() -> list[int]:
    """The inheritable descriptors above 2 series was handed (git must not get them)."""
    found = []
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else ():
        fd = int(name)
        if fd < 3:
            continue
        try:
            if os.get_inheritable(fd):
                found.append(fd)
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return found


def _exec_child(
    cwd: Path, argv: Sequence[str], env: dict[str, str], streams: tuple[int, int, int], failed: int
) -> None:
    """In the forked child: the directory, the three streams, the signals, then git."""
    try:
        step = "chdir"
        os.chdir(cwd)
        step = "exec"
        if min(streams) < 3:  # series' own stdin, stdout or stderr was closed
            import fcntl

            source, out, err = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in streams)
            streams = (source, out, err)
        for number, fd in enumerate(streams):
            os.dup2(fd, number)
        keep = {0, 1, 2, failed}
        for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else ():
            fd = int(name)
            try:
                handed = fd not in keep and os.get_inheritable(fd)
            except OSError:  # the listing's own descriptor, closed by now
                continue
            if handed:
                os.close(fd)  # not one of git's: an inheritable one series was handed
        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):  # Python ignores them; git must not
            _signal.signal(sig, _signal.SIG_DFL)
        os.execvpe(argv[0], list(argv), env)
    except OSError as exc:
        os.write(failed, f"{exc.errno or 0}:{step}:{exc.strerror}".encode("ascii", "replace"))
    finally:
        os._exit(255)


def _run_spawned(
    held: _Held, cwd: Path, argv: Sequence[str], env: Mapping[str, str], stdin: BinaryIO | None
) -> Outcome:
    """:func:`run_child` for a light query: git started by :func:`spawn`, read to its end."""
    return finish(_begun(held, cwd, argv, env, stdin))


class Running:
    """A light query started by :func:`start`: the process, the read ends of its stdout
    and stderr, and whether they are closed (:func:`finish` or :func:`abandon` did:
    neither does anything twice, a descriptor's number may be another file's by then)."""

    __slots__ = ("closed", "err_fd", "out_fd", "proc")

    def __init__(self, proc: Spawned, out_fd: int, err_fd: int) -> None:
        self.proc = proc
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.closed = False


def start(
    cwd: Path, argv: Sequence[str], env: Mapping[str, str], stdin: BinaryIO | None = None
) -> Running:
    """A light query (as :func:`run_child` with ``light``, stdin from /dev/null unless
    given) started now, to be read by :func:`finish` once the caller has done other work
    meanwhile (series.stack.verified_kept: its ``git status`` runs on the other core while
    it reads its digest). Between the two, the caller ends it (:func:`abandon`) on any
    exception: it ends with series, as one of :func:`run_child`'s. Its stdout's pipe holds
    up to ``PIPE_SIZE`` bytes where the system allows it: a diff read later is written
    meanwhile, not stopped at the pipe's usual 64 KiB."""
    running = _begun(_Held(), cwd, argv, env, stdin)
    _widen(running.out_fd)
    return running


PIPE_SIZE = 1 << 20  # Linux's default most for an unprivileged process (pipe-max-size)


def _widen(fd: int) -> None:
    """The pipe at ``fd`` made to hold ``PIPE_SIZE`` bytes, where the system has a way."""
    import fcntl  # a small C module

    setting = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setting is None:
        return
    try:  # noqa: SIM105 (contextlib: its import, collections', on kept answers)
        fcntl.fcntl(fd, setting, PIPE_SIZE)
    except OSError:  # a lower limit: the pipe stays as it is, and git waits to be read
        pass


def _begun(
    held: _Held, cwd: Path, argv: Sequence[str], env: Mapping[str, str], stdin: BinaryIO | None
) -> Running:
    with held:  # a signal while git starts would leave it running, out of reach
        running = Running(*spawn(cwd, argv, env, stdin))
    try:
        held.deliver()
    except BaseException:
        abandon(running)
        raise
    return running


def finish(running: Running) -> Outcome:
    """What the query ``running`` (:func:`start`) says: read to its end, its exit status."""
    if running.closed:
        raise ValueError("series.git.child.finish: a query finished or abandoned already")
    try:
        out, err = _read_both(running.out_fd, running.err_fd)
        status = running.proc.wait()
    except BaseException:
        end(running.proc)
        raise
    finally:
        _close(running)
    return Outcome(status, out, err, False)


def finish_all(runnings: Sequence[Running]) -> list[Outcome]:
    """What each of ``runnings`` (:func:`start`, all running at once) says, in order: their
    outputs read as they come, in one loop, so none waits on a full pipe while another is
    read (series.git.run.execute_together). On any exception all of them are ended."""
    if any(running.closed for running in runnings):
        raise ValueError("series.git.child.finish_all: a query finished or abandoned already")
    try:
        fds = [fd for running in runnings for fd in (running.out_fd, running.err_fd)]
        read = _read_all(fds)
        statuses = [running.proc.wait() for running in runnings]
    except BaseException:
        for running in runnings:
            end(running.proc)
        raise
    finally:
        for running in runnings:
            _close(running)
    return [
        Outcome(status, read[running.out_fd], read[running.err_fd], False)
        for running, status in zip(runnings, statuses, strict=True)
    ]


def abandon(running: Running) -> None:
    """End the query ``running`` (:func:`start`) and all below it, unread (:func:`end`);
    nothing when it was finished or abandoned already."""
    if running.closed:
        return
    try:
        end(running.proc)
    finally:
        _close(running)


def _close(running: Running) -> None:
    running.closed = True
    for fd in (running.out_fd, running.err_fd):
        try:  # noqa: SIM105 (contextlib: its import, collections', on kept answers)
            os.close(fd)
        except OSError:
            pass


def _read_both(out_fd: int, err_fd: int) -> tuple[bytes, bytes]:
    """Everything git writes to stdout and stderr, read as it comes (neither pipe fills)."""
    read = _read_all([out_fd, err_fd])
    return read[out_fd], read[err_fd]


def _read_all(fds: Sequence[int]) -> dict[int, bytes]:
    """Everything written to each of ``fds`` until its end, read as it comes (no pipe fills)."""
    import select  # a small C module (subprocess's selectors is not)

    chunks: dict[int, list[bytes]] = {fd: [] for fd in fds}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    left = len(chunks)
    while left:
        for fd, _event in poller.poll():
            data = os.read(fd, 1 << 16)
            if data:
                chunks[fd].append(data)
            else:
                poller.unregister(fd)
                left -= 1
    return {fd: b"".join(parts) for fd, parts in chunks.items()}


class _Held:
    """Holds the signals that stop series while git starts, to deliver them once it has.

    Blocking them (``pthread_sigmask``) would hand the blocked mask down to
    git; so their handlers are swapped for one that only takes note. Only
    the main thread has signal handlers; elsewhere nothing is held.
    """

    def __init__(self) -> None:
        self.got: list[int] = []
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> None:
        threading = sys.modules.get("threading")  # never imported: no other thread runs
        if threading is not None and threading.current_thread() is not threading.main_thread():
            return
        for sig in _STOPS:
            handler = _signal.getsignal(sig)
            if callable(handler):
                self.saved[sig] = _signal.signal(sig, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.got.append(signum)

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        for sig, handler in self.saved.items():
            _signal.signal(sig, handler)
        if kind is not None:  # git did not start: nothing to end first
            self.deliver()

    def deliver(self) -> None:
        """Let the signals that came run their own handlers now."""
        for sig in dict.fromkeys(self.got):
            _signal.raise_signal(sig)


def _wait(proc: subprocess.Popen[bytes], stall: float | None) -> tuple[bytes, bytes, bool]:
    import subprocess  # imported by now: plain or GitPython started proc

    if stall is None:
        out, err = proc.communicate()
        return out, err, False
    quiet_since = time.monotonic()
    seen = activity(proc.pid)
    limit = stall if seen is not None else max(stall * 20, 60)  # no /proc: a hard bound
    while True:
        try:
            out, err = proc.communicate(timeout=TICK)
            return out, err, False
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        current = activity(proc.pid)
        if current != seen:
            seen, quiet_since = current, now
        if now - quiet_since >= limit:
            end(proc)
            try:
                out, err = proc.communicate(timeout=GRACE)
            except subprocess.TimeoutExpired:  # a daemon git started holds a pipe
                out, err = b"", b""
            return out, err, True


def end(proc: subprocess.Popen[bytes] | Spawned) -> None:
    """End git and every process below it: SIGTERM, then SIGKILL after ``GRACE`` seconds.

    git is not reaped before the end, so its pid cannot have been given to
    another process; the processes below it are told apart from a later
    process with their pid by their start time.
    """
    if proc.returncode is not None:
        return
    import signal  # only to end git early

    # A second Ctrl-C must not cut this short and leave processes running:
    # it is held until they are gone, then raised.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        below = _below({proc.pid})
        _send(below, signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and not _exited(proc.pid):
            time.sleep(0.02)
        # What git started meanwhile, and what is left.
        _send(below | _below({proc.pid} | {pid for pid, _ in below}), signal.SIGKILL)
        proc.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def reap_within(pid: int, timeout: float) -> int | None:
    """The exit status of ``pid`` (reaped), once it has exited within ``timeout`` seconds;
    None if it has not (not reaped: its pid stays ours, for :func:`end`).

    Woken by the exit itself where Linux gives a process's descriptor (``pidfd_open``,
    polled): a long-lived git at the end of its input exits within a fraction of a
    millisecond, and a wait that polls as ``Popen.wait(timeout)`` does (0.5 ms, then
    doubling) overslept it by up to a few milliseconds, for every such process a
    command ends. Elsewhere it polls so. ChildProcessError when someone reaped it."""
    import select  # a small C module (subprocess's selectors is not)

    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later: poll as Popen.wait does
        fd = -1
    try:
        pause = 0.0005
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if fd >= 0:
                poller = select.poll()
                poller.register(fd, select.POLLIN)
                poller.poll(max(1, int(left * 1000)))
            else:
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)
    finally:
        if fd >= 0:
            os.close(fd)


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (its pid stays ours)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _send(processes: set[tuple[int, int]], sig: signal.Signals) -> None:
    for pid, started in processes:
        fields = _stat(pid)
        if fields is not None and len(fields) > 19 and _started(fields) == started:
            try:  # noqa: SIM105 (contextlib's import, as above)
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state is [0])."""
    try:
        with open(f"{_PROC}/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()
    except OSError:
        return None


def _started(fields: list[str]) -> int:
    return int(fields[19])


def _below(roots: set[int]) -> set[tuple[int, int]]:
    """``roots`` and every process below them, as (pid, start time); empty without /proc."""
    children: dict[int, list[int]] = {}
    started: dict[int, int] = {}
    try:
        entries = [name for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return set()
    for entry in entries:
        fields = _stat(int(entry))
        if fields is None or len(fields) < 20:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        started[pid] = _started(fields)
    found: set[tuple[int, int]] = set()
    todo = [pid for pid in roots if pid in started]
    while todo:
        pid = todo.pop()
        if (pid, started[pid]) in found:
            continue
        found.add((pid, started[pid]))
        todo += children.get(pid, [])
    return found


def activity(pid: int) -> tuple[tuple[int, ...], ...] | None:
    """What ``pid`` and the processes below it have done so far; None without ``/proc``.

    For each: its pid, CPU time (its own and its reaped children's) and
    bytes read and written (``rchar``/``wchar``, sockets and pipes
    included). Any change between two looks is activity.
    """
    if not os.path.exists(f"{_PROC}/self/stat"):
        return None
    found = []
    for member, _ in _below({pid}):
        fields = _stat(member)
        if fields is None or len(fields) < 15:
            continue
        cpu = sum(int(f) for f in fields[11:15])
        found.append((member, cpu, *_io(f"{_PROC}/{member}")))
    return tuple(sorted(found))


def own_activity(pid: int) -> tuple[int, ...] | None:
    """What ``pid`` alone has done so far (CPU time, bytes read and written), None
    without ``/proc``: :func:`activity` for a process that starts none, without reading
    every process of the machine to find its children. A process that is running, or
    waiting for a CPU or for the disk (state ``R``, ``D``), is at work even when none of
    those moved (a loaded machine may give it no CPU for a second): its tuple then ends
    with a count that differs at each call, so that no two of its answers are equal."""
    fields = _stat(pid)
    if fields is None or len(fields) < 15:
        return None
    done = (sum(int(f) for f in fields[11:15]), *_io(f"{_PROC}/{pid}"))
    if fields[0] in ("R", "D"):
        _AT_WORK[0] += 1
        return (*done, _AT_WORK[0])
    return done


_AT_WORK = [0]  # own_activity's count for a process at work (state R or D)


def _io(entry: str) -> tuple[int, int]:
    try:
        with open(f"{entry}/io", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return (0, 0)
    values = dict(line.split(":", 1) for line in lines if ":" in line)
    return int(values.get("rchar", 0)), int(values.get("wchar", 0))
