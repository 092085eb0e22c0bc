"""``series test --broad``: upstream's own tests under whole directories, pin against stack.

The question it answers: does any of upstream's tests pass at the pin and
fail with every patch applied? Each named directory of the checkout is cut
into *parts*, one pytest run each on both trees: its test files at the top
level, and each subdirectory that holds tests (a directory without
subdirectories of tests is one part, so ``--suite keras/src/layers/core``
reuses the results of the default run's part of that name). A part is the unit of
``--jobs`` and ``--shard``; its runs are keyed and cached like a patch's
subset (series.runs.cache), so the pin's results are reused until the pin
tree or the test environment changes, and the stack's until a patch does.

Each test, by its node id, gets one verdict (docs/testing.md, "The broad
suite"): passes at both, fails at both (pre-existing), fails on the stack
only (the regressions: the only failures), passes on the stack only
(fixed), skipped, new on the stack (a test the patches add; failing, it is
a failure too), or gone from the stack. A test that fails on a side only
because an optional package (jax, tensorflow, ...) is not installed here
counts as skipped on that side.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from typing import Any

from series.errors import UsageError
from series.runs.plan import Context, Job, job
from series.runs.pytest_run import CRASH_ID, Outcome, RunResult

DEFAULT_DIRS = tuple(
    f"keras/src/{name}" for name in ("layers", "models", "tree", "backend", "saving", "utils")
)

# Verdicts, in the order the report shows them.
BOTH_PASS = "passes at both"
BOTH_FAIL = "fails at both"
REGRESSION = "passes at the pin, fails on the stack"
FIXED = "fails at the pin, passes on the stack"
SKIPPED = "skipped"
NEW_PASS = "new on the stack, passes"
NEW_FAIL = "new on the stack, fails"
GONE = "at the pin, not on the stack"
CRASHED = "pytest run crashed"  # on either tree: its part cannot be compared
VERDICTS = (REGRESSION, NEW_FAIL, CRASHED, BOTH_FAIL, BOTH_PASS, FIXED, SKIPPED, NEW_PASS, GONE)
FAILING = (REGRESSION, NEW_FAIL, CRASHED)
# The JSON names of the verdicts' counts.
KEYS = {
    BOTH_PASS: "passes_at_both",
    BOTH_FAIL: "fails_at_both",
    REGRESSION: "regressions",
    FIXED: "fixed",
    SKIPPED: "skipped",
    NEW_PASS: "new_passing",
    NEW_FAIL: "new_failing",
    GONE: "gone",
    CRASHED: "crashed",
}

# Packages whose absence turns a test into a skip, not a failure: the other
# backends and the optional interop libraries upstream's tests import.
OPTIONAL = frozenset(
    {"jax", "jaxlib", "flax", "tensorflow", "tf_keras", "tensorflow_text", "openvino",
     "grain", "scipy", "pandas", "sklearn", "torch_xla", "orbax", "tensorflow_datasets"}
)  # fmt: skip
# Python's own words, and Keras' for an optional dependency it checks itself
# ("ImportError: This requires the grain module. You can install it via ...").
_NO_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'|requires the ([A-Za-z0-9_]+) module")
_FAILED = ("failed", "error")


@dataclass(frozen=True)
class Part:
    """One pytest run's worth of a directory: top-level test files, or one subdirectory."""

    name: str
    stack: tuple[str, ...]  # the selection on the stack
    pin: tuple[str, ...]  # the same, without what the pin does not have


@dataclass
class PartPlan:
    part: Part
    pin: Job | None
    stack: Job | None


@dataclass(frozen=True)
class Verdict:
    id: str
    verdict: str
    pin: str | None  # outcome at the pin, None when not there
    stack: str | None
    message: str = ""  # the first line of the stack's failure, else the pin's

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING


