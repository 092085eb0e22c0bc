"""What a patch file says (``git mailinfo``, ``git apply --numstat``), kept by its content.

``series list`` and ``series show`` read every patch file's header and
diffstat; asking git costs a process per file per command (and GitPython's
import and its own ``git version`` calls on top). The answer depends on
the file's bytes and on the code that splits them, so it is kept in the
per-user cache under the sha256 of those bytes and of series' own code
(``series.code.code_digest``; ``patchinfo/<sha256>.json``): a changed file,
or a series upgraded (which may split a patch file otherwise), has another
key, so an old answer is never shown for it, and nothing needs
invalidating. A record is versioned and validated on read; one that does
not validate (another format, a truncated write, a hand edit) is asked of
git again and rewritten. A cache that cannot be written costs only speed.
git is given the bytes that were hashed (on its stdin), not the file to
read again: a file saved meanwhile, even twice in one tick of the file
system's clock keeping its size and times, never has another content's
answer kept under these bytes' key.
"""

from __future__ import annotations

import base64
import contextlib
from pathlib import Path

from series import json_text
from series.code import code_digest
from series.digests import sha256
from series.files import write_atomic

# The two modules of the git layer it uses, not series.git's names (git/names.py: every
# part, with the fetches' dataclasses and the merges' subprocess): `series list`, `show`
# and `status` read the patches' information through this module.
from series.git.ident import Ident
from series.git.mail import FileStat, MailInfo, patch_stat, read_mail
from series.plain import read_plain

TYPE_CHECKING = False  # typing is not imported at run time (only for mypy)
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
DIR = "patchinfo"


def stat(cache_dir: Path, patch: Path) -> list[FileStat]:
    """Per-file line counts of ``patch`` (as :func:`series.git.patch_stat`)."""
    data, key, record = _recall(cache_dir, patch)
    found = _stats(record.get("stat"))
    if found is None:
        found = patch_stat(patch, data)
        record["stat"] = [[s.path, s.added, s.deleted] for s in found]
        _keep(cache_dir, key, record)
    return found


def mail(cache_dir: Path, patch: Path) -> MailInfo:
    """``patch`` split as ``git am`` splits it (as :func:`series.git.read_mail`)."""
    data, key, record = _recall(cache_dir, patch)
    found = _mail(record.get("mail"))
    if found is None:
        found = read_mail(patch, data)
        record["mail"] = {
            "author": [found.author.name, found.author.email, found.author.date],
            "subject": found.subject,
            "body": found.body,
            "diff": base64.b64encode(found.diff).decode("ascii"),
        }
        _keep(cache_dir, key, record)
    return found


def _path(cache_dir: Path, key: str) -> Path:
    return cache_dir / DIR / f"{key}.json"


def _recall(cache_dir: Path, patch: Path) -> tuple[bytes, str, dict[str, Any]]:
    """The file's bytes, their key and their record (empty when there is none or it does
    not validate)."""
    data = patch.read_bytes()  # a missing file fails here, as git would
    key = sha256(code_digest() + b"\0" + data).hexdigest()
    try:
        record = json_text.loads(read_plain(_path(cache_dir, key)))  # a FIFO, a link: absent
    except (OSError, ValueError):
        return data, key, {}
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("key") != key:
        return data, key, {}
    return data, key, record


def _keep(cache_dir: Path, key: str, record: dict[str, Any]) -> None:
    """Keep ``record``, what git said of the bytes ``key`` hashes (split by the code it
    hashes), under ``key``."""
    record.update(format=FORMAT, key=key)
    # a read-only or full cache: the answer was computed, only not kept
    with contextlib.suppress(OSError):
        write_atomic(_path(cache_dir, key), json_text.dumps(record), within=None, durable=False)


def _stats(value: object) -> list[FileStat] | None:
    if not isinstance(value, list):
        return None
    stats = []
    for row in value:
        if not (
            isinstance(row, list)
            and len(row) == 3
            and isinstance(row[0], str)
            and all(n is None or (isinstance(n, int) and not isinstance(n, bool)) for n in row[1:])
        ):
            return None
        stats.append(FileStat(row[0], row[1], row[2]))
    return stats


def _mail(value: object) -> MailInfo | None:
    if not isinstance(value, dict):
        return None
    author, subject, body, diff = (value.get(k) for k in ("author", "subject", "body", "diff"))
    if not (
        isinstance(author, list)
        and len(author) == 3
        and all(isinstance(a, str) for a in author)
        and isinstance(subject, str)
        and isinstance(body, str)
        and isinstance(diff, str)
    ):
        return None
    try:
        raw = base64.b64decode(diff, validate=True)
    except ValueError:
        return None
    return MailInfo(Ident(author[0], author[1], author[2]), subject, body, raw)
