"""The hooks, through real `git commit` and `git push` to a local bare remote.

Each test copies this repository's .pre-commit-config.yaml and the hook
wrapper (ci/hooks/project-tool) into a small project on a tiny upstream,
installs the hooks with pre-commit (its store in the test's own home), and
commits or pushes. PATH is set per test: with this virtualenv's bin (an
active venv), or only the system directories (a shell without it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import Project, git, make_project, replace_line

VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = "/usr/bin:/bin"
PRE_COMMIT = shutil.which("pre-commit", path=str(VENV_BIN))
HOOK = "series-check-conflicts"
WRAPPER = "ci/hooks/project-tool"

pytestmark = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")


def hooked_project(tmp_path: Path, source: Path) -> tuple[Project, Path]:
    """A committed project with the pre-push hook installed, and an empty bare remote."""
    project = make_project(tmp_path)
    root = project.root
    shutil.copy2(source / ".pre-commit-config.yaml", root)
    (root / "ci/hooks").mkdir(parents=True)
    shutil.copy2(source / WRAPPER, root / WRAPPER)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the series")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "remote", "add", "target", str(remote))
    assert PRE_COMMIT is not None
    subprocess.run([PRE_COMMIT, "install"], cwd=root, check=True, capture_output=True)
    assert (root / ".git/hooks/pre-push").is_file()  # default_install_hook_types
    return project, remote


def push(root: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    argv = ["git", "push", "target", "HEAD:refs/heads/main"]
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=False)


def remote_main(remote: Path) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", "refs/heads/main"],
        cwd=remote,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None


def test_push_runs_check_conflicts_and_nothing_else(tmp_path: Path, project_copy: Path) -> None:
    project, remote = hooked_project(tmp_path, project_copy)
    proc = push(project.root, f"{VENV_BIN}:{SYSTEM_PATH}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert remote_main(remote) == git(project.root, "rev-parse", "HEAD")
    output = proc.stdout + proc.stderr
    assert "series check-conflicts" in output and "Passed" in output
    assert "ruff" not in output.replace("local:ruff==", "")  # ruff is pre-commit only


def test_push_is_refused_when_a_patch_no_longer_applies(tmp_path: Path, project_copy: Path) -> None:
    project, remote = hooked_project(tmp_path, project_copy)
    replace_line(project.root / "patches/perf-P2.patch", "-VALUE_5 = 5\n", "-VALUE_5 = 6\n")
    git(project.root, "commit", "-nqam", "a patch that does not apply")
    proc = push(project.root, f"{VENV_BIN}:{SYSTEM_PATH}")
    assert proc.returncode != 0
    assert remote_main(remote) is None
    assert "P2" in proc.stdout + proc.stderr


def test_push_without_series_says_how_to_install_it(tmp_path: Path, project_copy: Path) -> None:
    assert shutil.which("series", path=SYSTEM_PATH) is None, "a series is installed system-wide"
    project, remote = hooked_project(tmp_path, project_copy)
    proc = push(project.root, SYSTEM_PATH)
    assert proc.returncode != 0
    assert remote_main(remote) is None
    output = proc.stdout + proc.stderr
    assert "the series command is not installed" in output
    assert "python3 -m venv .venv && .venv/bin/pip install -e ." in output
    assert "Executable `series` not found" not in output


def test_push_finds_series_in_the_project_venv(tmp_path: Path, project_copy: Path) -> None:
    project, remote = hooked_project(tmp_path, project_copy)
    venv_bin = project.root / ".venv/bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "series").symlink_to(VENV_BIN / "series")
    (project.root / ".gitignore").write_text(".venv/\n")
    git(project.root, "add", ".gitignore")
    git(project.root, "commit", "-nqm", "ignore the venv")
    proc = push(project.root, SYSTEM_PATH)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert remote_main(remote) == git(project.root, "rev-parse", "HEAD")


def load(root: Path, name: str) -> Any:
    return yaml.safe_load((root / name).read_text())


def test_only_check_conflicts_runs_at_pre_push(project_copy: Path) -> None:
    config = load(project_copy, ".pre-commit-config.yaml")
    default = config.get("default_stages", ["pre-commit", "pre-push", "manual"])
    for repo in config["repos"]:
        for hook in repo["hooks"]:
            stages = hook.get("stages", default)
            assert ("pre-push" in stages) == (hook["id"] == HOOK), hook["id"]


def test_the_published_hook_matches_the_local_one(project_copy: Path) -> None:
    (published,) = load(project_copy, ".pre-commit-hooks.yaml")
    hooks = [h for r in load(project_copy, ".pre-commit-config.yaml")["repos"] for h in r["hooks"]]
    (local,) = [h for h in hooks if h["id"] == HOOK]
    assert local["id"] == published["id"] == HOOK
    for key in ("name", "files", "stages", "pass_filenames"):
        assert local[key] == published[key], key
    assert published["entry"] == "series check-conflicts"
    assert local["entry"] == f"{WRAPPER} series check-conflicts"


def commit(root: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    argv = ["git", "commit", "-qm", "a tool change"]
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=False)


def environments(home: Path) -> list[str]:
    """What pre-commit installed in its store: a directory per hook environment."""
    store = home / ".cache" / "pre-commit"
    return sorted(p.name for p in store.iterdir() if p.is_dir()) if store.is_dir() else []


def test_commit_runs_the_virtualenvs_ruff_and_builds_no_environment(
    tmp_path: Path, hermetic: Path, project_copy: Path
) -> None:
    project, _ = hooked_project(tmp_path, project_copy)
    (project.root / "tools").mkdir()
    (project.root / "tools/tool.py").write_text("x  =  1\n")
    git(project.root, "add", "tools/tool.py")
    proc = commit(project.root, f"{VENV_BIN}:{SYSTEM_PATH}")
    assert proc.returncode != 0, "an unformatted file was committed"
    assert "ruff format" in proc.stdout + proc.stderr
    assert "tools/tool.py" in proc.stdout + proc.stderr
    assert "1 file would be reformatted" in proc.stdout + proc.stderr
    (project.root / "tools/tool.py").write_text("x = 1\n")
    git(project.root, "add", "tools/tool.py")
    proc = commit(project.root, f"{VENV_BIN}:{SYSTEM_PATH}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert environments(hermetic) == []


def test_commit_without_ruff_says_how_to_install_it(tmp_path: Path, project_copy: Path) -> None:
    assert shutil.which("ruff", path=SYSTEM_PATH) is None, "a ruff is installed system-wide"
    project, _ = hooked_project(tmp_path, project_copy)
    (project.root / "tools").mkdir()
    (project.root / "tools/tool.py").write_text("x = 1\n")
    git(project.root, "add", "tools/tool.py")
    proc = commit(project.root, SYSTEM_PATH)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "the ruff command is not installed" in output
    assert "pip install -c ci/constraints.txt -e '.[test]'" in output


def on_a_terminal(argv: list[str], cwd: Path, path: str) -> tuple[int, str]:
    """Run argv as the session leader of a new pseudo-terminal; its exit code and screen."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(cwd)
        os.environ["PATH"] = path
        os.execvp(argv[0], argv)
    screen = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), screen.decode(errors="replace")


def test_push_says_on_the_terminal_what_it_starts(tmp_path: Path, project_copy: Path) -> None:
    # pre-commit shows a hook's output only when it ends: a first push that
    # fetches the pin would sit silent. The wrapper writes to the terminal.
    project, remote = hooked_project(tmp_path, project_copy)
    argv = ["git", "push", "target", "HEAD:refs/heads/main"]
    code, screen = on_a_terminal(argv, project.root, f"{VENV_BIN}:{SYSTEM_PATH}")
    assert code == 0, screen
    assert remote_main(remote) == git(project.root, "rev-parse", "HEAD")
    first = screen.index("series check-conflicts: running")
    assert first < screen.index("Passed"), screen