@dataclass
class BroadReport:
    directories: tuple[str, ...]
    parts: list[PartPlan]
    verdicts: list[Verdict] = field(default_factory=list)
    runs: dict[str, RunResult] = field(default_factory=dict)

    def count(self, verdict: str) -> int:
        return sum(1 for v in self.verdicts if v.verdict == verdict)

    @property
    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.failing]


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.endswith("_test.py") or name.startswith("test_"))


def parts(directories: tuple[str, ...], pin: set[str], stack: set[str]) -> list[Part]:
    """The parts of each directory, from the test files of both trees (paths in the trees)."""
    out: list[Part] = []
    for directory in directories:
        prefix = directory.rstrip("/") + "/"
        top: set[str] = set()
        subdirs: set[str] = set()
        for path in pin | stack:
            if not path.startswith(prefix) or not is_test_file(path):
                continue
            rest = path[len(prefix) :]
            if "/" in rest:
                subdirs.add(prefix + rest.split("/", 1)[0])
            else:
                top.add(path)
        if top and not subdirs:  # the directory is one part, as it would be as a subdirectory
            there = (directory.rstrip("/"),)
            out.append(Part(there[0], there if top & stack else (), there if top & pin else ()))
        elif top:
            files = tuple(sorted(top))
            out.append(Part(prefix + "*", tuple(f for f in files if f in stack), _at(files, pin)))
        for sub in sorted(subdirs):
            there = (sub,)
            on_stack = there if any(p.startswith(sub + "/") for p in stack) else ()
            at_pin = there if any(p.startswith(sub + "/") for p in pin) else ()
            out.append(Part(sub, on_stack, at_pin))
    # --suite keras/src/layers --suite keras/src/layers/core: each part once
    return list({part.name: part for part in out}.values())


def _at(files: tuple[str, ...], tree: set[str]) -> tuple[str, ...]:
    return tuple(f for f in files if f in tree)


def check_names(directories: list[str]) -> list[str]:
    """``--suite`` values as paths in the tree: relative, no ``..``, no trailing slash."""
    out = []
    for given in directories:
        name = given.strip().strip("/") if not given.startswith("/") else given
        parts_ = name.split("/")
        if given.startswith("/") or not name or ".." in parts_ or "" in parts_ or "\\" in name:
            raise UsageError(
                f"--suite {given!r}: not a directory of the checkout",
                why="--suite takes a path relative to the checkout's root, inside it",
                hint="e.g. --suite keras/src/layers",
            )
        out.append(name)
    return out


def check_directories(directories: tuple[str, ...], pin: set[str], stack: set[str]) -> None:
    """Refuse a directory neither tree has tests under: a typo must not pass as green."""
    empty = [
        d
        for d in directories
        if not any(p.startswith(d.rstrip("/") + "/") and is_test_file(p) for p in pin | stack)
    ]
    if empty:
        raise UsageError(
            f"no tests under {', '.join(empty)} at the pin or on the stack",
            why="--suite names directories of the checkout, relative to its root",
            hint="e.g. --suite keras/src/layers; leave --suite out for the default "
            f"directories ({', '.join(DEFAULT_DIRS)})",
        )


def plan_parts(
    ctx: Context, stack_commit: str, stack_tree: str, part_list: list[Part]
) -> list[PartPlan]:
    planned = []
    for part in part_list:
        pin_job = (
            job(ctx, f"pin: {part.name}", ctx.pin_commit, ctx.pin_tree, part.pin)
            if part.pin
            else None
        )
        stack_job = (
            job(ctx, f"stack: {part.name}", stack_commit, stack_tree, part.stack)
            if part.stack
            else None
        )
        planned.append(PartPlan(part, pin_job, stack_job))
    return planned


def missing_optional(message: str) -> str | None:
    """The optional package a failure says is missing, when it is not installed here."""
    for found in _NO_MODULE.finditer(message):
        top = (found.group(1) or found.group(2)).split(".", 1)[0]
        if top in OPTIONAL and importlib.util.find_spec(top) is None:
            return top
    return None


