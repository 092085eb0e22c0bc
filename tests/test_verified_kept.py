"""A plain re-run of ``series apply`` answered before the CLI (series.stack.verified_kept).

The answer is the one series.stack.verified gives inside the CLI, from the
same digest and the same ``git status``; counted here by the modules a
fresh interpreter imported and the git processes it started (a ``git`` shim
first on PATH), never timed. Each change that the CLI's run must see
instead is made, checked to take the full run, and undone, checked to be
answered again: the answer depends on that check alone.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from helpers import GitShim, git, make_project
from series.project import LOCK
from series.stack import export_files, verified, verified_kept
from test_fixed_cost import _modules_after

HIT = "nothing changed since the last apply verified"
STATUS = "--no-optional-locks status --porcelain=v1 -z --untracked-files=all"
# What the answer before the CLI does without: the CLI, the project, the git layer, and
# the standard modules whose import cost more than the answer (issue 23).
NOT_IMPORTED = {
    "series.cli",
    "series.cli.run",
    "series.project",
    "series.stack.verified",
    "series.git.run",
    "pathlib",
    "json",
    "re",
    "hashlib",
    "enum",
    "subprocess",
    "argparse",
    "typing",
    # Not loaded by Python's start-up of the installed script (tools/bin/series, no
    # runpy): contextlib, collections (series.records' namedtuple) cost ~1 ms here.
    "contextlib",
    "collections",
}


def _settled(tmp_path: Path) -> tuple[Path, GitShim, tuple[str, str]]:
    """An applied project whose last apply was answered by what was verified (which keeps
    the entry of this module); that answer's stdout and stderr."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, "apply")  # verified, kept in .git/series/verified.json
    entry = verified_kept.entry_path(str(project.root.resolve()), str(shim.cache), "apply")
    os.unlink(entry)  # the run inside the CLI answers, and keeps this module's entry again
    code, out, err, calls = shim.said(project.root, "apply")
    assert code == 0 and HIT in err and calls == [STATUS], (err, calls)
    assert os.path.isfile(entry)
    return project.root, shim, (out, err)


def test_a_rerun_of_apply_is_answered_before_the_cli_with_one_git_status(
    tmp_path: Path,
) -> None:
    root, shim, said = _settled(tmp_path)
    code, out, err, calls = shim.said(root, "apply")
    assert code == 0 and (out, err) == said
    assert calls == [STATUS]
    modules = _modules_after(root, shim.env, "apply")
    assert "series.stack.verified_kept" in modules
    assert not NOT_IMPORTED & modules, sorted(NOT_IMPORTED & modules)


def _answered(root: Path, env: dict[str, str], *words: str) -> bool:
    """Whether verified_kept answers ``series -C root WORDS`` (else the CLI runs it)."""
    code = (
        "import sys\n"
        "from series.stack.verified_kept import rerun\n"
        "code = rerun(sys.argv[1:])\n"
        "sys.stderr.write(f'\\nrerun: {code}\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "-C", str(root), *words],
        capture_output=True,
        text=True,
        env=env,
        timeout=GitShim.BOUND,
        check=True,
    )
    said = proc.stderr.splitlines()[-1]
    assert said in ("rerun: 0", "rerun: None"), proc.stderr
    return said == "rerun: 0"


@contextmanager
def _changed(path: Path, text: bytes) -> Iterator[None]:
    before = path.read_bytes()
    path.write_bytes(text)
    yield
    path.write_bytes(before)


@contextmanager
def _linked(path: Path) -> Iterator[None]:
    before = path.read_bytes()
    copy = path.with_name(path.name + ".copy")
    copy.write_bytes(before)
    path.unlink()
    path.symlink_to(copy)
    yield
    path.unlink()
    path.write_bytes(before)
    copy.unlink()


@contextmanager
def _made(path: Path) -> Iterator[None]:
    path.write_text("x\n")
    yield
    path.unlink()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield
    os.close(fd)


