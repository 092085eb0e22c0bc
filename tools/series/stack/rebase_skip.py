"""``series rebase --skip``: the stop's patch dropped, the rest of the rebase replayed.

What ``--skip`` does is series.stack.rebase_resume's (the checks, what the
user changed at the stop kept under a backup ref, the driver walking on);
this module runs it with every git process started without importing
GitPython (series.git.run.light_processes: the same processes, the
long-lived ``cat-file`` too). A skip's git work, the replay of the patches
after the stop included, is a few dozen short processes: GitPython's
import cost more CPU than most of them.
"""

from __future__ import annotations

from series.checkout import Checkout
from series.git.run import light_processes
from series.stack.rebase_resume import resume
from series.ui import Ui

TYPE_CHECKING = False  # typing is not imported: see series.records
if TYPE_CHECKING:
    from series.git.run import Started
    from series.git.worktree import Seen
    from series.project import Series


def resume_skip(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    early: tuple[Seen | None, Started | None] | None = None,
) -> None:
    """``series rebase --skip`` of the rebase in progress; ``early``: its ``git status`` of
    the stop's files, started already, and what it saw (series.stack.stop_files
    ``stop_files_seen``)."""
    with light_processes():
        resume(series, ui, checkout, "skip", early=early)
