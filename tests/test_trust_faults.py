"""Faults outside series end as clear errors, never as "internal error" (issue 18).

A stale lock file, a read-only or full disk, git missing from PATH, a
damaged repository or cached sdist, an ASCII locale, an empty patch file,
a manifest that nests too deeply: each ends with exit 1 (exit 2 for bad
input) naming the file or resource and the way on, no traceback, and
nothing lost (patches/, series.toml and the checkout's commits as they
were). Each test is a row of docs/hardening.md ("Faults outside series").
The read-only and full-disk cases mount a tmpfs (test_hardening's fixture)
and skip where that is not allowed.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import UPSTREAM_FILES, PatchSpec, Project, git, make_project, replace_line
from series.errors import Exit
from test_hardening import _project_on, _remount_ro, commit_change, snapshot, tmpfs

__all__ = ["tmpfs"]  # the fixture, imported to be used here

INTERNAL = ("internal error", "Traceback", "a bug in series")


def clean(err: str) -> None:
    for word in INTERNAL:
        assert word not in err, err


def applied(project: Project, *args: str) -> Project:
    code, _, err = project.run("apply", *args)
    assert code == 0, err
    return project


def tip(work: Path, ref: str = "series") -> str:
    return git(work, "rev-parse", ref)


def edit_patch(project: Project) -> None:
    """Change P3's patch file, so the next apply rebuilds the stack and moves the files."""
    replace_line(project.root / "patches/perf-P3.patch", "+    return 909", "+    return 9090")


def tag_upstream_v11(project: Project) -> None:
    (project.upstream / "pkg/new.py").write_text("NEW = 1\n")
    git(project.upstream, "add", "-A")
    git(project.upstream, "commit", "-qm", "upstream: new module")
    git(project.upstream, "tag", "v1.1")


def _commit_in_work(project: Project) -> None:
    work = project.work
    commit_change(work, "pkg/core.py", (work / "pkg/core.py").read_text() + "#\n", "core: more")


# -- 1. a stale index.lock in the checkout ---------------------------------------


@pytest.mark.parametrize("command", ["apply", "rebase"])
def test_stale_index_lock_names_the_lock_file_and_how_to_remove_it(
    tmp_path: Path, command: str
) -> None:
    project = applied(make_project(tmp_path))
    if command == "apply":
        edit_patch(project)
        argv: tuple[str, ...] = ("apply",)
    else:
        tag_upstream_v11(project)
        argv = ("rebase", "--onto", "v1.1")
    before = snapshot(project.root)
    old_tip = tip(project.work)
    lock = project.work / ".git" / "index.lock"
    lock.write_text("")  # left by a crashed git, or held by an editor's `git commit`
    for reader in ("status", "list"):  # need no index lock: they work
        assert project.run(reader)[0] == 0
    code, _, err = project.run(*argv)
    assert code == Exit.FAILED, err
    clean(err)
    assert str(lock) in err and "git process" in err and f"rm '{lock}'" in err
    assert git(project.work, "cat-file", "-t", old_tip) == "commit"
    # Refused before anything is written (series.checkout.finish_cut_move).
    assert snapshot(project.root) == before and tip(project.work) == old_tip
    # The way on works: remove the lock, run the command again.
    lock.unlink()
    code, _, err = project.run(*argv)
    assert code == 0, err
    assert git(project.work, "status", "--porcelain") == ""
    expected = "return 9090" if command == "apply" else "NEW = 1"
    where = "pkg/core.py" if command == "apply" else "pkg/new.py"
    assert expected in (project.work / where).read_text()


@pytest.mark.parametrize("command", ["apply", "export"])
def test_stale_ref_lock_is_named_not_taken_for_another_writer(tmp_path: Path, command: str) -> None:
    project = applied(make_project(tmp_path))
    if command == "apply":
        edit_patch(project)
    else:
        _commit_in_work(project)
    before = snapshot(project.root)
    old_tip = tip(project.work)
    lock = project.work / ".git/refs/heads/series.lock"
    lock.write_text("")
    code, _, err = project.run(command)
    assert code == Exit.FAILED, err
    clean(err)
    assert f"git cannot lock {lock}" in err and f"rm '{lock}'" in err
    assert "moved while series was working" not in err  # nobody moved it
    assert snapshot(project.root) == before and tip(project.work) == old_tip
    lock.unlink()
    assert project.run(command)[0] == 0


