"""series cache clean: removes what series can rebuild, says how much, never the project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from series.errors import Exit
from series.locks import exclusive


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def filled(tmp_path: Path) -> tuple[Project, Path]:
    """An applied project and the cache its runs filled, plus a file series did not make."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    cache = tmp_path / "home" / ".cache" / "keras-series"
    assert (cache / "upstream.git").is_dir()
    (cache / "tests").mkdir()
    (cache / "tests" / "result.json").write_text("{}" * 600)
    (cache / "mine.txt").write_text("the user's own file\n")
    return project, cache


def test_clean_removes_what_series_rebuilds_and_says_how_much(tmp_path: Path) -> None:
    project, cache = filled(tmp_path)
    before = files(project.root)
    tip = git(project.work, "rev-parse", "series")

    code, out, err = project.run("cache", "clean", "--dry-run", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["dry_run"] is True and data["cache"] == str(cache)
    removed = {e["path"]: e["bytes"] for e in data["removed"]}
    # known/: what the apply read of series.toml (series.known); manifests/: what tomllib
    # read of it (series.manifest_kept)
    # git-version: the verdict on the git PATH leads to, kept only when that is git's own
    # binary (series.git.version), not a wrapper a test run may put first on PATH
    assert set(removed) - {"git-version"} == {"upstream.git", "tests", "known", "manifests"}
    assert removed["tests"] == 1200
    assert data["bytes"] == sum(removed.values()) and data["kept"] == ["mine.txt"]
    assert "would remove tests (1.2 kB): series test results" in err
    assert (cache / "upstream.git").is_dir() and (cache / "tests").is_dir()  # dry run

    code, out, err = project.run("cache", "clean")
    assert code == 0, err
    assert "removed upstream.git (" in err and "kept mine.txt: not made by series" in err
    assert f"from {cache}; the project was not touched" in out
    # the locks another run may hold stay (the checkouts' ones: series.project)
    assert sorted(p.name for p in cache.iterdir()) == ["checkouts", "mine.txt", "upstream.lock"]
    assert files(project.root) == before  # the project, its checkout and its git dir
    assert git(project.work, "rev-parse", "series") == tip

    code, out, err = project.run("cache", "clean")
    assert code == 0 and "nothing to clean" in out, err
    code, _, err = project.run("check-conflicts")  # the cache is rebuilt on demand
    assert code == 0, err
    assert (cache / "upstream.git").is_dir()


def test_clean_knows_every_directory_series_writes(tmp_path: Path) -> None:
    """What status, list and check-conflicts --onto leave in the cache is series' own."""
    project, cache = filled(tmp_path)
    (project.upstream / "extra.txt").write_text("upstream moved\n")
    git(project.upstream, "add", "extra.txt")
    git(project.upstream, "commit", "-q", "-m", "upstream moves")
    for argv in (("status",), ("list",), ("check-conflicts", "--onto", "main")):
        code, _, err = project.run(*argv)
        assert code == 0, err
    made = {p.name for p in cache.iterdir()} - {"upstream.lock", "checkouts", "mine.txt"}
    assert {"status", "patchids", "commitfiles"} <= made, made

    code, out, err = project.run("cache", "clean", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["kept"] == ["mine.txt"], data["kept"]
    assert {e["path"] for e in data["removed"]} == made
    # the locks another run may hold stay (the checkouts' ones: series.project)
    assert sorted(p.name for p in cache.iterdir()) == ["checkouts", "mine.txt", "upstream.lock"]


def test_a_cache_that_is_or_holds_the_project_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _ = filled(tmp_path)
    (project.root / "tests").mkdir()  # a name series' cache also uses
    before = files(project.root)
    for place in (project.root, project.root / "sub", tmp_path):
        monkeypatch.setenv("SERIES_CACHE_DIR", str(place))
        code, _, err = project.run("cache", "clean")
        assert code == Exit.REFUSED and "refusing to clean" in err, err
        assert "SERIES_CACHE_DIR" in err
        assert files(project.root) == before


def test_a_cache_in_use_is_refused_naming_who_uses_it(tmp_path: Path) -> None:
    project, cache = filled(tmp_path)
    with exclusive(cache / "upstream.lock", command="series test P1"):
        code, _, err = project.run("cache", "clean")
    assert code == Exit.REFUSED and "another series command is using it" in err
    assert "series test P1" in err
    assert (cache / "upstream.git").is_dir() and (cache / "tests").is_dir()
