"""Export's writes to patches/ and series.toml: backup, journal, all-or-nothing, roll back.

Order, so that nothing is lost whatever fails:

1. every file about to change or go is copied to ``.series/backups/export-<time>/``
   (a failure here: nothing was written);
2. a journal (``.series/export-journal.json``) names the backup and the files;
3. the new contents are staged beside their targets and renamed in only
   when all are on disk (:func:`series.files.replace_all`): a full disk or
   a read-only directory fails before any file changed;
4. the caller moves the refs; if that fails, :func:`roll_back` puts the old
   files back from the backup, and the journal goes.

A kill between 2 and the end leaves the journal: ``series apply`` refuses
to build from half-written patches and names the two ways on (finish with
``series export``, or restore the backup); ``series export`` finishes it.

The journal also names the command (``verb``) and the tip the refs move the
branch to (``tip``). The end of ``series edit`` is an export whose refs'
transaction also deletes the edit's state, and moves the files after it: a
kill after that transaction and before the journal's removal leaves every
file written and the refs moved, the edit over, the journal still there
(:func:`edit_end_cut_short`). Nothing is to be undone then: ``series edit
--continue`` finishes that end (its files and HEAD) and removes the journal;
``apply``, ``export``, ``edit`` and the rebase's resumes refuse, naming it.
"""

from __future__ import annotations

import time
from contextlib import suppress
from pathlib import Path

from series import faults, json_text
from series.errors import RefusedError, SeriesError
from series.files import (
    backup_dir,
    clear_stale_temps,
    confined,
    remove,
    replace_all,
    write_atomic,
)
from series.plain import NotPlain, read_plain
from series.records import NamedTuple

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from typing import Any

JOURNAL = Path(".series") / "export-journal.json"


class Written(NamedTuple):
    changed: list[Path]  # relative to the project root
    backup: Path | None  # relative to the project root
    created: list[Path]  # files that did not exist before (relative)


def write(
    root: Path, changes: dict[Path, bytes | None], *, verb: str = "export", tip: str | None = None
) -> Written:
    """Back up, journal and write ``changes`` (absolute paths in ``root``). ``verb``: the
    command writing them; ``tip``: what its refs' transaction moves the branch to (both
    kept in the journal: :func:`edit_end_cut_short`)."""
    if not changes:
        return Written([], None, [])
    for path in changes:
        confined(root, path)
    clear_stale_temps(*{path.parent for path in changes})  # an export killed before renames
    backup = backup_dir(root, "export")
    confined(root, root / JOURNAL)
    rel = {path: path.relative_to(root) for path in changes}
    created = [rel[p] for p in changes if not p.exists()]
    import shutil  # only to write: a re-run reads JOURNAL alone (series.stack.verified)

    try:
        for path in changes:
            if path.exists():
                target = confined(root, backup / rel[path])
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
        faults.point("export: backed up")
        journal = {
            "backup": str(backup.relative_to(root)),
            "files": [str(rel[p]) for p in changes],
            "created": [str(p) for p in created],
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "verb": verb,
            "tip": tip,
        }
        write_atomic(root / JOURNAL, json_text.dumps(journal, indent=2) + "\n", within=root)
        replace_all(changes, within=root)
    except OSError as exc:
        # On a read-only file system even removing a journal never written
        # fails; one that was written and stays is finished by the next export.
        with suppress(OSError):
            remove(root / JOURNAL, within=root)
        raise _write_failed(root, exc, backup) from None
    kept = backup.relative_to(root) if backup.exists() else None
    return Written([rel[p] for p in changes], kept, created)


def _write_failed(root: Path, exc: OSError, backup: Path) -> SeriesError:
    where = Path(exc.filename).name if exc.filename else "a file"
    kept = (
        f"copies of the files it was replacing are in {backup.relative_to(root)}"
        if backup.exists()
        else "nothing needed a backup"
    )
    return SeriesError(
        f"export wrote nothing: cannot write {where} ({exc.strerror or exc})",
        why=f"every file is staged before any is replaced, so patches/ and series.toml "
        f"are unchanged; {kept}\nthe branch still counts as unexported",
        hint="free some space (or make the project and patches/ writable), then run "
        "`series export` again",
    )


def finish(root: Path) -> None:
    remove(root / JOURNAL, within=root)
    faults.point("export: journal removed")


