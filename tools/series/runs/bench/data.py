"""The inputs and weights every arm is given: made once by the parent, saved, shared.

One ``.npz`` per workload holds ``input/<name>`` arrays (from the shapes in
``spec.py``) and ``w/<index>`` weights (from the variable shapes the first
worker reports). Values come from numpy's PCG64 seeded by the workload name (a twin's by
the name of the workload it is the twin of, so both compute one function),
so they are the same on every run and every machine, and every arm loads
the same bytes: outputs can then be compared across arms bit for bit.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np

from series.runs.bench.spec import WORKLOADS


def _rng(name: str, salt: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{name}\0{salt}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "little")))


def inputs(name: str) -> dict[str, np.ndarray]:
    rng = _rng(WORKLOADS[name].seed, "inputs")
    arrays: dict[str, np.ndarray] = {}
    for key, spec in WORKLOADS[name].inputs.items():
        if spec.dtype == "int32":
            arrays[f"input/{key}"] = rng.integers(0, spec.high, spec.shape, dtype=np.int32)
        else:
            arrays[f"input/{key}"] = rng.standard_normal(spec.shape, dtype=np.float32)
    return arrays


def weights(name: str, shapes: list[tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Scaled normal weights: 1/sqrt(fan in) for matrices and kernels, 0.1 for vectors."""
    rng = _rng(WORKLOADS[name].seed, "weights")
    arrays: dict[str, np.ndarray] = {}
    for index, shape in enumerate(shapes):
        fan_in = math.prod(shape[:-1]) if len(shape) > 1 else 100
        scale = 1.0 / math.sqrt(fan_in)
        value = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        arrays[f"w/{index:04d}"] = value
    return arrays


def write(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)
    return path
