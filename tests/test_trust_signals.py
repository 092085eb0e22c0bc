"""Ctrl-C ends a command promptly, and every network call is bounded and announced.

The remote here is a local TCP server that accepts connections and never
answers (git:// and http:// URLs on 127.0.0.1), or a local remote whose
upload-pack or receive-pack sleeps. Each test runs ``series`` as a true
subprocess with a cap on how long it may take, so that a hang fails the
test instead of stalling the suite; the caps are liveness bounds for a
loaded machine, not timings. docs/hardening.md lists these cases.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from rebase_helpers import moving_project, snapshot
from series.errors import Exit
from test_hardening_messages import _SilentServer

CAP = 60  # seconds a command may take here before the test calls it a hang
TRACEBACK = "Traceback"


class NeverAnswers(_SilentServer):
    """test_hardening_messages' silent server, which also says when a client came and went.

    It reads and drops what clients send, never answers, and stops by
    itself after ``lifetime`` seconds (or at ``close``).
    """

    def __init__(self, lifetime: float = 3 * CAP) -> None:
        self.accepted = threading.Event()
        self.gone = threading.Event()  # a client that had connected closed its end
        self.deadline = time.monotonic() + lifetime
        super().__init__()

    def _accept(self) -> None:
        conns: list[socket.socket] = []
        self.sock.settimeout(0.1)
        try:
            while time.monotonic() < self.deadline:
                try:
                    conn, _ = self.sock.accept()
                    conns.append(conn)
                    self.accepted.set()
                except TimeoutError:
                    pass
                except OSError:
                    return  # closed
                readable = select.select(conns, [], [], 0.1)[0] if conns else []
                for conn in readable:
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        conns.remove(conn)
                        conn.close()
                        self.gone.set()
        finally:
            for conn in conns:
                conn.close()
            self.sock.close()

    def url(self, scheme: str) -> str:
        return f"{scheme}://127.0.0.1:{self.port}/x"


@pytest.fixture
def server() -> Iterator[NeverAnswers]:
    found = NeverAnswers()
    yield found
    found.close()


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    """An environment with a mark that series and every process it starts inherit.

    ``_left`` finds them by it; whatever is still running at the end of the
    test (a hang, on the code before the fix) is killed.
    """
    mark = uuid.uuid4().hex
    yield {**os.environ, "SERIES_TEST_MARK": mark}
    _reap(mark)


def _left(env: dict[str, str] | str) -> list[int]:
    """Processes still running with the mark of ``env`` (see ``env``), read from /proc."""
    mark = env if isinstance(env, str) else env["SERIES_TEST_MARK"]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if f"SERIES_TEST_MARK={mark}".encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def _settled(env: dict[str, str] | str, cap: float = 10.0) -> list[int]:
    """:func:`_left`, asked until none is left or ``cap`` seconds have passed: a process
    killed is listed until the kernel has finished its exit (its sockets close first,
    which is what the server saw), a moment later on a busy machine; one left running
    (a ``sleep 120``, a git waiting on the server) is still there after ``cap``."""
    deadline = time.monotonic() + cap
    while (left := _left(env)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _described(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            found.append(f"{pid}: {argv.decode(errors='replace')}")
    return found


def _reap(mark: str) -> None:
    """Kill what the test left running (on the code before the fix)."""
    for pid in _left(mark):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _series(root: Path, args: list[str], env: dict[str, str], err: Path) -> subprocess.Popen[str]:
    """``series -C ROOT ARGS`` started, its stderr going to the file ``err``."""
    with err.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "series", "-C", str(root), *args],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=root.parent,
        )


def _finish(proc: subprocess.Popen[str], cap: float = CAP) -> int:
    try:
        return proc.wait(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"series was still running after {cap} s")


def _wait_for(event: threading.Event, proc: subprocess.Popen[str], what: str) -> None:
    if not event.wait(CAP):
        proc.kill()
        pytest.fail(f"{what} did not happen within {CAP} s")


# -- Ctrl-C ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "sig"),
    [
        pytest.param(scheme, sig, id=f"{scheme}-{sig.name}")
        for scheme, sig in [
            ("git", signal.SIGINT),
            ("http", signal.SIGINT),
            ("git", signal.SIGTERM),
            ("http", signal.SIGHUP),
        ]
    ],
)
def test_a_signal_during_a_fetch_ends_the_command_and_its_git(
    tmp_path: Path, server: NeverAnswers, env: dict[str, str], scheme: str, sig: signal.Signals
) -> None:
    project = make_project(tmp_path)
    env["SERIES_NET_TIMEOUT"] = "30"  # the bound is not what ends it here
    err = tmp_path / "stderr"
    args = ["apply", "--source", "git", "--upstream", server.url(scheme)]
    proc = _series(project.root, args, env, err)
    # The fetch is under way once git (or its http helper) has connected.
    _wait_for(server.accepted, proc, "a connection to the server")
    proc.send_signal(sig)
    code = _finish(proc, cap=20)
    text = err.read_text()
    assert code == 128 + sig, text
    assert text.count("interrupted") == 1 and TRACEBACK not in text, text
    # git and its transport helper died with it: the server saw the connection closed.
    assert server.gone.wait(10), f"the connection is still open: {_described(_left(env))}"
    assert not _settled(env), _described(_left(env))
    assert not project.work.exists()
    assert not list((tmp_path / "home/.cache/keras-series/upstream.git").glob("*.lock"))


@pytest.mark.parametrize("scheme", ["git", "http"])
def test_a_kill_of_the_process_group_takes_git_with_it(
    tmp_path: Path, server: NeverAnswers, env: dict[str, str], scheme: str
) -> None:
    project = make_project(tmp_path)
    args = ["apply", "--source", "git", "--upstream", server.url(scheme)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "series", "-C", str(project.root), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
        start_new_session=True,  # its own group, as a shell's job is
    )
    _wait_for(server.accepted, proc, "a connection to the server")
    os.killpg(proc.pid, signal.SIGKILL)
    assert _finish(proc) == -signal.SIGKILL
    assert server.gone.wait(10), f"the connection is still open: {_described(_left(env))}"
    assert not _settled(env), _described(_left(env))


# -- series branches --push -------------------------------------------------------------


def _applied(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


def test_push_to_a_server_that_never_answers_gives_up_and_says_so(
    tmp_path: Path, server: NeverAnswers, env: dict[str, str]
) -> None:
    project = _applied(tmp_path)
    before = git(project.work, "for-each-ref")
    env["SERIES_NET_TIMEOUT"] = "2"
    err = tmp_path / "stderr"
    url = server.url("git")
    proc = _series(project.root, ["branches", "--push", url], env, err)
    _wait_for(server.accepted, proc, "a connection to the server")
    said = err.read_text()  # what it printed before it began to wait
    assert f"branches: reading the branches of {url}; gives up after 2 s without data" in said
    code = _finish(proc)
    text = err.read_text()
    assert code == Exit.FAILED, text
    assert f"cannot read the branches of remote {url!r}" in text and TRACEBACK not in text
    assert "no data for 2 s" in text and "SERIES_NET_TIMEOUT" in text, text
    assert git(project.work, "for-each-ref") == before  # refused before it wrote a branch
    assert server.gone.wait(10)


def _sleeper(tmp_path: Path, name: str) -> Path:
    """A stand-in for upload-pack or receive-pack that never says a word."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\nexec sleep 120\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("side", ["uploadpack", "receivepack"])
