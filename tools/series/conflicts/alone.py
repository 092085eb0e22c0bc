"""What check-conflicts last computed about each patch applying alone, cached by content.

series.toml's ``applies_alone`` is a record a person wrote; check-conflicts
computes the truth on the pin. The computed answer is kept in the cache
(``alone.json``), keyed by the sha256 of the patch file, so ``series show``
can print both and say when they disagree, without a merge of its own. A
changed patch file has another key: its old answer is never shown for it.
The key of an answer is of the bytes that were merged (the stack was built
from the bytes series.builder.memo read once, ``Stacked.data``), never of
the file read again after the run: a file saved during check-conflicts is
not given the answer about the bytes it held before.
The answer is of the pin too: it is kept with the pin series.toml named
(``upstream``), and shown only while series.toml names that pin (a rebase
that moves the pin leaves unchanged the files of patches upstream did not
touch). An entry is validated on read (anything else is "not computed");
a cache that cannot be written costs only the record.
"""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path

from series import json_text
from series.digests import sha256
from series.files import write_atomic
from series.plain import read_plain

TYPE_CHECKING = False  # typing is not imported at run time: `series show` reads this
if TYPE_CHECKING:
    from typing import Any

    from series.manifest import Patch
    from series.project import Series

NAME = "alone.json"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _key(data: bytes) -> str:
    return sha256(data).hexdigest()


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json_text.loads(read_plain(path))  # a FIFO, a link: none kept
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(
    series: Series, pin: str, matrix: dict[str, Any] | None, merged: dict[str, bytes]
) -> None:
    """Keep each answer of ``matrix`` under the bytes of the patch file it is of
    (``merged``: patch id -> the bytes the stack was built from)."""
    if not matrix:
        return
    path = series.cache_dir / NAME
    data = _load(path)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for row in matrix["alone"]:
        these = merged.get(row["id"])
        if these is not None:
            data[_key(these)] = {
                "applies": row["applies"],
                "pin": pin,
                "when": when,
                "upstream": series.manifest.upstream.commit,
            }
    with contextlib.suppress(OSError):  # a read-only or full cache: only not recorded
        write_atomic(path, json_text.dumps(data, indent=1) + "\n", within=None, durable=False)


def recall(series: Series, patch: Patch) -> dict[str, Any] | None:
    """``{applies, pin, when}`` for this exact patch file on the pin series.toml names, or
    None if never computed there."""
    try:
        these = series.patch_path(patch).read_bytes()
    except OSError:
        return None
    found = _load(series.cache_dir / NAME).get(_key(these))
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
