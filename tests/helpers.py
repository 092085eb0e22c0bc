"""Builders for real repositories and projects used by the tests.

Identities and dates are pinned (IDENT_ENV), so commit ids in a test are the
same on every machine and every run.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from contextlib import redirect_stderr
from dataclasses import dataclass
from pathlib import Path

from series.cli import main

IDENT_ENV = {
    "GIT_AUTHOR_NAME": "Series Test",
    "GIT_AUTHOR_EMAIL": "test@series.invalid",
    "GIT_COMMITTER_NAME": "Series Test",
    "GIT_COMMITTER_EMAIL": "test@series.invalid",
    "GIT_AUTHOR_DATE": "2026-01-02T03:04:05+00:00",
    "GIT_COMMITTER_DATE": "2026-01-02T03:04:05+00:00",
}

UPSTREAM_FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(12)),
    "pkg/util.py": "".join(f"VALUE_{i} = {i}\n" for i in range(30)),
    "README.md": "tiny upstream\n",
}


def git(cwd: Path, *args: str, date: str | None = None) -> str:
    env = None
    if date is not None:
        import os

        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def files_commit(
    path: Path,
    files: dict[str, str],
    *,
    links: dict[str, str] | None = None,
    gitlink: str | None = None,
    message: str = "files",
) -> str:
    """A new repository at ``path`` with one commit: ``files``, the symlinks of ``links``
    (name: target) and a gitlink at ``gitlink`` (a commit it does not hold); its id."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    write(path, files)
    for name, target in (links or {}).items():
        (path / name).symlink_to(target)
    git(path, "add", "-A")
    if gitlink is not None:
        git(path, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{gitlink}")
    git(path, "commit", "-qm", message)
    return git(path, "rev-parse", "HEAD")


def make_upstream(path: Path, files: dict[str, str] | None = None, tag: str = "v1.0") -> str:
    """A one-commit upstream repository, tagged; returns the commit id."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    write(path, files or UPSTREAM_FILES)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "upstream: initial")
    git(path, "tag", tag)
    return git(path, "rev-parse", "HEAD")


def replace_line(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


@dataclass
class PatchSpec:
    id: str
    subject: str
    edits: dict[str, tuple[str, str]]  # file -> (old text, new text)
    new_files: dict[str, str] | None = None
    subset: tuple[str, ...] = ()
    body: str = "Why: test."  # the message between the subject and the Series-Id trailer


def make_patches(upstream: Path, work: Path, specs: list[PatchSpec], out: Path) -> list[str]:
    """Commit each spec on a clone of ``upstream``, format-patch it into ``out``.

    Returns the commit ids. A spec with no edits makes an empty patch.
    """
    git(upstream.parent, "clone", "-q", str(upstream), str(work))
    out.mkdir(parents=True, exist_ok=True)
    commits = []
    for i, spec in enumerate(specs):
        for name, (old, new) in spec.edits.items():
            replace_line(work / name, old, new)
        write(work, spec.new_files or {})
        git(work, "add", "-A")
        message = f"{spec.subject}\n\n{spec.body}\n\nSeries-Id: {spec.id}"
        date = f"2026-02-{i + 1:02d}T10:00:00+00:00"
        git(work, "commit", "-q", "--allow-empty", "-m", message, date=date)
        commits.append(git(work, "rev-parse", "HEAD"))
        raw = git(work, "format-patch", "-1", "--always", "--stdout", "HEAD") + "\n"
        (out / f"perf-{spec.id}.patch").write_text(raw)
    return commits


def manifest_text(
    upstream_url: str, commit: str, specs: list[PatchSpec], source: str = "git"
) -> str:
    lines = [
        "# test manifest",
        "format = 1",
        "",
        "[upstream]",
        'name = "tiny"',
        f'repository = "{upstream_url}"',
        'ref = "v1.0"',
        f'commit = "{commit}"',
        f'source = "{source}"',
        "",
        "[upstream.sdist]",
        'package = "tiny"',
        'version = "1.0"',
        "",
        "[series]",
        'branch = "series"',
        'checkout = "work"',
    ]
    for i, spec in enumerate(specs):
        subset = ", ".join(f'"{s}"' for s in spec.subset)
        lines += [
            "",
            "[[patch]]",
            f'id = "{spec.id}"',
            f'title = "{spec.subject}"',
            f'file = "patches/perf-{spec.id}.patch"',
            f"pr = {1000 + i}",
            f'branch = "perf-{spec.id}"',
            'state = "open"',
            f"subset = [{subset}]",
        ]
    return "\n".join(lines) + "\n"


DEFAULT_SPECS = [
    PatchSpec("P1", "core: f1 returns 101", {"pkg/core.py": ("return 1\n", "return 101\n")}),
    PatchSpec(
        "P2",
        "util: VALUE_5 is 55",
        {"pkg/util.py": ("VALUE_5 = 5\n", "VALUE_5 = 55\n")},
    ),
    PatchSpec("P3", "core: f9 returns 909", {"pkg/core.py": ("return 9\n", "return 909\n")}),
]


@dataclass
class Project:
    root: Path
    upstream: Path
    commit: str

    def run(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stderr(err):
            code = main(["-C", str(self.root), *args], out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    @property
    def work(self) -> Path:
        return self.root / "work"

    def patch_bytes(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((self.root / "patches").glob("*.patch"))}


def make_project(
    tmp: Path, specs: list[PatchSpec] | None = None, files: dict[str, str] | None = None
) -> Project:
    """An upstream of ``files`` (default: the small package) and ``specs`` as the series."""
    specs = DEFAULT_SPECS if specs is None else specs
    upstream = tmp / "upstream"
    commit = make_upstream(upstream, files)
    root = tmp / "project"
    make_patches(upstream, tmp / "author", specs, root / "patches")
    (root / "series.toml").write_text(manifest_text(str(upstream), commit, specs))
    return Project(root, upstream, commit)


def series_process(
    root: Path,
    *args: str,
    limit: int | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> tuple[int, str, str]:
    """``series -C root ARGS`` as its own process (``python -m series``, this environment
    or ``env``): its exit code, stdout and stderr. ``limit``: the largest file (bytes) it
    may write (``ulimit -f``), as on a disk that fills."""
    preexec = None
    if limit is not None:
        import resource

        def preexec() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=os.environ if env is None else env,
        preexec_fn=preexec,
    )
    return proc.returncode, proc.stdout, proc.stderr


def run_fresh(probe: str) -> tuple[int, str, str]:
    """``probe`` (Python source) run by a fresh interpreter, bounded: its exit code, stdout
    and stderr. A probe that ends with ``print(' '.join(sorted(sys.modules)))`` has
    :func:`modules_in` read what it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


def series_probe(root: Path, *args: str, before: str = "") -> str:
    """A probe for :func:`run_fresh`: ``before``, then ``series -C root ARGS`` through
    series.entry, then the modules imported printed, exiting with series' code."""
    return (
        "import sys\n"
        f"{before}"
        f"sys.argv = ['series', '-C', {str(root)!r}, *{list(args)!r}]\n"
        "from series.entry import main\n"
        "code = main()\n"
        "print(' '.join(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )


def modules_in(stdout: str) -> set[str]:
    """The modules a probe printed last (:func:`run_fresh`), one line of names."""
    lines = stdout.splitlines()
    return set(lines[-1].split()) if lines else set()


def said_with_git(
    log: Path, env: dict[str, str], bound: float, root: Path, *args: str
) -> tuple[int, str, str, list[str]]:
    """Exit code, stdout, stderr of ``series -C root ARGS`` run with ``env``, and the argv
    of each git process it started as a ``git`` shim on its PATH logs them to ``log``."""
    log.unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=bound,
        check=False,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, proc.stdout, proc.stderr, calls


class GitShim:
    """``series`` run as its own process with a cache of its own, the argv of every git
    process it starts logged (a ``git`` shim first on PATH)."""

    BOUND = 120  # seconds a run may take

    def __init__(self, tmp: Path, prelude: str = "") -> None:
        """``prelude``: shell lines the shim runs after it logs the argv and before it runs
        the real git (``$*`` is the argv; ``exit`` answers in git's place)."""
        self.log = tmp / "git-argv.log"
        self.cache = tmp / "cache"
        shim = tmp / "shim"
        shim.mkdir()
        real = shutil.which("git")
        (shim / "git").write_text(
            f'#!/bin/sh\necho "$*" >> "{self.log}"\n{prelude}exec "{real}" "$@"\n'
        )
        (shim / "git").chmod(0o755)
        self.env = {
            **os.environ,
            "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
            "SERIES_CACHE_DIR": str(self.cache),
        }

    def said(self, root: Path, *args: str) -> tuple[int, str, str, list[str]]:
        """Exit code, stdout, stderr of ``series -C root ARGS``, and the argv of each git
        process it started for its work: the first, series' check of git's version, which
        a wrapper script such as this shim costs every run (series.git.version keeps a
        verdict only for git itself), is left out."""
        code, out, err, calls = said_with_git(self.log, self.env, self.BOUND, root, *args)
        return code, out, err, calls[1:] if calls[:1] == ["version"] else calls

    def run(self, root: Path, *args: str, code: int = 0) -> tuple[str, list[str]]:
        """stdout of ``series -C root ARGS`` (which must exit ``code``), and the argv of each
        git process it started."""
        exit_code, out, err, calls = self.said(root, *args)
        assert exit_code == code, err
        return out, calls

    def calls(self, root: Path, *args: str, code: int = 0) -> list[str]:
        """The argv of each git process ``series -C root ARGS`` started."""
        return self.run(root, *args, code=code)[1]