def test_push_to_a_local_remote_that_hangs_gives_up(
    tmp_path: Path, env: dict[str, str], side: str
) -> None:
    project = _applied(tmp_path)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project.upstream, "push", "-q", str(remote), "HEAD:refs/heads/main")
    git(project.work, "remote", "add", "slow", str(remote))
    git(project.work, "config", f"remote.slow.{side}", str(_sleeper(tmp_path, side)))
    env["SERIES_NET_TIMEOUT"] = "2"
    err = tmp_path / "stderr"
    code = _finish(_series(project.root, ["branches", "--push", "slow"], env, err))
    text = err.read_text()
    assert code == Exit.FAILED, text
    assert "no data for 2 s" in text and "SERIES_NET_TIMEOUT" in text and TRACEBACK not in text
    if side == "uploadpack":
        assert "branches: reading the branches of slow; gives up after 2 s" in text
        assert "cannot read the branches of remote 'slow'" in text
    else:
        assert "branches: pushing 4 branch(es) to slow; gives up after 2 s" in text
        assert "the push to slow did not finish: git was stopped" in text
        assert "took every update or none" in text
    assert git(remote, "for-each-ref", "refs/heads/").count("\n") == 0  # main only
    assert not _settled(env), _described(_left(env))


# -- series rebase --------------------------------------------------------------------


def test_rebase_from_a_server_that_never_answers_announces_and_gives_up(
    tmp_path: Path, server: NeverAnswers, env: dict[str, str]
) -> None:
    project = moving_project(tmp_path)
    before = snapshot(project)
    env["SERIES_NET_TIMEOUT"] = "1"
    err = tmp_path / "stderr"
    url = server.url("git")
    proc = _series(project.root, ["rebase", "--onto", "main", "--upstream", url], env, err)
    _wait_for(server.accepted, proc, "a connection to the server")
    said = err.read_text()
    assert f"rebase: fetching main from {url}; gives up after 1 s without data" in said, said
    code = _finish(proc)
    text = err.read_text()
    assert code == Exit.FAILED, text
    assert f"cannot reach {url} to fetch main" in text and "no data for 1 s" in text, text
    assert "SERIES_NET_TIMEOUT" in text and TRACEBACK not in text
    assert snapshot(project) == before


def test_rebase_from_a_local_source_that_hangs_gives_up(
    tmp_path: Path, env: dict[str, str]
) -> None:
    project = moving_project(tmp_path)
    before = snapshot(project)
    # A remote of the checkout, as --upstream may name one, whose upload-pack hangs.
    git(project.work, "remote", "add", "slow", str(project.upstream))
    git(project.work, "config", "remote.slow.uploadpack", str(_sleeper(tmp_path, "up")))
    env["SERIES_NET_TIMEOUT"] = "1"
    err = tmp_path / "stderr"
    args = ["rebase", "--onto", "main", "--upstream", "slow"]
    code = _finish(_series(project.root, args, env, err))
    text = err.read_text()
    assert code == Exit.FAILED, text
    assert "rebase: fetching main from slow; gives up after 1 s without data" in text
    assert "no data for 1 s" in text and TRACEBACK not in text, text
    assert snapshot(project) == before
    assert not _settled(env), _described(_left(env))
