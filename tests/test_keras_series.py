"""The real series on the real keras 3.15.1 tree (from the PyPI sdist).

These tests materialise the pinned upstream once per session (the sdist is
downloaded once per cache; CI may share one through SERIES_TEST_CACHE),
apply the whole series, and check that export gives back the committed
patch files byte for byte, and that tests run by the harness import the
patched tree even though a keras wheel is installed.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git
from series.commands import apply, export
from series.manifest import load
from series.project import Series
from series.ui import Ui

pytestmark = pytest.mark.keras
ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "tools" / "series" / "runs" / "harness"


@pytest.fixture(scope="session")
def keras_project(
    tmp_path_factory: pytest.TempPathFactory, keras_cache: Path, project_copy: Path
) -> Series:
    """A copy of this project's manifest and patches, applied on the sdist."""
    root = tmp_path_factory.mktemp("keras-project")
    shutil.copy2(project_copy / "series.toml", root / "series.toml")
    shutil.copytree(project_copy / "patches", root / "patches")
    series = Series.load(root, keras_cache)
    code = apply.run(series, Ui(io.StringIO(), io.StringIO()), source="sdist")
    assert code == 0
    return series


def test_series_applies_on_the_pinned_tree(keras_project: Series) -> None:
    work = keras_project.checkout().path
    manifest = keras_project.manifest
    log = git(
        work,
        "log",
        "--reverse",
        "--format=%(trailers:key=Series-Id,valueonly)",
        "refs/series/base..series",
    )
    assert [line for line in log.splitlines() if line] == [p.id for p in manifest.patches]
    assert (work / "keras/src/version.py").read_text().count("3.15.1") == 1
    assert git(work, "status", "--porcelain") == ""


def test_export_round_trips_byte_for_byte(keras_project: Series) -> None:
    before = {
        p.file: keras_project.patch_path(p).read_bytes() for p in keras_project.manifest.patches
    }
    manifest_text = keras_project.manifest.path.read_text()
    out = io.StringIO()
    assert export.run(keras_project, Ui(out, io.StringIO())) == 0
    after = {
        p.file: keras_project.patch_path(p).read_bytes()
        for p in load(keras_project.manifest.path).patches
    }
    assert after == before
    assert keras_project.manifest.path.read_text() == manifest_text
    assert "0 file(s) changed" in out.getvalue()


PROBE = """
import keras
import keras.src

def test_where_keras_comes_from():
    print("KERAS_SRC=" + keras.src.__file__)
    assert hasattr(keras, "layers")
"""


def _run_probe(
    tree: Path, tmp: Path, plugin: bool
) -> tuple[subprocess.CompletedProcess[str], Path]:
    probe = tmp / "probe_test.py"
    probe.write_text(PROBE)
    proof = tmp / "proof.txt"
    env = {
        **os.environ,
        "KERAS_BACKEND": "torch",
        "PYTHONPATH": str(HARNESS),
        "SERIES_TREE": str(tree),
        "SERIES_PROOF_FILE": str(proof),
    }
    argv = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(probe)]
    if plugin:
        argv[3:3] = ["-p", "series_keras_tree"]
    proc = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, check=False)
    return proc, proof


def test_harness_imports_the_patched_tree(keras_project: Series, tmp_path: Path) -> None:
    tree = keras_project.checkout().path
    proc, proof = _run_probe(tree, tmp_path, plugin=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"KERAS_SRC={tree}/keras/src/__init__.py" in proc.stdout
    assert proof.read_text().strip() == str(tree / "keras" / "src")


def test_without_the_harness_an_installed_keras_wins(keras_project: Series, tmp_path: Path) -> None:
    """The trap the harness exists for: shows it is real in this environment."""
    installed = importlib.util.find_spec("keras")
    if installed is None or installed.origin is None:
        pytest.skip("no keras installed here, so nothing can shadow the tree")
    tree = keras_project.checkout().path
    probe_dir = tmp_path / "in-tree"
    probe_dir.mkdir()
    env_tree_first = tree  # even with the tree first on sys.path ...
    probe = probe_dir / "probe_test.py"
    probe.write_text(f"import sys\nsys.path.insert(0, {str(env_tree_first)!r})\n" + PROBE)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(probe)],
        cwd=probe_dir,
        env={**os.environ, "KERAS_BACKEND": "torch"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert "KERAS_SRC=" in proc.stdout, proc.stdout + proc.stderr
    assert f"KERAS_SRC={tree}" not in proc.stdout  # ... the installed wheel is imported


def test_harness_fails_loudly_when_keras_was_imported_elsewhere(
    keras_project: Series, tmp_path: Path
) -> None:
    installed = importlib.util.find_spec("keras")
    if installed is None:
        pytest.skip("no keras installed here, so nothing can shadow the tree")
    tree = keras_project.checkout().path
    # A plugin loaded before the harness imports the installed keras first.
    early = tmp_path / "early_import.py"
    early.write_text("import keras.src\n")
    env = {
        **os.environ,
        "KERAS_BACKEND": "torch",
        "PYTHONPATH": f"{HARNESS}:{tmp_path}",
        "SERIES_TREE": str(tree),
    }
    probe = tmp_path / "probe_test.py"
    probe.write_text(PROBE)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "early_import",
            "-p",
            "series_keras_tree",
            "-p",
            "no:cacheprovider",
            str(probe),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "not from the tree under test" in proc.stdout + proc.stderr


def test_check_conflicts_on_the_real_series(keras_project: Series) -> None:
    """What CI asks of every change: the series fits its pin, in order and pairwise,
    and the applies_alone flags in series.toml match what merge-tree finds."""
    from series.commands import check_conflicts

    out = io.StringIO()
    code = check_conflicts.run(keras_project, Ui(out, io.StringIO()), source="sdist", as_json=True)
    report = json.loads(out.getvalue())
    assert code == 0, report["problems"]
    assert [row["status"] for row in report["stack"]] == ["clean"] * len(
        keras_project.manifest.patches
    )
    assert report["notes"] == []  # no applies_alone flag disagrees
