"""``series.runs.bench`` on real Keras trees: the pin and copies we break on purpose.

The pin is the keras 3.15.1 sdist tree (materialised by ``series apply``, as
a user would); the other arms are copies of it with one edit in
``Dense.call``: a millisecond added to the clocks the worker times with (slower,
same results), ``+ 1`` (wrong results), an ``.item()`` (a graph break under
torch.compile). Everything runs in quick mode, so the whole module takes seconds
per test; these tests assert on verdicts that hold by a wide margin whatever the
machine's load, never on timings.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from helpers import IDENT_ENV, git, replace_line
from series.cli import main
from series.errors import Exit, SeriesError, UsageError
from series.runs.bench import (
    Arm,
    BenchReport,
    Comparison,
    Pair,
    render_profile,
    render_scorecard,
    render_table,
    report_json,
    run_bench,
    run_profile,
    run_scorecard,
    scorecard_json,
    summary_lines,
    write_chart,
)

pytestmark = pytest.mark.keras
ROOT = Path(__file__).resolve().parent.parent
DENSE = "keras/src/layers/core/dense.py"
MATMUL = "        x = ops.matmul(inputs, self.kernel)\n"
# A slowdown the worker's clocks see (time.thread_time_ns and perf_counter_ns, read by
# series.runs.bench.worker around each sample) without burning it: ADDED nanoseconds
# per call. Burnt work (a busy loop of 40 us, half a Dense call) was told from the
# noise on a quiet machine and called noise at load 18, the noise growing with the
# load; a millisecond (a dozen Dense calls) added to the clocks stays beyond any noise
# of the real work. What is checked is that the bench measures each arm's own code
# and compares the right samples, not how fast anything ran.
CLOCK = """

import time as _time

_ADDED = [0]
_thread_time_ns, _perf_counter_ns = _time.thread_time_ns, _time.perf_counter_ns
_time.thread_time_ns = lambda: _thread_time_ns() + _ADDED[0]
_time.perf_counter_ns = lambda: _perf_counter_ns() + _ADDED[0]
"""
ADDED = "1_000_000"
SLOW = (MATMUL, f"        _ADDED[0] += {ADDED}\n" + MATMUL)
WRONG = (
    "        return x\n\n    def compute_output_shape",
    "        return x + 1\n\n    def compute_output_shape",
)
BREAK = (MATMUL, "        _ = inputs.sum().item()\n" + MATMUL)


@pytest.fixture(scope="module")
def pin(
    tmp_path_factory: pytest.TempPathFactory, keras_cache: Path, project_copy: Path
) -> Iterator[Path]:
    """The pinned upstream tree, from `series apply` on a copy of this project."""
    root = tmp_path_factory.mktemp("bench-project")
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = T\n\temail = t@series.invalid\n")
    shutil.copy2(project_copy / "series.toml", root / "series.toml")
    shutil.copytree(project_copy / "patches", root / "patches")
    with pytest.MonkeyPatch.context() as env:
        for name, value in {
            **IDENT_ENV,
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "SERIES_CACHE_DIR": str(keras_cache),
        }.items():
            env.setenv(name, value)
        out, err = io.StringIO(), io.StringIO()
        code = main(["-C", str(root), "apply", "--source", "sdist", "--to", "P1"], out=out, err=err)
        assert code == 0, err.getvalue()
        tree = root / "pin"
        git(root / "work", "worktree", "add", "-q", "--detach", str(tree), "refs/series/base")
        yield tree


def variant(pin: Path, dest: Path, edit: tuple[str, str], tail: str = "") -> Path:
    """A copy of the pin's package (tests left out) with one edit in dense.py, and
    ``tail`` at its end (CLOCK: the clocks a slowdown adds to)."""
    shutil.copytree(
        pin / "keras", dest / "keras", ignore=shutil.ignore_patterns("__pycache__", "*_test.py")
    )
    replace_line(dest / DENSE, *edit)
    with (dest / DENSE).open("a") as handle:
        handle.write(tail)
    return dest


@pytest.fixture(scope="module")
def arms(pin: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Arm]:
    base = tmp_path_factory.mktemp("arms")
    return [
        Arm("pin", pin),
        Arm("slow", variant(pin, base / "slow", SLOW, CLOCK)),
        Arm("wrong", variant(pin, base / "wrong", WRONG)),
    ]


@pytest.fixture(scope="module")
def bench_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-cache")


@pytest.fixture(scope="module")
def report(arms: list[Arm], bench_cache: Path) -> BenchReport:
    pairs = [Pair("pin", "slow"), Pair("pin", "wrong")]
    return run_bench(arms, ["dense", "layer_call"], cache_dir=bench_cache, pairs=pairs, quick=True)


def find(report: BenchReport, candidate: str, workload: str) -> Comparison:
    (match,) = [
        c for c in report.comparisons if c.pair.candidate == candidate and c.workload == workload
    ]
    return match


def test_every_arm_imported_its_own_tree(report: BenchReport) -> None:
    for arm in report.arms:
        assert Path(arm.where) == arm.arm.tree.resolve() / "keras" / "src"
    assert len({a.tree_id for a in report.arms}) == 3


def test_a_slowed_dense_is_a_slowdown_beyond_noise(report: BenchReport) -> None:
    slow = find(report, "slow", "dense")
    assert slow.cpu.verdict == "slower"
    assert slow.cpu.high < 1.0
    assert slow.cpu.paired
    assert slow.equivalence.ok and slow.equivalence.bit_identical


def test_a_wrong_dense_fails_equivalence(report: BenchReport) -> None:
    wrong = find(report, "wrong", "dense")
    assert not wrong.equivalence.ok
    assert wrong.equivalence.max_abs_diff == pytest.approx(1.0)
    assert report.failures == [wrong]
    assert report.exit_code == Exit.FAILED
    assert find(report, "wrong", "layer_call").equivalence.bit_identical


def test_controls_are_compared_and_flag_the_run_when_they_move(report: BenchReport) -> None:
    """Every arm is compared on the control workload, and the run's verdict follows them.

    Whether identical code measures the same depends on the load of the
    machine the tests share, so no timing is asserted here (a control
    that moved by construction is caught in
    test_a_moved_control_flags_the_run_as_disturbed); what is checked is
    that the controls are there and that the report calls the run
    disturbed exactly when one of them is not noise.
    """
    controls = [c for c in report.comparisons if c.control]
    assert {c.workload for c in controls} == {"torch_linear"}
    assert {c.pair.candidate for c in controls} == {a.arm.name for a in report.arms} - {"pin"}
    assert report.moved_controls == [c for c in controls if not c.cpu.noise]
    if report.moved_controls:
        assert report.disturbed


# Loaded with Keras, this slows torch's own nn.Linear: the control moves (as SLOW,
# on the clocks).
DISTURB = f"""

