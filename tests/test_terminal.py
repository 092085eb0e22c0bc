"""Terminal or pipe: boxes, pager, colour and progress only for a person at a terminal.

The terminal cases run the CLI on a pseudo-terminal (``pty``) of a chosen
width; the pipe cases are the in-process runs every other test uses.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
import tomllib
from pathlib import Path

from helpers import PatchSpec, Project, make_project

BOX = set("│┃━─┏┓┗┛╭╮╰╯┡┩")
LONG = "tests/integration_tests/some_rather_long_directory_name/model_saving_test.py"


def _project(tmp_path: Path) -> Project:
    specs = [
        PatchSpec("P1", "core: f1 returns 101", {"pkg/core.py": ("return 1\n", "return 101\n")}),
        PatchSpec(
            "P2",
            "util: VALUE_5 is 55",
            {"pkg/util.py": ("VALUE_5 = 5\n", "VALUE_5 = 55\n")},
            subset=(LONG,),
        ),
    ]
    return make_project(tmp_path, specs)


def run_pty(
    root: Path, *args: str, cols: int = 80, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """``series ARGS`` with stdin, stdout and stderr on a terminal ``cols`` wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    full = {**os.environ, "TERM": "xterm-256color", **(env or {})}
    full.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=full,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_tables_in_a_pipe_are_plain_and_keep_cells_whole(tmp_path: Path) -> None:
    project = _project(tmp_path)
    code, out, _ = project.run("list")
    assert code == 0
    assert not BOX & set(out)
    assert "util: VALUE_5 is 55" in out and "1 file" in out  # one piece, never folded
    code, out, _ = project.run("show", "P2")
    assert code == 0 and LONG in out  # the subset whole: show has it


def test_list_fits_100_columns_with_many_node_ids_and_long_titles(
    tmp_path: Path, project_copy: Path
) -> None:
    """Issue 20: P9's 20 node ids made `series list` about 200 columns wide."""
    ids = tuple(f"{LONG}::TestModelSaving::test_case_number_{n}" for n in range(20))
    title = "layers: a title long enough that the table would wrap at 100 columns if whole"
    specs = [
        PatchSpec("P1", title, {"pkg/core.py": ("return 1\n", "return 101\n")}, subset=ids),
        PatchSpec("P2", "util: VALUE_5", {"pkg/util.py": ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}),
    ]
    project = make_project(tmp_path, specs)
    code, out, _ = project.run("list")
    assert code == 0 and max(map(len, out.splitlines())) <= 100, out
    assert "20 tests, 1 file" in out and title[:30] in out
    code, out, _ = project.run("list", "--json")  # whole in --json
    row = json.loads(out)["patches"][0]
    assert row["title"] == title and row["subset"] == list(ids)
    real = tmp_path / "real"
    shutil.copytree(project_copy, real)  # the real series, P9's node ids (20 or more) included
    code, out, err = Project(real, real, "").run("list")
    assert code == 0, err
    assert max(map(len, out.splitlines())) <= 100, out
    manifest = tomllib.loads((real / "series.toml").read_text())
    (p9,) = (p for p in manifest["patch"] if p["id"] == "P9")
    assert len(p9["subset"]) >= 20 and f"{len(p9['subset'])} tests, 1 file" in out


def test_a_table_too_wide_for_the_terminal_is_plain_not_cut(tmp_path: Path) -> None:
    project = _project(tmp_path)
    code, out = run_pty(project.root, "list", cols=40)
    assert code == 0, out
    assert "util: VALUE_5 is 55" in out and not BOX & set(out)


def test_a_wide_terminal_gets_boxes_unless_no_color_or_dumb(tmp_path: Path) -> None:
    project = _project(tmp_path)
    code, out = run_pty(project.root, "list", cols=250)
    assert code == 0 and BOX & set(out), out
    for env in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
        code, out = run_pty(project.root, "list", cols=250, env=env)
        assert code == 0 and not BOX & set(out), (env, out)


def test_show_diff_goes_through_the_pager_in_colour_on_a_terminal(tmp_path: Path) -> None:
    project = _project(tmp_path)
    paged = tmp_path / "paged.txt"
    env = {"GIT_PAGER": f"sh -c 'cat > {paged}'", "PAGER": "false"}
    code, out = run_pty(project.root, "show", "P2", "--diff", env=env)
    assert code == 0, out
    text = paged.read_text()
    assert "\x1b[32m+VALUE_5 = 55\x1b[m" in text and "util: VALUE_5 is 55" in text
    paged.unlink()
    code, out = run_pty(project.root, "show", "P2", "--diff", "--no-pager", env=env)
    assert code == 0 and "+VALUE_5 = 55" in out and not paged.exists()


def test_no_pager_and_no_colour_in_a_pipe(tmp_path: Path) -> None:
    project = _project(tmp_path)
    paged = tmp_path / "paged.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(project.root), "show", "P2", "--diff"],
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_PAGER": f"sh -c 'cat > {paged}'"},
        check=False,
    )
    assert proc.returncode == 0
    assert "+VALUE_5 = 55" in proc.stdout and "\x1b[" not in proc.stdout
    assert not paged.exists()


def test_progress_on_a_terminal_never_in_a_pipe(tmp_path: Path) -> None:
    project = _project(tmp_path)
    code, out = run_pty(project.root, "apply", "--dir", str(tmp_path / "tty"))
    assert code == 0, out
    assert "materialising the upstream base" in out
    # the status line said while the spinner runs is printed above it, not into its line
    said = [part for line in out.split("\n") for part in line.split("\r") if "upstream:" in part]
    assert said and not [part for part in said if "materialising" in part], said
    code, _, err = project.run("apply")
    assert code == 0 and "materialising" not in err and "\x1b[" not in err
