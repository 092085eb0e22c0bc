"""Hostile input and faults, part two: messages that were poor, results that were silent.

Each test is one row of the matrix in docs/hardening.md (part one, data
loss and tracebacks, is tests/test_hardening.py, whose helpers these use).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from series.errors import Exit
from test_hardening import applied, canonical, commit_change, edit_manifest, snapshot

# -- poor messages made clear ----------------------------------------------------


class _SilentServer:
    """Accepts TCP connections and never answers: an upstream that hangs."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.held: list[object] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()


def _auto_with_sdist(project: Project, url: str) -> None:
    from test_upstream import PACKAGE, make_sdist, use_sdist_manifest

    use_sdist_manifest(project.root, source="auto")
    edit_manifest(project, f'repository = "{project.upstream}"', f'repository = "{url}"')
    cache = project.root.parent / "home/.cache/keras-series/sdist"
    make_sdist(cache / f"{PACKAGE}-1.0.tar.gz")  # as if downloaded before


def test_upstream_that_never_answers_times_out_and_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _SilentServer()
    project = make_project(tmp_path)
    url = f"http://127.0.0.1:{server.port}/keras.git"
    _auto_with_sdist(project, url)
    monkeypatch.setenv("SERIES_NET_TIMEOUT", "1")
    code, _, err = project.run("apply")
    server.close()
    assert code == 0, err
    assert "transferred the last 1 seconds" in err  # the 1 s ended the wait: said, not timed
    assert f"from {url}; gives up after 1 s without data" in err  # said before it waits
    assert "falling back to the sdist" in err and "Remembered for" in err


def test_unreachable_upstream_is_remembered_and_retried_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    url = "http://127.0.0.1:9/keras.git"  # the discard port: refused at once
    _auto_with_sdist(project, url)
    code, _, err = project.run("apply")
    assert code == 0, err
    assert "fetching v1.0" in err and "Remembered for 10 min" in err
    code, _, err = project.run("check-conflicts", "--no-matrix")
    assert code == 0, err
    assert "fetching" not in err and "was unreachable" in err and "SERIES_RETRY_UPSTREAM=1" in err
    monkeypatch.setenv("SERIES_RETRY_UPSTREAM", "1")
    code, _, err = project.run("check-conflicts", "--no-matrix")
    assert code == 0 and "fetching v1.0" in err