@contextmanager
def _env(env: dict[str, str], name: str, value: str) -> Iterator[None]:
    env[name] = value
    yield
    del env[name]


@contextmanager
def _path(env: dict[str, str]) -> Iterator[None]:
    before = env["PATH"]
    env["PATH"] = before.split(os.pathsep, 1)[1]  # the shim gone: another git
    yield
    env["PATH"] = before


@contextmanager
def _ref(work: Path) -> Iterator[None]:
    git(work, "update-ref", "refs/heads/other", "HEAD")
    yield
    git(work, "update-ref", "-d", "refs/heads/other")


CHANGES: dict[str, Callable[[Path, dict[str, str]], object]] = {
    "the kept verified.json": lambda root, env: _changed(
        root / "work" / ".git" / verified.NAME,
        (root / "work" / ".git" / verified.NAME).read_bytes() + b" ",
    ),
    "series.toml": lambda root, env: _changed(
        root / "series.toml", (root / "series.toml").read_bytes() + b"# x\n"
    ),
    "a patch file": lambda root, env: _changed(
        next((root / "patches").glob("*.patch")),
        next((root / "patches").glob("*.patch")).read_bytes() + b"\n",
    ),
    "a patch file made a link": lambda root, env: _linked(next((root / "patches").glob("*.patch"))),
    "a ref of the checkout": lambda root, env: _ref(root / "work"),
    "an untracked file": lambda root, env: _made(root / "work" / "new.txt"),
    "a modified file": lambda root, env: _changed(
        root / "work" / "pkg" / "core.py", (root / "work" / "pkg" / "core.py").read_bytes() + b"#\n"
    ),
    "a leftover of a killed run": lambda root, env: _made(root / "patches" / ".series-tmp-x"),
    "a git command in progress": lambda root, env: _made(root / "work" / ".git" / "MERGE_HEAD"),
    "an export journal": lambda root, env: _made(root / export_files.JOURNAL),
    "the project locked": lambda root, env: _locked(root / LOCK),
    "GIT_DIR": lambda root, env: _env(env, "GIT_DIR", str(root / "work" / ".git")),
    "GIT_CONFIG_COUNT": lambda root, env: _env(env, "GIT_CONFIG_COUNT", "0"),
    "SERIES_DEBUG": lambda root, env: _env(env, "SERIES_DEBUG", "1"),
    "a fault injected": lambda root, env: _env(env, "SERIES_FAULT_KILL_AT", "99"),
    "another git": lambda root, env: _path(env),
}


def test_what_the_full_run_must_see_is_not_answered_before_it(tmp_path: Path) -> None:
    root, shim, _ = _settled(tmp_path)
    env = dict(shim.env)
    assert _answered(root, env, "apply")
    for name, change in CHANGES.items():
        with change(root, env):  # type: ignore[attr-defined]
            assert not _answered(root, env, "apply"), name
        assert _answered(root, env, "apply"), name  # undone: answered again
    for words in (["-v", "apply"], ["apply", "--dir", str(root / "work")], ["export"]):
        assert not _answered(root, env, *words), words


def test_the_constants_are_the_full_runs(tmp_path: Path) -> None:
    """What this module names of the modules it does not import (they import pathlib)."""
    assert str(export_files.JOURNAL) == verified_kept.JOURNAL
    assert str(LOCK) == verified_kept.LOCK
    assert str(Path(".git") / verified.NAME) == verified_kept.VERIFIED
    assert verified_kept.VERIFIED_FORMAT == verified.FORMAT
    assert " ".join(verified_kept.STATUS[1:]) == STATUS


@pytest.mark.parametrize("where", ["inside", "named"])
def test_an_entry_is_found_from_the_project_or_with_c(tmp_path: Path, where: str) -> None:
    root, shim, said = _settled(tmp_path)
    argv = [sys.executable, "-m", "series", *(["-C", str(root)] if where == "named" else [])]
    shim.log.unlink()
    proc = subprocess.run(
        [*argv, "apply"],
        cwd=root / "patches" if where == "inside" else tmp_path,
        capture_output=True,
        text=True,
        env=shim.env,
        timeout=GitShim.BOUND,
        check=False,
    )
    assert proc.returncode == 0 and (proc.stdout, proc.stderr) == said
    # the shim is a wrapper script: its git is asked again (series.git.itself)
    assert shim.log.read_text().splitlines() == ["version", STATUS]


