"""Do two arms compute the same thing? Outputs of one workload, compared.

Numbers may differ in the last bits when a patch computes the same thing
another way (a fused op, another summation order): within ``RTOL``/``ATOL``
that passes, and bit-identity is reported beside it. Token ids (generated
text) and anything not numeric must be identical.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

RTOL = 1e-5
ATOL = 1e-5


@dataclass(frozen=True)
class Equivalence:
    ok: bool
    bit_identical: bool
    max_abs_diff: float | None  # None when not numeric or shapes differ
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @property
    def summary(self) -> str:
        if self.bit_identical:
            return "bit-identical"
        if self.ok:
            return f"max diff {self.max_abs_diff:.1e}"
        return f"DIFFERS: {self.detail}"


def _compare(a: np.ndarray, b: np.ndarray, exact: bool) -> Equivalence:
    if a.shape != b.shape:
        return Equivalence(False, False, None, f"shape {b.shape}, baseline {a.shape}")
    if a.dtype != b.dtype and not (a.dtype.kind in "fiu" and b.dtype.kind in "fiu"):
        return Equivalence(False, False, None, f"dtype {b.dtype}, baseline {a.dtype}")
    same = a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if a.dtype.kind not in "fiub" or b.dtype.kind not in "fiub":
        return Equivalence(same, same, None, "" if same else f"{b!s} != {a!s}")
    diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0))
    if exact:
        ok = bool(np.array_equal(a, b))
        return Equivalence(ok, same, diff, "" if ok else "token ids differ")
    ok = same or bool(np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
    return Equivalence(ok, same, diff, "" if ok else f"max abs diff {diff:.3g}")


def compare(baseline: Path, candidate: Path, *, exact: bool) -> Equivalence:
    with np.load(baseline) as base, np.load(candidate) as cand:
        if sorted(base.files) != sorted(cand.files):
            return Equivalence(False, False, None, f"outputs {cand.files}, baseline {base.files}")
        results = [_compare(base[k], cand[k], exact) for k in sorted(base.files)]
    if not results:
        return Equivalence(True, True, 0.0)
    diffs = [r.max_abs_diff for r in results if r.max_abs_diff is not None]
    failed = [r.detail for r in results if not r.ok]
    return Equivalence(
        ok=not failed,
        bit_identical=all(r.bit_identical for r in results),
        max_abs_diff=max(diffs) if diffs else None,
        detail="; ".join(failed),
    )
