"""series.toml's text as ``tomllib`` reads it, kept in the per-user cache by that text.

Almost every command parses the manifest, and ``series range-diff`` parses two
(the current one and the earlier version's); importing ``tomllib`` and reading
the text with it cost a fifth of such a run (issue 23). What ``tomllib``
answers is a function of the text alone (and of the Python that reads it),
so it is kept, as JSON, under a digest of those (``manifests/<digest>``),
and a later parse of the same text takes it from there instead of asking
``tomllib``. Only the text -> tables step is skipped: series.manifest
validates what it gets exactly as it validates ``tomllib``'s answer (every
type, every key, the paths in the project, the patch files on the disk), so
a manifest refused today is refused with the same words, and one accepted
gives the same records.

Kept only for a text whose tables ``tomllib`` gave and series.manifest
accepted, and only when JSON gives back exactly those tables (strings,
integers, booleans, lists and tables: what a valid manifest holds; a date
or a float is never kept). An entry is versioned, names the digest of the
text it is of, and is sealed with the blake2b of what it holds; it is taken
only from a file of this user that no one else may write (a cache shared
by mistake), with its format, its digest and its seal right. Anything else
(no entry, a damaged one, another Python) is ``tomllib`` again. A cache
that cannot be written costs only speed. The entries are named by content:
a text edited has another name, nothing needs invalidating, and ``series
cache clean`` removes them (and keeps none itself: series.project's
``keep_parse``). No entry is written in a cache that is the project, holds
it or lies in it (where ``series cache clean`` refuses to clean).
"""

from __future__ import annotations

import os
import sys
from _blake2 import blake2b

from series import json_text
from series.plain import read_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

FORMAT = 1
DIR = "manifests"
TEMP_PREFIX = ".series-tmp-"  # series.files.TEMP_PREFIX: what a killed run's leftovers are


def _digest(text: str) -> str:
    """The name of ``text``'s entry: its bytes, the format and the Python (its tomllib)."""
    return blake2b(f"{FORMAT}\0{sys.version}\0{text}".encode(), digest_size=32).hexdigest()


def _seal(digest: str, data: str) -> str:
    return blake2b(f"{digest}\0{data}".encode(), digest_size=32).hexdigest()


def recall(cache_dir: Path, text: str) -> dict[str, Any] | None:
    """The tables ``tomllib`` read from ``text`` when that was kept; else None."""
    digest = _digest(text)
    try:
        entry = json_text.loads(read_plain(os.path.join(cache_dir, DIR, digest), mine=True))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or set(entry) != {"format", "digest", "data", "seal"}:
        return None
    data = entry["data"]
    if entry["format"] != FORMAT or entry["digest"] != digest or not isinstance(data, str):
        return None
    if entry["seal"] != _seal(digest, data):
        return None
    try:
        tables = json_text.loads(data)
    except ValueError:
        return None
    return tables if isinstance(tables, dict) else None


def keep(cache_dir: Path, text: str, tables: dict[str, Any], root: Path) -> None:
    """Keep ``tables``, what ``tomllib`` read from ``text`` and series.manifest accepted,
    when JSON gives them back exactly; nothing when it would not, or cannot be written,
    or the cache is the project ``root``, holds it or lies in it (a cache set there by
    mistake: what ``series cache clean`` refuses, and must not write in the project)."""
    if not _plain(tables) or _entangled(str(cache_dir), str(root)):
        return
    data = json_text.dumps(tables, ensure_ascii=False, separators=(",", ":"))
    digest = _digest(text)
    entry = json_text.dumps(
        {"format": FORMAT, "digest": digest, "data": data, "seal": _seal(digest, data)}
    )
    where = os.path.join(cache_dir, DIR)
    tmp = os.path.join(where, f"{TEMP_PREFIX}{os.getpid()}-{digest[:16]}")
    try:
        os.makedirs(where, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(entry)
        os.replace(tmp, os.path.join(where, digest))
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            return


def _plain(value: object) -> bool:
    """Whether ``value`` is made of what JSON gives back as it is: strings, integers,
    booleans, lists and tables with string keys (no float, date or time)."""
    if isinstance(value, str | bool | int):
        return True
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _entangled(cache: str, root: str) -> bool:
    """Whether the directories ``cache`` and ``root`` are one, or one holds the other."""
    cache, root = os.path.realpath(cache), os.path.realpath(root)
    return cache == root or root.startswith(cache + os.sep) or cache.startswith(root + os.sep)
