"""What check-conflicts last computed about each patch applying alone, cached by content.

series.toml's ``applies_alone`` is a record a person wrote; check-conflicts
computes the truth on the pin. The computed answer is kept in the cache
(``alone.json``), keyed by the sha256 of the patch file, so ``series show``
can print both and say when they disagree, without a merge of its own. A
changed patch file has another key: its old answer is never shown for it.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from series.files import write_atomic

if TYPE_CHECKING:
    from series.manifest import Patch
    from series.project import Series

NAME = "alone.json"


def _key(series: Series, patch: Patch) -> str:
    return hashlib.sha256(series.patch_path(patch).read_bytes()).hexdigest()


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(series: Series, pin: str, matrix: dict[str, Any] | None) -> None:
    if not matrix:
        return
    path = series.cache_dir / NAME
    data = _load(path)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    by_id = {p.id: p for p in series.manifest.patches}
    for row in matrix["alone"]:
        patch = by_id.get(row["id"])
        if patch is not None and series.patch_path(patch).is_file():
            data[_key(series, patch)] = {"applies": row["applies"], "pin": pin, "when": when}
    write_atomic(path, json.dumps(data, indent=1) + "\n", within=None, durable=False)


def recall(series: Series, patch: Patch) -> dict[str, Any] | None:
    """``{applies, pin, when}`` for this exact patch file, or None if never computed."""
    found = _load(series.cache_dir / NAME).get(_key(series, patch))
    return found if isinstance(found, dict) else None
