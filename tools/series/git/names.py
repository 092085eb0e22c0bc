"""Every name the git layer offers, imported together: what ``from series.git import X`` loads.

series.git imports this module when one of its names is first asked for,
so that importing a single part (``series.git.worktree``) costs only that
part and what it imports.
"""

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
