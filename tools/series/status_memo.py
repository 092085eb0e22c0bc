"""What ``series status`` last worked out about a checkout, kept until a cheap check fails.

Working out the checkout's state takes a dozen git processes (the state
blob, the branch's commits, the stack rebuilt from patches/ to find
drift), and their answer changes only when series.toml, a patch file, a
ref or the index of the checkout does. So the report is kept in the
per-user cache (``status/<sha256 of the checkout's path>.json``), keyed by
a digest of exactly those: the bytes of series.toml and of every patch
file it names, and the refs and index as the checkout's ``.git`` holds
them (series.git.files_key, read from files, no git started), and series'
own code (series.code.code_digest: an upgraded series works it out
again, as apply and export verify again). When the
key matches, that report stands and only what the key cannot see is
asked of git: the uncommitted changes (one ``git status``). A report is
kept only when it is quiet: no rebase in progress, no move of the files
cut short (their reports depend on the work tree), and drift known (an
unknown drift waits for the cache, which the digest does not see). The record is
versioned and validated on read; anything else is worked out again.
Deleting the cache deletes the record with the memoised stack it relied on.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from series import json_text
from series.code import code_digest
from series.digests import sha256
from series.files import write_atomic
from series.git.refs import files_key  # not series.git's names: every part of the layer
from series.plain import read_plain

TYPE_CHECKING = False  # typing is not imported at run time (only for mypy)
if TYPE_CHECKING:
    from typing import Any

    from series.project import Series

FORMAT = 1
DIR = "status"
KEYS = frozenset(
    {
        "format",
        "pin",
        "checkout",
        "patches",
        "unexported",
        "uncommitted",
        "drift",
        "interrupted_move",
        "rebase",
        "backups",
        "replaced",
        "grafted",
        "next",
    }
)


def key(series: Series, checkout_path: Path, branch: str) -> str | None:
    """The digest of everything a quiet report depends on, or None when it cannot be told."""
    refs = files_key(checkout_path)
    if refs is None:
        return None
    digest = sha256(f"{FORMAT}\0{checkout_path}\0{branch}\0{refs}".encode())
    digest.update(code_digest())
    try:
        digest.update((series.root / "series.toml").read_bytes())
        for patch in series.manifest.patches:
            path = series.patch_path(patch)
            digest.update(f"\0{patch.file}\0".encode() + sha256(path.read_bytes()).digest())
    except OSError:
        return None
    return digest.hexdigest()


def recall(series: Series, checkout_path: Path, digest: str | None) -> dict[str, Any] | None:
    """The report kept under ``digest``, validated, or None."""
    if digest is None:
        return None
    try:  # a plain file only: a FIFO put in its place would make ``open`` wait for ever
        record = json_text.loads(read_plain(_path(series, checkout_path)))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    report = record.get("report")
    if record.get("key") != digest or not _valid(report):
        return None
    assert isinstance(report, dict)
    return report


def keep(series: Series, checkout_path: Path, digest: str | None, report: dict[str, Any]) -> None:
    """Keep a quiet report under ``digest`` (a cache that cannot be written costs only speed)."""
    quiet = report["rebase"] is None and not report["interrupted_move"]
    # drift unknown: the base is not in the cache yet, which the digest does not see
    if digest is None or not quiet or not (report["drift"] or {}).get("known"):
        return
    record = {"format": FORMAT, "key": digest, "report": report}
    with contextlib.suppress(OSError):
        write_atomic(
            _path(series, checkout_path), json_text.dumps(record), within=None, durable=False
        )


def _path(series: Series, checkout_path: Path) -> Path:
    name = sha256(str(checkout_path).encode()).hexdigest()
    return series.cache_dir / DIR / f"{name}.json"


def _valid(report: object) -> bool:
    if not isinstance(report, dict) or set(report) != KEYS:
        return False
    checkout, drift = report["checkout"], report["drift"]
    lists = ("patches", "unexported", "uncommitted", "backups", "replaced", "grafted")
    return (
        isinstance(checkout, dict)
        and isinstance(drift, dict)
        and drift.get("known") is True
        and all(isinstance(report[k], list) for k in lists)
        and report["rebase"] is None
        and report["interrupted_move"] is False
        and all(isinstance(p, dict) and isinstance(p.get("id"), str) for p in report["patches"])
    )