import torch as _torch

_forward = _torch.nn.Linear.forward


def _slow_forward(self, x):
    _ADDED[0] += {ADDED}
    return _forward(self, x)


_torch.nn.Linear.forward = _slow_forward
"""


def test_a_moved_control_flags_the_run_as_disturbed(
    arms: list[Arm], bench_cache: Path, tmp_path: Path
) -> None:
    disturbed = variant(arms[0].tree, tmp_path / "disturbed", (MATMUL, MATMUL), CLOCK + DISTURB)
    got = run_bench(
        [arms[0], Arm("disturbed", disturbed)], ["layer_call"], cache_dir=bench_cache, quick=True
    )
    (control,) = got.moved_controls
    assert got.disturbed and any(r.startswith("control torch_linear") for r in got.disturbance)
    assert control.workload == "torch_linear" and control.cpu.verdict == "slower"
    assert not got.failures and got.exit_code == Exit.OK
    assert any(line.startswith("DISTURBED: control torch_linear") for line in summary_lines(got))


def test_table_json_and_chart_are_written(report: BenchReport, tmp_path: Path) -> None:
    data = json.loads(json.dumps(report_json(report)))
    assert data["format"] == 1 and data["failed"]
    assert data["disturbed"] == report.disturbed == bool(data["disturbance"])
    rows = {(c["candidate"], c["workload"]): c for c in data["comparisons"]}
    assert rows[("slow", "dense")]["cpu"]["verdict"] == "slower"
    assert rows[("wrong", "dense")]["equivalence"]["ok"] is False
    assert len(data["load_average"]["before"]) == 3
    chart = write_chart(report, tmp_path / "out" / "bench.png")
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert render_table(report).row_count == len(report.comparisons)
    lines = summary_lines(report)
    assert lines[0].startswith("load average ")
    assert [line for line in lines if line.startswith("FAILED")] == [
        "FAILED: wrong vs pin on dense: max abs diff 1"
    ]


def test_the_cache_remeasures_only_changed_trees(
    report: BenchReport, arms: list[Arm], bench_cache: Path, tmp_path: Path
) -> None:
    changed = variant(arms[0].tree, tmp_path / "changed", SLOW, CLOCK)
    replace_line(changed / DENSE, f"+= {ADDED}", f"+= {ADDED}0")
    moved = tmp_path / "pin-copy"  # same content elsewhere: the same tree
    shutil.copytree(arms[0].tree / "keras", moved / "keras")
    again = run_bench(
        [arms[0], Arm("moved", moved), arms[1], Arm("changed", changed)],
        ["dense", "layer_call"],
        cache_dir=bench_cache,
        quick=True,
    )
    measured = {a.arm.name: a.measured for a in again.arms}
    assert measured == {
        "pin": [],
        "moved": [],
        "slow": [],
        "changed": ["dense", "layer_call", "torch_linear"],
    }
    assert find(again, "slow", "dense").cpu == find(report, "slow", "dense").cpu
    changed_dense = find(again, "changed", "dense")
    assert not changed_dense.cpu.paired  # timed in another run than the pin
    # (how much slower it came out is a timing, and depends on the machine's load)


def test_a_directory_that_is_not_a_keras_tree_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty" / "keras").mkdir(parents=True)
    with pytest.raises(SeriesError) as info:
        run_bench([Arm("empty", tmp_path / "empty")], ["dense"], cache_dir=tmp_path, quick=True)
    assert "does not look like a Keras tree" in info.value.message


def test_bad_input_is_refused_before_anything_runs(arms: list[Arm], tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown workload"):
        run_bench(arms, ["desne"], cache_dir=tmp_path)
    with pytest.raises(UsageError, match="names arm 'stack'"):
        run_bench(arms, ["dense"], cache_dir=tmp_path, pairs=[Pair("pin", "stack")])
    with pytest.raises(UsageError, match="no tree at"):
        run_bench([Arm("gone", tmp_path / "gone")], ["dense"], cache_dir=tmp_path)
    with pytest.raises(UsageError, match="two arms are named pin"):
        run_bench([arms[0], arms[0]], ["dense"], cache_dir=tmp_path)
    with pytest.raises(UsageError, match="cannot trace mha"):
        run_scorecard(arms, ["mha"], cache_dir=tmp_path)
    assert not (tmp_path / "bench").exists()


def test_profile_shows_where_a_dense_call_goes(arms: list[Arm], bench_cache: Path) -> None:
    # Dense's call() ranks about 8th by cumulative time; a preemption on a loaded machine
    # inflates every frame above the one it hit, so leave room: the top 40.
    profile = run_profile(arms[0], "dense", cache_dir=bench_cache, calls=50, top=40)
    where = [f.where for f in profile.frames]
    assert any(w.startswith("keras/src/layers/layer.py:") for w in where)
    assert any(w.startswith(f"{DENSE}:") for w in where)
    assert profile.frames[0].cumulative_us >= profile.frames[-1].cumulative_us
    assert render_profile(profile).row_count == len(profile.frames)


def test_scorecard_flags_a_state_that_adds_a_graph_break(
    arms: list[Arm], bench_cache: Path, tmp_path: Path
) -> None:
    broken = variant(arms[0].tree, tmp_path / "break", BREAK)
    states = [arms[0], Arm("print", broken)]
    card = run_scorecard(states, ["dense"], cache_dir=bench_cache)
    pin, printed = card.results
    assert (pin.trace.graphs, pin.trace.breaks, pin.flagged) == (1, 0, [])
    assert printed.trace.breaks >= 1 and printed.delta_breaks == printed.trace.breaks
    assert printed.flagged and card.exit_code == Exit.FAILED
    assert any(where.startswith(f"{DENSE}:call") for _, where in printed.new_reasons)
    assert scorecard_json(card)["results"][1]["flagged"]
    assert render_scorecard(card).row_count == 2
    again = run_scorecard(states, ["dense"], cache_dir=bench_cache)
    assert [r.cached for r in again.results] == [True, True]
    assert again.results[1].trace == printed.trace


def test_the_tree_workload_and_the_raw_torch_llm_twins(pin: Path, bench_cache: Path) -> None:
    """keras.tree has a workload; both LLM workloads have a raw torch floor."""
    report = run_bench(
        [Arm("pin", pin)],
        ["keras_tree", "lm_forward", "lm_generate"],
        cache_dir=bench_cache,
        quick=True,
        rounds=3,
    )
    assert report.workloads == [
        "keras_tree",
        "lm_forward",
        "lm_generate",
        "torch_lm_forward",
        "torch_lm_generate",
    ]
    for workload in report.workloads:
        assert report.samples[("pin", workload)].cpu
    floors = {(f.workload, f.torch) for f in report.floors}
    assert floors == {
        ("lm_forward", "torch_lm_forward"),
        ("lm_generate", "torch_lm_generate"),
    }
    assert all(f.ratio > 0 for f in report.floors)


def test_a_dense_workload_given_training(pin: Path, bench_cache: Path) -> None:
    """P19 and P22 speed up calls given ``training=``: a workload makes such calls."""
    report = run_bench(
        [Arm("pin", pin)], ["dense_training"], cache_dir=bench_cache, quick=True, rounds=3
    )
    assert report.workloads == ["dense_training", "torch_linear"]
    assert report.samples[("pin", "dense_training")].cpu
    assert {(f.workload, f.torch) for f in report.floors} == {("dense_training", "torch_linear")}


UPSTREAM = ["llm_forward", "llm_generate", "cnn_up"]
TWINS = ["torch_llm_forward", "torch_llm_generate", "torch_cnn_up"]


def test_upstreams_models_their_raw_twins_and_their_equivalence(
    arms: list[Arm], bench_cache: Path
) -> None:
    """Upstream's LLM and CNN, as SERIES.md sizes them, against raw torch twins.

    A twin given the same weights gives the Keras model's outputs (token
    ids identical); the pair comparisons check the new workloads like the
    others: a Dense that adds 1 changes the LLM's logits and the CNN's
    outputs (not the argmax of the logits: the generated tokens stay).
    """
    pairs = [Pair("pin", "slow"), Pair("pin", "wrong")]
    report = run_bench(arms, UPSTREAM, cache_dir=bench_cache, pairs=pairs, quick=True, rounds=6)
    assert report.workloads == UPSTREAM + TWINS
    # Parameter counts: the weights every arm was given.
    data_dir = bench_cache / "bench" / "work" / "data"
    given = {}
    for workload in UPSTREAM + TWINS:
        (path,) = [p for p in data_dir.glob(f"{workload}-*.npz") if "-inputs-" not in p.name]
        with np.load(path) as arrays:
            given[workload] = {k: arrays[k] for k in arrays.files if k.startswith("w/")}
    for keras, twin in zip(UPSTREAM, TWINS, strict=True):
        assert given[keras].keys() == given[twin].keys()
        assert all(np.array_equal(given[keras][k], given[twin][k]) for k in given[keras])
    counts = {w: sum(a.size for a in weights.values()) for w, weights in given.items()}
    assert counts == {
        "llm_forward": 2_105_344,
        "llm_generate": 2_105_344,
        "cnn_up": 113_866,
        "torch_llm_forward": 2_105_344,
        "torch_llm_generate": 2_105_344,
        "torch_cnn_up": 113_866,
    }
    # Generation is timed in 5 rounds, the rest in all 6.
    for workload in report.workloads:
        expected = 5 if "generate" in workload else 6
        assert len(report.samples[("slow", workload)].cpu) == expected
    # The twins compute what the Keras models compute, in the unbroken arms.
    floors = {(f.arm, f.workload): f for f in report.floors}
    assert {w for _, w in floors} == set(UPSTREAM)
    for arm in ("pin", "slow"):
        for workload in UPSTREAM:
            same = floors[(arm, workload)].same_outputs
            assert same is not None and same.ok, (arm, workload, same)
            assert same.max_abs_diff is not None and same.max_abs_diff < 1e-5
        assert floors[(arm, "llm_generate")].same_outputs.bit_identical  # type: ignore[union-attr]
    for workload in ("llm_forward", "cnn_up"):
        assert not floors[("wrong", workload)].same_outputs.ok  # type: ignore[union-attr]
    # Across arms: identical where the arm computes the same, a failure where not.
    for workload in UPSTREAM + TWINS:
        assert find(report, "slow", workload).equivalence.bit_identical
    for workload in ("llm_forward", "cnn_up"):
        assert not find(report, "wrong", workload).equivalence.ok
    assert find(report, "wrong", "llm_generate").equivalence.bit_identical
    assert report.exit_code == Exit.FAILED
    lines = summary_lines(report)
    assert "FLOOR NOT THE SAME WORK: torch_cnn_up differs from cnn_up on arm wrong" in "\n".join(
        lines
    )
    printed = json.loads(json.dumps(report_json(report)))
    pin_floor = [f for f in printed["floors"] if f["arm"] == "pin"]
    assert all(f["same_outputs"]["ok"] for f in pin_floor)


def test_profile_of_upstreams_llm_generate_takes_five_calls(pin: Path, bench_cache: Path) -> None:
    """A generation takes about a second: 200 profiled calls would take minutes."""
    found = run_profile(Arm("pin", pin), "llm_generate", cache_dir=bench_cache)
    assert found.calls == 5
    assert found.frames and all(frame.cumulative_us > 0 for frame in found.frames)
