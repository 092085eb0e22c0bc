"""Hermetic test setup: every test gets its own HOME, git identity and dates.

Tests build real repositories in tmp_path (see helpers.py) and drive the CLI
in-process. Nothing may touch the real home directory or the user's git
configuration: HOME, XDG dirs and GIT_CONFIG_* point into tmp_path, and the
real home is made unreadable to the tests by check at teardown.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import IDENT_ENV

REAL_HOME = Path.home()


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Series Test\n\temail = test@series.invalid\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("SERIES_CACHE_DIR", raising=False)
    monkeypatch.delenv("SERIES_DEBUG", raising=False)
    for key, value in IDENT_ENV.items():
        monkeypatch.setenv(key, value)
    yield home
    assert not (REAL_HOME / ".cache" / "keras-series-test-canary").exists()


@pytest.fixture(scope="session")
def keras_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache shared by the tests that need the real keras sdist.

    SERIES_TEST_CACHE names a directory to reuse across runs (CI sets it so
    the sdist is downloaded once per machine); otherwise one per session.
    """
    shared = os.environ.get("SERIES_TEST_CACHE")
    if shared:
        path = Path(shared)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("keras-cache")


SHARED_UPSTREAM = (
    Path(__file__).resolve().parent.parent.parent
    / "shared"
    / "upstream"
    / "keras-2026-07-21.git.tar.gz"
)


@pytest.fixture(scope="session")
def shared_upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared shallow clone of real keras (v3.15.1 + master 2026-07-21), unpacked.

    It lives beside the checkout in ../shared/upstream (CI has it); tests that
    need it skip, saying so, where it is not.
    """
    if not SHARED_UPSTREAM.is_file():
        pytest.skip(f"../shared/upstream/{SHARED_UPSTREAM.name} is not beside the checkout")
    import tarfile

    target = tmp_path_factory.mktemp("shared-upstream")
    with tarfile.open(SHARED_UPSTREAM) as tar:
        tar.extractall(target, filter="data")
    return target / "keras.git"
