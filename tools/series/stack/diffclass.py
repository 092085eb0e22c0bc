"""How a patch changed between two versions: unchanged, context only, or content changed.

What ``series range-diff`` (series.stack.rangediff) says of each patch, and
the rebase's summary (series.stack.rebase_finish) of each patch it moved,
from the two diffs alone: in a module of its own, so that the rebase's end
loads none of range-diff's builds.
"""

from __future__ import annotations

from series.records import NamedTuple

UNCHANGED = "unchanged"
CONTEXT = "context only"
CONTENT = "content changed"


class Shape(NamedTuple):
    changes: tuple[str, ...]  # file headers and +/- lines
    context: tuple[str, ...]  # file headers and context lines


def shape(diff: bytes) -> Shape:
    """The file headers and +/- lines, and the file headers and context lines, of ``diff``
    (``+++``/``---`` lines, ``index`` and ``@@`` lines left out). Dispatched on each
    line's first character: a rebase's summary shapes every patch upstream moved."""
    changes: list[str] = []
    context: list[str] = []
    for raw in diff.decode("utf-8", "surrogateescape").splitlines():
        first = raw[:1]
        if first == "+" or first == "-":
            if not raw.startswith(("+++", "---")):
                changes.append(raw)
        elif first == " ":
            context.append(raw)
        elif first == "d" and raw.startswith("diff --git"):
            changes.append(raw)
            context.append(raw)
    return Shape(tuple(changes), tuple(context))


def classify_diffs(old: bytes, new: bytes) -> str:
    a, b = shape(old), shape(new)
    if a.changes != b.changes:
        return CONTENT
    return UNCHANGED if a.context == b.context else CONTEXT
