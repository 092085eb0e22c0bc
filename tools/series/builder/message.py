"""Commit messages of the stack: the ``Series-Id`` trailer that ties a commit to its entry.

``series apply`` writes exactly one ``Series-Id: <id>`` trailer into every
commit it makes, and ``series export`` maps commits back to manifest
entries by it, so an amended, reworded or reordered commit keeps its
identity.
"""

from __future__ import annotations

import re

TRAILER = "Series-Id"
_TRAILER = re.compile(rf"^{TRAILER}:\s*(\S+)\s*$", re.MULTILINE)


def series_id(message: str) -> str | None:
    found = _TRAILER.findall(message)
    return found[-1] if found else None


PART_TRAILER = "Partly-Upstream"


def with_parts(message: str, parts: list[tuple[str, str]]) -> str:
    """The message with a ``Partly-Upstream: <commit> (<what it took>)`` trailer per part.

    Written by ``series rebase`` when upstream took part of the patch; they
    go right before the ``Series-Id`` trailer, which stays last. A part
    already named is not named twice.
    """
    pid = series_id(message)
    body = _TRAILER.sub("", message).rstrip()
    lines = [f"{PART_TRAILER}: {commit} ({took})" for commit, took in parts]
    lines = [line for line in lines if line not in body.splitlines()]
    if not lines:
        return message
    paragraphs = body.split("\n\n")
    last = paragraphs[-1].splitlines() if len(paragraphs) > 1 else []
    is_trailer_block = bool(last) and all(re.match(r"^[A-Za-z0-9-]+: ", ln) for ln in last)
    body += ("\n" if is_trailer_block else "\n\n") + "\n".join(lines)
    return with_trailer(body, pid) if pid else body + "\n"


def with_trailer(message: str, patch_id: str) -> str:
    """The message with exactly one ``Series-Id`` trailer, naming ``patch_id``."""
    body = _TRAILER.sub("", message).rstrip()
    paragraphs = body.split("\n\n")
    last = paragraphs[-1].splitlines() if len(paragraphs) > 1 else []
    is_trailer_block = bool(last) and all(re.match(r"^[A-Za-z0-9-]+: ", ln) for ln in last)
    sep = "\n" if is_trailer_block else "\n\n"
    return f"{body}{sep}{TRAILER}: {patch_id}\n"
