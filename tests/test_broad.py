"""``series test --broad``: upstream's own tests under whole directories, pin against stack.

A tiny upstream whose tests cover every verdict, on real git repositories
and real pytest runs: the pin's tests, a patch that fixes one and deletes
another and adds a test file in a subdirectory, and a patch that breaks
``mul`` (two regressions, one in each part) and adds a failing test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import PatchSpec, Project, make_project
from series.runs.broad import missing_optional
from tinytests import OPS, TINY_FILES, edit_patch, make_tiny_project

MORE = "tests/sub/test_more.py"
OPTIONAL = "tests/test_optional.py"
FILES = {
    **TINY_FILES,
    "tests/sub/__init__.py": "",
    MORE: "from tiny import ops\n\n\n"
    "def test_neg():\n    assert ops.mul(-1, 4) == -4\n\n\n"
    "def test_broken():\n    assert ops.div(1, 0) == 0\n",
    # grain is one of the optional packages (series.runs.broad.OPTIONAL), not installed here.
    OPTIONAL: "import grain\n\n\ndef test_grain():\n    assert grain\n",
}
SPECS = [
    PatchSpec(
        "P1",
        "ops: div is true division; tests: squares moves out",
        {
            "tiny/ops.py": ("    return a // b\n", "    return a / b\n"),
            OPS: (
                "def test_squares(squares):\n    assert squares == [0, 1, 4, 9]\n",
                "",
            ),
        },
        new_files={
            "tests/sub/test_new.py": "from tiny import ops\n\n\n"
            "def test_new():\n    assert ops.add(1, 1) == 2\n"
        },
        subset=(OPS,),
    ),
    PatchSpec(
        "P2",
        "ops: mul via abs",
        {"tiny/ops.py": ("    return a * b\n", "    return abs(a) * b\n")},
        new_files={"tests/test_bad.py": "def test_bad():\n    assert False, 'bad on purpose'\n"},
        subset=(OPS,),
    ),
]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path, SPECS, FILES)


def broad(project: Project, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = project.run("test", "--json", "--suite", "tests", "-j", "2", *args)
    assert out, err
    return code, json.loads(out)


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {t["id"]: t["verdict"] for t in report["tests"]}


def test_each_verdict_and_only_stack_failures_fail(project: Project) -> None:
    # The stack through P1: nothing fails that did not fail at the pin.
    code, report = broad(project, "P1")
    assert code == 0 and report["ok"] is True and report["failures"] == []
    assert report["broad"] is True and report["stack"]["patches"] == ["P1"]
    assert verdicts(report) == {
        f"{OPS}::test_add": "passes_at_both",
        f"{OPS}::test_mul": "passes_at_both",
        f"{OPS}::test_div": "fixed",
        f"{OPS}::test_pow": "skipped",
        f"{OPS}::test_squares": "gone",
        f"{MORE}::test_neg": "passes_at_both",
        f"{MORE}::test_broken": "fails_at_both",
        "tests/sub/test_new.py::test_new": "new_passing",
        OPTIONAL: "skipped",  # import grain: not installed, a skip at both, not a failure
    }
    counts = report["counts"]
    assert (counts["tests"], counts["fails_at_both"], counts["regressions"]) == (9, 1, 0)
    # the parts: the top-level files, and the subdirectory (one pytest run on each tree)
    parts = {p["name"]: p for p in report["parts"]}
    assert set(parts) == {"tests/*", "tests/sub"}
    assert parts["tests/sub"]["pin_selection"] == ["tests/sub"]

    # The whole stack: P2's two regressions and its failing new test, with their errors.
    code, report = broad(project)
    assert code == 1 and report["ok"] is False
    failures = {f["id"]: f for f in report["failures"]}
    assert {k: f["verdict"] for k, f in failures.items()} == {
        f"{OPS}::test_mul": "regressions",
        f"{MORE}::test_neg": "regressions",
        "tests/test_bad.py::test_bad": "new_failing",
    }
    assert (failures[f"{OPS}::test_mul"]["pin"], failures[f"{OPS}::test_mul"]["stack"]) == (
        "passed",
        "failed",
    )
    assert "bad on purpose" in failures["tests/test_bad.py::test_bad"]["message"]
    assert report["counts"]["regressions"] == 2 and report["counts"]["fails_at_both"] == 1

    # The human report names the failures first, with their first error line.
    code, out, _ = project.run("test", "--suite", "tests", "-j", "2")
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("3 test(s) fail on the stack"), out
    assert f"passes at the pin, fails on the stack: {OPS}::test_mul" in out
    assert "bad on purpose" in out


def test_mode_alone_applies_only_the_named_patch(project: Project) -> None:
    code, report = broad(project, "--mode", "alone", "P2")
    assert code == 1 and report["stack"]["patches"] == ["P2"]
    found = verdicts(report)
    # without P1, div still fails and squares is still there
    assert found[f"{OPS}::test_div"] == "fails_at_both"
    assert found[f"{OPS}::test_squares"] == "passes_at_both"
    assert found[f"{OPS}::test_mul"] == "regressions"


def test_the_pin_is_cached_and_editing_a_patch_reruns_only_the_stack(project: Project) -> None:
    code, first = broad(project)
    assert code == 1 and first["runs"] == {"all": 4, "cached": 0}
    _, again = broad(project)
    assert again["runs"] == {"all": 4, "cached": 4} and again["tests"] == first["tests"]
    # a directory without test subdirectories is one part: asked alone, it is the same runs
    _, out, _ = project.run("test", "--json", "--suite", "tests/sub", "--suite", "tests")
    sub = json.loads(out)
    assert [p["name"] for p in sub["parts"]] == ["tests/sub", "tests/*"]
    assert sub["runs"] == {"all": 4, "cached": 4} and len(sub["tests"]) == len(first["tests"])
    # P2 no longer breaks mul: the stack's two parts run again, the pin's come from the cache
    edit_patch(project, "P2", "+    return abs(a) * b", "+    return a * b")
    code, edited = broad(project)
    assert edited["runs"] == {"all": 4, "cached": 2}
    assert all(p["pin_cached"] and not p["stack_cached"] for p in edited["parts"])
    assert [f["id"] for f in edited["failures"]] == ["tests/test_bad.py::test_bad"]


def test_shards_split_the_parts(project: Project) -> None:
    seen = []
    for index in (1, 2):
        code, report = broad(project, "P1", "--shard", f"{index}/2")
        assert code == 0 and report["shard"]["index"] == index
        seen.append({p["name"] for p in report["parts"]})
        assert all(t["id"].startswith(tuple(_prefixes(seen[-1]))) for t in report["tests"])
    assert seen[0] | seen[1] == {"tests/*", "tests/sub"} and not seen[0] & seen[1]


def _prefixes(parts: set[str]) -> list[str]:
    return ["tests/sub/" if p == "tests/sub" else "tests/test_" for p in parts]


def test_bad_suites_are_refused_before_anything_runs(project: Project) -> None:
    for args, words in (
        (("--suite", "nothing/here"), "no tests under nothing/here"),
        (("--suite", "../tests"), "not a directory of the checkout"),
        (("--broad", "--mode", "alone"), "needs the patches"),
        (("--broad", "--junit", "x.xml"), "--junit is not written"),
    ):
        code, _, err = project.run("test", *args)
        assert code == 2 and words in err, (args, err)


def test_a_missing_optional_package_is_a_skip_only_when_it_is_not_installed() -> None:
    assert missing_optional("ModuleNotFoundError: No module named 'grain'") == "grain"
    # Keras checks some optional packages itself, in its own words
    said = "ImportError: This requires the grain module. You can install it via `pip install grain`"
    assert missing_optional(said) == "grain"
    assert missing_optional("ImportError: This requires the torch module.") is None
    # pytest is installed, and not an optional package: a real failure either way
    assert missing_optional("ModuleNotFoundError: No module named 'pytest'") is None
    assert missing_optional("ModuleNotFoundError: No module named 'tiny.gone'") is None


def test_the_envelope_and_the_plan_match_the_schema(project: Project) -> None:
    from test_json import envelope

    code, data = envelope(project, "test", "--suite", "tests", "P1")
    assert code == 0 and data["broad"] is True and data["counts"]["fixed"] == 1
    code, data = envelope(project, "test", "--suite", "tests", "--list", "--shard", "1/2")
    assert code == 0 and {p["name"] for p in data["parts"]} == {"tests/*", "tests/sub"}
    assert {p["shard"] for p in data["parts"]} == {1, 2}


def test_a_crashed_run_fails_the_command(tmp_path: Path) -> None:
    # pytest stopped half-way on the stack: the part cannot be compared, and is a failure
    stop = "def test_a():\n    pass\n\n\ndef test_stop():\n    raise KeyboardInterrupt\n"
    spec = PatchSpec(
        "P1", "tests: a run that stops", {}, new_files={"tests/sub/test_stop.py": stop}
    )
    project = make_tiny_project(tmp_path, [spec])
    code, report = broad(project)
    assert code == 1 and report["ok"] is False
    crashed = [f for f in report["failures"] if f["verdict"] == "crashed"]
    assert [f["id"] for f in crashed] == ["(pytest run) stack: tests/sub"], report["failures"]
    assert report["counts"]["passes_at_both"] == 3  # the top-level part compared as usual
