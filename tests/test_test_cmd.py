"""``series test`` on a tiny pytest project as upstream, and once on the real Keras tree.

The tiny project (tests/tinytests.py) has a test for every status; its runs
take well under a second each, so these tests run real pytest processes in
real work trees, as the command does for Keras.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from helpers import PatchSpec, Project, git
from series.project import default_cache_dir
from series.runs.cache import ResultCache, digest, fingerprint, run_key
from tinytests import OPS, edit_patch, make_tiny_project

DATA = Path(__file__).parent / "data" / "keras"


@pytest.fixture
def tiny(tmp_path: Path) -> Project:
    return make_tiny_project(tmp_path)


def run_json(project: Project, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = project.run("test", "--json", *args)
    assert out, err
    return code, json.loads(out), err


def statuses(report: dict[str, Any], patch_id: str) -> dict[str, str]:
    patch = next(p for p in report["patches"] if p["id"] == patch_id)
    return {t["id"]: t["status"] for t in patch["tests"]}


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in report["patches"]}


def test_every_status_and_only_new_failures_and_errors_fail(tiny: Project) -> None:
    code, report, _ = run_json(tiny)
    assert code == 1 and report["ok"] is False
    patches = by_id(report)
    assert statuses(report, "P1") == {
        f"{OPS}::test_add": "pass",
        f"{OPS}::test_mul": "pass",
        f"{OPS}::test_div": "pre-existing failure",
        f"{OPS}::test_pow": "skip",
        f"{OPS}::test_squares": "pass",
    }
    assert patches["P1"]["status"] == "ok"
    assert statuses(report, "P2") == {
        f"{OPS}::test_add": "pass",
        f"{OPS}::test_mul": "new failure",
        f"{OPS}::test_div": "pre-existing failure",
        f"{OPS}::test_pow": "skip",
        f"{OPS}::test_squares": "error",
    }
    assert patches["P2"]["status"] == "failed"
    assert patches["P2"]["counts"] == {
        "tests": 5,
        "passed": 1,
        "new_failures": 1,
        "preexisting": 1,
        "skipped": 1,
        "errors": 1,
    }
    # P3 selects a new file (absent at the pin) and two node ids.
    p3 = {t["id"]: (t["status"], t["pin"]) for t in patches["P3"]["tests"]}
    assert p3 == {
        "tests/test_sub.py::test_sub": ("pass", None),
        f"{OPS}::test_add": ("pass", "passed"),
        f"{OPS}::test_mul": ("pass", "passed"),
    }
    worktrees = default_cache_dir() / "worktrees"
    for patch in patches.values():
        where = Path(patch["imported_from"])
        assert where.name == "tiny" and where.parent.parent == worktrees
    # The people's report names the problems before the table; CI gets JUnit XML.
    junit = tiny.root / "out" / "series.xml"
    code, out, _ = tiny.run("test", "--junit", str(junit))
    assert code == 1
    first_table_line = out.index("patch")
    assert out.index("P2: new failure: tests/test_ops.py::test_mul") < first_table_line
    assert out.index("P2: error: tests/test_ops.py::test_squares") < first_table_line
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().iter("testsuite")}
    p2 = suites["P2 (stacked)"]
    counts = [p2.get(key) for key in ("tests", "failures", "errors", "skipped")]
    assert counts == ["5", "1", "1", "2"]  # pre-existing failures are skips for CI
    failed = [c.get("name") for c in p2.iter("testcase") if c.find("failure") is not None]
    assert failed == [f"{OPS}::test_mul"]
    assert suites["P1 (stacked)"].get("failures") == "0"


def test_warm_run_is_all_cached_and_editing_a_patch_reruns_it_and_later_ones(
    tiny: Project,
) -> None:
    code, cold, _ = run_json(tiny)
    assert code == 1
    assert not any(p["cached"] or p["baseline_cached"] for p in cold["patches"])
    results = default_cache_dir() / "tests" / "results"
    stamps = {p: p.stat().st_mtime_ns for p in results.iterdir()}
    assert len(stamps) == 5  # three patch trees, two pin selections

    code, warm, err = run_json(tiny)
    assert code == 1 and "0 to run" in err
    assert all(p["cached"] and p["baseline_cached"] for p in warm["patches"])
    assert {p: p.stat().st_mtime_ns for p in results.iterdir()} == stamps
    assert [statuses(warm, i) for i in ("P1", "P2", "P3")] == [
        statuses(cold, i) for i in ("P1", "P2", "P3")
    ]

    edit_patch(tiny, "P2", "squares is broken", "squares is gone")
    code, edited, _ = run_json(tiny)
    cached = {p["id"]: (p["cached"], p["baseline_cached"]) for p in edited["patches"]}
    assert cached == {"P1": (True, True), "P2": (False, True), "P3": (False, True)}
    trees = {p["id"]: p["tree"] for p in edited["patches"]}
    assert trees["P1"] == by_id(cold)["P1"]["tree"]
    assert trees["P2"] != by_id(cold)["P2"]["tree"]

    code, forced, _ = run_json(tiny, "--no-cache")
    assert not any(p["cached"] or p["baseline_cached"] for p in forced["patches"])


def test_alone_mode(tiny: Project) -> None:
    code, stacked, _ = run_json(tiny)
    code, alone, _ = run_json(tiny, "--mode", "alone")
    assert code == 1
    patches = by_id(alone)
    assert patches["P3"]["status"] == "cannot apply alone"
    assert patches["P3"]["tests"] == [] and "conflict" in patches["P3"]["detail"]
    # P1 alone is the same tree as P1 stacked: its result comes from the cache.
    assert patches["P1"]["tree"] == by_id(stacked)["P1"]["tree"]
    assert patches["P1"]["cached"] is True
    assert patches["P2"]["tree"] != by_id(stacked)["P2"]["tree"]
    assert patches["P2"]["cached"] is False
    assert statuses(alone, "P2")[f"{OPS}::test_mul"] == "new failure"
    # Only P2 is a failure: not applying alone is reported, not failed.
    code, only, _ = run_json(tiny, "--mode", "alone", "P1", "P3")
    assert code == 0 and [p["status"] for p in only["patches"]] == ["ok", "cannot apply alone"]


def test_import_check_catches_a_shadowing_installed_package(
    tiny: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An "installed" tiny that something imports at interpreter start-up,
    # the way an installed keras wheel wins over the sdist tree.
    site = tmp_path / "site"
    (site / "tiny").mkdir(parents=True)
    (site / "tiny" / "__init__.py").write_text("")
    (site / "tiny" / "ops.py").write_text("def add(a, b):\n    return 0\n")
    (site / "sitecustomize.py").write_text("import tiny\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    code, out, err = tiny.run("test", "P1", "--json")
    assert code == 1
    envelope = json.loads(out)  # the error, in the one JSON envelope
    assert envelope["ok"] is False and "imported tiny from" in envelope["error"]["message"]
    assert f"imported tiny from {site / 'tiny'}" in err
    assert "not from the tree under test" in err
    results = default_cache_dir() / "tests" / "results"
    assert not results.exists() or not any(results.iterdir())


def test_parallel_and_serial_agree_and_reuse_their_work_trees(tiny: Project) -> None:
    _, parallel, _ = run_json(tiny, "--jobs", "2")
    _, serial, _ = run_json(tiny, "--jobs", "1", "--no-cache")
    for patch_id in ("P1", "P2", "P3"):
        assert statuses(parallel, patch_id) == statuses(serial, patch_id)
    worktrees = default_cache_dir() / "worktrees"
    slots = sorted(p.name for p in worktrees.iterdir() if p.is_dir())
    assert slots == ["slot-0", "slot-1"]
    listed = git(default_cache_dir() / "upstream.git", "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 3  # the bare repository and two slots
    # Droppings from a run are cleaned away when a slot moves.
    (worktrees / "slot-0" / "dropping.txt").write_text("left by a test")
    run_json(tiny, "--jobs", "1", "--no-cache", "P1")
    assert not (worktrees / "slot-0" / "dropping.txt").exists()


def test_long_subsets_get_spare_cores_through_xdist(tiny: Project) -> None:
    pytest.importorskip("xdist")
    cache = ResultCache(default_cache_dir() / "tests")
    cache.note_duration((OPS,), digest(fingerprint())[:16], 120.0)
    # Two runs (P1 and its baseline) on three cores: the first gets two workers.
    _, report, _ = run_json(tiny, "P1", "--jobs", "3")
    logs = [Path(report["patches"][0][key]).read_text() for key in ("log", "baseline_log")]
    assert sorted(" -n 2 " in log for log in logs) == [False, True]
    assert statuses(report, "P1")[f"{OPS}::test_mul"] == "pass"
    assert statuses(report, "P1")[f"{OPS}::test_div"] == "pre-existing failure"


def test_a_selection_missing_from_the_tree_is_an_error(tiny: Project) -> None:
    manifest = tiny.root / "series.toml"
    manifest.write_text(
        manifest.read_text().replace(
            f'subset = ["{OPS}"]', f'subset = ["{OPS}", "tests/test_gone.py"]', 1
        )
    )
    code, report, _ = run_json(tiny, "P1")
    assert code == 1
    assert statuses(report, "P1")["tests/test_gone.py"] == "error"
    assert statuses(report, "P1")[f"{OPS}::test_add"] == "pass"


def test_two_runs_at_once_share_the_cache_safely(tiny: Project) -> None:
    argv = [sys.executable, "-m", "series", "-C", str(tiny.root), "test", "--json", "--jobs", "2"]
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    reports = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 1 and out, err
        reports.append(json.loads(out))
    for patch_id in ("P1", "P2", "P3"):
        assert statuses(reports[0], patch_id) == statuses(reports[1], patch_id)
    _, warm, _ = run_json(tiny)
    assert all(p["cached"] for p in warm["patches"])


def test_a_patch_that_does_not_apply_fails_without_running_tests(tiny: Project) -> None:
    edit_patch(tiny, "P2", "-    return a * b", "-    return a ** b")
    code, report, _ = run_json(tiny, "P2", "P3")
    assert code == 1
    patches = by_id(report)
    assert patches["P2"]["status"] == "does not apply"
    assert "tiny/ops.py" in patches["P2"]["detail"]
    assert patches["P3"]["status"] == "does not apply"
    assert patches["P3"]["detail"] == "an earlier patch does not apply"
    assert not (default_cache_dir() / "worktrees").exists()


def test_bad_arguments_are_refused_before_anything_runs(tiny: Project) -> None:
    code, out, err = tiny.run("test", "--jobs", "0")
    assert code == 2 and out == ""
    assert "--jobs 0" in err and "hint:" in err
    not_a_dir = tiny.root / "series.toml"
    code, out, err = tiny.run("test", "--junit", str(not_a_dir / "out.xml"))
    assert code == 2 and out == ""
    assert "cannot write the JUnit XML" in err and "is a file, not a directory" in err
    code, _, err = tiny.run("test", "--junit", str(tiny.root))
    assert code == 2 and "it is a directory" in err
    assert not (default_cache_dir() / "tests").exists()


def test_an_interrupted_pytest_run_is_an_error_and_never_cached(tmp_path: Path) -> None:
    # pytest stopped half-way (Ctrl-C) still writes JUnit XML, of the tests
    # that ran before the stop: caching it would turn the rest into "absent".
    stop = "def test_a():\n    pass\n\n\ndef test_stop():\n    raise KeyboardInterrupt\n"
    spec = PatchSpec(
        "P1",
        "tests: a run that stops",
        {},
        new_files={"tests/test_stop.py": stop + "\n\ndef test_z():\n    pass\n"},
        subset=("tests/test_stop.py",),
    )
    project = make_tiny_project(tmp_path, [spec])
    for _ in range(2):
        code, report, _ = run_json(project)
        assert code == 1
        assert statuses(report, "P1") == {"(pytest run)": "error"}
        assert "exited 2" in report["patches"][0]["tests"][0]["message"]
        assert report["patches"][0]["cached"] is False
    results = default_cache_dir() / "tests" / "results"
    assert not results.exists() or not any(results.iterdir())


def test_a_slot_left_locked_by_a_killed_git_is_reused(tiny: Project) -> None:
    code, _, err = tiny.run("test", "--jobs", "1", "P1")
    assert code == 0, err
    slot = default_cache_dir() / "worktrees" / "slot-0"
    lock = slot / git(slot, "rev-parse", "--git-path", "index.lock")
    lock.write_text("")  # what a git killed mid-checkout leaves behind
    code, _, err = tiny.run("test", "--jobs", "1", "--no-cache", "P1")
    assert code == 0, err
    assert not lock.exists()


def test_a_damaged_cache_entry_is_run_again(tiny: Project) -> None:
    code, _, err = tiny.run("test", "P1")
    assert code == 0, err
    results = default_cache_dir() / "tests" / "results"
    for entry in results.iterdir():
        # The right format number and key, but not the fields a result has.
        entry.write_text(json.dumps({"format": 1, "key": entry.stem, "tests": [1]}))
    code, report, _ = run_json(tiny, "P1")
    assert code == 0
    assert report["patches"][0]["cached"] is False
    assert statuses(report, "P1")[f"{OPS}::test_add"] == "pass"


def test_the_package_under_test_is_part_of_the_key() -> None:
    tree, selection = "0" * 40, (OPS,)
    assert run_key(tree, selection, "tiny", "env") != run_key(tree, selection, "keras", "env")


# -- the real Keras tree ---------------------------------------------------------


@pytest.mark.keras
def test_two_patches_on_the_real_keras_tree(
    tmp_path: Path, keras_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "keras-project"
    (root / "patches").mkdir(parents=True)
    (root / "series.toml").write_bytes((DATA / "series.toml").read_bytes())
    for patch in DATA.glob("keras-P*.patch"):
        (root / "patches" / patch.name).write_bytes(patch.read_bytes())
    monkeypatch.setenv("SERIES_CACHE_DIR", str(keras_cache))
    project = Project(root, root, "")
    code, report, err = run_json(project, "--no-cache")
    assert code == 0, err
    for patch in report["patches"]:
        assert patch["status"] == "ok"
        # keras.src came from the slot, whatever keras is installed.
        where = Path(patch["imported_from"])
        assert where.parent.parent.parent == keras_cache.resolve() / "worktrees"
        assert where.parts[-2:] == ("keras", "src")
    p1 = statuses(report, "P1")
    new_test = "keras/src/utils/naming_test.py::NamingUtilsTest::test_to_snake_case_camel_case_name"
    assert p1[new_test] == "pass"
    assert set(p1.values()) == {"pass"} and len(p1) > 10
    p2 = by_id(report)["P2"]
    assert p2["counts"]["passed"] == p2["counts"]["tests"] > 5
    code, warm, _ = run_json(project)
    assert code == 0
    assert all(p["cached"] and p["baseline_cached"] for p in warm["patches"])


def test_the_table_counts_skipped_tests(tiny: Project) -> None:
    """133 tests, 131 passed: the table says where the other two went."""
    code, out, err = tiny.run("test", "P1")
    assert code == 0, err
    lines = out.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("patch"))
    columns = re.split(r"\s{2,}", header.strip())
    row = next(line for line in lines if line.startswith("P1 "))
    values = dict(zip(columns, re.split(r"\s{2,}|\s(?=\d)", row.strip()), strict=False))
    assert columns[:4] == ["patch", "tests", "passed", "skipped"], header
    assert (values["tests"], values["passed"], values["skipped"]) == ("5", "3", "1"), row
