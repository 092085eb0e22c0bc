"""``series range-diff`` after a rebase: the modules it imports and the git processes it
starts once the memo has both stacks, and the earlier version read without writing its
files out (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here: what is asserted is
which parts of series and of the standard library a run loads, which git processes it
starts, and that the earlier version parsed from its bytes is the parse of its files
written out, or is left to that parse.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import make_project
from rebase_helpers import commit_upstream
from series.manifest import Manifest, load
from series.stack.rangediff import _parsed
from test_speed import ELEVEN, Counted, imported_after
from test_speed_rd_branches import RANGE_DIFF_AFTER_REBASE, UTIL, range_diff_calls

# Parts a range-diff answered from the memo does not use: the git layer's other parts
# (series.git.names imports them all), the builder and the mail parts it reads patch files
# with (no patch is applied), and tempfile (nothing written out: the earlier version's
# files are read from their bytes, no pair needs a diff of its own here).
NOT_IMPORTED = {
    "series.builder.build",
    "series.builder.message",
    "series.git.mail",
    "series.git.names",
    "series.git.history",
    "series.git.index",
    "series.git.mergetree",
    "series.git.remote",
    "series.git.worktree",
    "tempfile",
}


def test_range_diff_after_a_rebase_loads_only_the_parts_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path, ELEVEN)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    commit_upstream(project.upstream, UTIL, "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20")
    counted.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    built, _ = counted.run("range-diff", "--json")  # builds the earlier version's stack
    out, calls = counted.run("range-diff", "--json")
    assert json.loads(out) == json.loads(built)
    assert json.loads(out)["old"] == "the series before the last `series rebase`"
    verbs = [c if c.split()[0] in ("rev-parse", "cat-file", "for-each-ref") else c.split()[0]
             for c in calls]  # fmt: skip
    assert range_diff_calls(verbs) == sorted(RANGE_DIFF_AFTER_REBASE), calls
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), "range-diff")
    assert "series.stack.rangediff" in modules and "series.git.diffs" in modules
    assert not NOT_IMPORTED & modules, sorted(NOT_IMPORTED & modules)


def _files(tmp_path: Path) -> dict[str, bytes]:
    project = make_project(tmp_path, ELEVEN[:3])
    files = {"series.toml": (project.root / "series.toml").read_bytes()}
    for path in sorted((project.root / "patches").glob("*.patch")):
        files[f"patches/{path.name}"] = path.read_bytes()
    return files


def _written(files: dict[str, bytes], root: Path) -> Manifest:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return load(root / "series.toml")


def test_an_earlier_version_parsed_from_its_bytes_is_its_files_written_out(
    tmp_path: Path,
) -> None:
    files = _files(tmp_path)
    parsed = _parsed(files)
    assert parsed is not None
    written = _written(files, tmp_path / "written")
    assert parsed._replace(path=written.path) == written


@pytest.mark.parametrize(
    "change",
    [
        "a patch file missing",
        "a patch file empty",
        "a patch file named another way",
        "a checkout out of the project",
        "a checkout through the parent directory",
        "not TOML",
        "not UTF-8",
    ],
)
def test_an_earlier_version_whose_parse_may_depend_on_the_disk_is_written_out(
    tmp_path: Path, change: str
) -> None:
    """What the parse of the written files would refuse, or might read otherwise, is left
    to it (None): it says what is wrong in its own words."""
    files = _files(tmp_path)
    toml = files["series.toml"].decode()
    first = "patches/perf-P1.patch"
    if change == "a patch file missing":
        del files[first]
    elif change == "a patch file empty":
        files[first] = b""
    elif change == "a patch file named another way":
        files["series.toml"] = toml.replace(f'"{first}"', f'"./{first}"').encode()
    elif change == "a checkout out of the project":
        files["series.toml"] = toml.replace('checkout = "work"', 'checkout = "../work"').encode()
    elif change == "a checkout through the parent directory":  # inside where it is parsed
        files["series.toml"] = toml.replace(
            'checkout = "work"', 'checkout = "../series-range-diff/work"'
        ).encode()
    elif change == "not TOML":
        files["series.toml"] = b"[[patch]\n" + files["series.toml"]
    else:
        files["series.toml"] = files["series.toml"].replace(b"core: f1", b"core: \xff1")
    assert files["series.toml"] != toml.encode() or change.startswith("a patch file")
    assert _parsed(files) is None
