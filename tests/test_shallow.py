"""Shallow upstream clones: every command that fetches upstream copes with them.

The shared clone (../shared/upstream) is shallow, as CI clones are: its
history stops at the merge base of v3.15.1 and master. These tests run the
real series against it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import Project, git
from series import upstream
from series.manifest import load

PIN = "250b42181ce9f37df68319d8f4753ec89a349a43"
MERGE_BASE = "9d1bbf9aae73"


def real_project(tmp: Path, source: Path) -> Project:
    root = tmp / "project"
    root.mkdir()
    shutil.copy2(source / "series.toml", root / "series.toml")
    shutil.copytree(source / "patches", root / "patches")
    return Project(root, root, PIN)


def test_apply_from_a_shallow_clone(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    project = real_project(tmp_path, project_copy)
    code, _, err = project.run("apply", "--source", "git", "--upstream", str(shared_upstream))
    assert code == 0, err
    assert git(project.work, "rev-parse", "refs/series/base") == PIN
    assert git(project.work, "status", "--porcelain") == ""


def test_check_conflicts_onto_master_of_a_shallow_clone(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    project = real_project(tmp_path, project_copy)
    code, out, err = project.run(
        "check-conflicts", "--source", "git", "--no-matrix", "--json",
        "--upstream", str(shared_upstream), "--onto", "master",
    )  # fmt: skip
    assert code == 3, err
    onto = json.loads(out)["onto"]
    assert onto["upstream_commits"] == 62
    assert onto["range"].startswith(f"{PIN[:12]}..")
    assert MERGE_BASE in onto["range"]
    verdicts = {p["id"]: p["status"] for p in onto["patches"]}
    assert verdicts.pop("P18") == "conflict"
    # P23 rewrites the lines of torchtree_impl.py that cd5bfc1 changed too.
    assert verdicts.pop("P23") == "conflict"
    assert set(verdicts.values()) == {"clean"}
    p18 = next(p for p in onto["patches"] if p["id"] == "P18")
    assert any(c["commit"].startswith("cd5bfc1") for c in p18["upstream_commits"])
    # Only the range was fetched: the cache is shallow at the merge base.
    cache = tmp_path / "home" / ".cache" / "keras-series" / "upstream.git"
    assert (cache / "shallow").read_text().split() == [git(cache, "rev-parse", MERGE_BASE)]


@pytest.mark.keras
def test_sdist_pin_scans_the_real_range(
    tmp_path: Path,
    shared_upstream: Path,
    keras_cache: Path,
    project_copy: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the sdist stand-in as the pin, the range is the real one since v3.15.1."""
    project = real_project(tmp_path, project_copy)
    # The sdist from the session's cache, in a cache of this test's own.
    upstream.resolve(load(project.root / "series.toml").upstream, keras_cache,
                     source="sdist", override=None)  # fmt: skip
    cache = tmp_path / "cache"
    shutil.copytree(keras_cache / "sdist", cache / "sdist")
    monkeypatch.setenv("SERIES_CACHE_DIR", str(cache))
    code, out, err = project.run(
        "check-conflicts", "--source", "sdist", "--no-matrix", "--json",
        "--upstream", str(shared_upstream), "--onto", "master",
    )  # fmt: skip
    assert code == 3, err
    onto = json.loads(out)["onto"]
    assert onto["upstream_commits"] == 62
    assert "the commit the sdist pin stands for" in onto["range"]
