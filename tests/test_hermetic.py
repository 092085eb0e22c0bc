"""The suite runs in its own home and its own copy of the project, whatever else the machine does.

Part of the suite runs again in a child pytest whose HOME is read-only, and
in one whose real cache another `series` command keeps rewriting: both
pass. conftest's guard still fails a test that writes into the real cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import conftest
from helpers import make_project

ROOT = Path(__file__).resolve().parent.parent
# Fast files that use the cache under HOME (fetches, sdists) and the project's own files;
# with a read-only HOME also every command once (test_json: test, lint and the others).
PART = ("tests/test_status.py", "tests/test_upstream.py", "tests/test_manifest_pin.py")
EVERY_COMMAND = "tests/test_json.py"


def outer_env(home: Path) -> dict[str, str]:
    """This environment with HOME as the one given and nothing else pointing at a home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GIT_CONFIG"))}
    env.pop("SERIES_CACHE_DIR", None)
    env["HOME"] = str(home)
    return env


def run_part(tmp_path: Path, home: Path, *more: str) -> subprocess.CompletedProcess[str]:
    # one process (-n 0): the part is small, and this test already runs beside others
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    argv += ["--basetemp", str(tmp_path / "basetemp"), *PART, *more]
    return subprocess.run(
        argv, cwd=ROOT, env=outer_env(home), capture_output=True, text=True, check=False
    )


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_guard_fails_a_test_that_writes_the_real_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real-cache"
    monkeypatch.setattr(conftest, "GUARDED", (real,))
    (real / "sdist").mkdir(parents=True)
    (real / "sdist" / "keras.tar.gz").write_bytes(b"x")
    (tmp_path / "elsewhere").write_text("fine")
    seen = list(conftest._escapes or [])
    conftest._escapes = []  # this test's own escapes are the point: do not fail it
    assert any("os.mkdir" in s and "real-cache" in s for s in seen), seen
    assert any(s.startswith("open ") and "keras.tar.gz" in s for s in seen), seen
    assert not any("elsewhere" in s for s in seen)


def test_the_project_copy_is_not_the_checkout(project_copy: Path) -> None:
    assert project_copy != ROOT and ROOT not in project_copy.parents
    assert (project_copy / "series.toml").read_bytes() == (ROOT / "series.toml").read_bytes()
    copied = sorted(p.name for p in (project_copy / "patches").iterdir())
    assert copied and copied == sorted(p.name for p in (ROOT / "patches").glob("*.patch"))


def test_part_of_the_suite_passes_with_a_read_only_home(tmp_path: Path) -> None:
    home = tmp_path / "read-only-home"
    home.mkdir()
    home.chmod(0o555)  # root may still write: the tree is compared afterwards too
    try:
        proc = run_part(tmp_path, home, EVERY_COMMAND)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert tree(home) == []
    finally:
        home.chmod(0o755)


def test_part_of_the_suite_passes_while_series_writes_the_real_cache(tmp_path: Path) -> None:
    home = tmp_path / "busy-home"
    home.mkdir()
    cache = home / ".cache" / "keras-series"
    project = make_project(tmp_path / "other")
    env = {**outer_env(home), "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"]}
    done = threading.Event()
    runs: list[int] = []

    def other_terminal() -> None:
        # another `series` filling the real cache from empty, again and again
        while not done.is_set():
            shutil.rmtree(cache, ignore_errors=True)
            argv = [sys.executable, "-m", "series", "-C", str(project.root), "check-conflicts"]
            proc = subprocess.run(argv, env=env, capture_output=True, check=False)
            runs.append(proc.returncode)

    writer = threading.Thread(target=other_terminal)
    writer.start()
    try:
        proc = run_part(tmp_path, home)
    finally:
        done.set()
        writer.join()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert len(runs) >= 2 and set(runs) == {0}, runs
    assert (cache / "upstream.git").is_dir()  # the other command did write the real cache
