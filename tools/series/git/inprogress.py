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
from stat import S_ISDIR, S_ISREG

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
# The files of the git directory (or, for those kept there, of the common directory a
# linked work tree's ``commondir`` names) that the first git of any command opens, found
# the same way (git 2.39: ``rev-parse HEAD``, ``log -1``, ``cat-file --batch-check``): a
# FIFO at any of them makes every git there wait for ever. Also the loose ref HEAD names.
EVERY_READS = (  # HEAD and commondir first: COMMON is the rest
    "HEAD",
    "commondir",
    "config",
    "packed-refs",
    "shallow",
    "objects/info/alternates",
    "info/grafts",
)
# Kept in the common directory (a linked work tree's git directory has only HEAD, commondir).
COMMON = EVERY_READS[2:]
# The directories git looks in for them: anything else there (a FIFO at ``refs``).
EVERY_DIRS = ("objects", "refs")


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


def unreadable(git_dir: str, names: tuple[str, ...] = STATUS_READS) -> str | None:
    """The first of the files ``git status`` opens in ``git_dir`` (``names``: STATUS_READS)
    that is there but no plain file once links are followed (a FIFO would make git wait
    for ever): its path; None when each is a plain file or absent. Only ``stat``, nothing
    opened."""
    for name in names:
        path = os.path.join(git_dir, name)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not S_ISREG(mode):
            return path
    return None


def blocking(cwd: str) -> tuple[str, str] | None:
    """The first file every git command run in ``cwd`` opens (EVERY_READS, the loose ref
    HEAD names) that is there but no plain file, or directory of EVERY_DIRS that is there
    but no directory: its path and what it should be (``plain file``, ``directory``); None
    when none is, or ``cwd`` holds no repository series
    can name (git looks further up, or says there is none, without waiting).

    ``cwd`` is a work tree (its ``.git`` a directory, or a plain file naming one, as a
    linked work tree's) or a bare repository. Only ``stat`` and read_plain (HEAD,
    ``.git`` and ``commondir``, when plain files): a few calls."""
    dot = os.path.join(cwd, ".git")
    try:
        mode = os.stat(dot).st_mode
    except OSError:
        mode = 0
    if S_ISDIR(mode):
        git_dir = dot
    elif S_ISREG(mode):  # a linked work tree: "gitdir: DIR"
        try:
            named = read_plain(dot, follow=True).decode("utf-8", "surrogateescape").strip()
        except OSError:
            return None  # git says it cannot read it, without waiting
        if not named.startswith("gitdir: "):
            return None
        git_dir = os.path.join(cwd, named[len("gitdir: ") :])
    elif os.path.lexists(os.path.join(cwd, "HEAD")):
        git_dir = cwd  # a bare repository (the cache's)
    else:
        return None  # git finds none here and says so (a FIFO at .git: it fails at once)
    common = git_dir
    found = unreadable(git_dir, EVERY_READS)
    if found is None:
        common = _common(git_dir)
        if common != git_dir:
            found = unreadable(common, COMMON)
    if found is None:
        for name in EVERY_DIRS:
            path = os.path.join(common, name)
            try:
                if not S_ISDIR(os.stat(path).st_mode):
                    return path, "directory"
            except OSError:
                continue
        found = _head_ref(git_dir, common)
    return None if found is None else (found, "plain file")


def _common(git_dir: str) -> str:
    """The common directory of ``git_dir``: the one its ``commondir`` names, or itself."""
    try:
        named = read_plain(os.path.join(git_dir, "commondir"), follow=True)
    except OSError:
        return git_dir
    return os.path.join(git_dir, named.decode("utf-8", "surrogateescape").strip())


def _head_ref(git_dir: str, common: str) -> str | None:
    """The loose ref HEAD names (``ref: refs/heads/NAME``) when it is there but no plain
    file; None otherwise (HEAD detached, or the ref packed or missing)."""
    try:
        head = read_plain(os.path.join(git_dir, "HEAD"), follow=True)
    except OSError:
        return None
    if not head.startswith(b"ref: refs/"):
        return None
    name = head[len(b"ref: ") :].strip().decode("utf-8", "surrogateescape")
    if ".." in name.split("/"):
        return None  # no ref git would take: it says so
    return unreadable(common, (name,))


def _reverts(sequencer: str) -> bool:
    """Whether the sequencer's next step is a revert (``git revert A..B``). Read only from
    a plain file: a FIFO put there would make ``open`` wait for a writer for ever."""
    try:
        todo = read_plain(os.path.join(sequencer, "todo"))
    except OSError:
        return False
    return todo.split(b"\n", 1)[0].split(b" ", 1)[0] == b"revert"
