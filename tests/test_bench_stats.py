"""The bench's arithmetic, on numbers we know the answer for (no Keras needed).

Ratios and their intervals, the equivalence check on saved outputs, the
workload catalogue's additions, and the tree id the cache is keyed by.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from series.errors import UsageError
from series.runs.bench import data
from series.runs.bench.cache import tree_id
from series.runs.bench.equivalence import compare
from series.runs.bench.measure import timed_in
from series.runs.bench.spec import WORKLOADS, Settings, check_workloads
from series.runs.bench.stats import ratio

ROUNDS = [100.0, 104.0, 98.0, 101.0, 99.0, 103.0, 97.0, 102.0, 100.0, 101.0]


def test_same_timings_are_noise() -> None:
    r = ratio(ROUNDS, ROUNDS, paired=True, resamples=1000, seed=0)
    assert (r.median, r.low, r.high) == (1.0, 1.0, 1.0)
    assert r.noise and r.verdict == "noise"


def test_a_candidate_twice_as_fast_is_faster_beyond_noise() -> None:
    r = ratio(ROUNDS, [v / 2 for v in ROUNDS], paired=True, resamples=1000, seed=0)
    assert r.median == pytest.approx(2.0)
    assert r.verdict == "faster" and r.low > 1.0
    slower = ratio(ROUNDS, [v * 1.5 for v in ROUNDS], paired=True, resamples=1000, seed=0)
    assert slower.verdict == "slower" and slower.high < 1.0


def test_spread_within_noise_is_noise_and_the_interval_is_seeded() -> None:
    shuffled = ROUNDS[3:] + ROUNDS[:3]
    r = ratio(ROUNDS, shuffled, paired=True, resamples=2000, seed=1)
    assert r.noise and r.q25 < 1.0 < r.q75
    assert ratio(ROUNDS, shuffled, paired=True, resamples=2000, seed=1) == r


def test_unpaired_samples_use_the_ratio_of_medians() -> None:
    r = ratio(ROUNDS, [50.0, 51.0, 49.0], paired=True, resamples=1000, seed=0)
    assert not r.paired  # different lengths cannot be paired
    assert r.median == pytest.approx(float(np.median(ROUNDS)) / 50.0)
    assert r.verdict == "faster"


def test_a_wider_level_gives_a_wider_interval() -> None:
    noisy = [v * f for v, f in zip(ROUNDS, [1.0, 0.9, 1.1, 1.05, 0.95] * 2, strict=True)]
    narrow = ratio(ROUNDS, noisy, paired=True, resamples=5000, seed=0)
    wide = ratio(ROUNDS, noisy, paired=True, resamples=5000, seed=0, level=0.999)
    assert wide.low <= narrow.low and wide.high >= narrow.high


def _save(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


def test_equivalence_bit_identical_close_and_different(tmp_path: Path) -> None:
    y = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    base = _save(tmp_path / "base.npz", y=y)
    same = compare(base, _save(tmp_path / "same.npz", y=y.copy()), exact=False)
    assert same.ok and same.bit_identical and same.max_abs_diff == 0.0
    close = compare(base, _save(tmp_path / "close.npz", y=y + np.float32(1e-7)), exact=False)
    assert close.ok and not close.bit_identical and 0 < (close.max_abs_diff or 0) < 1e-6
    wrong = compare(base, _save(tmp_path / "wrong.npz", y=y + 1), exact=False)
    assert not wrong.ok and wrong.max_abs_diff == pytest.approx(1.0)
    shape = compare(base, _save(tmp_path / "shape.npz", y=y[:4]), exact=False)
    assert not shape.ok and "shape" in shape.detail


def test_token_ids_and_strings_must_be_identical(tmp_path: Path) -> None:
    ids = np.arange(40, dtype=np.int32).reshape(1, 40)
    base = _save(tmp_path / "ids.npz", y=ids)
    other = ids.copy()
    other[0, -1] += 1
    assert not compare(base, _save(tmp_path / "other.npz", y=other), exact=True).ok
    assert compare(base, _save(tmp_path / "again.npz", y=ids.copy()), exact=True).bit_identical
    text = _save(tmp_path / "text.npz", y=np.asarray("float32"))
    assert compare(text, _save(tmp_path / "t2.npz", y=np.asarray("float32")), exact=False).ok
    assert not compare(text, _save(tmp_path / "t3.npz", y=np.asarray("float64")), exact=False).ok


def test_workloads_bring_their_floor_and_a_control() -> None:
    assert check_workloads(["dense"]) == ["dense", "torch_linear"]
    assert check_workloads(["layer_call"]) == ["layer_call", "torch_linear"]
    assert check_workloads(["cnn", "mha"]) == ["mha", "cnn", "torch_mha", "torch_cnn"]
    assert len(check_workloads([])) == 21
    assert check_workloads(["lm_generate"]) == ["lm_generate", "torch_lm_generate"]
    with pytest.raises(UsageError, match="unknown workload desne"):
        check_workloads(["desne"])


def test_upstreams_models_have_raw_twins_fed_the_same_data() -> None:
    """Each twin gets its Keras workload's inputs and weights, so both compute one function."""
    assert check_workloads(["llm_forward", "llm_generate", "cnn_up"]) == [
        "llm_forward",
        "llm_generate",
        "cnn_up",
        "torch_llm_forward",
        "torch_llm_generate",
        "torch_cnn_up",
    ]
    shapes = [(1024, 256), (256,), (3, 3, 64, 128)]
    for keras in ("llm_forward", "llm_generate", "cnn_up"):
        twin = WORKLOADS[keras].floor
        assert twin is not None and WORKLOADS[twin].twin_of == keras
        assert WORKLOADS[twin].control
        mine, theirs = data.inputs(keras), data.inputs(twin)
        assert mine.keys() == theirs.keys()
        assert all(np.array_equal(mine[k], theirs[k]) for k in mine)
        mine, theirs = data.weights(keras, shapes), data.weights(twin, shapes)
        assert all(np.array_equal(mine[k], theirs[k]) for k in mine)
    assert WORKLOADS["llm_generate"].exact_ids and WORKLOADS["torch_llm_generate"].exact_ids
    # Upstream's vocabulary is 1024 (the old small LM's 256).
    ids = data.inputs("llm_forward")["input/ids"]
    assert ids.shape == (4, 64) and ids.max() >= 256 and ids.max() < 1024
    assert data.inputs("lm_forward")["input/ids"].max() < 256
    # The old workloads keep their own data.
    assert not np.array_equal(
        data.weights("lm_forward", shapes)["w/0000"], data.weights("llm_forward", shapes)["w/0000"]
    )


