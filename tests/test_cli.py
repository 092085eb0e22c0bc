from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PatchSpec, git, make_project
from series import cli
from series.errors import Exit


@pytest.mark.parametrize("command", [c.name for c in cli.COMMANDS])
def test_every_command_row_dispatches(command: str, tmp_path: Path) -> None:
    """Each row parses, reaches its runner, and the runner calls its command for real.

    On a small applied project every command can do its work or refuse it
    as a user error; an exit 70 means the row and the command disagree (a
    misspelt keyword, a missing option) or the command broke.
    """
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    out, err = io.StringIO(), io.StringIO()
    assert cli.main([command, "--help"], out=out) == 0
    code = cli.main(["-C", str(project.root), command, *_minimal_args(command)], out=out, err=err)
    assert code != Exit.INTERNAL, err.getvalue()
    assert "internal error" not in err.getvalue()
    assert code in set(Exit), (code, err.getvalue())


def _minimal_args(command: str) -> list[str]:
    return ["P1"] if command == "show" else []


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    err = io.StringIO()
    assert cli.main(["apply", "--source", "ftp"], err=err) == Exit.BAD_INPUT


def test_outside_a_project_says_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    assert cli.main(["list"], err=err) == Exit.FAILED
    assert "no series.toml" in err.getvalue() and "-C DIR" in err.getvalue()


def test_list_and_show(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, out, _ = project.run("list", "--json")
    assert code == 0
    rows = json.loads(out)["patches"]
    assert [r["id"] for r in rows] == ["P1", "P2", "P3"]
    assert rows[0]["files"] == ["pkg/core.py"] and rows[0]["pr"] == 1000
    code, out, _ = project.run("show", "P2", "--diff")
    assert code == 0
    assert "util: VALUE_5 is 55" in out and "+VALUE_5 = 55" in out
    assert "https://github.com/keras-team/keras/pull/1001" in out
    code, _, err = project.run("show", "P7")
    assert code == Exit.BAD_INPUT and "series list" in err


def test_list_counts_files_when_the_project_is_a_git_repository(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    git(project.root, "init", "-q")  # as the real project is: apply ignored paths here
    code, out, _ = project.run("list", "--json")
    assert code == 0
    assert [len(row["files"]) for row in json.loads(out)["patches"]] == [1, 1, 1]


def test_console_script_runs_as_a_subprocess(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(project.root), "apply"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("applied: 3 patches")
    assert "upstream:" in proc.stderr


def test_a_corrupt_patch_file_is_bad_input_named_by_path(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project.root / "patches/perf-P2.patch").write_text("garbage\n")
    for command in ("list", "apply"):
        code, _, err = project.run(command)
        assert code == Exit.BAD_INPUT, err
        assert "perf-P2.patch" in err and "hint:" in err


def test_patch_ids_on_the_command_line_ignore_case(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, out, err = project.run("show", "p2", "--json")
    assert code == 0 and json.loads(out)["id"] == "P2", err
    code, out, err = project.run("apply", "--to", "p2", "--json")
    assert code == 0 and json.loads(out)["applied"] == ["P1", "P2"], err
    assert git(project.work, "log", "--format=%s", "-2").splitlines() == [
        "util: VALUE_5 is 55",
        "core: f1 returns 101",
    ]


def test_two_ids_that_differ_only_in_case_cannot_be(tmp_path: Path) -> None:
    """Why ignoring case is never ambiguous: such a series.toml is refused on load."""
    specs = [
        PatchSpec("P1", "core: f1 returns 101", {"pkg/core.py": ("return 1\n", "return 101\n")}),
        PatchSpec(
            "p1", "util: VALUE_5 is 55", {"pkg/util.py": ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}
        ),
    ]
    project = make_project(tmp_path, specs)
    code, _, err = project.run("show", "p1")
    assert code == Exit.BAD_INPUT and "patch[1].id" in err
