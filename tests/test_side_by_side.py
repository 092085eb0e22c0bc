"""git commands run side by side (series.git.run.start_together) answer as one at a
time does: a stop report's merge base and range (History.base_and_heads), the
marked-up files of one merge (Merge.files); and the objects a merge writes, stored
(not deflated), are git's own (issue 23)."""

from __future__ import annotations

import zlib
from pathlib import Path

from helpers import files_commit, git, write
from series.git import Repo
from series.git.mergetree import TreeMerge


def _line(repo: Path, count: int, start: str, name: str) -> list[str]:
    """``count`` commits ``name``-k on ``start``, each changing ``a.txt``; their ids,
    oldest first."""
    git(repo, "checkout", "-q", "--detach", start)
    made = []
    for k in range(count):
        write(repo, {"a.txt": f"{name} {k}\n"})
        git(repo, "commit", "-qam", f"{name}-{k}")
        made.append(git(repo, "rev-parse", "HEAD"))
    return made


def test_merge_base_and_heads_side_by_side_are_each_ones_answer(tmp_path: Path) -> None:
    """Shared history: the merge base and the range's heads, as merge_base and heads say;
    no shared history: None for both (the caller asks another range); a range git
    cannot read: heads asked again as heads asks it (which raises)."""
    root = files_commit(tmp_path / "r", {"a.txt": "0\n"})
    repo = tmp_path / "r"
    ours, theirs = _line(repo, 3, root, "ours"), _line(repo, 2, root, "theirs")
    git(repo, "checkout", "-q", "--orphan", "alone")
    git(repo, "commit", "-qm", "alone")
    alone = git(repo, "rev-parse", "HEAD")
    r = Repo(repo)
    revs = [ours[-1], f"^{theirs[-1]}"]
    found, heads = r.history.base_and_heads(theirs[-1], ours[-1], revs, max_count=2000).answer()
    assert found == r.history.merge_base(theirs[-1], ours[-1]) == root
    assert heads == r.history.heads(revs, max_count=2000)
    assert [h[0] for h in heads or []] == ours[::-1]
    assert r.history.base_and_heads(alone, ours[-1], [ours[-1], f"^{alone}"]).answer() == (
        None,
        None,
    )
    started = r.history.base_and_heads(theirs[-1], ours[-1], revs)
    started.abandon()  # ended unread: nothing left running, nothing raised
    started.abandon()


def test_merge_files_side_by_side_are_each_merge_files_bytes(tmp_path: Path) -> None:
    files_commit(tmp_path / "r", {"a.txt": "0\n"})
    r = Repo(tmp_path / "r")
    triples = [
        (b"a\nb\nc\n", b"a\nB\nc\n", b"a\nb2\nc\n"),  # a conflict: markers
        (b"1\n2\n3\n", b"1\n2\n3\n4\n", b"0\n1\n2\n3\n"),  # clean
        (b"", b"x\n", b"y\n"),  # both added
    ]
    labels = ("new base", "old base", "P1")
    together = r.merge.files(triples, favour=None, labels=labels)
    alone = [r.merge.file(*t, favour=None, labels=labels) for t in triples]
    assert together == alone
    assert b"<<<<<<< new base\n" in together[0] and together[1] == b"0\n1\n2\n3\n4\n"
    assert r.merge.files(triples, favour="theirs") == [
        r.merge.file(*t, favour="theirs") for t in triples
    ]


def test_a_merges_objects_are_stored_and_gits_own(tmp_path: Path) -> None:
    """merge-tree writes its trees and merged files stored (zlib level 0: the loose file
    holds the bytes as they are); git reads them, and fsck finds nothing wrong."""
    base = files_commit(tmp_path / "r", {"a.txt": "".join(f"{i}\n" for i in range(200))})
    repo = tmp_path / "r"
    text = "".join(f"{i}\n" for i in range(200))
    git(repo, "checkout", "-q", "-b", "one")
    write(repo, {"a.txt": text.replace("3\n", "three\n", 1)})
    git(repo, "commit", "-qam", "one")
    git(repo, "checkout", "-q", "-b", "two", base)
    write(repo, {"a.txt": text.replace("150\n", "150!\n", 1)})
    git(repo, "commit", "-qam", "two")
    r = Repo(repo)
    one, two = git(repo, "rev-parse", "one"), git(repo, "rev-parse", "two")
    merge: TreeMerge = r.merge.trees([f"{one} {two}"], env=r.merge.hermetic())[0]
    assert merge.clean
    blob = git(repo, "rev-parse", f"{merge.tree}:a.txt")
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    data = loose.read_bytes()
    expected = text.replace("3\n", "three\n", 1).replace("150\n", "150!\n", 1)
    assert expected.encode() in data  # stored: the bytes as they are in the loose file
    assert zlib.decompress(data).split(b"\0", 1)[1] == expected.encode()
    assert git(repo, "cat-file", "blob", blob) + "\n" == expected
    git(repo, "fsck", "--strict")
