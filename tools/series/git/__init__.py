"""The only package that runs git (see docs/architecture.md).

Everything series does to a repository goes through :class:`Repo`, made
of narrow parts (``repo.refs``, ``.objects``, ``.history``, ``.diffs``,
``.index``, ``.merge``, ``.worktree``, ``.remote``), which run git through
GitPython's command runner (:mod:`series.git.run`).
Plumbing is preferred over porcelain: patches are applied to a scratch
index (:mod:`~series.git.index`), merges run in batches in a scratch
object store (:mod:`~series.git.mergetree`), commits are made with
``commit-tree`` and refs moved in compare-and-swap transactions
(:mod:`~series.git.refs`), so nothing touches a work tree
(:mod:`~series.git.worktree`) until the end of a command.

The names below are loaded when first used (``__getattr__``): importing
one part (``series.git.worktree``) does not import the others, so the
re-run of ``apply`` or ``export`` answered from what was kept
(series.stack.verified) loads the refs, the run of one ``git status`` and
nothing else of the layer (docs/architecture.md, rule 12).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from typing import Any

    from series.git.history import CommitInfo, LogEntry
    from series.git.ident import Ident
    from series.git.index import ApplyResult
    from series.git.mail import FileStat, MailInfo, mailinfo, patch_stat, read_mail
    from series.git.mergetree import MergeMessage, StageEntry, TreeMerge, parse_merge_tree
    from series.git.refs import RefMoved, Transaction, files_key
    from series.git.remote import PushResult, PushUpdate, RemoteUnreachable
    from series.git.repo import Repo
    from series.git.run import (
        HERMETIC,
        ZERO,
        EnvironmentFault,
        GitFailed,
        GitMissing,
        lock_fault,
    )

__all__ = [
    "HERMETIC",
    "ZERO",
    "ApplyResult",
    "CommitInfo",
    "EnvironmentFault",
    "FileStat",
    "GitFailed",
    "GitMissing",
    "Ident",
    "LogEntry",
    "MailInfo",
    "MergeMessage",
    "PushResult",
    "PushUpdate",
    "RefMoved",
    "RemoteUnreachable",
    "Repo",
    "StageEntry",
    "Transaction",
    "TreeMerge",
    "files_key",
    "lock_fault",
    "mailinfo",
    "parse_merge_tree",
    "patch_stat",
    "read_mail",
]


def __getattr__(name: str) -> Any:
    """A name of the git layer, its modules imported on first use."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from series.git import names

    value = getattr(names, name)
    globals()[name] = value
    return value
