"""The one fetch policy of series.upstream, seen from the network.

An ``--onto REV`` whose pin commit is not in the cache (an sdist pin) is
fetched with the pin's refspec first, then alone. A network failure ends
the tries at once, as for the pin: the second try would wait just as long
for the same silence. The server below counts the connections git makes.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from helpers import make_project
from series.errors import Exit
from test_upstream import PACKAGE, make_sdist, use_sdist_manifest


class CountingSilentServer:
    """An http server that accepts connections, counts them and never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/keras.git"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except TimeoutError:
                continue

    def close(self) -> int:
        """Stop; how many connections were made."""
        self.stop.set()
        self.thread.join()
        for conn in [*self.held, self.sock]:
            conn.close()
        return len(self.held)


def test_onto_from_a_silent_upstream_is_fetched_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    use_sdist_manifest(project.root)  # the pin's real commit is not in the cache
    make_sdist(project.root.parent / f"home/.cache/keras-series/sdist/{PACKAGE}-1.0.tar.gz")
    monkeypatch.setenv("SERIES_NET_TIMEOUT", "1")
    server = CountingSilentServer()
    try:
        code, _, err = project.run("check-conflicts", "--onto", "main", "--upstream", server.url)
    finally:
        connections = server.close()
    assert code == Exit.FAILED, err
    assert f"cannot reach {server.url} to fetch main" in err
    # ls-remote for what main names, one fetch (REV with the pin), then the
    # check that tells "unreachable" from "no such revision"; not a second fetch.
    assert connections == 3, err
