"""The cache repository's loose objects packed once there are many (series.upstream.pack_cache).

A build writes each object of its commits as a loose file; ``series range-diff``
then reads them through ``git range-diff`` and ``diff-tree``, slower than from a
pack. What is asserted is behaviour: every object is still there after a packing
(reachable or not, loose or in a rolled-up pack), after one killed midway, and
with packings and writes at the same time; the packing waits for nobody and is
left alone while another run holds the cache's lock; a run that built nothing
starts no repack.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import git, make_project
from series.errors import SeriesError
from series.git import Repo
from series.git import run as git_run
from series.git.child import Outcome, run_child
from series.git.objects import Objects, loose
from series.upstream import base as upstream_base
from series.upstream import pack_cache
from test_speed import ELEVEN, Counted

ROOT = Path(__file__).resolve().parent.parent


def _cache(tmp_path: Path, loose: int, *, packed_unreachable: int = 0) -> tuple[Path, list[str]]:
    """A cache directory whose repository holds ``loose`` loose blobs (one tree and commit
    naming the first, under a ref; the rest unreachable) and a small pack of
    ``packed_unreachable`` blobs no ref reaches; every object id."""
    cache = tmp_path / "cache"
    repo = cache / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(repo))
    blobs = _hash(repo, [f"loose {i}\n" for i in range(loose)])
    tree = subprocess.run(
        ["git", "mktree"],
        cwd=repo,
        input=f"100644 blob {blobs[0]}\tfile\n",
        text=True,
        check=True,
        capture_output=True,
    ).stdout.strip()
    commit = git(repo, "commit-tree", tree, "-m", "a memo commit")
    git(repo, "update-ref", "refs/series/stack/k", commit)
    packed = _hash(repo, [f"packed {i}\n" for i in range(packed_unreachable)], write=False)
    return cache, [*blobs, tree, commit, *packed]


def _hash(repo: Path, texts: list[str], *, write: bool = True) -> list[str]:
    """Each text written as a blob of ``repo``: loose (``write``), else into a pack
    (written loose first, packed, then the loose files removed)."""
    if not texts:
        return []
    files = []
    for i, text in enumerate(texts):
        path = repo / f"in-{i}"
        path.write_text(text)
        files.append(str(path))
    out = subprocess.run(
        ["git", "hash-object", "-w", "--stdin-paths"],
        cwd=repo,
        input="".join(f"{f}\n" for f in files),
        text=True,
        check=True,
        capture_output=True,
    ).stdout.split()
    for f in files:
        os.unlink(f)
    if not write:  # packed below: the loose copies go once the pack holds them
        packed = "".join(f"{b}\n" for b in out)
        pack = repo / "objects" / "pack" / "pack"
        subprocess.run(
            ["git", "pack-objects", "-q", str(pack)],
            cwd=repo,
            input=packed,
            text=True,
            check=True,
            capture_output=True,
        )
        git(repo, "prune-packed")
    return out


def _missing(repo: Path, ids: list[str]) -> list[str]:
    """The ids ``repo`` has no object of."""
    out = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        cwd=repo,
        input="".join(f"{i}\n" for i in ids),
        text=True,
        check=True,
        capture_output=True,
    ).stdout
    return [line.split()[0] for line in out.splitlines() if line.endswith(" missing")]


def _repacks(calls: list[str]) -> list[str]:
    return [c for c in calls if "repack" in c.split()]


def _loose(repo: Path) -> int:
    return loose(repo / "objects")


def test_many_loose_objects_are_packed_and_none_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reachable or not, loose or in a small pack rolled into a bigger one: all kept."""
    monkeypatch.setattr(upstream_base, "LOOSE_LIMIT", 20)
    cache, ids = _cache(tmp_path, 40, packed_unreachable=3)
    repo = cache / "upstream.git"
    assert _loose(repo) == 42  # 40 blobs, a tree, a commit
    assert pack_cache(Repo(repo), cache) is True
    assert _loose(repo) == 0
    assert _missing(repo, ids) == []
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=repo, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def test_a_few_loose_objects_start_no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_base, "LOOSE_LIMIT", 64)
    cache, _ = _cache(tmp_path, 40)

    def refuse(self: Objects, **kw: bool) -> None:
        raise AssertionError("packed below the limit")

    monkeypatch.setattr(Objects, "repack", refuse)
    assert pack_cache(Repo(cache / "upstream.git"), cache) is False


