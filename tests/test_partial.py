"""Partial upstream clones (``git clone --filter=blob:none``) as ``--upstream PATH``.

A partial clone has every commit and tree but only the blobs it checked
out; git fetches the others from its promisor remote when something needs
them. The clones here are made with ``--no-checkout``, so they hold no blob
at all and every fetch from them needs that lazy fetch. With the promisor
there, series gets what a full clone gives; with it gone, a clear error
(exit 1) and nothing changed; with it silent, the same error after
SERIES_NET_TIMEOUT seconds.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from rebase_helpers import git_rebase_trees, moving_project, snapshot

CACHE = Path("home") / ".cache" / "keras-series" / "upstream.git"


def partial_clone(origin: Path, dest: Path) -> Path:
    """A blob-less clone of ``origin`` (which must allow filters), with no blob at all."""
    git(origin, "config", "uploadpack.allowFilter", "true")
    url = f"file://{origin}"
    git(dest.parent, "clone", "-q", "--filter=blob:none", "--no-checkout", url, str(dest))
    assert git(dest, "config", "remote.origin.promisor") == "true"
    assert missing_blobs(dest) > 0
    return dest


def missing_blobs(repo: Path) -> int:
    out = git(repo, "rev-list", "--objects", "--all", "--missing=print")
    return sum(line.startswith("?") for line in out.splitlines())


def orphaned_partial_clone(project: Project, tmp: Path) -> Path:
    """A partial clone of a copy of the project's upstream; the copy is then deleted."""
    promisor = tmp / "promisor"
    shutil.copytree(project.upstream, promisor)
    clone = partial_clone(promisor, tmp / "partial")
    shutil.rmtree(promisor)
    return clone


def onto_report(project: Project, upstream: Path) -> tuple[int, dict[str, object], str]:
    code, out, err = project.run(
        "check-conflicts", "--json", "--no-matrix", "--onto", "main", "--upstream", str(upstream)
    )
    onto = (json.loads(out) if out.strip() else {}).get("onto") or {}
    onto.pop("label", None)  # names the --upstream path
    return code, onto, err


def test_check_conflicts_onto_a_partial_clone_as_onto_a_full_one(tmp_path: Path) -> None:
    project = moving_project(tmp_path / "a", conflict=True)
    partial = partial_clone(project.upstream, tmp_path / "partial")
    lacking = missing_blobs(partial)
    code, onto, err = onto_report(project, partial)
    assert code == 3, err
    assert onto["upstream_commits"] == 2
    # The same report as from the full clone, in a project of its own (a cold cache).
    other = moving_project(tmp_path / "b", conflict=True)
    shutil.rmtree(tmp_path / CACHE)
    assert (code, onto) == onto_report(other, other.upstream)[:2]
    # git fetched blobs into the partial clone from its promisor remote: those
    # of the range only, not the pin's (the cache has the pin).
    assert 0 < missing_blobs(partial) < lacking


def test_rebase_onto_a_partial_clone(tmp_path: Path) -> None:
    project = moving_project(tmp_path)
    partial = partial_clone(project.upstream, tmp_path / "partial")
    oracle = git_rebase_trees(project, "main")
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(partial))
    assert code == 0, err
    ours = git(project.work, "log", "--reverse", "--format=%T", "refs/series/base..series")
    assert ours.split() == oracle


def test_apply_from_a_partial_clone(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    partial = partial_clone(project.upstream, tmp_path / "partial")
    code, _, err = project.run("apply", "--source", "git", "--upstream", str(partial))
    assert code == 0, err
    assert git(project.work, "rev-parse", "refs/series/base") == project.commit
    assert git(project.work, "status", "--porcelain") == ""


def assert_refused(code: int, err: str, partial: Path) -> None:
    assert code == 1, err
    assert f"from {partial}: it is a partial clone" in err
    assert f"file://{partial.parent / 'promisor'}" in err  # the promisor remote's URL
    assert "does not appear to be a git repository" in err  # git's reason, once
    assert "fetch --refetch origin" in err  # how to go on
    assert "remote:" not in err and "protocol error" not in err  # no raw git noise


def test_check_conflicts_and_rebase_refuse_a_partial_clone_without_its_promisor(
    tmp_path: Path,
) -> None:
    project = moving_project(tmp_path)
    partial = orphaned_partial_clone(project, tmp_path)
    before = snapshot(project)
    code, _, err = onto_report(project, partial)
    assert_refused(code, err, partial)
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(partial))
    assert_refused(code, err, partial)
    assert snapshot(project) == before
    cache = tmp_path / CACHE
    assert git(cache, "for-each-ref", "refs/series/scratch/", "refs/series/rebase/") == ""
    assert git(project.work, "for-each-ref", "refs/series/rebase/") == ""


def test_apply_refuses_a_partial_clone_without_its_promisor(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    partial = orphaned_partial_clone(project, tmp_path)
    code, _, err = project.run("apply", "--source", "git", "--upstream", str(partial))
    assert_refused(code, err, partial)
    assert not project.work.exists()


@contextmanager
def silent_server() -> Iterator[str]:
    """The URL of an http server that takes connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/keras.git"
    finally:
        stop.set()
        thread.join()
        for conn in [*held, server]:
            conn.close()


def test_a_promisor_that_never_answers_fails_after_the_net_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = moving_project(tmp_path)
    partial = partial_clone(project.upstream, tmp_path / "partial")
    monkeypatch.setenv("SERIES_NET_TIMEOUT", "1")
    with silent_server() as url:
        git(partial, "remote", "set-url", "origin", url)
        code, _, err = onto_report(project, partial)
    assert code == 1, err
    assert f"from {partial}: it is a partial clone" in err
    # curl's low-speed limit reached the lazy fetch, and it was the 1 s (not the hard
    # bound, 60 s, nor curl's none): said, not timed (a loaded machine is slow anyway)
    assert "Operation too slow" in err and "transferred the last 1 seconds" in err
