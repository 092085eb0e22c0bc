"""Hermetic test setup: every test gets its own HOME, git identity and dates.

Tests build real repositories in tmp_path (see helpers.py) and drive the CLI
in-process. Nothing may touch the real home directory or the user's git
configuration: HOME, XDG dirs and GIT_CONFIG_* point into tmp_path, and
after every test the real home's series cache and git configuration are
compared with what they were before it: a test that wrote there fails.
(Running `series` for real while the tests run would trip it too.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import IDENT_ENV

REAL_HOME = Path.home()
# What a test that escaped the hermetic environment would write.
GUARDED = (REAL_HOME / ".cache" / "keras-series", REAL_HOME / ".gitconfig")


def home_snapshot() -> dict[str, tuple[int, int]]:
    """(mtime, size) of the guarded paths and of everything up to two levels below them."""
    seen: dict[str, tuple[int, int]] = {}
    for root in GUARDED:
        paths = [root, *root.glob("*"), *root.glob("*/*")] if root.is_dir() else [root]
        for path in paths:
            try:
                st = path.lstat()
            except OSError:
                continue
            seen[str(path)] = (st.st_mtime_ns, st.st_size)
    return seen


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
    before = home_snapshot()
    yield home
    after = home_snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"a test wrote into the real home directory: {changed[:5]}"


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
