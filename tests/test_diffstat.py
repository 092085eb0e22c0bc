"""series.git.diffs.format_patches writes each diffstat itself (git is asked for the patches
with ``--no-stat --raw``): the files must be git's ``--stat=80`` ones byte for byte, for
every shape of change, and the shapes it does not lay out itself must go to git's own.

Each test makes real commits and compares ``format_patches`` with ``git format-patch``
run with the diffstat (the options series always used), and counts the processes.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from helpers import git
from series.git import Repo
from series.git import diffs as diffs_module


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "seed.txt").write_text("seed\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "seed")
    return repo


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


Ran = list[tuple[str, ...]]


def _both(repo: Path, base: str, tip: str) -> tuple[list[bytes], list[bytes], Ran]:
    """(series' files, git's files with its own diffstat, the git commands series ran)."""
    r = Repo(repo)
    ran: list[tuple[str, ...]] = []
    plain = r._run.git_bytes

    def spy(*argv: str, **kw: object) -> bytes:
        ran.append(argv)
        return plain(*argv, **kw)  # type: ignore[arg-type]

    r._run.git_bytes = spy  # type: ignore[method-assign]
    mine = r.diffs.format_patches(base, tip)
    env = r.diffs._env()
    out = plain("format-patch", f"{base}..{tip}", *diffs_module._FORMAT, env=env)
    return mine, diffs_module._split(out), [a for a in ran if a[0] == "format-patch"]


def _lines(n: int, salt: str) -> str:
    return "".join(f"line {i} {salt}\n" for i in range(n))


def test_generated_changes_give_gits_diffstat_byte_for_byte(tmp_path: Path) -> None:
    """Names short and long (cut to ``...``), one file and many, a few lines and
    thousands (the graph scaled), only added, only deleted, both, files created and
    removed, a last line without its newline: series' files are git's."""
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    rng = random.Random(23)
    names = [
        "a.py",
        "pkg/mod.py",
        "deep/" * 6 + "x.py",
        "very_long_directory_name/another_long_directory/" + "n" * 40 + ".py",
        "w" * 90 + ".txt",
        "spaced name/file with spaces.py",
        "top_level_file_with_a_fairly_long_name_indeed.py",
    ]
    present: dict[str, int] = {}
    for n in range(40):
        touched = rng.sample(names, rng.randint(1, len(names)))
        for name in touched:
            path = repo / name
            path.parent.mkdir(parents=True, exist_ok=True)
            action = rng.random()
            if name in present and action < 0.15:
                path.unlink()
                del present[name]
                continue
            size = rng.choice([1, 2, 3, 7, 30, 200, 1500])
            old = path.read_text() if path.exists() else ""
            keep = old.splitlines(keepends=True)
            rng.shuffle(keep)
            keep = keep[: rng.randint(0, len(keep))]
            text = "".join(keep) + _lines(size, f"{n}-{rng.random()}")
            if rng.random() < 0.2:
                text = text.rstrip("\n")
            path.write_text(text or "x")
            present[name] = 1
        _commit(repo, f"change {n}\n\nbody of {n}")
    tip = git(repo, "rev-parse", "HEAD")
    mine, theirs, ran = _both(repo, base, tip)
    assert len(mine) == 40
    assert mine == theirs
    assert len(ran) == 1 and "--no-stat" in ran[0]  # all laid out by series, one process


def test_widths_at_the_edges_of_the_layout(tmp_path: Path) -> None:
    """The name and graph widths where git's layout changes: a name exactly as wide as
    leaves room, one character wider, a change of 1, of 9, 10, 99, 100, 999, 1000 lines."""
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    for width in (40, 49, 50, 51, 60, 70, 73, 74, 75, 76, 80):
        for count in (1, 9, 10, 31, 32, 33, 99, 100, 999, 1000):
            name = ("d/" * (width // 4)) + "f" * (width - 2 * (width // 4))
            path = repo / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_lines(count, f"{width}-{count}"))
            (repo / "small.txt").write_text(_lines(count % 7 + 1, f"s{width}-{count}"))
            _commit(repo, f"w{width} c{count}")
    tip = git(repo, "rev-parse", "HEAD")
    mine, theirs, ran = _both(repo, base, tip)
    assert mine == theirs
    assert len(ran) == 1


@pytest.mark.parametrize(
    "shape",
    ["rename", "binary", "mode", "empty file", "symlink", "non-ascii name", "quoted name"],
)
def test_shapes_it_does_not_lay_out_are_gits_own(tmp_path: Path, shape: str) -> None:
    """A rename, a binary file, a mode change, an empty file, a link, a name git quotes:
    format-patch is asked again with its own diffstat, and the files are git's."""
    repo = _repo(tmp_path)
    (repo / "big.py").write_text(_lines(50, "big"))
    _commit(repo, "before")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "other.py").write_text(_lines(3, "o"))
    _commit(repo, "a plain one first")
    if shape == "rename":
        git(repo, "mv", "big.py", "moved.py")
    elif shape == "binary":
        (repo / "blob.bin").write_bytes(bytes(range(256)) * 4)
    elif shape == "mode":
        (repo / "big.py").chmod(0o755)
    elif shape == "empty file":
        (repo / "empty.txt").write_text("")
    elif shape == "symlink":
        (repo / "link").symlink_to("big.py")
    elif shape == "non-ascii name":
        (repo / "caf\u00e9.py").write_text("x\n")
    else:
        (repo / 'say "hi".py').write_text("x\n")
    _commit(repo, shape)
    tip = git(repo, "rev-parse", "HEAD")
    mine, theirs, ran = _both(repo, base, tip)
    assert mine == theirs
    assert len(ran) == 2 and "--stat=80" in ran[1]


