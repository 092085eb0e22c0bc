"""`series bench` and `series scorecard` as a user runs them, on this project's real series.

The engine is tested in test_bench.py on purpose-made trees; here the
commands build their own arms from series.toml and patches/ (the pin, a
patch alone, the stack around it), and print the envelope, the chart and
the profile.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from series.cli import main
from series.errors import Exit
from series.manifest import load

pytestmark = pytest.mark.keras


@pytest.fixture
def project(
    tmp_path: Path, keras_cache: Path, project_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    text = (project_copy / "series.toml").read_text()
    (root / "series.toml").write_text(text.replace('source = "auto"', 'source = "sdist"', 1))
    shutil.copytree(project_copy / "patches", root / "patches")
    monkeypatch.setenv("SERIES_CACHE_DIR", str(keras_cache))
    return root


def run(root: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["-C", str(root), *args, "--json"], out=out, err=err)
    return code, json.loads(out.getvalue()), err.getvalue()


def test_bench_one_patch_builds_its_arms_and_writes_the_chart(project: Path) -> None:
    chart = project / "out" / "bench.png"
    code, data, err = run(
        project, "bench", "P6", "--quick", "--workload", "dense", "--chart", str(chart)
    )
    assert code == Exit.OK, err
    assert data["command"] == "bench" and data["ok"] and data["chart"] == str(chart)
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = {(c["label"], c["workload"]) for c in data["comparisons"] if not c["control"]}
    assert labels == {("+P6 on 1..P5", "dense"), ("P6 alone vs pin", "dense")}
    assert all(c["equivalence"]["ok"] for c in data["comparisons"])
    assert {a["name"] for a in data["arms"]} >= {"pin", "1..P5", "1..P6", "P6 alone"}


def test_quick_bench_measures_the_pin_and_the_stack_and_says_each_stage(project: Path) -> None:
    code, data, err = run(project, "bench", "--quick", "--workload", "dense")
    assert code == Exit.OK, err
    last = load(project / "series.toml").patches[-1].id
    assert [a["name"] for a in data["arms"]] == ["pin", f"1..{last}"]
    assert {c["label"] for c in data["comparisons"]} == {"stack vs pin"}
    assert isinstance(data["disturbed"], bool)
    assert data["disturbed"] == bool(data["disturbance"])
    # The session's cache may hold the pin already: one worker or two.
    lines = err.splitlines()
    for stage in (r"[12] workers need about", r"started workers ([12])/\1$", r"building dense"):
        assert any(re.match(stage, line) for line in lines), stage
    assert [line for line in lines if line.startswith("round ")][-1] == "round 7/7: torch_linear"


def test_bench_says_which_patches_have_no_alone_arm(project: Path) -> None:
    code, data, err = run(project, "bench", "P4", "--quick", "--workload", "convert_to_tensor")
    assert code == Exit.OK, err
    assert any(s.startswith("P4 does not apply alone on the pin") for s in data["skipped"])
    assert {c["label"] for c in data["comparisons"]} == {"+P4 on 1..P3"}


def test_profile_shows_the_pin_and_the_stack(project: Path) -> None:
    code, data, err = run(project, "bench", "--profile", "layer_call")
    assert code == Exit.OK, err
    last = load(project / "series.toml").patches[-1].id
    assert [p["arm"] for p in data["profiles"]] == ["pin", f"1..{last}"]
    assert all(p["frames"] for p in data["profiles"])


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("bench", "--workload", "nope", "--quick"), "nope"),
        (("bench", "--rounds", "2"), "at least 3 rounds"),
        (("bench", "P99"), "no patch 'P99'"),
        (("scorecard", "P99"), "no patch 'P99'"),
    ],
)
def test_bad_input_is_refused_before_any_work(
    project: Path, args: tuple[str, ...], words: str
) -> None:
    code, data, _ = run(project, *args)
    assert code == Exit.BAD_INPUT and words in data["error"]["message"] + data["error"]["why"]
