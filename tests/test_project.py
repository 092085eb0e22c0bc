"""The project's promises about itself: CI runs the README, the code is clean."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_commands(root: Path) -> list[str]:
    text = (root / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", setup)


def test_readme_has_exactly_two_setup_commands(project_copy: Path) -> None:
    commands = readme_commands(project_copy)
    assert len(commands) == 2
    assert commands[0].endswith("series apply")
    assert "-c ci/constraints.txt" in commands[1] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command(project_copy: Path) -> None:
    ci = (project_copy / ".ci/run").read_text().splitlines()
    assert readme_commands(project_copy)[1] in ci


def test_constraints_pin_torch_to_the_cpu_wheel(project_copy: Path) -> None:
    text = (project_copy / "ci/constraints.txt").read_text()
    assert re.search(r"^torch==2\.13\.0$", text, re.MULTILINE)


@pytest.mark.parametrize(
    "argv",
    [
        ["ruff", "check", "tools", "tests", "ci"],
        ["ruff", "format", "--check", "tools", "tests", "ci"],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_own_code_is_clean(argv: list[str]) -> None:
    tool = shutil.which(argv[0], path=str(Path(sys.executable).parent)) or shutil.which(argv[0])
    if tool is None:
        pytest.fail(f"{argv[0]} is not installed: it is part of the [test] extra")
    proc = subprocess.run([tool, *argv[1:]], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
