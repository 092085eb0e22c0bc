"""Remembering an upstream that did not answer, and the network's patience.

With ``upstream.source = "auto"`` a git remote that cannot be reached
(GitHub from an offline machine) would cost every command the same wait
before falling back to the sdist. The failure is remembered in the cache
(``unreachable/<hash of the URL>``) for ``SERIES_UNREACHABLE_TTL`` seconds
(default 600); meanwhile ``auto`` goes straight to the sdist and says so.
``SERIES_RETRY_UPSTREAM=1`` (or ``--source git``) tries the remote now.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from series import json_text
from series.digests import sha256
from series.files import write_atomic
from series.git.run import net_timeout  # not the remote part: range-diff loads none
from series.plain import read_plain

_NETWORK = re.compile(
    r"unable to access|Could not resolve|Connection (refused|timed out|reset)|"
    r"Operation timed out|too slow|no answer|Failed to connect|Network is unreachable|"
    r"Could not read from remote",
    re.IGNORECASE,
)


def stall() -> int:
    """Seconds without data before a network operation gives up (SERIES_NET_TIMEOUT)."""
    return net_timeout()


def ttl() -> int:
    try:
        return max(0, int(os.environ.get("SERIES_UNREACHABLE_TTL", "600")))
    except ValueError:
        return 600


def network_failure(stderr: str) -> bool:
    return bool(_NETWORK.search(stderr))


def _stamp(cache_dir: Path, url: str) -> Path:
    return cache_dir / "unreachable" / sha256(url.encode()).hexdigest()[:16]


def advice(seconds: int) -> str:
    return (
        f"Remembered for {seconds // 60 or 1} min: until then series uses the sdist "
        "without trying; SERIES_RETRY_UPSTREAM=1 (or --source git) tries git now."
    )


def remember(cache_dir: Path, url: str, error: str) -> int:
    seconds = ttl()
    if seconds:
        data = {"url": url, "when": time.time(), "error": error}
        write_atomic(
            _stamp(cache_dir, url), json_text.dumps(data) + "\n", within=None, durable=False
        )
    return seconds


def forget(cache_dir: Path, url: str) -> None:
    _stamp(cache_dir, url).unlink(missing_ok=True)


def recall(cache_dir: Path, url: str) -> str | None:
    """Why ``url`` is remembered as unreachable, or None (try it)."""
    if os.environ.get("SERIES_RETRY_UPSTREAM"):
        return None
    try:
        data = json_text.loads(read_plain(_stamp(cache_dir, url)))
        age = time.time() - float(data["when"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    left = ttl() - age
    if age < 0 or left <= 0:
        return None
    return (
        f"{url} was unreachable {int(age) // 60} min {int(age) % 60} s ago "
        f"({data.get('error', '?')}); not trying again for {int(left)} s. "
        "SERIES_RETRY_UPSTREAM=1 (or --source git) tries git now."
    )