def test_a_message_that_quotes_raw_lines_and_a_diff(tmp_path: Path) -> None:
    """A commit that changes nothing whose message ends in what looks like raw lines and
    a diff, and one that changes a file with such a message: the stat is git's (none for
    the first), the message's lines are not taken for the commit's."""
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    fake = (
        "quoted\n\n"
        ":100644 100644 1111111 2222222 M\tseed.txt\n\n"
        "diff --git a/seed.txt b/seed.txt\n"
        "index 1111111..2222222 100644\n--- a/seed.txt\n+++ b/seed.txt\n"
        "@@ -1 +1 @@\n-seed\n+seed\n"
    )
    _commit(repo, fake)
    (repo / "seed.txt").write_text("seed\nmore\n")
    _commit(repo, fake)
    _commit(repo, "plain empty")
    tip = git(repo, "rev-parse", "HEAD")
    mine, theirs, ran = _both(repo, base, tip)
    assert mine == theirs
    assert b" seed.txt | 2 +-" not in mine[0] and b" seed.txt | 1 +\n" in mine[1]
    assert len(ran) == 1


def test_a_range_that_is_not_a_line_is_gits_own(tmp_path: Path) -> None:
    """base..tip across a merge: the trees cannot be walked commit by commit, git lays out."""
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "s.txt").write_text("s\n")
    _commit(repo, "side")
    git(repo, "checkout", "-q", "main")
    (repo / "m.txt").write_text("m\n")
    _commit(repo, "main")
    subprocess.run(["git", "merge", "-q", "--no-edit", "side"], cwd=repo, check=True)
    tip = git(repo, "rev-parse", "HEAD")
    mine, theirs, ran = _both(repo, base, tip)
    assert mine == theirs
    assert len(ran) == 2


def test_a_range_cut_in_pieces_gives_the_ranges_files_and_a_wrong_cut_is_not_taken(
    tmp_path: Path,
) -> None:
    """format_patches with ``cuts`` (the rebase's end: each piece format-patched by its own
    process, at once) writes the very files of the range in one piece, with git's own
    diffstats; a cut that is not on the line (or not where its piece says) is not taken:
    the range is asked again in one piece, and the files are the same."""
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    commits = []
    for k in range(5):
        (repo / f"f{k % 2}.txt").write_text(_lines(20 + k, f"v{k}"))
        if k == 3:
            (repo / "seed.txt").unlink()
        commits.append(_commit(repo, f"change {k}"))
    git(repo, "branch", "side", commits[1])
    git(repo, "checkout", "-q", "side")
    (repo / "off.txt").write_text("off the line\n")
    off = _commit(repo, "off the line")
    tip = commits[-1]
    _, theirs, _ = _both(repo, base, tip)
    r = Repo(repo)
    for cuts in ([commits[1]], [commits[0], commits[3]], [off], [commits[3], commits[1]]):
        assert r.diffs.format_patches(base, tip, cuts) == theirs, cuts


def test_patches_applied_in_pieces_at_once_give_each_piece_its_tree(tmp_path: Path) -> None:
    """Index.apply_pieces: each piece's patches applied on its own tree, at once; a piece
    that does not apply answers None, the other its tree."""
    repo = _repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    commits = []
    for k in range(4):
        (repo / f"f{k % 2}.txt").write_text(_lines(30, f"v{k}"))
        commits.append(_commit(repo, f"change {k}"))
    r = Repo(repo)
    files = []
    for k, data in enumerate(r.diffs.format_patches(base, commits[-1])):
        path = tmp_path / f"{k}.patch"
        path.write_bytes(data)
        files.append(path)
    tree = [git(repo, "rev-parse", f"{c}^{{tree}}") for c in [base, *commits]]
    assert r.index.apply_pieces([(tree[0], files[:2]), (tree[2], files[2:])]) == [
        tree[2],
        tree[4],
    ]
    assert r.index.apply_pieces([(tree[0], files[2:]), (tree[2], files[2:])]) == [None, tree[4]]
