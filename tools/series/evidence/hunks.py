"""A patch's diff cut into units git can apply one at a time: one per hunk.

The remainder engine (series.evidence.remainder) asks git, for every hunk
of a patch on its own, whether the new upstream holds it; git applies and
merges, this module only cuts. A diff of ``git diff-tree -p --full-index
--binary --no-renames`` is cut per file at ``diff --git`` and, for a file
that is modified in place, per ``@@`` hunk: each unit keeps the file's
header, so it is a patch ``git apply`` takes as it is. Hunk ``-a,b`` line
numbers count from the file before the patch, so a single hunk applies
alone to the patch's parent at exactly its place. A file that is added,
deleted, binary or changes only its mode is one unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_WHOLE = (b"new file mode", b"deleted file mode", b"GIT binary patch", b"Binary files")


@dataclass(frozen=True)
class Unit:
    """One hunk of one file (or a whole file), as a patch of its own."""

    path: str
    header: str  # "@@ -a,b +c,d @@ ..." or "whole file"
    old: tuple[int, int]  # (start, count) in the file before the patch; (0, 0) for a whole file
    diff: bytes

    @property
    def label(self) -> str:
        if self.old == (0, 0):
            return f"{self.path} (whole file)"
        start, count = self.old
        return f"{self.path}:{start}-{start + max(count, 1) - 1}"


def split(diff: bytes) -> list[Unit]:
    """The units of ``diff``, file by file, hunk by hunk, in order."""
    units: list[Unit] = []
    for section in _files(diff):
        units.extend(_units(section))
    return units


def _files(diff: bytes) -> list[list[bytes]]:
    sections: list[list[bytes]] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(b"diff --git "):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
    return sections


def _path(section: list[bytes]) -> str:
    for line in section:
        if line.startswith(b"+++ b/"):
            return line[6:].rstrip(b"\n").decode("utf-8", "surrogateescape")
        if line.startswith(b"--- a/"):
            return line[6:].rstrip(b"\n").decode("utf-8", "surrogateescape")
    head = section[0].rstrip(b"\n").decode("utf-8", "surrogateescape")
    return head.split(" b/", 1)[-1]


def _units(section: list[bytes]) -> list[Unit]:
    path = _path(section)
    first = next((i for i, line in enumerate(section) if line.startswith(b"@@")), None)
    head = section[: first if first is not None else len(section)]
    if first is None or any(line.startswith(_WHOLE) for line in head):
        return [Unit(path, "whole file", (0, 0), b"".join(section))]
    # the index line names the whole file's blobs: a single hunk must not claim them
    head = [line for line in head if not line.startswith(b"index ")]
    units: list[Unit] = []
    body: list[bytes] = []
    for line in [*section[first:], b"@@"]:
        if line.startswith(b"@@") and body:
            match = _HUNK.match(body[0])
            assert match is not None
            start, count = int(match.group(1)), int(match.group(2) or 1)
            header = body[0].rstrip(b"\n").decode("utf-8", "surrogateescape")
            units.append(Unit(path, header, (start, count), b"".join(head + body)))
            body = []
        body.append(line)
    return units
