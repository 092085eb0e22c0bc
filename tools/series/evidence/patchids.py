"""Patch-ids of commits, kept in the per-user cache by commit id.

The patch-id evidence (series.evidence.find) reads the diff of every
upstream commit since the pin that touches the series' files: at 5,000
upstream commits, seconds of ``git log -p``. A commit's ``patch-id
--stable`` depends on the commit alone (its id names its tree and its
parent's), so it is kept under ``patchids/<first two hex digits>.json``
in the cache and read back instead of asked again. A record is versioned
and validated on read: a file of another format, truncated or edited by
hand counts as empty, and its ids are asked of git again and rewritten.
A cache that cannot be written costs only speed.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from series.files import write_atomic

FORMAT = 1
DIR = "patchids"
_SHA = re.compile(r"^[0-9a-f]{40}$")


def recall(cache_dir: Path, commits: Iterable[str]) -> dict[str, str]:
    """commit -> patch-id, for those of ``commits`` the cache holds."""
    found: dict[str, str] = {}
    shards: dict[str, dict[str, str]] = {}
    for commit in commits:
        shard = commit[:2]
        if shard not in shards:
            shards[shard] = _read(cache_dir, shard)
        pid = shards[shard].get(commit)
        if pid is not None:
            found[commit] = pid
    return found


def keep(cache_dir: Path, ids: Mapping[str, str]) -> None:
    """Add ``ids`` (commit -> patch-id) to the cache."""
    by_shard: dict[str, dict[str, str]] = {}
    for commit, pid in ids.items():
        if _SHA.match(commit) and _SHA.match(pid):
            by_shard.setdefault(commit[:2], {})[commit] = pid
    for shard, new in by_shard.items():
        record = {**_read(cache_dir, shard), **new}
        data = json.dumps({"format": FORMAT, "ids": record}, sort_keys=True)
        with contextlib.suppress(OSError):  # a read-only or full cache: only not kept
            write_atomic(_path(cache_dir, shard), data, within=None, durable=False)


def _path(cache_dir: Path, shard: str) -> Path:
    return cache_dir / DIR / f"{shard}.json"


def _read(cache_dir: Path, shard: str) -> dict[str, str]:
    """The ids of one shard; empty when there is none or it does not validate."""
    try:
        record = json.loads(_path(cache_dir, shard).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return {}
    ids = record.get("ids")
    if not isinstance(ids, dict):
        return {}
    valid = all(
        isinstance(c, str) and isinstance(p, str) and _SHA.match(c) and c.startswith(shard)
        and _SHA.match(p)
        for c, p in ids.items()
    )  # fmt: skip
    return ids if valid else {}