def test_a_packing_that_fails_leaves_the_command_s_answer_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repack git refuses (a full disk, a damaged object) is logged, not raised: the
    build before it is done, and a later one packs."""
    monkeypatch.setattr(upstream_base, "LOOSE_LIMIT", 20)
    cache, ids = _cache(tmp_path, 40)

    def fail(self: Objects, **kw: bool) -> None:
        raise SeriesError("git repack: No space left on device")

    monkeypatch.setattr(Objects, "repack", fail)
    assert pack_cache(Repo(cache / "upstream.git"), cache) is False
    assert _missing(cache / "upstream.git", ids) == []


HOLD = """
import sys, time
from pathlib import Path
from series.locks import exclusive
with exclusive(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_while_another_run_holds_the_cache_lock_nothing_is_packed_nor_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upstream_base, "LOOSE_LIMIT", 20)
    cache, ids = _cache(tmp_path, 40)
    repo = cache / "upstream.git"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(cache / "upstream.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setenv("SERIES_LOCK_TIMEOUT", "300")  # were it waited for: the test hangs
        assert pack_cache(Repo(repo), cache) is False
        assert _loose(repo) == 42
    finally:
        holder.communicate("")
    assert pack_cache(Repo(repo), cache) is True
    assert _loose(repo) == 0 and _missing(repo, ids) == []


PACK = """
import sys
from pathlib import Path
from series.git import Repo
from series.git import run as git_run
from series.git.child import Outcome, run_child
Repo(Path(sys.argv[1])).objects.repack(whole=False)
"""


def _packer(repo: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", PACK, str(repo)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
        start_new_session=True,  # its git dies with it
    )


def test_a_packing_killed_at_any_point_loses_no_object(tmp_path: Path) -> None:
    cache, ids = _cache(tmp_path, 1500, packed_unreachable=5)
    repo = cache / "upstream.git"
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6):
        proc = _packer(repo)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert _missing(repo, ids) == [], f"killed after {delay} s"
    Repo(repo).objects.repack(whole=False)  # and a later packing finishes the job
    assert _loose(repo) == 0 and _missing(repo, ids) == []


def test_packings_and_writes_at_once_lose_no_object(tmp_path: Path) -> None:
    """Written as a build writes them (Objects.write): a write that loses its object's
    directory to a packing is run again (the test below), so none fails either."""
    cache, ids = _cache(tmp_path, 600, packed_unreachable=5)
    repo = cache / "upstream.git"
    packers = [_packer(repo), _packer(repo)]
    texts = [f"written meanwhile {i}\n".encode() for i in range(300)]
    written = Repo(repo).objects.write("blob", texts)
    packers.append(_packer(repo))
    for p in packers:
        p.wait()
    assert _missing(repo, [*ids, *written]) == []


def _object_directory_gone(
    repo: Path, text: bytes, monkeypatch: pytest.MonkeyPatch, *, once: bool
) -> list[str]:
    """The fan-out directory of ``text``'s blob in ``repo`` gone for git's writes, as a
    concurrent repack leaves it between git's mkdir and its temporary file: a dangling
    link there fails the write with the same words (series.git.run._RACED), every time.
    ``once``: the link removed after the first git command that ran into it. The git
    commands series runs from then on, logged."""
    blob = subprocess.run(
        ["git", "hash-object", "--stdin"], input=text, capture_output=True, check=True
    ).stdout.decode()
    link = repo / "objects" / blob[:2]
    assert not link.exists()
    link.symlink_to(repo / "gone")
    ran: list[str] = []

    def spy(cwd: Path, argv: list[str], **kw: Any) -> Outcome:
        done = run_child(cwd, argv, **kw)
        ran.append(" ".join(argv[1:]))
        if once and git_run._RACED.encode() in done.err:
            link.unlink()
        return done

    monkeypatch.setattr("series.git.run.run_child", spy)  # as execute calls it
    return ran


