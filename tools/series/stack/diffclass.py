"""How a patch changed between two versions: unchanged, context only, or content changed.

What ``series range-diff`` (series.stack.rangediff) says of each patch, and
the rebase's summary (series.stack.rebase_finish) of each patch it moved,
from the two diffs alone: in a module of its own, so that the rebase's end
loads none of range-diff's builds.
"""

from __future__ import annotations

from series.records import NamedTuple

TYPE_CHECKING = False  # typing is not imported (a range-diff kept answer's path)
if TYPE_CHECKING:
    from collections.abc import Mapping

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


_PATHS = 1000  # at most this many paths on diff-tree's command line


def differing_files(raw: Mapping[str, bytes], pairs: list[tuple[str, str]]) -> list[str]:
    """The files whose raw line (``diff-tree --raw``, by commit in ``raw``) differs
    between the two commits of some pair; none (meaning every file) where a path is
    quoted or there are too many for one command line. What range-diff and the rebase's
    summary diff of a pair of patches that changed.

    A file with the same raw line (modes, blob ids, status, path) in both commits of a
    pair has the same part in both diffs: leaving it out of both leaves the comparison of
    :func:`classify_diffs` as it was (each file's part starts with its ``diff --git``
    line, in the changes and in the context alike), and the diffs to read small (a
    rebase's upstream moves a few files under the patches, not all they touch).
    """
    paths: set[str] = set()
    for was, now in pairs:
        for line in set(raw[was].splitlines()) ^ set(raw[now].splitlines()):
            path = line.split(b"\t", 1)[-1].decode("utf-8", "surrogateescape")
            if path.startswith('"'):
                return []
            paths.add(path)
    return sorted(paths) if len(paths) <= _PATHS else []
