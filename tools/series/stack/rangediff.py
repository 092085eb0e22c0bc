"""How each patch changed between two versions of the series, as ``git range-diff`` shows it.

Two versions of one patch are compared by their diffs (each commit against
its parent), and put in one of three classes that ``series rebase`` and
``series range-diff`` share:

* ``unchanged``: the same lines added and removed, with the same context
  (only line numbers and blob ids moved);
* ``context only``: the same lines added and removed, but the lines
  around them changed (upstream edited nearby);
* ``content changed``: the patch adds or removes other lines.

The per-patch text is ``git range-diff``'s own (``git range-diff A^! B^!``),
so it reads like range-diff output everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from series.git import Repo

UNCHANGED = "unchanged"
CONTEXT = "context only"
CONTENT = "content changed"


@dataclass(frozen=True)
class Shape:
    changes: tuple[str, ...]  # file headers and +/- lines
    context: tuple[str, ...]  # file headers and context lines


def shape(diff: bytes) -> Shape:
    changes: list[str] = []
    context: list[str] = []
    for raw in diff.decode("utf-8", "surrogateescape").splitlines():
        if raw.startswith(("diff --git", "index ", "@@")):
            if raw.startswith("diff --git"):
                changes.append(raw)
                context.append(raw)
            continue
        if raw.startswith(("+++", "---")):
            continue
        if raw.startswith(("+", "-")):
            changes.append(raw)
        elif raw.startswith(" "):
            context.append(raw)
    return Shape(tuple(changes), tuple(context))


def classify_diffs(old: bytes, new: bytes) -> str:
    a, b = shape(old), shape(new)
    if a.changes != b.changes:
        return CONTENT
    return UNCHANGED if a.context == b.context else CONTEXT


def classify(repo: Repo, old: str, new: str) -> str:
    """The class of the change from commit ``old`` to commit ``new`` (each against its parent)."""
    return classify_diffs(_diff(repo, old), _diff(repo, new))


def _diff(repo: Repo, commit: str) -> bytes:
    return repo.diff_trees(f"{commit}^", commit)


def range_diff(repo: Repo, old: str, new: str) -> str:
    """``git range-diff`` of one commit against another: the form reviewers know."""
    return repo.range_diff(f"{old}^!", f"{new}^!")
