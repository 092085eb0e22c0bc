"""The parent's side of the workers: start them, talk to them, stop them.

One ``Handle`` per arm wraps a ``python -m series.runs.bench.worker``
process (protocol in ``worker.py``). Requests that every worker must answer
(start-up, building) go out in waves of at most ``busy_limit()`` workers
(the cores this process may use): a wave is sent to all its workers first
and answered after, so they work in parallel, and never more of them are
busy than there are cores. Timing requests go to one worker at a time, so
measurements never overlap. A worker's stderr goes to a log file, quoted in
the error when it fails.

Memory is stated before any worker starts (``memory_plan``): the workers
times an estimate per worker against MemAvailable, refused when it does
not fit. Workers die with the parent: each asks the kernel for SIGKILL when
its parent goes (``worker.py``), and the parent stops them all at once on
the way out, killing them at once when it leaves on an exception
(SIGINT, SIGTERM).

The environment pins what makes timings comparable: one thread for torch
and the BLAS libraries, the torch backend, a private KERAS_HOME (a user's
keras.json must not change the layout or float type), a fixed hash seed,
and no GPU unless asked for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

import series
from series import json_text
from series.errors import SeriesError
from series.runs.bench.spec import Arm

Progress = Callable[[str], None]
PARENT_ENV = "SERIES_BENCH_PARENT"  # the pid a worker must die with
# A worker with Keras and torch imported and workloads built. Measured with
# all 21 built: 520-570 MB resident, of which about 370 MB its own (the rest
# is torch's and Keras' files, in memory once for all workers).
WORKER_MB = 500
QUIT_GRACE = 5.0  # seconds all workers together have to exit after "quit"
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def worker_env(keras_home: Path, device: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({name: "1" for name in THREAD_ENV})
    env.update(
        {
            "KERAS_BACKEND": "torch",
            "KERAS_HOME": str(keras_home),
            "PYTHONHASHSEED": "0",
            "PYTHONPATH": str(Path(series.__file__).resolve().parent.parent),
            "TF_CPP_MIN_LOG_LEVEL": "3",
            PARENT_ENV: str(os.getpid()),
        }
    )
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


class Handle:
    def __init__(self, arm: Arm, log: Path, env: dict[str, str]) -> None:
        self.arm = arm
        self.log = log
        self._log_file = log.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "series.runs.bench.worker",
                str(arm.tree.resolve()),
                arm.package,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            env=env,
            text=True,
            encoding="utf-8",
        )
        self.hello: dict[str, Any] = {}

    def send(self, op: str, **args: Any) -> None:
        stdin = self._pipe(self.proc.stdin)
        try:
            stdin.write(json_text.dumps({"op": op, **args}) + "\n")
            stdin.flush()
        except BrokenPipeError:
            raise self._error(f"the worker for arm {self.arm.name} has exited") from None

    def receive(self, what: str) -> dict[str, Any]:
        line = self._pipe(self.proc.stdout).readline()
        if not line:
            self.proc.wait()
            raise self._error(f"the worker for arm {self.arm.name} died while {what}")
        reply: dict[str, Any] = json_text.loads(line)
        if not reply.pop("ok"):
            raise self._error(
                f"arm {self.arm.name}: {what} failed: {reply['error']}",
                detail=reply.get("traceback", ""),
            )
        return reply

    def request(self, op: str, what: str, **args: Any) -> dict[str, Any]:
        self.send(op, **args)
        return self.receive(what)

    def _pipe(self, stream: IO[str] | None) -> IO[str]:
        assert stream is not None
        return stream

    def _error(self, message: str, detail: str = "") -> SeriesError:
        self._log_file.flush()
        tail = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        why = "\n".join(filter(None, [detail.strip(), *tail]))
        return SeriesError(
            message,
            why=why or "(the worker wrote nothing to stderr)",
            hint=f"the worker's log is {self.log}; check that the tree imports "
            f"with KERAS_BACKEND=torch",
        )

    def ask_to_quit(self) -> None:
        try:
            self.send("quit")
            self._pipe(self.proc.stdin).close()
        except (SeriesError, OSError):
            pass  # already gone: stop() reaps it

    def rss_mb(self) -> float | None:
        """The worker's resident memory now (Linux), in MB."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text(encoding="utf-8")
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return None

    def release(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                with suppress(OSError):
                    stream.close()
        self._log_file.close()


def busy_limit() -> int:
    """How many workers may work at once: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def waves(handles: list[Handle]) -> Iterator[list[Handle]]:
    """The handles in groups of at most ``busy_limit()``."""
    size = busy_limit()
    for start in range(0, len(handles), size):
        yield handles[start : start + size]


def broadcast(handles: list[Handle], op: str, what: str, **args: Any) -> list[dict[str, Any]]:
    """One request to every worker, in waves; the replies in order."""
    replies: list[dict[str, Any]] = []
    for wave in waves(handles):
        for handle in wave:
            handle.send(op, **args)
        replies += [handle.receive(what) for handle in wave]
    return replies


def available_mb() -> float | None:
    """MemAvailable from /proc/meminfo, in MB (None where there is none)."""
    try:
        text = Path("/proc/meminfo").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return None


def memory_plan(count: int, per_worker_mb: float = WORKER_MB) -> str:
    """The memory ``count`` workers need, said up front; refused when it does not fit."""
    need = count * per_worker_mb
    have = available_mb()
    line = f"{count} workers need about {need / 1024:.1f} GB ({per_worker_mb:.0f} MB each)"
    if have is None:
        return line
    line += f"; {have / 1024:.1f} GB available"
    if need > have:
        fits = max(1, int(have // per_worker_mb))
        raise SeriesError(
            f"not measuring {count} arms at once: {line}",
            why="one worker per tree stays up for the whole run, so all must fit in memory",
            hint=f"measure fewer patches at a time (at most about {fits} trees: "
            "series bench P6 P13), or --quick (the pin and the stack)",
        )
    return line


def stop(handles: list[Handle], *, gently: bool) -> None:
    """End every worker at once: "quit" and a shared grace when ``gently``, else SIGKILL."""
    alive = [h for h in handles if h.proc.poll() is None]
    if gently:
        for handle in alive:
            handle.ask_to_quit()
        deadline = time.monotonic() + QUIT_GRACE
        for handle in alive:
            with suppress(subprocess.TimeoutExpired):
                handle.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for handle in alive:
        if handle.proc.poll() is None:
            handle.proc.kill()
    for handle in handles:
        handle.proc.wait()
        handle.release()


@contextmanager
def workers(
    arms: list[Arm],
    log_dir: Path,
    keras_home: Path,
    device: str,
    progress: Progress | None = None,
) -> Iterator[list[Handle]]:
    """Started workers that imported their trees (and proved it); stopped on exit.

    They start in waves of ``busy_limit()``: an import of Keras and torch
    keeps a core busy for seconds, and more imports than cores only share
    them out and make every one slower.
    """
    say = progress or (lambda _: None)
    say(memory_plan(len(arms)))
    log_dir.mkdir(parents=True, exist_ok=True)
    keras_home.mkdir(parents=True, exist_ok=True)
    env = worker_env(keras_home, device)
    handles: list[Handle] = []
    gently = False
    try:
        size = busy_limit()
        for start in range(0, len(arms), size):
            wave = [
                Handle(arm, log_dir / f"{_safe(arm.name)}.log", env)
                for arm in arms[start : start + size]
            ]
            handles += wave
            for handle in wave:
                handle.hello = handle.receive(f"importing {handle.arm.tree}")
                check_proof(handle.arm, Path(handle.hello["where"]))
            say(f"started workers {len(handles)}/{len(arms)}")
        yield handles
        gently = True
    finally:
        stop(handles, gently=gently)


def check_proof(arm: Arm, where: Path) -> None:
    """The parent's own check of where the worker's package came from."""
    tree = arm.tree.resolve()
    if not where.is_relative_to(tree):
        raise SeriesError(
            f"arm {arm.name}: {arm.package} was imported from {where}, not from {tree}",
            why="the numbers would describe the wrong code",
            hint=f"check that {tree} holds a {arm.package} tree and nothing shadows it",
        )


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "arm"