# -- 2. a read-only project ------------------------------------------------------


SETUPS: dict[str, tuple[Callable[[Project], None], tuple[str, ...]]] = {
    "apply": (edit_patch, ("apply",)),
    "apply-force": (edit_patch, ("apply", "--force")),
    "export": (_commit_in_work, ("export",)),
    "rebase": (tag_upstream_v11, ("rebase", "--onto", "v1.1")),
    "branches": (lambda project: None, ("branches",)),
}


@pytest.mark.parametrize("case", sorted(SETUPS))
def test_read_only_project_every_writing_command_is_a_clear_error(
    tmpfs: Path, tmp_path: Path, case: str
) -> None:
    project = applied(_project_on(tmpfs, tmp_path))
    setup, argv = SETUPS[case]
    setup(project)
    before = snapshot(project.root)
    old_tip = tip(project.work)
    _remount_ro(tmpfs)
    code, _, err = project.run(*argv)
    assert code == Exit.FAILED, err
    clean(err)
    assert "read-only file system" in err.lower() and str(tmpfs) in err
    assert snapshot(project.root) == before
    assert tip(project.work) == old_tip
    for reader in ("status", "list", "check-conflicts"):  # reading still works
        code, _, err = project.run(reader)
        assert code == 0, err


# -- 3. a full disk ------------------------------------------------------------------


def fill(mnt: Path) -> None:
    """Fill the file system at ``mnt`` to the last byte."""
    chunk = b"\0" * 4096
    with (mnt / "filler").open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(chunk)
        except OSError:
            pass
    for size in (512, 64, 1):  # the last partial blocks
        try:
            with (mnt / f"filler-{size}").open("wb", buffering=0) as fh:
                while True:
                    fh.write(b"\0" * size)
        except OSError:
            pass


def test_full_disk_under_a_fresh_cache_names_the_cache(
    tmpfs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    cache = tmpfs / "cache"
    monkeypatch.setenv("SERIES_CACHE_DIR", str(cache))
    fill(tmpfs)
    before = snapshot(project.root)
    code, _, err = project.run("apply")
    assert code == Exit.FAILED, err
    clean(err)
    assert "no space left" in err.lower() and str(cache) in err
    assert snapshot(project.root) == before and not project.work.exists()


def test_full_disk_under_the_cache_while_building_the_stack(
    tmpfs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmpfs / "cache"))
    project = applied(make_project(tmp_path))
    old_tip = tip(project.work)
    edit_patch(project)  # a new stack: new objects in the cache
    fill(tmpfs)
    before = snapshot(project.root)
    code, _, err = project.run("apply")
    assert code == Exit.FAILED, err
    clean(err)
    assert "no space left" in err.lower() and str(tmpfs / "cache") in err
    assert snapshot(project.root) == before and tip(project.work) == old_tip


def test_full_disk_under_the_cache_while_importing_an_sdist(
    tmpfs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmpfs / "cache"))
    project = applied(make_project(tmp_path))  # the cache repository exists
    archive = sdist(tmp_path / "tiny-1.0.tar.gz")
    fill(tmpfs)
    before = snapshot(project.root)
    argv = ("apply", "--source", "sdist", "--upstream", str(archive), "--dir", "other")
    code, _, err = project.run(*argv)
    assert code == Exit.FAILED, err
    clean(err)
    assert "no space left" in err.lower() and str(tmpfs / "cache") in err
    assert snapshot(project.root) == before and not (project.root / "other").exists()


def test_full_disk_under_the_checkout(tmpfs: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path)
    applied(project, "--dir", str(tmp_path / "first"))  # the cache is warm, on a roomy disk
    fill(tmpfs)
    before = snapshot(project.root)
    work = tmpfs / "work"
    code, _, err = project.run("apply", "--dir", str(work))
    assert code == Exit.FAILED, err
    clean(err)
    assert "no space left" in err.lower() and str(tmpfs) in err
    assert snapshot(project.root) == before


# -- 4. git missing from PATH ----------------------------------------------------


def _refused_without_git(tmp_path: Path, root: Path, command: str) -> None:
    """``series COMMAND`` with no git on PATH fails plainly, saying so."""
    empty = tmp_path / "no-git"
    empty.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), command],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(empty)},
        check=False,
    )
    assert proc.returncode == Exit.FAILED, proc.stderr
    clean(proc.stderr)
    assert "git is not installed or not on PATH" in proc.stderr


