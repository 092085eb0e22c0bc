from __future__ import annotations

from pathlib import Path

import pytest

from helpers import make_project
from series.errors import Exit, ManifestError
from series.manifest import load
from series.manifest_write import PatchUpdate, write_patches


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _error(path: Path) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        load(path)
    assert info.value.exit_code == Exit.BAD_INPUT
    assert str(path) in info.value.message
    return info.value


def test_valid_manifest_loads(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    manifest = load(project.root / "series.toml")
    assert [p.id for p in manifest.patches] == ["P1", "P2", "P3"]
    assert manifest.patches[0].pr == 1000
    assert manifest.branch == "series"
    assert manifest.upstream.commit == project.commit


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("format = 1", "format = 1\ncolour = 2", "colour: unknown key"),
        ('state = "open"', 'state = "open"\nreviewer = "x"', "patch[0].reviewer: unknown key"),
        ('id = "P2"', 'id = "P1"', "patch[1].id: duplicate 'P1'"),
        ('file = "patches/perf-P2.patch"', 'file = "patches/perf-P1.patch"', "patch[1].file"),
        ('file = "patches/perf-P3.patch"', 'file = "patches/gone.patch"', "patch[2].file"),
        ('state = "open"', 'state = "maybe"', "patch[0].state"),
        ('id = "P1"', 'id = "one"', "patch[0].id"),
        ("format = 1", "format = 9", "format: must be 1"),
        ('ref = "v1.0"', 'ref = "v1.0"\n[upstream.extra]', "upstream.extra"),
        ("pr = 1000", 'pr = "1000"', "patch[0].pr"),
    ],
)
def test_errors_name_file_and_key(tmp_path: Path, old: str, new: str, key: str) -> None:
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    _edit(path, old, new)
    assert key in _error(path).message


def test_malformed_commit_id(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    _edit(path, project.commit, project.commit[:12])
    assert "upstream.commit" in _error(path).message


def test_empty_series(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    text = path.read_text()
    path.write_text(text[: text.index("[[patch]]")])
    assert "the series is empty" in _error(path).message


def test_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "series.toml"
    path.write_text("format = [\n")
    assert "not valid TOML" in _error(path).message


def test_cli_reports_manifest_errors_with_exit_2(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    _edit(project.root / "series.toml", 'id = "P2"', 'id = "P1"')
    code, out, err = project.run("list")
    assert code == Exit.BAD_INPUT
    assert out == ""
    assert "patch[1].id: duplicate" in err
    assert "Traceback" not in err


def test_write_back_keeps_comments_and_order(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    _edit(path, 'id = "P2"', '# keep me\nid = "P2"  # inline too')
    manifest = load(path)
    same = [PatchUpdate(p.id, p.title, p.file, p.branch) for p in manifest.patches]
    assert write_patches(manifest, same) == path.read_text()
    swapped = [same[1], same[0], same[2]]
    text = write_patches(manifest, swapped)
    assert "# keep me" in text and "# inline too" in text
    assert text.index('id = "P2"') < text.index('id = "P1"')
