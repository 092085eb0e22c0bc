"""What check-conflicts last computed about each patch applying alone, cached by content.

series.toml's ``applies_alone`` is a record a person wrote; check-conflicts
computes the truth on the pin. The computed answer is kept in the cache
(``alone.json``), keyed by the sha256 of the patch file, so ``series show``
can print both and say when they disagree, without a merge of its own. A
changed patch file has another key: its old answer is never shown for it.
The answer is of the pin too: it is kept with the pin series.toml named
(``upstream``), and shown only while series.toml names that pin (a rebase
that moves the pin leaves unchanged the files of patches upstream did not
touch). An entry is validated on read (anything else is "not computed");
a cache that cannot be written costs only the record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from series.files import write_atomic

if TYPE_CHECKING:
    from series.manifest import Patch
    from series.project import Series

NAME = "alone.json"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


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
            data[_key(series, patch)] = {
                "applies": row["applies"],
                "pin": pin,
                "when": when,
                "upstream": series.manifest.upstream.commit,
            }
    with contextlib.suppress(OSError):  # a read-only or full cache: only not recorded
        write_atomic(path, json.dumps(data, indent=1) + "\n", within=None, durable=False)


def recall(series: Series, patch: Patch) -> dict[str, Any] | None:
    """``{applies, pin, when}`` for this exact patch file on the pin series.toml names, or
    None if never computed there."""
    found = _load(series.cache_dir / NAME).get(_key(series, patch))
    if not (
        isinstance(found, dict)
        and set(found) == {"applies", "pin", "when", "upstream"}
        and isinstance(found["applies"], bool)
        and isinstance(found["pin"], str)
        and _COMMIT.match(found["pin"]) is not None
        and isinstance(found["when"], str)
        and found["upstream"] == series.manifest.upstream.commit
    ):
        return None
    return {k: found[k] for k in ("applies", "pin", "when")}