def test_held_lock_waits_with_a_message_then_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    lock = tmp_path / "home/.cache/keras-series/upstream.lock"
    lock.parent.mkdir(parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    os.write(fd, b"4242\n")
    fcntl.flock(fd, fcntl.LOCK_EX)
    monkeypatch.setenv("SERIES_LOCK_TIMEOUT", "0.5")
    try:
        code, _, err = project.run("apply")
    finally:
        os.close(fd)
    assert code == Exit.FAILED
    assert "waiting for another series run (pid 4242)" in err and "giving up after 0.5 s" in err
    assert "gave up waiting" in err and "SERIES_LOCK_TIMEOUT" in err
    assert not project.work.exists()
    code, _, err = project.run("apply")  # once the holder is gone, it goes on
    assert code == 0, err


def test_two_concurrent_applies_on_a_new_directory_both_succeed(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, _, err = project.run("check-conflicts", "--no-matrix")  # warm the cache
    assert code == 0, err
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "series", "-C", str(project.root), "apply"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    for status, err in results:
        assert status == 0, err
        assert "not ours" not in err and "did not make" not in err
    assert git(project.work, "status", "--porcelain") == ""
    assert not list(project.root.glob(".work.series-new-*"))


def test_export_rolls_back_when_the_ref_transaction_fails(tmp_path: Path) -> None:
    project = canonical(make_project(tmp_path))
    commit_change(project.work, "pkg/new.py", "X = 1\n", "new: a module")
    before = snapshot(project.root)
    hook = project.work / ".git/hooks/reference-transaction"
    hook.write_text(
        '#!/bin/sh\n[ "$1" = prepared ] && grep -q refs/series/state && exit 1\nexit 0\n'
    )
    hook.chmod(0o755)
    code, _, err = project.run("export")
    assert code == Exit.FAILED, err
    assert "export put back the 2 file(s) it had written" in err
    assert snapshot(project.root) == before  # the new patch file is gone again
    hook.unlink()
    code, _, err = project.run("export")
    assert code == 0, err
    assert (project.root / "patches/perf-P4-a-module.patch").is_file()


def test_export_refuses_in_the_middle_of_a_rebase(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i 1s/^pick/edit/"}
    subprocess.run(
        ["git", "rebase", "-q", "-i", "refs/series/base"],
        cwd=project.work,
        env=env,
        check=True,
        capture_output=True,
    )
    before = snapshot(project.root)
    code, _, err = project.run("export")
    assert code == Exit.REFUSED
    assert "a git rebase is in progress" in err and "rebase --continue" in err
    assert snapshot(project.root) == before


def test_export_says_what_it_ignores_on_another_branch(tmp_path: Path) -> None:
    project = canonical(make_project(tmp_path))
    git(project.work, "switch", "-q", "-c", "experiment")
    commit_change(project.work, "pkg/exp.py", "E = 1\n", "exp: try something")
    code, out, err = project.run("export")
    assert code == 0, err
    assert "HEAD in" in err and "refs/heads/experiment" in err
    assert "1 commit(s) on HEAD are not exported" in err and "switch series" in err
    assert "0 file(s) changed" in out


def test_unsquashed_fixup_is_refused_and_the_offered_squash_works(tmp_path: Path) -> None:
    project = applied(make_project(tmp_path))
    p1 = git(project.work, "rev-parse", "series~2")
    (project.work / "pkg/core.py").write_text(
        (project.work / "pkg/core.py").read_text() + "# fixed\n"
    )
    git(project.work, "commit", "-qa", "--fixup", p1)
    code, _, err = project.run("export")
    assert code == Exit.REFUSED
    assert "fixup commit(s) were never squashed" in err and "fixup! core: f1" in err
    hint = next(line for line in err.splitlines() if "hint:" in line)
    command = hint.split("squash them: ", 1)[1].split(", then", 1)[0]
    subprocess.run(["bash", "-c", command], check=True, capture_output=True)
    code, out, err = project.run("export")
    assert code == 0, err
    assert out.startswith("exported 3 patches")
    assert "# fixed" in (project.root / "patches/perf-P1.patch").read_text()


def test_wrong_checksum_of_a_downloaded_sdist_says_which_file_to_delete(tmp_path: Path) -> None:
    from test_upstream import PACKAGE, make_sdist, use_sdist_manifest

    project = make_project(tmp_path)
    use_sdist_manifest(project.root)
    edit_manifest(project, 'version = "1.0"', 'version = "1.0"\nsha256 = "' + "0" * 64 + '"')
    archive = make_sdist(tmp_path / f"home/.cache/keras-series/sdist/{PACKAGE}-1.0.tar.gz")
    code, _, err = project.run("apply")
    assert code == Exit.FAILED
    assert f"delete {archive}" in err and "download it afresh" in err


# -- silent wrong results ----------------------------------------------------------


def test_a_patch_without_subset_fails_series_test_unless_the_manifest_says_why(
    tmp_path: Path,
) -> None:
    from tinytests import make_tiny_project

    project = make_tiny_project(tmp_path)
    edit_manifest(project, 'subset = ["tests/test_ops.py"]', "subset = []")
    junit = tmp_path / "junit.xml"
    code, out, err = project.run("test", "P1", "--junit", str(junit))
    assert code == Exit.FAILED, err
    assert "P1: no test subset" in out and "no_tests" in out
    assert 'failures="1"' in junit.read_text()
    edit_manifest(project, "subset = []", 'subset = []\nno_tests = "only renames a local"')
    code, out, err = project.run("test", "P1", "--json")
    assert code == 0, err
    report = json.loads(out)["patches"][0]
    assert report["status"] == "no tests" and report["detail"] == "only renames a local"


def test_show_labels_applies_alone_as_recorded_and_shows_what_was_computed(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    edit_manifest(project, 'state = "open"', 'state = "open"\napplies_alone = false')
    _, out, _ = project.run("show", "P1")
    assert "(as recorded in series.toml); not computed yet" in out
    code, out, _ = project.run("check-conflicts")
    assert code == 0
    assert "P1 applies alone now" in out and "set applies_alone = true" in out
    _, out, _ = project.run("show", "P1")
    assert "the record is out of date" in out
    _, out, _ = project.run("show", "P2", "--json")
    assert json.loads(out)["applies_alone_computed"]["applies"] is True


def test_junit_carries_time_attributes(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from tinytests import make_tiny_project

    project = make_tiny_project(tmp_path)
    junit = tmp_path / "junit.xml"
    code, _, err = project.run("test", "P1", "P3", "--junit", str(junit))
    assert code == 0, err
    root = ET.parse(junit).getroot()
    assert float(root.get("time", "-1")) > 0
    suites = list(root.iter("testsuite"))
    cases = list(root.iter("testcase"))
    assert suites and cases
    assert all(float(s.get("time", "-1")) > 0 for s in suites)
    assert all(float(c.get("time", "-1")) >= 0 for c in cases)  # tiny tests: often 0.000


def test_every_case_of_the_matrix_is_a_test() -> None:
    import re

    here = Path(__file__).parent
    doc = (here.parent / "docs/hardening.md").read_text()
    source = "".join(p.read_text() for p in here.glob("test_*.py"))
    names = re.findall(r"`(?:tests/\w+\.py::)?(test_\w+)", doc)
    rows = re.findall(r"^\| (\d+) \|", doc, re.MULTILINE)
    assert names and all(f"def {name}(" in source for name in names)
    # The page names classes of cases and their tests, not a claimed count;
    # each row's number is unique so a review can point at it.
    assert rows and len(rows) == len(set(rows))
