"""series.manifest_kept: what tomllib read of a series.toml, kept by its text, stands in
for tomllib and nothing else (every check of the parse is made again on it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import make_project
from series import manifest_kept
from series.errors import ManifestError
from series.manifest import load

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / manifest_kept.DIR).iterdir())


def _message(path: Path, cache: Path | None) -> str:
    with pytest.raises(ManifestError) as info:
        load(path, kept=cache)
    return f"{info.value.message}\n{info.value.why}\n{info.value.hint}"


def test_a_kept_reading_gives_the_manifest_tomllib_gives_without_tomllib(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    path, cache = project.root / "series.toml", tmp_path / "cache"
    parsed = load(path, kept=cache)
    assert len(_entries(cache)) == 1
    assert load(path, kept=cache) == parsed == load(path)
    # a new process that finds the entry does not import tomllib at all
    code = (
        "import sys; from pathlib import Path; from series.manifest import load; "
        f"m = load(Path({str(path)!r}), kept=Path({str(cache)!r})); "
        "print('tomllib' in sys.modules, [p.id for p in m.patches])"
    )
    env = {**os.environ, "PYTHONPATH": str(TOOLS)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out.split() == ["False", "['P1',", "'P2',", "'P3']"]


@pytest.mark.parametrize("change", ["file removed", "file emptied", "file linked out"])
def test_what_the_parse_checks_on_the_disk_is_checked_again(tmp_path: Path, change: str) -> None:
    """A manifest refused today is refused with the same words when its text was kept."""
    project = make_project(tmp_path)
    path, cache = project.root / "series.toml", tmp_path / "cache"
    load(path, kept=cache)
    patch = project.root / "patches" / "perf-P2.patch"
    if change == "file removed":
        patch.unlink()
    elif change == "file emptied":
        patch.write_bytes(b"")
    else:
        outside = tmp_path / "outside.patch"
        outside.write_bytes(patch.read_bytes())
        patch.unlink()
        patch.symlink_to(outside)
    kept_said = _message(path, cache)
    assert kept_said == _message(path, None)
    assert "patch[1].file" in kept_said


def _forge(entry: Path, **changes: object) -> None:
    record = json.loads(entry.read_text())
    record.update(changes)
    entry.write_text(json.dumps(record))


@pytest.mark.parametrize(
    "damage",
    ["title edited", "title edited, sealed again", "another format", "written by others"],
)
def test_an_entry_not_exactly_as_kept_is_not_read(tmp_path: Path, damage: str) -> None:
    """An edited or damaged entry, one of another format, one that others may write: tomllib
    reads the text again (the title as the file says it)."""
    project = make_project(tmp_path)
    path, cache = project.root / "series.toml", tmp_path / "cache"
    title = load(path, kept=cache).patches[0].title
    (entry,) = _entries(cache)
    record = json.loads(entry.read_text())
    data = record["data"].replace(json.dumps(title), json.dumps("forged"))
    assert data != record["data"]
    if damage == "title edited":
        _forge(entry, data=data)
    elif damage == "title edited, sealed again":  # sealed for another text's digest
        _forge(entry, data=data, digest="0" * 64, seal=manifest_kept._seal("0" * 64, data))
    elif damage == "another format":
        _forge(entry, data=data, format=2, seal=manifest_kept._seal(record["digest"], data))
    else:  # sealed right and this user's: read (the forge is good); others may write it: not
        _forge(entry, data=data, seal=manifest_kept._seal(record["digest"], data))
        assert load(path, kept=cache).patches[0].title == "forged"
        entry.chmod(0o666)
    assert load(path, kept=cache).patches[0].title == title
