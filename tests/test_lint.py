"""``series lint`` on the tiny project: upstream's ruff rules, per patch, new vs pre-existing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tinytests import edit_patch, make_tiny_project


def lint_json(tmp_path: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]]]:
    project = make_tiny_project(tmp_path)
    code, out, err = project.run("lint", "--json", *args)
    assert out, err
    return code, {p["id"]: p for p in json.loads(out)["patches"]}


def test_each_patch_is_held_to_upstreams_rules(tmp_path: Path) -> None:
    code, patches = lint_json(tmp_path)
    assert code == 1
    assert patches["P1"]["status"] == "clean" and patches["P1"]["files"] == ["tiny/ops.py"]
    p2 = patches["P2"]
    assert p2["status"] == "not clean"
    assert p2["files"] == ["tiny/extra.py", "tiny/ops.py", "tiny/table.py"]
    # E501 at 85 characters: upstream's line-length 80, not this project's 100
    # nor ruff's default 88.
    assert sorted((i["file"], i["code"]) for i in p2["check"]) == [
        ("tiny/extra.py", "E501"),
        ("tiny/extra.py", "F401"),
        ("tiny/extra.py", "I001"),
    ]
    assert p2["format"] == ["tiny/extra.py"]
    # table.py's unused import is upstream's, not P2's.
    assert [(i["file"], i["code"]) for i in p2["preexisting"]["check"]] == [
        ("tiny/table.py", "F401")
    ]
    assert patches["P3"]["status"] == "clean"
    assert patches["P3"]["files"] == ["tests/test_sub.py", "tiny/ops.py"]


def test_clean_patches_exit_zero(tmp_path: Path) -> None:
    code, patches = lint_json(tmp_path, "P3", "P1")
    assert code == 0
    assert list(patches) == ["P1", "P3"]
    assert {p["status"] for p in patches.values()} == {"clean"}


def test_a_patch_that_does_not_apply_is_not_clean(tmp_path: Path) -> None:
    project = make_tiny_project(tmp_path)
    edit_patch(project, "P1", "-    return a + b", "-    return a - b")
    code, out, _ = project.run("lint", "--json")
    assert code == 1
    patches = {p["id"]: p for p in json.loads(out)["patches"]}
    assert [p["status"] for p in patches.values()] == ["does not apply"] * 3
    assert "tiny/ops.py" in patches["P1"]["detail"]
    assert patches["P2"]["detail"] == "an earlier patch does not apply"


def test_each_result_is_printed_once(tmp_path: Path) -> None:
    """The report is on stdout (each issue, then one table row per patch); stderr says
    where the upstream came from and does not repeat a patch's result."""
    project = make_tiny_project(tmp_path)
    code, out, err = project.run("lint")
    assert code == 1
    rows = [line.split()[1] for line in out.splitlines() if line[:1].isdigit()]
    assert rows == ["P1", "P2", "P3"], out
    assert out.count("tiny/extra.py:1:8: F401") == 1
    assert not any(pid in err for pid in ("P1", "P2", "P3")), err
