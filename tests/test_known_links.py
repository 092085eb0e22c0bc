"""What series.known takes of a record only where no path it names goes through a link.

``known.recall`` stands in for the parse of series.toml only when the
checkout and every patch file lead from the project to themselves as
written: a symbolic link, "..", "./" or an empty part anywhere is the
parse's to judge. That was ``os.path.realpath`` of each (every directory
above the project looked at again for every patch); it is now one
``lstat`` per part (``known._plain_path``). These tests hold it to what
``realpath`` took, on real links, and through ``recall`` itself.
"""

from __future__ import annotations

import os
from pathlib import Path

from series import known


def _tree(tmp_path: Path) -> Path:
    """A project with each kind of path a record may name; returns its root."""
    root = tmp_path / "project"
    (root / "patches").mkdir(parents=True)
    (root / "work").mkdir()
    (root / "patches" / "a.patch").write_text("a\n")
    (root / "patches" / "b.patch").symlink_to("a.patch")  # a file linked
    (root / "linked").symlink_to("patches")  # a directory linked
    (root / "outside").symlink_to(tmp_path)  # out of the project
    (root / "loop").symlink_to("loop")  # a link that leads back to itself
    return root


VALUES = [
    "work",
    "patches/a.patch",
    "patches/missing.patch",
    "missing/a.patch",
    "patches/a.patch/below",  # a file where a directory would be
    "patches/b.patch",
    "linked/a.patch",
    "outside/project/patches/a.patch",
    "patches/../patches/a.patch",
    "./work",
    "patches//a.patch",
    "patches/a.patch/",
    "/etc/passwd",
    "loop/a.patch",
    "loop",
]


def _realpath_takes(root: Path, value: str) -> bool:
    """What recall took before: the realpath of the path is the path as written."""
    return os.path.realpath(root / value) == os.path.join(os.path.realpath(root), value)


def test_a_path_is_taken_only_where_realpath_took_it(tmp_path: Path) -> None:
    """Each value, from the project and from a link to it: taken exactly where realpath
    took it, but for the two refused more strictly (an absolute path, a link to itself);
    nothing realpath refused is taken."""
    root = _tree(tmp_path)
    (tmp_path / "via").symlink_to(root)
    stricter = {"/etc/passwd", "loop/a.patch", "loop"}
    for where in (root, tmp_path / "via"):
        links: dict[str, bool] = {}
        real_root = os.path.realpath(where)
        for value in VALUES:
            taken = known._plain_path(real_root, value, links)
            was = _realpath_takes(where, value)
            assert taken == (was and value not in stricter), (where, value)
    plain = {"work", "patches/a.patch", "patches/missing.patch", "missing/a.patch"}
    assert {v for v in VALUES if known._plain_path(str(root), v, {})} == plain | {
        "patches/a.patch/below"
    }


def test_a_record_naming_a_linked_patch_is_not_recalled(tmp_path: Path) -> None:
    """The record kept for series.toml's bytes is recalled while its paths are plain, and
    not once the patch file, or the directory of the patches, is a link."""
    root = _tree(tmp_path)
    cache = tmp_path / "cache"
    text = b'[series]\nbranch = "series"\n'
    (root / "series.toml").write_bytes(text)
    record = known.Known("work", "series", (("P1", "patches/a.patch"),))
    known.keep(root, cache, text, record)
    assert known.recall(root, cache) == record
    for value in ("patches/b.patch", "linked/a.patch"):
        other = known.Known("work", "series", (("P1", value),))
        known.keep(root, cache, text, other)
        assert known.recall(root, cache) is None, value
    (root / "patches" / "c.patch").write_text("c\n")
    moved = known.Known("work", "series", (("P1", "patches/c.patch"),))
    known.keep(root, cache, text, moved)
    assert known.recall(root, cache) == moved
    os.rename(root / "patches", root / "real")
    (root / "patches").symlink_to("real")
    assert known.recall(root, cache) is None
