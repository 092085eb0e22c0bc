"""Whether git is in the middle of a command of the user's in a repository: one answer for all.

git leaves a file or directory in the git directory while a command that
can stop for the user is under way, and removes it when that command is
continued or aborted:

* ``rebase-merge/``: ``git rebase`` (the merge backend);
* ``rebase-apply/``: ``git am`` (with ``applying``) or ``git rebase --apply``;
* ``MERGE_HEAD``: ``git merge`` (stopped at a conflict, or ``--no-commit``);
* ``CHERRY_PICK_HEAD``: ``git cherry-pick``; ``REVERT_HEAD``: ``git revert``;
* ``sequencer/``: a cherry-pick or revert of several commits, between them;
* ``BISECT_LOG``: ``git bisect`` (it moves HEAD from commit to commit).

While one is there, the branch and files are not what the user works on
(the command's own commits are elsewhere, or half made), and a
``git commit`` would record the command's parents: series neither answers
from what it kept (series.stack.verified, verified_kept) nor writes the
checkout (apply, export, rebase and edit refuse, naming it:
series.checkout.refuse_git_in_progress).

:func:`unreadable` says which of the files ``git status`` opens is there but no
plain file: a FIFO there makes git wait for ever, so series.git.worktree refuses
it before every ``git status``, and verified_kept does not wait on its own.

Only ``os`` (and ``stat``, which ``os`` loads) and series.plain: series.stack.verified_kept
asks it before the CLI is imported.
"""

from __future__ import annotations

import os
from stat import S_ISREG

from series.plain import read_plain

# (the marker in the git directory, the command it is of, how to end it)
MARKERS = (
    ("rebase-merge", "rebase", "git rebase --continue, or --abort"),
    ("rebase-apply", "rebase", "git rebase --continue, or --abort"),
    ("MERGE_HEAD", "merge", "git merge --continue (or git commit), or git merge --abort"),
    ("CHERRY_PICK_HEAD", "cherry-pick", "git cherry-pick --continue, or --abort"),
    ("REVERT_HEAD", "revert", "git revert --continue, or --abort"),
    ("sequencer", "cherry-pick", "git cherry-pick --continue, or --abort"),
    ("BISECT_LOG", "bisect", "git bisect reset"),
)
AM = ("am", "git am --continue, or --skip, or --abort")
REVERT = ("revert", "git revert --continue, or --abort")
# The files of the git directory that ``git status`` opens, found by putting a FIFO in
# the place of each (git 2.39, in each state of MARKERS): a FIFO, a socket or a device
# there makes it wait for a writer for ever. git writes all of them as plain files.
STATUS_READS = (
    "HEAD",
    "index",
    "packed-refs",
    "logs/HEAD",
    "sequencer/todo",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "rebase-merge/head-name",
    "rebase-merge/onto",
    "rebase-apply/head-name",
    "rebase-apply/onto",
    "BISECT_START",
)


def in_progress(git_dir: str) -> tuple[str, str, str] | None:
    """The git command in progress in ``git_dir``: its marker, its name and how to end it;
    None when there is none. A marker that cannot be looked at counts as one."""
    for marker, command, end in MARKERS:
        path = os.path.join(git_dir, marker)
        try:
            os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError:
            return marker, command, end
        if marker == "rebase-apply" and os.path.lexists(os.path.join(path, "applying")):
            return (marker, *AM)
        if marker == "sequencer" and _reverts(path):
            return (marker, *REVERT)
        return marker, command, end
    return None


def unreadable(git_dir: str) -> str | None:
    """The first of the files ``git status`` opens in ``git_dir`` (STATUS_READS) that is
    there but no plain file once links are followed (a FIFO would make git wait for ever):
    its path; None when each is a plain file or absent. Only ``stat``, nothing opened."""
    for name in STATUS_READS:
        path = os.path.join(git_dir, name)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not S_ISREG(mode):
            return path
    return None


def _reverts(sequencer: str) -> bool:
    """Whether the sequencer's next step is a revert (``git revert A..B``). Read only from
    a plain file: a FIFO put there would make ``open`` wait for a writer for ever."""
    try:
        todo = read_plain(os.path.join(sequencer, "todo"))
    except OSError:
        return False
    return todo.split(b"\n", 1)[0].split(b" ", 1)[0] == b"revert"
