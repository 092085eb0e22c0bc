"""The series as merge inputs: one node per patch that applied, on the pin.

``Stacked`` is what the merge jobs of check-conflicts and of rebase, and
the evidence engine, read of a stack: its pin, a step per patch (status,
commit), the nodes (pin first) and the files each patch changes. Built by
series.conflicts.pinstack from the stack on its pin, and by
series.stack.rebase from the commits it replays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from series.manifest import Patch
from series.merge.merger import Node


@dataclass(frozen=True)
class PinStep:
    patch: Patch
    status: str  # clean | empty | conflict | not-checked
    commit: str | None = None
    three_way: bool = False
    files: tuple[str, ...] = ()  # conflicted files, or hunks that failed
    detail: str = ""


@dataclass
class Stacked:
    pin: Node
    steps: list[PinStep]
    nodes: list[Node]  # pin, then one per patch that applied
    files: dict[str, tuple[str, ...]]  # patch id -> files it changes
    reused: int = 0
    # patch id -> the bytes of its file the stack was built from (series.builder.memo read
    # them once): what an answer about the patch is of, not the file read again later
    data: dict[str, bytes] = field(default_factory=dict)

    @property
    def patches(self) -> list[Patch]:
        return [s.patch for s in self.steps[: len(self.nodes) - 1]]
