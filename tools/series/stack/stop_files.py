"""The ``git status`` of a stop's files, started as soon as the project lock is held.

``--abort`` keeps what the user changed at a stop before it puts the files
back (series.stack.rebase_abort ``keep_stop``), from one read-only ``git
status`` (series.git.worktree ``start_changed``). :func:`stop_files` starts
it once the checkout's place is known (series.project, from series.known or
the parse: the project lock is held by then), before the rest of ``--abort``
is imported (the checkout, the backup, the rebase's state, the snapshot):
git works on the other core while series imports them and reads the state.
So this module imports only the part of the git layer that starts it, as
series.stack.verified does for its one ``git status``.

After the project lock, as ``--abort``'s own status was: only series writes
the files then, and only the finishing of a move cut short
(series.stack.rebase_abort ``prepare``) can change them before the status is
read (it is then asked again). A checkout that turns out not to be a
repository of its own is refused as before (series.checkout ``exists``): its
status, read-only, is ended unread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from series.git.run import Runner, light_processes
from series.git.worktree import Worktree, seen, start_added

TYPE_CHECKING = False  # typing is not imported (series rebase --abort loads this)
if TYPE_CHECKING:
    from series.git.run import Started
    from series.git.worktree import Seen


@contextmanager
def stop_files(path: Path, branch: str | None = None) -> Iterator[Started | None]:
    """Within series.git.run.light_processes (a few queries and one move of the files:
    GitPython's import costs more), the ``git status`` of the files of the checkout at
    ``path`` started (None: no repository there, or one whose status is refused:
    ``Worktree.start_changed``); ended at the end of the block, unless read.

    With it, where ``branch`` is given, the ``diff-index`` of what a move of the files
    to that branch adds (series.git.worktree ``start_added``: the abort's move checks
    it before it starts), so that neither waits for the other nor for the state: the
    move takes it only if it goes to that very commit from that very index file."""
    with light_processes():
        worktree = Worktree(Runner(path))
        files = worktree.start_changed()
        adds = None
        try:
            if files is not None and branch is not None:
                adds = start_added(worktree, ref=f"refs/heads/{branch}")
            yield files
        finally:
            if adds is not None:
                adds.abandon()
            if files is not None:
                files.abandon()


@contextmanager
def stop_files_seen(path: Path) -> Iterator[tuple[Seen | None, Started | None]]:
    """:func:`stop_files`' ``git status`` (for ``--skip``: no ``diff-index``, its move goes to
    the commit so far), with the index and HEAD of the checkout at ``path`` just before it
    started (series.git.worktree ``seen``: the skip's move then needs no git to tell that
    it adds no path, where the status says so of that very index)."""
    before = seen(path)
    with stop_files(path) as files:
        yield before, files