def _outcome(found: Outcome | None) -> Outcome | None:
    """A failure for want of an optional package is a skip."""
    if found is not None and found.outcome in _FAILED:
        missing = missing_optional(found.message)
        if missing is not None:
            return Outcome("skipped", f"needs {missing}, not installed: {found.message}")
    return found


def first_line(message: str) -> str:
    stripped = message.strip()
    return stripped.splitlines()[0] if stripped else ""


def judge(pin: Outcome | None, stack: Outcome | None) -> str:
    pin, stack = _outcome(pin), _outcome(stack)
    if stack is None:
        return GONE
    if pin is None:
        return NEW_FAIL if stack.outcome in _FAILED else NEW_PASS
    pin_failed, stack_failed = pin.outcome in _FAILED, stack.outcome in _FAILED
    if stack_failed:
        return BOTH_FAIL if pin_failed else REGRESSION
    if pin_failed:
        return FIXED
    if "skipped" in (pin.outcome, stack.outcome):
        return SKIPPED
    return BOTH_PASS


def compare(pin: RunResult | None, stack: RunResult | None, label: str) -> list[Verdict]:
    """Each test of one part, by node id; a crashed run is one entry named for the part."""
    pin_tests = _tests(pin, label, pin_side=True)
    stack_tests = _tests(stack, label, pin_side=False)
    out = []
    for nodeid in dict.fromkeys([*pin_tests, *stack_tests]):
        p, s = pin_tests.get(nodeid), stack_tests.get(nodeid)
        verdict = CRASHED if nodeid.startswith(CRASH_ID) else judge(p, s)
        shown = _outcome(s) if s is not None and s.outcome in _FAILED else _outcome(p)
        message = first_line(shown.message) if shown is not None else ""
        out.append(
            Verdict(
                nodeid,
                verdict,
                None if p is None else p.outcome,
                None if s is None else s.outcome,
                message,
            )
        )
    return out


def _tests(run: RunResult | None, label: str, *, pin_side: bool) -> dict[str, Outcome]:
    if run is None:
        return {}
    side = "pin" if pin_side else "stack"
    return {f"{CRASH_ID} {side}: {label}" if k == CRASH_ID else k: v for k, v in run.tests.items()}


def conclude(report: BroadReport, results: dict[str, RunResult]) -> BroadReport:
    for planned in report.parts:
        pin = results.get(planned.pin.key) if planned.pin else None
        stack = results.get(planned.stack.key) if planned.stack else None
        for run in (pin, stack):
            if run is not None:
                report.runs[run.key] = run
        report.verdicts += compare(pin, stack, planned.part.name)
    return report


def to_json(report: BroadReport) -> dict[str, Any]:
    return {
        "directories": list(report.directories),
        "counts": {
            "tests": len(report.verdicts),
            **{KEYS[v]: report.count(v) for v in VERDICTS},
        },
        "parts": [
            {
                "name": p.part.name,
                "pin_selection": list(p.part.pin),
                "stack_selection": list(p.part.stack),
                **_run_json("pin", p.pin, report.runs),
                **_run_json("stack", p.stack, report.runs),
            }
            for p in report.parts
        ],
        "failures": [_verdict_json(v) for v in report.failures],
        "tests": [_verdict_json(v) for v in report.verdicts],
    }


def _run_json(side: str, planned: Job | None, runs: dict[str, RunResult]) -> dict[str, Any]:
    run = runs.get(planned.key) if planned is not None else None
    return {
        f"{side}_duration": None if run is None else round(run.duration, 3),
        f"{side}_cached": None if run is None else run.cached,
        f"{side}_log": None if run is None else run.log,
    }


def _verdict_json(v: Verdict) -> dict[str, Any]:
    return {
        "id": v.id,
        "verdict": KEYS[v.verdict],
        "pin": v.pin,
        "stack": v.stack,
        "message": v.message,
    }
