"""A dry run of ``series branches`` said again from what the last one kept.

A dry run that nothing it reads changed since the last one writes again what
that one wrote, starting no git process and importing neither the CLI nor
the git layer. Each input of the answer is changed in turn: the run after
it must say what the full run says with nothing kept, and (for most) not
what it said before (issue 23; tests/test_trust_cache.py is the style).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import GitShim, Project, git, make_project
from series.builder.memo import MEMO
from series.cli.parse import parser
from series.stack import branches_kept
from series.upstream.refs import git_pin

DRY = ("branches", "--dry-run")


class Runs(GitShim):
    def full(self, root: Path, *args: str) -> tuple[int, str, str]:
        """What the full run says: with nothing kept (it keeps its answer again)."""
        shutil.rmtree(self.cache / branches_kept.DIR, ignore_errors=True)
        return self.said(root, *args)[:3]


def _ready(tmp_path: Path) -> tuple[Project, Runs]:
    project = make_project(tmp_path)
    runs = Runs(tmp_path)
    assert runs.said(project.root, "apply")[0] == 0
    return project, runs


@pytest.mark.parametrize("extra", [(), ("--json",), ("--prefix", "me/", "--alone")])
def test_a_dry_run_nothing_changed_since_is_said_again_without_git(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    project, runs = _ready(tmp_path)
    runs.said(project.root, *DRY, *extra)  # --alone builds stacks: kept by the next run
    shutil.rmtree(runs.cache / branches_kept.DIR, ignore_errors=True)
    first = runs.said(project.root, *DRY, *extra)
    assert first[0] == 0 and first[3], first  # the full run: it asks git
    again = runs.said(project.root, *DRY, *extra)
    assert again[:3] == first[:3]
    assert again[3] == []  # no git process
    probe = (
        "import sys\n"
        f"sys.argv = ['series', '-C', {str(project.root)!r}, *{[*DRY, *extra]!r}]\n"
        "from series.entry import main\n"
        "code = main()\n"
        "print(' '.join(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=runs.env, check=True
    )
    modules = set(proc.stdout.split("\n")[-2].split())
    assert "series.stack.branches_kept" in modules
    assert not {"series.cli", "series.git.run", "series.git.repo", "series.manifest"} & modules
    assert not {"argparse", "json", "git", "subprocess"} & modules
    # Not loaded by Python's start-up of the installed script (tools/bin/series, no runpy).
    assert not {"contextlib", "collections", "functools"} & modules


def _branch(p: Project, c: Path) -> None:
    git(p.work, "branch", "perf-P2", "HEAD~2")  # a branch of the user's, named as one of series'


def _toml(p: Project, c: Path) -> None:
    toml = p.root / "series.toml"
    toml.write_text(toml.read_text().replace('branch = "perf-P2"', 'branch = "other-P2"'))


def _patch(p: Project, c: Path) -> None:
    patch = p.root / "patches" / "perf-P3.patch"
    patch.write_text(patch.read_text().replace("+    return 909", "+    return 919"))


def _made(p: Project, c: Path) -> None:
    # the branches made: the record (refs/series/branches) says series made them
    subprocess.run(
        [sys.executable, "-m", "series", "-C", str(p.root), "branches"],
        env={**_env(c)},
        check=True,
        capture_output=True,
    )


def _head(p: Project, c: Path) -> None:
    _made(p, c)
    git(p.work, "switch", "-q", "perf-P1")
    (p.root / "patches" / "perf-P1.patch").write_text(
        (p.root / "patches" / "perf-P1.patch")
        .read_text()
        .replace("+    return 101", "+    return 111")
    )


def _pin(p: Project, c: Path) -> None:
    git(c / "upstream.git", "update-ref", "-d", git_pin(p.commit))  # the cache lost the pin


def _memo(p: Project, c: Path) -> None:
    repo = c / "upstream.git"
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", MEMO).splitlines()
    name, _ = refs[0].split()
    git(repo, "update-ref", name, p.commit)  # a memo ref moved: the full run takes it


def _objects(p: Project, c: Path) -> None:
    # the cache's packs and loose objects gone (a clean-up of the user's), and the upstream
    # with them: the pin's objects cannot be had again (the refs are all still there)
    objects = c / "upstream.git" / "objects"
    gone = p.root.parent / "objects-gone"
    gone.mkdir()
    for found in objects.glob("*/*"):
        if found.parent.name != "info":
            found.rename(gone / found.name)
    p.upstream.rename(p.root.parent / "upstream-gone")


def _temp(p: Project, c: Path) -> None:
    (p.root / "patches" / ".series-tmp-999999-perf-P1.patch.x").write_text("killed mid-write")


def _env(cache: Path) -> dict[str, str]:
    import os

    return {**os.environ, "SERIES_CACHE_DIR": str(cache)}


CHANGES: dict[str, Callable[[Project, Path], None]] = {
    "a local branch": _branch,
    "series.toml": _toml,
    "a patch file": _patch,
    "the record of the branches made": _made,
    "the branch checked out, a patch moved": _head,
    "the pin in the cache": _pin,
    "a memo ref in the cache": _memo,
    "a temporary file to clear": _temp,
    "the cache's objects": _objects,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_what_the_answer_depends_on_changed_the_full_run_answers(
    tmp_path: Path, change: str
) -> None:
    project, runs = _ready(tmp_path)
    before = runs.said(project.root, *DRY)[:3]
    assert runs.said(project.root, *DRY)[3] == []  # kept
    CHANGES[change](project, runs.cache)
    *now, calls = runs.said(project.root, *DRY)
    leftover = list((project.root / "patches").glob(".series-tmp-*"))
    assert calls, change  # the full run, not the answer kept
    if change == "the pin in the cache":  # fetched again: the next run finds it cached
        assert "[git: fetched from" in str(now[2])
    else:
        assert tuple(now) == runs.full(project.root, *DRY), change
    if change == "a temporary file to clear":
        assert not leftover  # the full run cleared it
    if change == "the cache's objects":
        assert now[0] == 1, now  # the pin cannot be had: no ok
    if change not in ("a memo ref in the cache", "a temporary file to clear"):
        assert tuple(now) != before, change  # the change matters to the answer


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
@pytest.mark.parametrize("given", ["work", "work/.git"])
def test_a_checkout_given_to_another_user_takes_the_full_run(tmp_path: Path, given: str) -> None:
    """git refuses a repository whose work tree's top directory, or git directory, is
    another user's ("dubious ownership"), unless ``safe.directory`` in the user's global
    configuration names it: the owners and that file are in the digest, and the full run
    answers each change of them."""
    project, runs = _ready(tmp_path)
    before = runs.said(project.root, *DRY)[:3]
    assert before[0] == 0 and runs.said(project.root, *DRY)[3] == []  # kept
    config = Path(runs.env["GIT_CONFIG_GLOBAL"])
    mine = config.read_text()
    path = project.root / given
    os.chown(path, 65534, -1)
    try:
        *now, calls = runs.said(project.root, *DRY)
        assert calls  # the full run, not the answer kept
        assert tuple(now) == runs.full(project.root, *DRY)
        assert now[0] == 4 and "dubious ownership" in str(now[2]), now
        config.write_text(f"{mine}[safe]\n\tdirectory = *\n")  # git takes it again
        runs.said(project.root, *DRY)
        again = runs.said(project.root, *DRY)
        assert again[:3] == before and again[3] == []  # kept
        config.write_text(mine)
        *now, calls = runs.said(project.root, *DRY)
        assert calls and now[0] == 4, now
    finally:
        os.chown(path, os.getuid(), -1)


def test_the_options_parsed_without_argparse_are_argparses() -> None:
    for words in (
        ["branches", "--dry-run"],
        ["-C", "x", "branches", "--json", "--dry-run"],
        ["branches", "--dry-run", "--prefix", "me/", "--alone", "--prune", "--force"],
        ["branches", "--prefix", "", "--dry-run"],
    ):
        parsed = branches_kept.words(words)
        assert parsed is not None, words
        root, opts = parsed
        args = parser().parse_args(words)
        assert root == (str(args.root) if args.root else None)
        assert opts == {
            "dry_run": args.dry_run,
            "json": args.json,
            "prefix": args.prefix,
            "alone": args.alone,
            "prune": args.prune,
            "force": args.force,
        }
    for words in (
        ["branches"],
        ["branches", "--dry-run", "--push", "origin"],
        ["branches", "--dry-run", "--dir", "w"],
        ["branches", "--dry-run", "--prefix=me/"],
        ["branches", "--dry", "--json"],
        ["-v", "branches", "--dry-run"],
        ["branches", "--dry-run", "--dry-run"],
        ["branches", "--dry-run", "--prefix", "-x"],
    ):
        assert branches_kept.words(words) is None, words


def test_the_constants_copied_are_the_modules_own() -> None:
    from series import files, project
    from series.checkout import LEGACY_STATE
    from series.errors import Exit

    assert branches_kept.BROKEN_PIPE == Exit.BROKEN_PIPE
    assert branches_kept.TEMP_PREFIX == files.TEMP_PREFIX
    assert str(project.LOCK) == branches_kept.LOCK
    assert branches_kept.LEGACY_STATE == LEGACY_STATE
    assert branches_kept.cache_dir() == str(project.default_cache_dir().absolute())


def test_a_kept_answer_whose_reader_went_away_ends_quietly_like_git(tmp_path: Path) -> None:
    project, runs = _ready(tmp_path)
    runs.said(project.root, *DRY)
    assert runs.said(project.root, *DRY)[3] == []  # kept
    argv = " ".join([sys.executable, "-m", "series", "-C", str(project.root), *DRY])
    # `true` has exited long before series writes: every write meets a closed pipe
    proc = subprocess.run(
        ["bash", "-c", f"{{ {argv}; echo $? >&2; }} | true"],
        capture_output=True,
        text=True,
        env=runs.env,
        check=False,
    )
    assert proc.stderr.strip().splitlines()[-1] == "141", proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr


def test_no_git_on_path_is_said_as_the_full_run_says_it(tmp_path: Path) -> None:
    project, runs = _ready(tmp_path)
    runs.said(project.root, *DRY)
    assert runs.said(project.root, *DRY)[3] == []  # kept
    (tmp_path / "empty").mkdir()
    runs.env["PATH"] = str(tmp_path / "empty")  # python is started by its full path
    code, _, err, _ = runs.said(project.root, *DRY)
    assert code == 1 and "git is not installed or not on PATH" in err, err


def test_a_series_toml_saved_while_a_dry_run_parsed_the_one_before_keeps_no_answer(
    tmp_path: Path,
) -> None:
    """A save of series.toml between the run's parse and its digest (which reads the file
    again): the digest holds the new bytes, the answer was computed from the old parse;
    kept so, it would be said again for the manifest as it is now."""
    project, runs = _ready(tmp_path)
    toml = project.root / "series.toml"
    before = toml.read_text()
    saved = before.replace('branch = "perf-P2"', 'branch = "other-P2"')
    assert saved != before
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from series.stack import branches_kept\n"
        f"toml, saved = Path({str(toml)!r}), {saved!r}\n"
        "real = branches_kept.digest\n"
        "def saving(*args):\n"
        "    toml.write_text(saved)  # the user's save lands after the parse\n"
        "    return real(*args)\n"
        "branches_kept.digest = saving\n"
        "from series.cli import main\n"
        f"sys.exit(main(['-C', {str(project.root)!r}, *{list(DRY)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], env=runs.env, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert toml.read_text() == saved
    said = runs.said(project.root, *DRY)[:3]
    assert said == runs.full(project.root, *DRY)


def test_a_patch_file_is_taken_by_its_identity_only_once_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept answer reads again only the patch files whose identity moved (git's "racily
    clean" rule): an identity is kept only when the file's change time is safely in the
    past, and a rewrite of the same size under the same modification time moves the
    change time, which no ``os.utime`` sets back."""
    from _blake2 import blake2b

    root, name = str(tmp_path), "a.patch"
    patch = tmp_path / name
    patch.write_bytes(b"one\n")
    assert branches_kept.identities(root, [name]) == "-"  # just written: racy, not kept
    monkeypatch.setattr(branches_kept, "RACY_NS", 0)  # settled once its change time is past
    time.sleep(0.05)
    kept = branches_kept.identities(root, [name])
    identity, _, content = kept.partition("=")
    assert bytes.fromhex(content) == blake2b(b"one\n").digest()
    # while the identity holds, the bytes are not read: a forged digest is what is taken
    assert branches_kept.contents(root, [name], f"{identity}={'00' * 64}") == [bytes(64)]
    before = patch.stat()
    patch.write_bytes(b"two\n")  # in place: the same inode and size
    os.utime(patch, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = patch.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert branches_kept.contents(root, [name], kept) == [blake2b(b"two\n").digest()]
    assert branches_kept.contents(root, [name], "") == [blake2b(b"two\n").digest()]
    spoilt = f"{branches_kept._identity(patch.stat())}=not hex"  # an entry spoilt: read
    assert branches_kept.contents(root, [name], spoilt) == [blake2b(b"two\n").digest()]