@pytest.mark.parametrize("command", ["list", "apply", "status"])
def test_git_missing_from_path_is_said_plainly(tmp_path: Path, command: str) -> None:
    project = applied(make_project(tmp_path))  # status then has a checkout to ask git about
    before = snapshot(project.root)
    _refused_without_git(tmp_path, project.root, command)
    assert snapshot(project.root) == before


@pytest.mark.parametrize("command", ["status", "apply", "export"])
def test_git_missing_on_a_rerun_answered_from_what_was_kept(tmp_path: Path, command: str) -> None:
    """A re-run answered from its record starts its one `git status` without GitPython:
    git missing is said the same way there."""
    project = applied(make_project(tmp_path))
    for _ in range(2):  # export: the first writes patches/ in its form, the second is kept
        code, _, err = project.run(command)
        assert code == 0, err
    before = snapshot(project.root)
    _refused_without_git(tmp_path, project.root, command)
    assert snapshot(project.root) == before


# -- 5. a damaged object in the checkout or in the cache -------------------------


def truncate_object(repo: Path, oid: str) -> None:
    path = repo / "objects" / oid[:2] / oid[2:]
    assert path.is_file(), f"{oid} is not loose in {repo}"
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(data[: len(data) // 2])


def test_damaged_object_in_the_checkout_names_it_and_fsck(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    before = snapshot(project.root)
    old_tip = tip(project.work)
    truncate_object(project.work / ".git", git(project.work, "rev-parse", "series:pkg/core.py"))
    code, _, err = project.run("export")
    assert code == Exit.FAILED, err
    clean(err)
    assert f"the git repository {project.work} is damaged" in err
    assert "corrupt" in err and f"git -C '{project.work}' fsck" in err and "--dir" in err
    assert snapshot(project.root) == before and tip(project.work) == old_tip


def test_damaged_object_in_the_cache_says_to_delete_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("SERIES_CACHE_DIR", str(cache))
    project = applied(make_project(tmp_path))
    before = snapshot(project.root)
    repo = cache / "upstream.git"
    truncate_object(repo, git(project.upstream, "rev-parse", "HEAD:pkg/util.py"))
    other = tmp_path / "other"
    code, _, err = project.run("apply", "--dir", str(other))
    assert code == Exit.FAILED, err
    clean(err)
    assert f"the git repository {repo} is damaged" in err and f"delete {repo}" in err, err
    assert snapshot(project.root) == before
    # The way on works: without the cache, apply makes it again.
    subprocess.run(["rm", "-rf", str(repo)], check=True)
    code, _, err = project.run("apply", "--dir", str(other))
    assert code == 0, err
    assert tip(other) == tip(project.work)


# -- 6. a damaged cached sdist ---------------------------------------------------


def sdist(path: Path) -> Path:
    """tiny-1.0.tar.gz: the upstream files under one top-level directory."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in sorted(UPSTREAM_FILES.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"tiny-1.0/{name}")
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return path


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: len(data) // 2],
    "garbage": lambda data: b"not a tar.gz at all\n" * 50,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_cached_sdist_names_the_file_to_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("SERIES_CACHE_DIR", str(cache))
    project = make_project(tmp_path)
    good = sdist(tmp_path / "tiny-1.0.tar.gz").read_bytes()
    cached = cache / "sdist" / "tiny-1.0.tar.gz"  # where a download lands
    cached.parent.mkdir(parents=True)
    cached.write_bytes(DAMAGE[damage](good))
    before = snapshot(project.root)
    code, _, err = project.run("apply", "--source", "sdist")
    assert code == Exit.FAILED, err
    clean(err)
    assert f"delete {cached.resolve()}" in err and "not a readable sdist" in err
    assert snapshot(project.root) == before and not project.work.exists()
    # The way on works (here the good file stands in for the new download).
    cached.write_bytes(good)
    code, _, err = project.run("apply", "--source", "sdist")
    assert code == 0, err


def test_damaged_sdist_named_on_the_command_line_is_bad_input(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    archive = tmp_path / "tiny-1.0.tar.gz"
    archive.write_bytes(sdist(tmp_path / "good.tar.gz").read_bytes()[:100])
    code, _, err = project.run("apply", "--source", "sdist", "--upstream", str(archive))
    assert code == Exit.BAD_INPUT, err
    clean(err)
    assert str(archive) in err and "--upstream" in err


# -- 7. an ASCII locale and non-ASCII subjects -----------------------------------

SUBJECT = "core: f1 returns 101 \N{EM DASH} caf\N{LATIN SMALL LETTER E WITH ACUTE}"


@pytest.mark.parametrize("locale", ["C", "POSIX"])
def test_ascii_locale_prints_non_ascii_subjects_escaped(tmp_path: Path, locale: str) -> None:
    specs = [PatchSpec("P1", SUBJECT, {"pkg/core.py": ("return 1\n", "return 101\n")})]
    project = make_project(tmp_path, specs)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LANGUAGE")}
    # PYTHONUTF8=0: Python keeps the locale's ASCII, as under a non-UTF-8 locale
    # (otherwise it switches itself to UTF-8 under C and POSIX).
    env.update(LC_ALL=locale, LANG=locale, PYTHONUTF8="0")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "series", "-C", str(project.root), *args],
            capture_output=True,
            env=env,
            check=False,
        )
        out = proc.stdout.decode("ascii")  # an ASCII stdout got ASCII
        err = proc.stderr.decode("ascii")
        assert proc.returncode == 0, err
        clean(err)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    # The same series under a UTF-8 locale, in process: the ids and bytes to expect.
    applied(project, "--dir", str(tmp_path / "utf8"))
    assert project.run("export", "--dir", str(tmp_path / "utf8"))[0] == 0
    before, want = project.patch_bytes(), tip(tmp_path / "utf8")
    assert "caf\\xe9" in run("apply").stderr  # the applied patches, under the summary
    for command in (("list",), ("show", "P1"), ("export",), ("status",)):
        out = run(*command).stdout
        if command[0] in ("list", "show"):
            assert "\\u2014 caf\\xe9" in out, out
    # Nothing was mangled: the same commit, its UTF-8 subject, the patch's bytes.
    assert tip(project.work) == want
    assert git(project.work, "log", "-1", "--format=%s", "series") == SUBJECT
    assert project.patch_bytes() == before


# -- 8. an empty patch file ------------------------------------------------------


@pytest.mark.parametrize("command", [("list",), ("show", "P2"), ("apply",), ("lint",)])
def test_empty_patch_file_names_the_file_and_the_patch(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    project = make_project(tmp_path)
    (project.root / "patches/perf-P2.patch").write_bytes(b"")
    before = snapshot(project.root)
    code, _, err = project.run(*command)
    assert code == Exit.BAD_INPUT, err
    clean(err)
    assert "patch[1].file" in err and "patches/perf-P2.patch" in err and "P2" in err
    assert "empty" in err and "hint:" in err
    assert snapshot(project.root) == before


@pytest.mark.parametrize("command", [("show", "P2"), ("apply",)])
def test_patch_file_of_blank_lines_is_bad_input_naming_it(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    project = make_project(tmp_path)
    patch = project.root / "patches/perf-P2.patch"
    patch.write_bytes(b"\n\n")  # not empty, but nothing git mailinfo can split
    before = snapshot(project.root)
    code, _, err = project.run(*command)
    assert code == Exit.BAD_INPUT, err
    clean(err)
    assert f"{patch} is not a format-patch file" in err and "series export" in err
    assert snapshot(project.root) == before


def test_empty_patch_file_export_writes_it_again(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    code, _, err = project.run("export")
    assert code == 0, err
    want = (project.root / "patches/perf-P2.patch").read_bytes()
    (project.root / "patches/perf-P2.patch").write_bytes(b"")
    code, _, err = project.run("export")  # the hint's way on
    assert code == 0, err
    assert (project.root / "patches/perf-P2.patch").read_bytes() == want


# -- 9. a manifest that nests too deeply for the parser ---------------------------


@pytest.mark.parametrize("nest", ["[" * 100_000, "{a = " * 100_000], ids=["arrays", "tables"])
def test_deeply_nested_manifest_is_a_manifest_error(tmp_path: Path, nest: str) -> None:
    project = make_project(tmp_path)
    manifest = project.root / "series.toml"
    manifest.write_text(f"a = {nest}\n")
    before = snapshot(project.root)
    for command in ("list", "apply"):
        code, _, err = project.run(command)
        assert code == Exit.BAD_INPUT, err
        clean(err)
        assert f"{manifest}:" in err and "nested too deeply" in err
    assert snapshot(project.root) == before
