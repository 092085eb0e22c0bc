"""The state of a ``series rebase`` in progress: versioned, validated, in the checkout's refs.

Like the checkout state (series.checkout), it lives in the checkout's git
directory as refs, changed only in one ``update-ref --stdin`` transaction,
so a ``kill -9`` at any moment leaves the old state or the new one:

* ``refs/series/rebase/state``: a blob of JSON (format below);
* ``refs/series/rebase/onto``: the upstream commit the series moves to;
* ``refs/series/rebase/saved``: a commit whose tree holds series.toml and
  patches/ as they were when the rebase started (``--abort`` restores them
  byte for byte; ``series range-diff`` reads the old series from it);
* ``refs/series/rebase/current``: the replayed commit the next patch goes
  on (it keeps the replayed commits from being garbage-collected).

After a rebase finishes, ``refs/series/rebase/last`` keeps the saved
snapshot of the series before it. The JSON and its format version are
series.stack.rebase_plan's, documented in docs/rebase.md ("State").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from series import json_text, refnames
from series.errors import SeriesError
from series.git.objects import loose_blob
from series.git.ref_files import loose_ref
from series.git.refs import Transaction
from series.git.repo import Repo
from series.git.run import ZERO
from series.stack.rebase_plan import FORMAT, OtherFormat, RebaseState, from_json, to_json

PREFIX = refnames.REBASE
STATE_REF = refnames.REBASE_STATE  # also series.checkout.REBASE_STATE_REF
ONTO_REF = refnames.REBASE_ONTO
SAVED_REF = refnames.REBASE_SAVED
CURRENT_REF = refnames.REBASE_CURRENT
LAST_REF = refnames.REBASE_LAST
UNWRITTEN_REF = refnames.REBASE_UNWRITTEN  # series.stack.stop_written
STOP_PREFIX = refnames.STOP  # the stop's name for git status (series.stack.rebase_driver)


def load(repo: Repo) -> RebaseState | None:
    """The rebase in progress in ``repo``, validated, or None."""
    # from their files where they are git's answer: the long-lived cat-file, started
    # meanwhile (--abort), is asked first by what comes after the state
    found = loose_ref(str(repo.git_dir), STATE_REF)  # None: not known so, git is asked
    data = loose_blob(str(repo.git_dir), found) if found is not None else None
    blob = found if data is not None else repo.refs.value(STATE_REF)
    if blob is None:
        return None
    where = f"{STATE_REF} in {repo.path}"
    try:
        data = repo.objects.read_blob(blob) if data is None else data
        return from_json(json_text.loads(data.decode("utf-8")))
    except OtherFormat as exc:
        older = isinstance(exc.found, int) and exc.found < FORMAT
        raise SeriesError(
            f"{where} was written by {'an older' if older else 'another'} version of series",
            why=str(exc),
            hint="finish or abort the rebase with the version of series that started it",
        ) from None
    except (UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise SeriesError(
            f"the rebase state in {where} is damaged",
            why=str(exc),
            hint=f"nothing was changed; `git -C {repo.path} update-ref -d {STATE_REF}` "
            "forgets the rebase (the branch was never moved by it)",
        ) from None


def save(
    repo: Repo,
    txn: Transaction,
    state: RebaseState,
    old_blob: str | None,
    write: Callable[[Sequence[bytes]], list[str] | None] | None = None,
) -> None:
    """Add the writes of ``state`` (state blob and current ref) to ``txn``. ``write``:
    blobs written by a ``hash-object`` running already (None, or its None: one is run)."""
    raw = (json_text.dumps(to_json(state), indent=2) + "\n").encode()
    written = write([raw]) if write is not None else None
    blob = (written or repo.objects.write("blob", [raw]))[0]
    txn.update(STATE_REF, blob, old_blob or ZERO)
    txn.update(CURRENT_REF, state.current, repo.refs.value(CURRENT_REF) or ZERO)


def forget(
    repo: Repo, txn: Transaction, *, keep_last: bool, refs: Mapping[str, str] | None = None
) -> None:
    """Add the deletion of every rebase ref to ``txn`` (``keep_last``: the snapshot as last).

    ``refs``: the refs under ``PREFIX`` and ``STOP_PREFIX`` (at least), read
    already in this run; the transaction checks each value it deletes.
    """
    if refs is None:
        refs = {**repo.refs.under(PREFIX), **repo.refs.under(STOP_PREFIX)}
    for name in (STATE_REF, ONTO_REF, SAVED_REF, CURRENT_REF, UNWRITTEN_REF):
        if name in refs:
            txn.delete(name, refs[name])
    for name, old in refs.items():
        if name.startswith(STOP_PREFIX):
            txn.delete(name, old)
    if keep_last and SAVED_REF in refs:
        txn.update(LAST_REF, refs[SAVED_REF], refs.get(LAST_REF) or ZERO)
