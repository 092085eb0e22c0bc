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

from helpers import make_project
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
    return subprocess.Popen(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        stdout=subprocess.DEVNULL,
        stderr=err.open("w"),
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
    assert not _left(env)
    assert not project.work.exists()
    assert not list((tmp_path / "home/.cache/keras-series/upstream.git").glob("*.lock"))
