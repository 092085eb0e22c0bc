"""What can be measured: the workload catalogue, arms, pairs and settings.

Plain data shared by the parent and the workers (so it imports neither
Keras nor torch). A workload is named here once; the code that builds it
lives in ``workloads.py`` and runs only inside a worker. Inputs are made by
the parent from these shapes (seeded numpy) so every arm sees the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from series.errors import UsageError

# The test harness's directory (not a package; holds series_tree_loader.py).
HARNESS = Path(__file__).resolve().parent.parent / "harness"
VOCAB = 256  # the small LM's vocabulary
PROMPT = 8  # tokens given to the greedy generator
GENERATE = 32  # tokens it adds
# Upstream's LLM (SERIES.md, "How the series was measured upstream").
UP_VOCAB = 1024
UP_BATCH = 4
UP_WINDOW = 64  # its sequence: the prompt, and the window generation slides


@dataclass(frozen=True)
class Input:
    shape: tuple[int, ...]
    dtype: str  # "float32" (normal samples) or "int32" (tokens in [0, high))
    high: int = VOCAB


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    inputs: dict[str, Input]
    control: bool = False  # raw torch, identical code in every arm
    floor: str | None = None  # the raw torch workload that does the same work
    exact_ids: bool = False  # outputs are token ids: must be identical
    # A twin given the inputs and weights of this workload (seeded by its
    # name): it computes the same function, and its outputs are compared.
    twin_of: str | None = None
    # Timed in the first N rounds only, and not in the warm-up round: a call
    # of upstream's LLM generate takes about a second, some 60 samples of
    # 12 ms (measure.py). None: every round.
    rounds: int | None = None

    @property
    def seed(self) -> str:
        """The name its inputs and weights are drawn from."""
        return self.twin_of or self.name


def _f(*shape: int) -> Input:
    return Input(tuple(shape), "float32")


_UP_IDS = {"ids": Input((UP_BATCH, UP_WINDOW), "int32", UP_VOCAB)}
_UP_IMAGES = {"x": _f(4, 32, 32, 3)}
_UP_ROUNDS = 5  # timed rounds of upstream's LLM generate and its twin


_ALL = [
    Workload("dense", "Dense(64) call on (8, 32)", {"x": _f(8, 32)}, floor="torch_linear"),
    Workload(
        "dense_training",
        "Dense(64) call on (8, 32) with training=False",
        {"x": _f(8, 32)},
        floor="torch_linear",
    ),
    Workload("layer_call", "trivial Layer.__call__", {"x": _f(8, 32)}),
    Workload(
        "mha", "causal MultiHeadAttention (2, 16, 64)", {"x": _f(2, 16, 64)}, floor="torch_mha"
    ),
    Workload("standardize_dtype", 'standardize_dtype("float32")', {}),
    Workload("convert_to_tensor", "convert_to_tensor of a tensor on the device", {"x": _f(8, 32)}),
    Workload(
        "keras_tree",
        "keras.tree traverse, flatten, pack_sequence_as over nested dicts",
        {"x": _f(8, 32)},
    ),
    Workload(
        "lm_forward",
        "small LM (2 blocks, d 128) forward, T = 32",
        {"ids": Input((1, 32), "int32")},
        floor="torch_lm_forward",
    ),
    Workload(
        "lm_generate",
        f"small LM greedy generate {GENERATE} tokens",
        {"ids": Input((1, PROMPT), "int32")},
        exact_ids=True,
        floor="torch_lm_generate",
    ),
    Workload(
        "cnn",
        "small CNN forward, batch 8, 32x32x3",
        {"x": _f(8, 32, 32, 3)},
        floor="torch_cnn",
    ),
    Workload(
        "llm_forward",
        "upstream's LLM (2.1M params) forward, batch 4, T = 64",
        _UP_IDS,
        floor="torch_llm_forward",
    ),
    Workload(
        "llm_generate",
        f"upstream's LLM greedy generate {GENERATE} tokens, 64-token window, no_grad",
        _UP_IDS,
        exact_ids=True,
        floor="torch_llm_generate",
        rounds=_UP_ROUNDS,
    ),
    Workload(
        "cnn_up",
        "upstream's CNN (114K params) forward, batch 4, 32x32x3",
        _UP_IMAGES,
        floor="torch_cnn_up",
    ),
    Workload("torch_linear", "raw torch nn.Linear (control)", {"x": _f(8, 32)}, control=True),
    Workload(
        "torch_mha", "raw torch causal SDPA MHA (control)", {"x": _f(2, 16, 64)}, control=True
    ),
    Workload("torch_cnn", "raw torch CNN (control)", {"x": _f(8, 32, 32, 3)}, control=True),
    Workload(
        "torch_lm_forward",
        "raw torch twin of the small LM, forward (control)",
        {"ids": Input((1, 32), "int32")},
        control=True,
    ),
    Workload(
        "torch_lm_generate",
        f"raw torch twin of the small LM, generate {GENERATE} tokens (control)",
        {"ids": Input((1, PROMPT), "int32")},
        control=True,
    ),
    Workload(
        "torch_llm_forward",
        "raw torch twin of upstream's LLM, forward (control)",
        _UP_IDS,
        control=True,
        twin_of="llm_forward",
    ),
    Workload(
        "torch_llm_generate",
        f"raw torch twin of upstream's LLM, generate {GENERATE} tokens, no_grad (control)",
        _UP_IDS,
        control=True,
        exact_ids=True,
        twin_of="llm_generate",
        rounds=_UP_ROUNDS,
    ),
    Workload(
        "torch_cnn_up",
        "raw torch twin of upstream's CNN (control)",
        _UP_IMAGES,
        control=True,
        twin_of="cnn_up",
    ),
]
WORKLOADS: dict[str, Workload] = {w.name: w for w in _ALL}
CONTROLS = tuple(w.name for w in _ALL if w.control)
QUICK = ("dense", "layer_call", "torch_linear")
# What `scorecard` runs under torch._dynamo.explain.
MODELS = ("lm_forward", "cnn")


@dataclass(frozen=True)
class Arm:
    """One tree to measure: ``name`` labels it, ``tree`` is its root."""

    name: str
    tree: Path
    package: str = "keras"


@dataclass(frozen=True)
class Pair:
    """A comparison: speedup = time(baseline) / time(candidate)."""

    baseline: str
    candidate: str
    label: str = ""

    @property
    def title(self) -> str:
        return self.label or f"{self.candidate} vs {self.baseline}"


@dataclass(frozen=True)
class Settings:
    """How hard to measure. ``quick()`` is for the test suite."""

    rounds: int = 15
    warmup_rounds: int = 1
    sample_ms: float = 12.0  # target duration of one timed sample (calls per sample follow)
    max_calls: int = 200_000
    bootstrap: int = 2000
    seed: int = 0
    device: str = "cpu"
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def quick(cls, rounds: int = 7) -> Settings:
        return cls(rounds=rounds, warmup_rounds=1, sample_ms=3.0, bootstrap=1000)

    def cache_part(self) -> dict[str, object]:
        """What of the settings makes a measurement differ (part of the cache key)."""
        return {"rounds": self.rounds, "sample_ms": self.sample_ms, "device": self.device}


def check_workloads(names: list[str]) -> list[str]:
    """Workload names in catalogue order (all when empty), with floors and a control."""
    names = names or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise UsageError(
            f"unknown workload {', '.join(unknown)}",
            why=f"known: {', '.join(WORKLOADS)}",
            hint="pick from the list above",
        )
    wanted = set(names)
    for name in names:
        floor = WORKLOADS[name].floor
        if floor:
            wanted.add(floor)
    if not any(WORKLOADS[n].control for n in wanted):
        wanted.add("torch_linear")
    return [w.name for w in _ALL if w.name in wanted]


def check_arms(arms: list[Arm], pairs: list[Pair]) -> None:
    names = [a.name for a in arms]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"two arms are named {', '.join(dupes)}", hint="name every arm once")
    if not arms:
        raise UsageError("nothing to measure: no arms given")
    for pair in pairs:
        for name in (pair.baseline, pair.candidate):
            if name not in names:
                raise UsageError(
                    f"comparison {pair.title} names arm {name!r}, which is not measured",
                    why=f"arms: {', '.join(names)}",
                )
    for arm in arms:
        if not arm.tree.is_dir():
            raise UsageError(
                f"arm {arm.name}: no tree at {arm.tree}",
                hint="pass the root of a checkout or worktree",
            )
