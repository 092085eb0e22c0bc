"""The worker: one process per arm, importing that arm's tree once.

Started by ``pool.py`` as ``python -m series.runs.bench.worker TREE PACKAGE``.
It imports the package from TREE with the test harness's loader
(``harness/series_tree_loader.py``, the code ``series test`` uses) and
checks that ``keras.src`` came from TREE before it answers anything: an
installed Keras must never be measured in its place.

Protocol: one JSON object per line on stdin, one reply per line on the
original stdout. File descriptor 1 is pointed at stderr before Keras is
imported, so whatever Keras or torch print cannot corrupt the protocol.
Every reply has ``ok``; a failed request answers ``ok: false`` with the
error and its traceback, and the worker stays up.

Timing: a sample is ``calls`` back-to-back calls with the garbage collector
off, timed by the thread's CPU clock (``time.thread_time_ns``; torch runs
one thread, the calling one) and the wall clock (``time.perf_counter_ns``);
the reply is per call.

A worker dies with its parent: on Linux it asks the kernel for SIGKILL when
the parent exits (``prctl(PR_SET_PDEATHSIG)``), then checks that the parent
it was started by (``SERIES_BENCH_PARENT``) is still the one it has, for a
parent that died before the request. Elsewhere it ends when its stdin
closes, which happens when the parent dies.
"""

from __future__ import annotations

import cProfile
import ctypes
import gc
import importlib
import os
import platform
import pstats
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

import numpy as np

from series import json_text
from series.runs.bench import workloads
from series.runs.bench.explain import explain
from series.runs.bench.spec import HARNESS, WORKLOADS


class Worker:
    def __init__(self, tree: Path, package: str) -> None:
        self.tree = tree
        self.package = package
        self.built: dict[str, workloads.Built] = {}
        self.keras: Any = None
        self.torch: Any = None
        self.where: Path | None = None

    def load(self) -> dict[str, Any]:
        # The harness directory is not a package (pytest loads it from
        # PYTHONPATH); appended, not prepended, so it shadows nothing.
        sys.path.append(str(HARNESS))
        loader = importlib.import_module("series_tree_loader")
        loader.load(self.tree, self.package)
        self.where = Path(loader.imported_from(self.package))
        if not self.where.is_relative_to(self.tree):
            raise RuntimeError(
                f"{self.package} was imported from {self.where}, not from the tree {self.tree}"
            )
        keras = importlib.import_module("keras")
        torch = importlib.import_module("torch")

        torch.set_num_threads(1)
        self.keras, self.torch = keras, torch
        return {
            "where": str(self.where),
            "versions": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "numpy": np.__version__,
                "keras": keras.version(),
                "backend": keras.backend.backend(),
            },
            "threads": torch.get_num_threads(),
        }

    def _inputs(self, name: str, data: dict[str, np.ndarray]) -> dict[str, Any]:
        device = "cuda" if self.torch.cuda.is_available() else "cpu"
        return {
            key: self.torch.as_tensor(data[f"input/{key}"], device=device)
            for key in WORKLOADS[name].inputs
        }

    def op_shapes(self, workload: str, data: str) -> dict[str, Any]:
        built = self._build(workload, data)
        return {"shapes": [list(v.shape) for v in built.variables]}

    def _build(self, workload: str, data: str) -> workloads.Built:
        if workload not in self.built:
            with np.load(data) as arrays:
                inputs = self._inputs(workload, dict(arrays))
            self.built[workload] = workloads.build(workload, self.keras, self.torch, inputs)
        return self.built[workload]

    def op_build(self, workload: str, data: str, out: str) -> dict[str, Any]:
        built = self._build(workload, data)
        with np.load(data) as arrays:
            weights = [arrays[k] for k in sorted(arrays.files) if k.startswith("w/")]
        workloads.set_weights(built, weights)
        np.savez(out, **built.outputs())  # type: ignore[arg-type]
        # Long-lived objects (Keras, torch, the models) go to the permanent
        # generation: the collection before each sample then stays cheap.
        gc.collect()
        gc.freeze()
        return {}

    def op_time(self, workload: str, calls: int) -> dict[str, Any]:
        call = self.built[workload].call
        gc.collect()
        gc.disable()
        try:
            cpu0, wall0 = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(calls):
                call()
            wall1, cpu1 = time.perf_counter_ns(), time.thread_time_ns()
        finally:
            gc.enable()
        return {"cpu": (cpu1 - cpu0) / calls, "wall": (wall1 - wall0) / calls}

    def op_profile(self, workload: str, calls: int, top: int) -> dict[str, Any]:
        call = self.built[workload].call
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            call()
        profiler.disable()
        stats = pstats.Stats(profiler)
        rows = []
        for (file, line, func), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
            rows.append([file, line, func, ncalls, tottime / calls, cumtime / calls])
        rows.sort(key=lambda r: -r[5])
        return {"frames": rows[:top], "calls": calls}

    def op_explain(self, workload: str) -> dict[str, Any]:
        built = self.built[workload]
        if built.model is None:
            raise ValueError(f"workload {workload} has no model to trace")
        return explain(self.torch, self.tree, built.model, built.args)

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.pop("op")
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            raise ValueError(f"unknown request {op!r}")
        result: dict[str, Any] = handler(**request)
        return result


def _reply(stream: IO[str], payload: dict[str, Any]) -> None:
    stream.write(json_text.dumps(payload) + "\n")
    stream.flush()


def _serve(worker: Worker, proto: IO[str]) -> None:
    for line in sys.stdin:
        request = json_text.loads(line)
        if request.get("op") == "quit":
            return
        try:
            _reply(proto, {"ok": True, **worker.handle(request)})
        except Exception as exc:
            _reply(proto, {"ok": False, "error": str(exc), "traceback": traceback.format_exc()})


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL this process when its parent exits, whatever way the parent goes."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    parent = os.environ.get("SERIES_BENCH_PARENT")
    if parent and os.getppid() != int(parent):
        os._exit(1)  # the parent died before the request: nobody to die with


def main(argv: list[str]) -> int:
    die_with_parent()
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    worker = Worker(Path(argv[0]).resolve(), argv[1])
    try:
        hello = worker.load()
    except Exception as exc:
        _reply(proto, {"ok": False, "error": str(exc), "traceback": traceback.format_exc()})
        return 1
    _reply(proto, {"ok": True, **hello})
    _serve(worker, proto)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
