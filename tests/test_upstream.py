from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

from helpers import UPSTREAM_FILES, git, make_project
from series.errors import Exit

PACKAGE = "keras-series-test-no-such-package"


def make_sdist(
    path: Path, top: str = f"{PACKAGE}-1.0", files: dict[str, str] = UPSTREAM_FILES
) -> Path:
    """A reproducible sdist-like archive holding ``files`` (the tiny upstream's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def use_sdist_manifest(root: Path, source: str = "sdist") -> None:
    path = root / "series.toml"
    text = path.read_text().replace('source = "git"', f'source = "{source}"')
    path.write_text(text.replace('package = "tiny"', f'package = "{PACKAGE}"'))


def base_of(work: Path) -> str:
    return git(work, "rev-parse", "refs/series/base")


def test_sdist_import_gives_the_same_commit_everywhere(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    use_sdist_manifest(project.root)
    archive = make_sdist(tmp_path / f"{PACKAGE}-1.0.tar.gz")
    code, _, err = project.run("apply", "--upstream", str(archive))
    assert code == 0, err
    first = base_of(project.work)
    # Another user, another cache, hostile git config: the same commit id.
    (tmp_path / "home/.gitconfig").write_text("[core]\n\tautocrlf = true\n\tfileMode = false\n")
    other = tmp_path / "other"
    code, _, err = project.run("apply", "--dir", str(other), "--upstream", str(archive))
    assert code == 0, err
    assert base_of(other) == first
    log = git(other, "log", "-1", "--format=%an <%ae> %aI", first)
    assert log == "keras-series import <import@keras-series.invalid> 2023-11-14T22:13:20+00:00"
    # The sdist tree is the upstream tree: the series applies on it.
    assert git(other, "rev-parse", "refs/series/base^{tree}") == git(
        project.upstream, "rev-parse", "HEAD^{tree}"
    )


def test_sdist_checksum_mismatch_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    use_sdist_manifest(project.root)
    path = project.root / "series.toml"
    path.write_text(
        path.read_text().replace('version = "1.0"', 'version = "1.0"\nsha256 = "' + "0" * 64 + '"')
    )
    archive = make_sdist(tmp_path / f"{PACKAGE}-1.0.tar.gz")
    code, _, err = project.run("apply", "--upstream", str(archive))
    assert code == Exit.BAD_INPUT  # the user named the wrong file
    assert f"{archive} is not the sdist the manifest pins" in err
    assert "check that --upstream names" in err and "delete" not in err


def test_auto_falls_back_to_the_sdist_and_says_why(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    use_sdist_manifest(project.root, source="auto")
    shutil.rmtree(project.upstream)  # git is now unreachable
    cache = tmp_path / "home/.cache/keras-series/sdist"
    make_sdist(cache / f"{PACKAGE}-1.0.tar.gz")  # as if downloaded before
    code, _, err = project.run("apply")
    assert code == 0, err
    assert "[sdist: git was not reachable" in err


def test_no_source_at_all_names_both_attempts(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    use_sdist_manifest(project.root, source="auto")
    shutil.rmtree(project.upstream)
    code, _, err = project.run("apply")
    assert code == Exit.FAILED
    assert "cannot materialise the upstream base" in err
    assert "git:" in err and "sdist:" in err
    assert not (project.root / "work").exists()


def test_git_source_is_cached_per_user(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    assert "fetched from" in err
    shutil.rmtree(project.upstream)  # a second run must not need the network
    code, _, err = project.run("apply", "--dir", str(tmp_path / "second"))
    assert code == 0, err
    assert "[git: cached]" in err


def test_git_source_checks_the_pinned_commit(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project.upstream / "README.md").write_text("moved\n")
    git(project.upstream, "commit", "-qam", "moved")
    git(project.upstream, "tag", "-f", "v1.0")
    code, _, err = project.run("apply", "--source", "git")
    # The tag moved, but the pinned commit is still reachable by id: use it.
    assert code == 0, err
    assert base_of(project.work) == project.commit


def test_upstream_override_takes_a_local_mirror(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(project.upstream), str(mirror))
    shutil.rmtree(project.upstream)
    code, _, err = project.run("apply", "--upstream", str(mirror))
    assert code == 0, err
    assert base_of(project.work) == project.commit
