"""An sdist is imported as the archive holds it, or refused: never a tree without some
of its files (docs/hardening.md row 198).

git cannot hold a path with a ``.git`` component (in any case: ``.GIT``,
``.Git``, as git refuses them for the file systems that fold case) in a
tree: main left ``.git`` out, and ``git update-index --index-info`` skipped
the others with a line on stderr and exit 0, so the imported upstream
lacked files of the archive, silently, and the series was applied on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import UPSTREAM_FILES, git, make_project
from series.errors import Exit
from test_upstream import PACKAGE, make_sdist, use_sdist_manifest


@pytest.mark.parametrize("name", [".git/config", "pkg/.git/config", ".GIT/hooks", "pkg/.Git/x"])
def test_an_sdist_holding_a_path_git_cannot_store_is_refused_naming_it(
    tmp_path: Path, name: str
) -> None:
    project = make_project(tmp_path)
    use_sdist_manifest(project.root)
    archive = make_sdist(tmp_path / f"{PACKAGE}-1.0.tar.gz", files={**UPSTREAM_FILES, name: "x\n"})
    before = (project.root / "series.toml").read_bytes()
    code, _, err = project.run("apply", "--upstream", str(archive))
    assert code == Exit.FAILED, err
    assert "git cannot store" in err and name in err and "Traceback" not in err, err
    assert not project.work.exists()
    assert (project.root / "series.toml").read_bytes() == before


def test_an_sdist_of_paths_git_stores_is_imported_whole(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    use_sdist_manifest(project.root)
    files = {**UPSTREAM_FILES, ".github/x.yml": "a\n", "pkg/.gitignore": "*.pyc\n"}
    archive = make_sdist(tmp_path / f"{PACKAGE}-1.0.tar.gz", files=files)
    code, _, err = project.run("apply", "--upstream", str(archive))
    assert code == 0, err
    listed = git(project.work, "ls-tree", "-r", "--name-only", "refs/series/base").split("\n")
    assert sorted(listed) == sorted(files)