def test_a_series_toml_saved_while_a_run_parsed_the_one_before_keeps_no_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save of series.toml between the run's parse and its digest (which reads the file
    again): the digest holds the new bytes with the old parse's branch and patches; an
    entry kept so would answer the next re-run for the manifest as it was."""
    from series.cli import main

    root, shim, _ = _settled(tmp_path)
    toml = root / "series.toml"
    before = toml.read_bytes()
    saved = before.replace(b'branch = "series"', b'branch = "other"')
    assert saved != before
    for name in ("PATH", "SERIES_CACHE_DIR"):
        monkeypatch.setenv(name, shim.env[name])
    for kept in (shim.cache / "known").iterdir():  # the run parses series.toml
        kept.unlink()
    os.unlink(root / "work" / ".git" / verified.NAME)  # the run applies
    real = verified_kept.digest

    def saving(*args: object) -> str | None:
        if toml.read_bytes() == before:
            toml.write_bytes(saved)  # the user's save lands after the parse
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(verified_kept, "digest", saving)
    assert main(["-C", str(root), "apply"]) == 0
    monkeypatch.setattr(verified_kept, "digest", real)
    assert toml.read_bytes() == saved
    assert not _answered(root, shim.env, "apply")
    assert HIT not in shim.said(root, "-v", "apply")[2]  # as the CLI's run, which parses it


def _opened(root: Path, env: dict[str, str]) -> tuple[bool, list[str]]:
    """Whether verified_kept answers ``series -C root apply``, and the files under root's
    patches/ it opened meanwhile (an audit hook sees each ``open``)."""
    code = (
        "import sys\n"
        "opened = []\n"
        "sys.addaudithook(lambda e, a: opened.append(str(a[0])) if e == 'open' else None)\n"
        "from series.stack.verified_kept import rerun\n"
        "code = rerun(sys.argv[1:])\n"
        f"seen = [p for p in opened if p.startswith({str(root.resolve() / 'patches')!r})]\n"
        "sys.stderr.write(f'\\n{code} {\" \".join(seen)}\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "-C", str(root), "apply"],
        capture_output=True,
        text=True,
        env=env,
        timeout=GitShim.BOUND,
        check=True,
    )
    said, *paths = proc.stderr.splitlines()[-1].split()
    return said == "0", paths


def test_a_patch_file_settled_is_not_read_and_its_rewrite_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry keeps each patch file's identity once it is settled (its change time
    safely in the past: series.stack.branches_kept.identities); a re-run reads again
    only the files whose identity moved. A rewrite of a patch of the same size, its
    modification time set back, moves its change time: the full run answers."""
    from series.stack import branches_kept

    root, shim, _ = _settled(tmp_path)
    root = root.resolve()
    env = dict(shim.env)
    path = verified_kept.entry_path(str(root), str(shim.cache), "apply")
    entry = verified_kept._load(path)
    assert entry is not None
    files = [file for _, file in verified_kept._named(entry["named"]) or []]

    def keep(identities: str) -> None:
        entry["identities"] = identities
        with open(path, "w", encoding="utf-8") as fh:
            text = branches_kept.seal([entry[name] for name in verified_kept.FIELDS])
            assert text is not None
            fh.write(text)

    keep(branches_kept.SEP.join("-" for _ in files))  # as kept right after a write: racy
    answered, read = _opened(root, env)
    assert answered and sorted(read) == sorted(str(root / file) for file in files)
    monkeypatch.setattr(branches_kept, "RACY_NS", 0)  # as if the files were older
    time.sleep(0.05)
    keep(branches_kept.identities(str(root), files))
    assert _opened(root, env) == (True, [])  # answered, no patch file read
    patch = root / files[0]
    before, stat = patch.read_bytes(), patch.stat()
    patch.write_bytes(before.replace(b"+", b"-", 1))  # the same size, other bytes
    os.utime(patch, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (patch.stat().st_size, patch.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    assert _opened(root, env) == (False, [str(patch)])  # read again: not the bytes kept
    patch.write_bytes(before)
    os.utime(patch, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _opened(root, env) == (True, [str(patch)])  # the bytes kept: answered again


def test_the_answer_runs_no_collection_and_the_cli_runs_with_the_collector_on(
    tmp_path: Path,
) -> None:
    """series.entry turns the garbage collector off for the answers kept before the CLI
    (they make no cycles; a collection of what the start-up made costs more than their
    work), and leaves it on for the CLI."""
    root, shim, _ = _settled(tmp_path)

    def collections(*words: str) -> str:
        probe = (
            "import gc, sys\n"
            f"sys.argv = ['series', '-C', {str(root)!r}, *{list(words)!r}]\n"
            "from series.entry import main\n"
            "starts = []\n"
            "gc.callbacks.append(lambda phase, info: starts.append(phase == 'start'))\n"
            "code = main()\n"
            "sys.stderr.write(f'\\n{sum(starts)} {gc.isenabled()} {code}\\n')\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            env=shim.env,
            timeout=GitShim.BOUND,
            check=True,
        )
        return proc.stderr.splitlines()[-1]

    assert collections("apply") == "0 False 0"  # answered before the CLI
    assert collections("list").endswith(" True 0")  # the CLI: the collector on


@pytest.mark.parametrize("case", ["answered", "changed", "interrupted"])
def test_the_git_status_runs_while_the_digest_is_read_and_never_outlives_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The re-run's ``git status`` is started before the digest is read (it runs on the
    other core meanwhile) and read after it; when the digest is another, the run waits
    for that git to end before the CLI takes over; an exception (Ctrl-C) while the
    digest is read ends it. The order of the calls is asserted, never a time."""
    from series.git import child

    root, shim, _ = _settled(tmp_path)
    for name in ("PATH", "SERIES_CACHE_DIR"):
        monkeypatch.setenv(name, shim.env[name])
    done: list[str] = []
    started: list[child.Running] = []
    real_digest = verified_kept.digest  # and child's start, finish, abandon: its names
    real_start, real_finish, real_abandon = child.start, child.finish, child.abandon

    def start(*args: Any, **kw: Any) -> child.Running:
        started.append(real_start(*args, **kw))
        done.append("start")
        return started[-1]

    def digest(*args: Any) -> str | None:
        done.append("digest")
        if case == "interrupted":
            raise KeyboardInterrupt
        return "another" if case == "changed" else real_digest(*args)

    def finish(running: child.Running) -> child.Outcome:
        done.append("finish" if not running.closed else "finish again")
        return real_finish(running)

    def abandon(running: child.Running) -> None:
        done.append("abandon" if not running.closed else "closed")
        real_abandon(running)

    for name, fake in (("start", start), ("digest", digest)):
        monkeypatch.setattr(verified_kept, name, fake)
    monkeypatch.setattr(verified_kept, "finish", finish)
    monkeypatch.setattr(verified_kept, "abandon", abandon)
    if case == "interrupted":
        with pytest.raises(KeyboardInterrupt):
            verified_kept.rerun(["-C", str(root), "apply"])
    else:
        code = verified_kept.rerun(["-C", str(root), "apply"])
        assert code == (0 if case == "answered" else None)
    expected = {
        "answered": ["start", "digest", "finish", "closed"],
        "changed": ["start", "digest", "finish", "closed"],
        "interrupted": ["start", "digest", "abandon"],
    }
    assert done == expected[case]
    assert len(started) == 1 and started[0].closed
    assert started[0].proc.returncode is not None  # waited for: reaped, not left running
    with pytest.raises(ChildProcessError):
        os.waitpid(started[0].proc.pid, os.WNOHANG)
