"""What the last ``apply`` or ``export`` verified changed nothing, kept until a cheap check fails.

A re-run of ``series apply`` with nothing changed rebuilds the stack from
patches/ to find it equal to the branch, and ``series export`` re-applies
the bytes it would write to find them equal to patches/: a dozen to a
hundred git processes to say "up to date". Both are functions of what a
run reads: series.toml and the patch files it names, the checkout's refs
(the branch, HEAD, ``refs/series/base``, ``synced`` and ``state``), its
index and files, and series' own code. So when a run changed nothing,
what it read is kept, as a digest (``key``), with what it said, in the
checkout's git directory (``.git/series/verified.json``, one entry per
command). The next run computes the digest from files alone
(series.git.files_key for the refs, the blake2b of every file, the status
of series' own modules: series.code.code_digest) and, when it
is the same, says the same
again after one ``git status`` (without optional locks: it writes
nothing), which sees what the digest does not: the index and the files,
an uncommitted change, a staged one, a move of the files cut short (the
index then holds another tree than HEAD). Any of those takes the full
run, which refuses (apply) or notes them (export) as before.

The digest cannot be told, and the full run goes on, when a ref cannot
be read from files (reftable, a link among the loose refs), a lock or a record of a git command cut
short (series.git.leftovers) is in the git directory, a git rebase, am,
merge, cherry-pick, revert or bisect is in progress (series.git.inprogress),
or an export journal waits. An entry
is kept only when the digest after the run is the one before it (nothing
was written, and nothing changed under the run), and read only when it
is valid (the format, the shape, the key); anything else is the full run,
which writes it again.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from series import json_text
from series.errors import SeriesError
from series.files import write_atomic
from series.git.run import Runner
from series.git.worktree import Worktree
from series.known import Known
from series.known import recall as recall_known
from series.plain import read_plain
from series.records import NamedTuple
from series.stack import verified_kept as fast

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from typing import Any, TypeGuard

    from series.checkout import Checkout
    from series.project import Series
    from series.ui import Ui

FORMAT = 1
NAME = Path("series") / "verified.json"  # in the checkout's git directory
COMMANDS = ("apply", "export")
BUSY = fast.BUSY  # in the git directory: a git command writing, or one cut short
RECORDS = fast.RECORDS  # series.git.leftovers: a git command of series' cut short


class Where(NamedTuple):
    """What this module reads of a checkout: a ``Checkout`` has both, and so has this,
    which a re-run builds without loading series.checkout (and the git layer's ``Repo``)."""

    path: Path
    branch: str


def key(series: Series, checkout: Checkout | Where, command: str) -> str | None:
    """The digest of all that ``command`` reads in ``checkout``; None when it cannot be told
    (series.stack.verified_kept.digest, which a re-run answered before the CLI computes)."""
    return fast.digest(
        str(series.root), str(checkout.path), checkout.branch, series.named(), command
    )


def recall(checkout: Checkout | Where, command: str, digest: str | None) -> dict[str, Any] | None:
    """What ``command`` said when it last verified the state ``digest``, validated; or None.

    The caller still asks git whether the files have uncommitted changes.
    """
    if digest is None:
        return None
    try:
        record = json_text.loads(read_plain(checkout.path / ".git" / NAME))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    entry = record.get(command)
    if not _valid(entry) or entry["key"] != digest:
        return None
    return entry


def rerun(
    series: Series, ui: Ui, directory: Path | None, command: str
) -> tuple[str | None, dict[str, Any] | None]:
    """The digest of what ``command`` reads now in the checkout (``directory``, else the
    manifest's), and its answer when that is what the last run verified and the files
    are clean (one ``git status``), said again; else None.

    It needs only this module, the refs read as files and the one ``git status``
    (started without GitPython): ``series apply`` and ``series export`` ask it
    before importing their work (commands/apply.py, commands/export.py), and
    the ``Repo`` with its other parts is not loaded.
    """
    where = Where(series.checkout_path(directory), series.branch)
    digest = key(series, where, command)
    entry = recall(where, command, digest)
    if entry is not None and not Worktree(Runner(where.path)).dirty(read_only=True):
        if directory is None and digest is not None:
            _keep_fast(series, where, command, digest, entry)
        return digest, answer(ui, entry, command)
    return digest, None


def answer(ui: Ui, entry: dict[str, Any], command: str) -> dict[str, Any]:
    """Say again what the run that verified the state said; its ``--json`` payload."""
    lines, result = said(entry, command)
    for line in lines:
        ui.status(line)
    ui.result(result)
    payload: dict[str, Any] = entry["payload"]
    return payload


def said(entry: dict[str, Any], command: str) -> tuple[list[str], str]:
    """What :func:`answer` says of ``entry``: its status lines and its result line."""
    first = (
        f"nothing changed since the last {command} verified {entry['payload']['checkout']} "
        "(series.toml, patches/, its refs; its files clean): not rebuilt"
    )
    return [first, *entry["lines"]], entry["result"]


def _keep_fast(
    series: Series, where: Checkout | Where, command: str, digest: str, entry: dict[str, Any]
) -> None:
    """Keep what the next plain re-run of ``command`` needs to be answered before the CLI
    is imported (series.stack.verified_kept), when the checkout is the manifest's; an
    entry that cannot be written costs only speed."""
    if command not in fast.COMMANDS or where.path != series.checkout_path(None):
        return
    # The entry answers from its own copy of the checkout, branch and patches, under a digest
    # of series.toml's bytes read after the parse: a save in between would pair the new bytes
    # with the old parse. Kept only when series.known holds these values for the bytes now.
    parsed = Known(series.checkout_where(), where.branch, tuple(series.named()))
    if recall_known(series.root, series.cache_dir) != parsed:
        return
    root, cache = str(series.root), str(series.cache_dir)
    text = fast.keep(
        root,
        series.checkout_where(),
        str(where.path),
        where.branch,
        series.named(),
        command,
        digest,
        said(entry, command),
    )
    if text is None:
        return
    path = Path(fast.entry_path(root, cache, command))
    with contextlib.suppress(OSError):
        if read_plain(path) == text.encode():
            return  # kept already: nothing to write
    with contextlib.suppress(OSError, SeriesError):
        write_atomic(path, text, within=None, durable=False)


def keep(
    series: Series,
    checkout: Checkout,
    command: str,
    digest: str | None,
    said: tuple[list[str], str, dict[str, Any]],
) -> None:
    """Keep what ``command`` said, when the state it read (``digest``) is still the state now.

    ``said``: the status lines to say again, the result line, the payload.
    A changed digest (the run wrote something, or something changed under
    it) keeps nothing; an entry that cannot be written costs only speed.
    """
    if digest is None or key(series, checkout, command) != digest:
        return
    lines, result, payload = said
    path = checkout.path / ".git" / NAME
    try:
        record = json_text.loads(read_plain(path))
    except (OSError, ValueError):
        record = {}
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        record = {}
    record = {c: record[c] for c in COMMANDS if c != command and _valid(record.get(c))}
    record["format"] = FORMAT
    record[command] = {"key": digest, "lines": lines, "result": result, "payload": payload}
    with contextlib.suppress(OSError, SeriesError):  # SeriesError: a .git that leads out
        write_atomic(path, json_text.dumps(record, indent=1), within=checkout.path, durable=False)
        _keep_fast(series, checkout, command, digest, record[command])


def _valid(entry: object) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(entry, dict)
        and set(entry) == {"key", "lines", "result", "payload"}
        and isinstance(entry["key"], str)
        and isinstance(entry["result"], str)
        and isinstance(entry["lines"], list)
        and all(isinstance(line, str) for line in entry["lines"])
        and isinstance(entry["payload"], dict)
        and isinstance(entry["payload"].get("checkout"), str)
    )
