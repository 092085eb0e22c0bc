"""Every ``refs/series/*`` name series keeps, in one place.

No other module spells ``refs/series/`` (tests/test_architecture.py); the
refs that hold upstream revisions in the cache (``git/``, ``sdist/``,
``scratch/``, ``checkout/``) are named by ``series.upstream.refs`` from
``UPSTREAM_ROOT``, so that only that package knows them. This module
imports nothing, so ``git/`` and every package above it may use it.

In a checkout:

* ``BASE``: the upstream commit the stack sits on;
* ``SYNCED``: the tip last written by apply or export;
* ``STATE``: a blob of JSON, the checkout's state (series.checkout);
* ``REBASE``: a rebase in progress (``state``, ``onto``, ``saved``,
  ``current``; ``unwritten``: the tree of a stop whose move was refused,
  series.stack.stop_written) and the last one finished (``last``),
  series.stack.rebase_state;
* ``STOP``: the one ref that names where a rebase or edit stopped, so that
  ``git status`` shows it;
* ``BRANCHES``: the record of ``series branches`` (series.stack.branch_record);
* ``BACKUP``: what a command left unreachable (series.backup), with
  ``BACKUP_BRANCHES`` and ``BACKUP_REMOTE`` for ``series branches``.

In the cache repository:

* ``MEMO``: the built stack, one ref per patch content (series.builder.memo);
* ``PROVEN``: what the memo's build proved, ``<key>/<commit>`` naming both, so
  that a memo ref moved to another commit proves nothing (series.builder.memo);
* ``UPSTREAM_ROOT``: the prefix under which series.upstream.refs names its refs.
"""

from __future__ import annotations

ROOT = "refs/series/"

BASE = ROOT + "base"
SYNCED = ROOT + "synced"
STATE = ROOT + "state"

REBASE = ROOT + "rebase/"
REBASE_STATE = REBASE + "state"
REBASE_ONTO = REBASE + "onto"
REBASE_SAVED = REBASE + "saved"
REBASE_CURRENT = REBASE + "current"
REBASE_LAST = REBASE + "last"
REBASE_UNWRITTEN = REBASE + "unwritten"

# The stop of a rebase or an edit, named for `git status` ("HEAD detached at
# refs/series/stop/edit-P5"): series.stack.rebase_state.
STOP = ROOT + "stop/"

BRANCHES = ROOT + "branches"

BACKUP = ROOT + "backup/"
BACKUP_BRANCHES = BACKUP + "branches/"
BACKUP_REMOTE = BACKUP + "remote/"

MEMO = ROOT + "stack/"
PROVEN = ROOT + "proven/"

UPSTREAM_ROOT = ROOT