def roll_back(root: Path, written: Written) -> None:
    """Put back what :func:`write` replaced (from the backup) and remove what it created."""
    restore: dict[Path, bytes | None] = {}
    for rel in written.changed:
        if rel in written.created:
            restore[root / rel] = None
        elif written.backup is not None:
            restore[root / rel] = (root / written.backup / rel).read_bytes()
    replace_all(restore, within=root)
    finish(root)


def interrupted(root: Path) -> dict[str, Any] | None:
    """The journal of an export that was cut short, if there is one (an unreadable one:
    ``{}``). Read by series.plain.read_plain: series writes it by renaming a plain file
    into place, so a link, a FIFO or a directory there is no journal of series', and
    whether an export was cut short cannot be told: refused, naming it."""
    path = confined(root, root / JOURNAL, reading=True)
    try:
        data = json_text.loads(read_plain(path).decode("utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except NotPlain:
        raise RefusedError(
            f"refusing to go on: {JOURNAL} is not a plain file",
            why=f"{path} is where series keeps the journal of an export under way (a plain "
            "file, written by renaming one into place): it tells whether an export was cut "
            "short, and what it had written; what is there now is no journal series wrote",
            hint=f"see what it is (ls -l '{path}'); if no program of yours put it there, "
            f"remove it (rm '{path}'), then run the command again",
        ) from None
    except (OSError, ValueError):
        data = {}
    return data if isinstance(data, dict) else {}


def undo_interrupted(root: Path, journal: dict[str, Any]) -> None:
    """Put back what an interrupted export had written, from its backup.

    The export that follows starts from the files as they were, so it
    gives the same result as the run that was cut short would have. The
    journal is project content like any other (a commit can add one): the
    files it names and its backup must stay inside the project.
    """
    backup = root / str(journal.get("backup", ""))
    created = {str(p) for p in journal.get("created", [])}
    restore: dict[Path, bytes | None] = {}
    for name in journal.get("files", []):
        _journal_names(root, str(name))
        if name in created:
            restore[root / name] = None
        elif confined(root, backup / name, reading=True).is_file():
            restore[root / name] = (backup / name).read_bytes()
    replace_all(restore, within=root)
    finish(root)


def _journal_names(root: Path, name: str) -> None:
    try:
        confined(root, root / name)
    except SeriesError as exc:
        raise SeriesError(
            f"refusing to finish the interrupted export: {JOURNAL} names {name}",
            why=f"{exc.message}\n{exc.why}",
            hint=f"an export writes only inside the project: this journal is not one it "
            f"wrote (a commit may have added it); remove {JOURNAL}, then run the command again",
            exit_code=exc.exit_code,
        ) from None


def edit_end_cut_short(journal: dict[str, Any] | None, tip: str | None) -> bool:
    """Whether ``journal`` is what the end of an edit leaves when it is killed after its
    refs' transaction: written by ``series edit`` (an older series wrote no ``verb``: not
    told), the branch now at the tip it moved it to. The caller has found no edit in
    progress (the same transaction deleted its state): every file the journal names was
    written before it, so nothing is to be undone."""
    return (
        journal is not None
        and journal.get("verb") == "edit"
        and tip is not None
        and journal.get("tip") == tip
    )


def edit_end_refusal(action: str) -> RefusedError:
    """The refusal of ``action`` over an edit's end cut short (:func:`edit_end_cut_short`)."""
    return RefusedError(
        f"refusing to {action}: the end of a `series edit` was cut short",
        why=f"it had written patches/ and series.toml and moved the branch (the edit is "
        f"over); HEAD and the checkout's files may not have followed, and {JOURNAL} is "
        "still there",
        hint="`series edit --continue` finishes it (nothing is undone), then run the command again",
    )


def refuse_if_interrupted(root: Path, action: str, tip: str | None = None) -> None:
    """Refuse to build from patches/ that an interrupted export left half written; ``tip``:
    the branch's (an edit's end cut short after its transaction is named so)."""
    journal = interrupted(root)
    if journal is None:
        return
    if edit_end_cut_short(journal, tip):
        raise edit_end_refusal(action)
    backup = journal.get("backup", ".series/backups")
    raise RefusedError(
        f"refusing to {action}: an export was interrupted (started {journal.get('started')})",
        why=f"patches/ and series.toml may be partly new, partly old; the old files are in "
        f"{backup}",
        hint=f"run `series export` to finish it (the checkout still has the commits), or "
        f"restore the old files: cp -a {backup}/. . && rm {JOURNAL}",
    )
