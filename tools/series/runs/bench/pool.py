"""The parent's side of the workers: start them, talk to them, stop them.

One ``Handle`` per arm wraps a ``python -m series.runs.bench.worker``
process (protocol in ``worker.py``). Requests that every worker must answer
(start-up, building) are sent to all first and answered after, so the
workers do that work in parallel; timing requests go to one worker at a
time, so measurements never overlap. A worker's stderr goes to a log file,
quoted in the error when it fails.

The environment pins what makes timings comparable: one thread for torch
and the BLAS libraries, the torch backend, a private KERAS_HOME (a user's
keras.json must not change the layout or float type), a fixed hash seed,
and no GPU unless asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import series
from series.errors import SeriesError
from series.runs.bench.spec import Arm

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
            stdin.write(json.dumps({"op": op, **args}) + "\n")
            stdin.flush()
        except BrokenPipeError:
            raise self._error(f"the worker for arm {self.arm.name} has exited") from None

    def receive(self, what: str) -> dict[str, Any]:
        line = self._pipe(self.proc.stdout).readline()
        if not line:
            self.proc.wait()
            raise self._error(f"the worker for arm {self.arm.name} died while {what}")
        reply: dict[str, Any] = json.loads(line)
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

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self._pipe(self.proc.stdin).close()
                self.proc.wait(timeout=10)
            except (SeriesError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._log_file.close()


def broadcast(handles: list[Handle], op: str, what: str, **args: Any) -> list[dict[str, Any]]:
    """Send one request to every worker, then collect the replies in order."""
    for handle in handles:
        handle.send(op, **args)
    return [handle.receive(what) for handle in handles]


@contextmanager
def workers(
    arms: list[Arm], log_dir: Path, keras_home: Path, device: str
) -> Iterator[list[Handle]]:
    """Started workers that imported their trees (and proved it); stopped on exit."""
    log_dir.mkdir(parents=True, exist_ok=True)
    keras_home.mkdir(parents=True, exist_ok=True)
    env = worker_env(keras_home, device)
    handles: list[Handle] = []
    try:
        for arm in arms:
            handles.append(Handle(arm, log_dir / f"{_safe(arm.name)}.log", env))
        for handle in handles:
            handle.hello = handle.receive(f"importing {handle.arm.tree}")
            check_proof(handle.arm, Path(handle.hello["where"]))
        yield handles
    finally:
        for handle in handles:
            handle.close()


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