def test_generate_of_upstreams_llm_is_timed_in_five_rounds_after_the_warm_up() -> None:
    settings = Settings(rounds=15, warmup_rounds=1)
    for name in ("llm_generate", "torch_llm_generate"):
        assert [n for n in range(16) if timed_in(name, n, settings)] == [1, 2, 3, 4, 5]
    for name in ("llm_forward", "dense", "torch_llm_forward"):
        assert [n for n in range(16) if timed_in(name, n, settings)] == list(range(16))
    quick = Settings.quick(rounds=3)
    assert [n for n in range(4) if timed_in("llm_generate", n, quick)] == [1, 2, 3]


def test_tree_id_follows_code_not_tests_or_place(tmp_path: Path) -> None:
    def tree(root: Path, code: str, test: str) -> Path:
        (root / "keras" / "src").mkdir(parents=True)
        (root / "keras" / "src" / "layer.py").write_text(code)
        (root / "keras" / "src" / "layer_test.py").write_text(test)
        return root

    first = tree_id(tree(tmp_path / "a", "x = 1\n", "t = 1\n"), "keras")
    assert tree_id(tree(tmp_path / "b", "x = 1\n", "t = 2\n"), "keras") == first
    assert tree_id(tree(tmp_path / "c", "x = 2\n", "t = 1\n"), "keras") != first


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("size", [10, 25])
def test_the_interval_agrees_with_scipys_bootstrap(paired: bool, size: int) -> None:
    """The hand-written percentile bootstrap against scipy.stats.bootstrap, on the same samples."""
    from scipy.stats import bootstrap

    draw = np.random.default_rng(size)
    base = 100 * draw.lognormal(0, 0.05, size)
    cand = 80 * draw.lognormal(0, 0.05, size)
    ours = ratio(list(base), list(cand), paired=paired, resamples=20000, seed=3)

    def statistic(*xs: np.ndarray, axis: int) -> Any:
        # the paired statistic: the median of per-round ratios; unpaired: the ratio of medians
        return np.median(xs[0], axis=axis) / (1 if paired else np.median(xs[1], axis=axis))

    samples = (base / cand,) if paired else (base, cand)
    theirs = bootstrap(
        samples,
        statistic,
        method="percentile",
        n_resamples=20000,
        confidence_level=0.95,
        rng=np.random.default_rng(3),
        vectorized=True,
    )
    ci = theirs.confidence_interval
    # medians of resamples take few distinct values: both samplers land on the same ones
    assert ours.low == pytest.approx(ci.low, rel=0.002)
    assert ours.high == pytest.approx(ci.high, rel=0.002)
    assert ours.median == pytest.approx(float(statistic(*samples, axis=-1)))
    assert ours.paired is paired
