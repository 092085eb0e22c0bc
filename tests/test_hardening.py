"""Hostile input and faults: every case ends in a clear error or the right result.

Each test is one row of the matrix in docs/hardening.md. They run the real
CLI on real repositories; where the case is about processes, pipes or
signals, as a true subprocess.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from series.errors import Exit

TRACEBACK = "Traceback"


def applied(project: Project) -> Project:
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def canonical(project: Project) -> Project:
    """Applied, and exported once: patch files in series' own canonical form."""
    applied(project)
    code, _, err = project.run("export")
    assert code == 0, err
    return project


def edit_manifest(project: Project, old: str, new: str) -> None:
    path = project.root / "series.toml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def series_cli(
    root: Path,
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
        input=input,
        timeout=timeout,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every project file but the checkout and .series (what export may change)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in ("work", ".series") or not path.is_file():
            continue
        out[str(rel)] = path.read_bytes()
    return out


def commit_change(work: Path, name: str, text: str, message: str) -> None:
    (work / name).parent.mkdir(parents=True, exist_ok=True)
    (work / name).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", message)


# -- data loss ------------------------------------------------------------------


def test_manifest_file_outside_the_project_is_refused(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    victim = tmp_path / "victim.patch"
    victim.write_text("precious\n")
    edit_manifest(project, 'file = "patches/perf-P2.patch"', 'file = "../victim.patch"')
    for command in ("export", "apply", "list"):
        code, _, err = project.run(command)
        assert code == Exit.BAD_INPUT, err
        assert "patch[1].file" in err and "outside the project" in err
    assert victim.read_text() == "precious\n"
    # Nothing written: only the project lock, taken before the manifest is read.
    assert [p.name for p in (project.root / ".series").iterdir()] == ["lock"]


def test_manifest_absolute_file_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    absolute = project.root / "patches/perf-P1.patch"
    edit_manifest(project, 'file = "patches/perf-P1.patch"', f'file = "{absolute}"')
    code, _, err = project.run("apply")
    assert code == Exit.BAD_INPUT
    assert "patch[0].file" in err and "absolute path" in err and TRACEBACK not in err


def test_manifest_symlink_out_of_the_project_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    outside = tmp_path / "elsewhere.patch"
    patch = project.root / "patches/perf-P3.patch"
    outside.write_bytes(patch.read_bytes())
    patch.unlink()
    patch.symlink_to(outside)
    code, _, err = project.run("export")
    assert code == Exit.BAD_INPUT and "patch[2].file" in err and "outside the project" in err


def test_manifest_checkout_outside_the_project_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    edit_manifest(project, 'checkout = "work"', 'checkout = "../work-elsewhere"')
    code, _, err = project.run("apply")
    assert code == Exit.BAD_INPUT and "series.checkout" in err
    assert not (tmp_path / "work-elsewhere").exists()


@contextmanager
def mounted_tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``mnt`` for the block, or a skip where mounting is not allowed."""
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs (256 KiB), or a skip where mounting is not allowed."""
    with mounted_tmpfs(tmp_path / "tmpfs", "256k") as mnt:
        yield mnt


def _project_on(mnt: Path, tmp_path: Path) -> Project:
    built = make_project(tmp_path / "src")
    root = mnt / "project"
    subprocess.run(["cp", "-a", str(built.root), str(root)], check=True)
    return Project(root, built.upstream, built.commit)


def test_export_on_a_full_disk_writes_nothing_and_names_the_backup(
    tmpfs: Path, tmp_path: Path
) -> None:
    project = _project_on(tmpfs, tmp_path)
    work = tmp_path / "work"
    code, _, err = project.run("apply", "--dir", str(work))
    assert code == 0, err
    commit_change(work, "pkg/core.py", (work / "pkg/core.py").read_text() + "#\n", "core: more")
    big = "".join(f"LINE_{i} = {'x' * 60}\n" for i in range(5000))  # ~350 KB of patch
    commit_change(work, "pkg/big.py", big, "big: a large new module")
    before = snapshot(project.root)
    code, _, err = project.run("export", "--dir", str(work))
    assert code == Exit.FAILED, err
    assert "export wrote nothing" in err and "No space left" in err
    assert ".series/backups/export-" in err and TRACEBACK not in err
    assert snapshot(project.root) == before  # no truncated patch, no stray temp file
    assert not list((project.root / "patches").glob(".series-tmp-*"))


def _remount_ro(mnt: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)


def test_read_only_project_export_and_apply_are_clear_errors(tmpfs: Path, tmp_path: Path) -> None:
    project = _project_on(tmpfs, tmp_path)
    work = tmp_path / "work"
    code, _, err = project.run("apply", "--dir", str(work))
    assert code == 0, err
    commit_change(work, "pkg/core.py", (work / "pkg/core.py").read_text() + "#\n", "core: more")
    _remount_ro(tmpfs)
    before = snapshot(project.root)
    code, _, err = project.run("export", "--dir", str(work))
    assert code == Exit.FAILED and "Read-only file system" in err and TRACEBACK not in err
    assert "export wrote nothing" in err
    code, _, err = project.run("apply")  # the checkout would go inside the project
    assert code == Exit.FAILED, err
    assert "Read-only file system" in err and TRACEBACK not in err
    assert snapshot(project.root) == before


# -- tracebacks turned into clear errors ---------------------------------------


@pytest.mark.parametrize(
    "command",
    [("show", "P1", "--diff"), ("check-conflicts",)],
    ids=["show-diff", "check-conflicts"],
)
def test_broken_pipe_ends_quietly_like_git(tmp_path: Path, command: tuple[str, ...]) -> None:
    project = make_project(tmp_path)
    argv = " ".join([sys.executable, "-m", "series", "-C", str(project.root), *command])
    # `true` exits at once: every write of series meets a closed pipe, as with
    # `| head -1` on output longer than the pipe's buffer.
    proc = subprocess.run(
        ["bash", "-c", f"{argv} | true; echo ${{PIPESTATUS[0]}} >&2"],
        capture_output=True,
        text=True,
        check=False,
    )
    status = proc.stderr.strip().splitlines()[-1]
    assert status == str(int(Exit.BROKEN_PIPE)), proc.stderr
    assert "internal error" not in proc.stderr and TRACEBACK not in proc.stderr
    assert "Broken pipe" not in proc.stderr and "BrokenPipeError" not in proc.stderr


def test_sigint_while_importing_prints_no_traceback(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    # The test hook announces when the handler is in place and holds the
    # window (before the CLI's imports) open, so the signal lands inside it.
    env = {**os.environ, "SERIES_TEST_IMPORT_WINDOW": "2"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "series", "-C", str(project.root), "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline() == "series: test: importing\n"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert TRACEBACK not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 130 and err == "series: interrupted\n" and out == ""


def test_checkout_that_is_a_regular_file_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.work.write_text("not a directory\n")
    code, _, err = project.run("apply")
    assert code == Exit.REFUSED and "it is a file" in err and "--dir" in err
    code, _, err = project.run("export")
    assert code == Exit.FAILED and "not a series checkout" in err and TRACEBACK not in err
    assert project.work.read_text() == "not a directory\n"


@pytest.mark.parametrize(
    "payload",
    [b"{not json", b"[1, 2]", b'{"format": 2, "applied": "P1", "source": "git"}'],
    ids=["not-json", "array", "applied-string"],
)
def test_corrupt_checkout_state_is_a_clear_error(tmp_path: Path, payload: bytes) -> None:
    project = applied(make_project(tmp_path))
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=project.work,
        input=payload,
        capture_output=True,
        check=True,
    ).stdout.decode()
    git(project.work, "update-ref", "refs/series/state", blob.strip())
    for command in ("apply", "export"):
        code, _, err = project.run(command)
        assert code == Exit.FAILED, err
        assert "is damaged" in err and "hint:" in err and TRACEBACK not in err


def test_corrupt_legacy_state_json_is_a_clear_error(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    git(project.work, "update-ref", "-d", "refs/series/state")
    (project.work / ".git/series").mkdir(exist_ok=True)
    (project.work / ".git/series/state.json").write_bytes(b"\xff\xfe garbage")
    code, _, err = project.run("export")
    assert code == Exit.FAILED and "is damaged" in err and TRACEBACK not in err


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('state = "open"', 'state = "open"\npin_failures = 5', "patch[0].pin_failures"),
        ("format = 1", "format = true", "format: must be 1"),
        ('state = "open"', 'state = "open"\nstate_note = [1, 2]', "patch[0].state_note"),
        ("pr = 1000", "pr = 99999999999999999", "patch[0].pr"),
        ('state = "open"', 'state = "open"\nno_tests = 3', "patch[0].no_tests"),
        ('version = "1.0"', 'version = "1.0"\nsha256 = 5', "upstream.sdist.sha256"),
    ],
    ids=["pin_failures", "format", "state_note", "pr", "no_tests", "sha256"],
)
def test_wrong_manifest_types_are_refused(tmp_path: Path, old: str, new: str, key: str) -> None:
    project = make_project(tmp_path)
    edit_manifest(project, old, new)
    code, _, err = project.run("list")
    assert code == Exit.BAD_INPUT, err
    assert key in err and TRACEBACK not in err


def test_pr_beyond_toml_integers_is_a_manifest_error(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    edit_manifest(project, "pr = 1000", "pr = 99999999999999999999")
    code, _, err = project.run("list")
    assert code == Exit.BAD_INPUT and "patch[0].pr" in err and TRACEBACK not in err


def test_diff_path_escaping_the_tree_is_bad_input(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    patch = project.root / "patches/perf-P2.patch"
    patch.write_bytes(patch.read_bytes().replace(b"pkg/util.py", b"../escape.txt"))
    for command in ("apply", "check-conflicts"):
        code, _, err = project.run(command)
        assert code == Exit.BAD_INPUT, err
        assert "outside the repository" in err and "../escape.txt" in err
        assert "am -3" not in err
    assert not (tmp_path / "escape.txt").exists()


def test_deleted_patch_file_hint_works(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    patch = project.root / "patches/perf-P2.patch"
    tip = git(project.work, "rev-parse", "series")
    patch.unlink()
    code, _, err = project.run("apply")
    assert code == Exit.BAD_INPUT and "does not exist" in err and "series export" in err
    code, _, err = project.run("export")  # the hint: the checkout still has it
    assert code == 0, err
    assert "wrote patches/perf-P2.patch" in err
    code, _, err = project.run("apply")
    assert code == 0, err
    assert git(project.work, "rev-parse", "series") == tip
