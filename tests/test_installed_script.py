"""The installed `series` command: our own script (pyproject's script-files), not pip's
console-script template, so that a command pays neither `re` (the template's argv[0]
rewrite) nor runpy (`python -m series`) before series runs a line."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from series import __version__

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "bin" / "series"


def _imported(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the interpreter with ``argv`` under ``-X importtime``: the process, and every
    module it imported (site's included)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    return proc, names - {"package"}


def test_pyproject_installs_the_script_and_no_console_script() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["tool"]["setuptools"]["script-files"] == ["tools/bin/series"]
    assert "scripts" not in meta["project"], "pip's template would be installed over ours"
    assert SCRIPT.read_text().startswith("#!python\n"), "pip rewrites only a '#!python' line"
    assert os.access(SCRIPT, os.X_OK)


def test_the_script_runs_series_and_imports_neither_re_nor_runpy() -> None:
    _, floor = _imported("-c", "pass")
    proc, names = _imported(str(SCRIPT), "--version")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith(__version__)
    extra = names - floor
    assert "series.entry" in extra
    assert not {"re", "runpy"} & extra, sorted(extra)


def test_the_script_passes_series_exit_code_on() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "no-such-command"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "no-such-command" in proc.stderr


def test_the_venv_series_is_this_script() -> None:
    """The README's install put this script in the venv, with its interpreter on line 1
    (a venv installed before the change has pip's template: reinstall with `pip install -e .`)."""
    installed = Path(sys.executable).parent / "series"
    assert installed.is_file(), f"{installed}: not installed (README's set-up command)"
    first, _, body = installed.read_text().partition("\n")
    assert first.startswith("#!") and "python" in first
    assert body == SCRIPT.read_text().partition("\n")[2], (
        f"{installed} is not tools/bin/series: run `pip install -e .` again"
    )
    proc = subprocess.run(
        [str(installed), "--version"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith(__version__), proc.stderr