def test_a_write_whose_object_directory_a_packing_removed_is_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another run's packing (or a ``git gc``) removes the fan-out directories it emptied;
    one removed between git's mkdir and its write fails the write (exit 128): a build
    beside a packing failed with an internal error. The write is run again."""
    cache, _ = _cache(tmp_path, 1)
    repo = cache / "upstream.git"
    ran = _object_directory_gone(repo, b"racing\n", monkeypatch, once=True)
    [blob] = Repo(repo).objects.write("blob", [b"racing\n"])
    assert [c.split()[0] for c in ran] == ["hash-object", "hash-object"]
    assert _missing(repo, [blob]) == []


def test_a_patch_applied_beside_a_packing_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``apply --cached`` whose blob write lost its directory said the patch did not
    apply: a wrong answer (a build stopped at a patch that applies). It is run again."""
    cache, _ = _cache(tmp_path, 1)
    repo = cache / "upstream.git"
    empty = Repo(repo).index.empty_tree()
    diff = b"diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n"
    diff += b"@@ -0,0 +1 @@\n+racing\n"
    ran = _object_directory_gone(repo, b"racing\n", monkeypatch, once=True)
    _, tree = Repo(repo).index.rewrite_and_apply(empty, [], diff)
    assert tree is not None
    assert [c.split()[0] for c in ran if "apply" in c.split()] == ["apply", "apply"]
    assert Repo(repo).objects.tree_files(tree) == {"f": _hash(repo, ["racing\n"])[0]}


def test_a_write_that_keeps_failing_so_is_run_a_few_times_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directory stays gone (a cache removed meanwhile): a few runs, then git's error."""
    cache, _ = _cache(tmp_path, 1)
    repo = cache / "upstream.git"
    ran = _object_directory_gone(repo, b"racing\n", monkeypatch, once=False)
    with pytest.raises(SeriesError) as failed:
        Repo(repo).objects.write("blob", [b"racing\n"])
    assert git_run._RACED in str(failed.value.why)
    assert len(ran) == 1 + git_run.RERUNS


def test_a_build_packs_the_cache_and_a_run_that_built_nothing_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``apply`` builds the stack into a new cache (its objects loose until there are
    many); an ``apply`` that finds everything in the memo starts no repack (a re-run of
    ``range-diff``: test_speed_rd_branches lists its git processes); one that builds a
    patch again packs them."""
    project = make_project(tmp_path, ELEVEN)
    counted = Counted(project, tmp_path)
    repo = counted.cache / "upstream.git"
    _, calls = counted.run("apply")
    assert 0 < _loose(repo) < upstream_base.LOOSE_LIMIT  # 11 small patches: under it
    assert _repacks(calls) == []
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    series_code = (
        "import sys; from series.upstream import base; base.LOOSE_LIMIT = 1; "
        "from series.cli import main; sys.exit(main(sys.argv[1:]))"
    )

    def run(*args: str) -> list[str]:
        counted.shim.log.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-c", series_code, "-C", str(project.root), *args],
            env=counted.shim.env,
            check=True,
            capture_output=True,
        )
        return counted.shim.log.read_text().splitlines()

    assert _repacks(run("apply")) == []  # nothing built
    p11 = project.root / "patches" / "perf-P11.patch"  # P11 built again: a new commit
    p11.write_text(p11.read_text().replace("+    return 1100", "+    return 1111"))
    repacks = _repacks(run("apply"))
    assert repacks == ["-c repack.writeBitmaps=false repack -d -q --geometric=2"], repacks
    assert _loose(repo) == 0
