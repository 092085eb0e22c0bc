"""Hermetic test setup: every test gets its own HOME, cache, git identity and dates,
and the suite reads its own copy of the project.

Tests build real repositories in tmp_path (see helpers.py) and drive the CLI
in-process. Nothing may touch the real home directory or the user's git
configuration: HOME, XDG dirs, SERIES_CACHE_DIR and GIT_CONFIG_* point into
tmp_path. A test that escapes fails: an audit hook (sys.addaudithook) sees
every file this process opens for writing, creates, renames or removes, and
every child it starts, and the test fails if one of them is the real series
cache or git configuration, or a child that would run with the real HOME or
cache. The hook looks at what the test does, not at the real home, so a
`series test` in another terminal writing the real cache meanwhile does not
trip it (tests/test_hermetic.py runs part of the suite that way, and with
a read-only HOME).

``project_copy`` is a copy of the project's own files (series.toml,
patches/, resolutions/, ci/ and the top-level configuration) taken once per
session: a test never reads the live series, which `series export` or an
editor may be rewriting meanwhile.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import IDENT_ENV

# A suite started in the background (`cmd &`, nohup) inherits SIGINT and SIGHUP ignored,
# and every process it starts would inherit them ignored too (series keeps an ignored
# signal ignored, on purpose: entry.py). The tests that send these signals to series
# need them delivered, so the suite takes the default dispositions back for its children.
for _sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    if signal.getsignal(_sig) is signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig is signal.SIGINT else signal.SIG_DFL)

ROOT = Path(__file__).resolve().parent.parent
REAL_HOME = Path.home()


def _guarded() -> tuple[Path, ...]:
    """The real series cache and git configuration: what a test that escaped would write."""
    xdg_cache = Path(os.environ.get("XDG_CACHE_HOME") or REAL_HOME / ".cache")
    xdg_config = Path(os.environ.get("XDG_CONFIG_HOME") or REAL_HOME / ".config")
    paths = [
        REAL_HOME / ".cache" / "keras-series",
        xdg_cache / "keras-series",
        REAL_HOME / ".gitconfig",
        xdg_config / "git",
    ]
    if os.environ.get("SERIES_CACHE_DIR"):
        paths.append(Path(os.environ["SERIES_CACHE_DIR"]))
    return tuple(p.absolute() for p in paths)


GUARDED = _guarded()
_WRITES = {
    "os.mkdir",
    "os.rename",
    "os.remove",
    "os.rmdir",
    "os.truncate",
    "os.symlink",
    "os.link",
    "os.chmod",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_escapes: list[str] | None = None  # the current test's escapes; None between tests


def _guarded_path(value: object) -> str | None:
    if isinstance(value, int) or value is None:
        return None
    try:
        path = Path(os.fsdecode(value)).absolute()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    for root in GUARDED:
        if path == root or root in path.parents:
            return str(path)
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _escapes is None:
        return
    if event == "open":
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        )
        hit = _guarded_path(path) if writing else None
    elif event in _WRITES:
        hit = next((h for h in map(_guarded_path, args[:2]) if h), None)
    elif event == "subprocess.Popen":
        env = args[3] if args[3] is not None else os.environ
        home = env.get("HOME") or env.get(b"HOME")  # type: ignore[call-overload]
        cache = env.get("SERIES_CACHE_DIR") or env.get(b"SERIES_CACHE_DIR")  # type: ignore[call-overload]
        hit = None
        if home is not None and Path(os.fsdecode(home)).absolute() == REAL_HOME.absolute():
            hit = f"a child with the real HOME: {args[1]!r}"
        elif cache is not None and _guarded_path(cache):
            hit = f"a child with the real cache: {args[1]!r}"
    else:
        return
    if hit:
        _escapes.append(f"{event} {hit}")


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    global _escapes
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
    # where series' default puts it under this HOME: tests look there
    monkeypatch.setenv("SERIES_CACHE_DIR", str(home / ".cache" / "keras-series"))
    monkeypatch.delenv("SERIES_DEBUG", raising=False)
    for key, value in IDENT_ENV.items():
        monkeypatch.setenv(key, value)
    _escapes = []
    try:
        yield home
    finally:
        escaped, _escapes = _escapes, None
    assert not escaped, f"a test wrote into the real home directory: {escaped[:5]}"


# The project's own files that tests read; tools/, tests/ and docs/ are the
# code and manual under test and are read where they are.
PROJECT_FILES = (
    "series.toml",
    "patches",
    "resolutions",
    "ci",
    ".ci",
    "README.md",
    "pyproject.toml",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
)


def _tracked(root: Path) -> list[str] | None:
    """The project's tracked files among PROJECT_FILES, or None outside a git checkout."""
    try:
        proc = subprocess.run(
            ["git", "ls-files", "-z", "--", *PROJECT_FILES],
            cwd=root,
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    names = [n for n in os.fsdecode(proc.stdout).split("\0") if n]
    return names or None


def copy_project(source: Path, target: Path) -> Path:
    """Copy the project's own files (the tracked ones in a git checkout) from source to target."""
    target.mkdir(parents=True, exist_ok=True)
    names = _tracked(source)
    if names is None:
        for name in PROJECT_FILES:
            if (source / name).is_dir():
                shutil.copytree(source / name, target / name, symlinks=True)
            elif (source / name).is_file():
                shutil.copy2(source / name, target / name)
        return target
    for name in names:
        if not (source / name).is_file():
            continue  # deleted in the work tree: the copy has what the checkout has
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target / name)
    return target


@pytest.fixture(scope="session")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's series.toml, patches/, resolutions/, ci/ and configuration,
    copied once per session. Read it; a test that changes files copies it again."""
    return copy_project(ROOT, tmp_path_factory.mktemp("project") / "keras-series")


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


SHARED_UPSTREAM = ROOT.parent / "shared" / "upstream" / "keras-2026-07-21.git.tar.gz"


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
