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
        # a final newline: re.match("^...$") took it (its $ matches before one), and the
        # name reached git; the spellings are matched in full now (series.manifest)
        ('branch = "series"', 'branch = "series\\n"', "series.branch"),
        ('id = "P1"', 'id = "P1\\n"', "patch[0].id"),
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


def test_a_commit_id_with_a_final_newline_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    _edit(path, f'"{project.commit}"', f'"{project.commit}\\n"')
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


def _resolved_verdict(root: Path, value: str) -> str:
    """What the parse says of ``value`` as a patch file, with every path resolved
    (``Path.resolve``, as series.manifest.inside did before it walked plain paths itself)."""
    if Path(value).is_absolute() or value.startswith("~"):
        return "absolute"
    real_root, target = root.resolve(), (root / value).resolve()
    if target == real_root or not target.is_relative_to(real_root):
        return f"resolves to {target}, outside"
    if not (root / value).is_file():
        return "does not exist"
    return "empty" if (root / value).stat().st_size == 0 else "ok"


@pytest.mark.parametrize(
    "value",
    [
        "patches/perf-P1.patch",
        "patches//perf-P1.patch",
        "./patches/perf-P1.patch",
        "patches/./perf-P1.patch",
        "patches/../patches/perf-P1.patch",
        "patches/perf-P1.patch/",
        "patches/nothing.patch",
        "nothing/perf-P1.patch",
        "patches/perf-P1.patch/deeper",
        "patches/empty.patch",
        "patches",
        "in/perf-P1.patch",
        "away/elsewhere.patch",
        "patches/to-out.patch",
        "patches/to-in.patch",
        "patches/loop.patch",
        "patches/dangling.patch",
        "../outside.patch",
        ".",
    ],
)
def test_a_patch_path_is_judged_as_resolving_it_judges_it(tmp_path: Path, value: str) -> None:
    """Plain paths are walked with lstat, not resolved: the verdict is resolving's, through
    links inside and out, loops, dangling links, '.', '..', empty and missing files."""
    project = make_project(tmp_path / "p")
    root = project.root
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "elsewhere.patch").write_bytes((root / "patches" / "perf-P1.patch").read_bytes())
    (tmp_path / "p" / "outside.patch").write_bytes(b"x")
    (root / "patches" / "empty.patch").write_bytes(b"")
    (root / "in").symlink_to("patches", target_is_directory=True)
    (root / "away").symlink_to(outside, target_is_directory=True)
    (root / "patches" / "to-out.patch").symlink_to(outside / "elsewhere.patch")
    (root / "patches" / "to-in.patch").symlink_to("perf-P2.patch")
    (root / "patches" / "loop.patch").symlink_to("loop.patch")
    (root / "patches" / "dangling.patch").symlink_to("gone.patch")
    path = root / "series.toml"
    _edit(path, 'file = "patches/perf-P1.patch"', f"file = {value!r}")
    try:
        expected = _resolved_verdict(root, value)
    except RuntimeError:  # a symlink loop: resolving raises it, and so does the parse
        expected = "loop"
    try:
        load(path)
        said = "ok"
    except ManifestError as exc:
        said = exc.message
    except RuntimeError:
        said = "loop"
    if expected == "loop":
        assert said == "loop"
        return
    assert ("patch[0].file" in said) == (expected != "ok"), said
    assert expected.split(",")[0] in said if expected != "ok" else said == "ok"
