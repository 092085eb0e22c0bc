"""``series branches``: one branch per patch in the checkout, optionally pushed.

The work is in series.stack.branches; docs/branches.md is the manual.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import DIR, JSON, URL, Option
from series.errors import Exit, SeriesError

if TYPE_CHECKING:
    from series.checkout import Checkout
    from series.project import Series
    from series.stack.branch_plan import Item, Options, Outcome
    from series.ui import Ui

EPILOG = (
    "exit status: 0 done (or nothing to change); 2 bad input; 3 a patch does not apply "
    "(the branches before it were made); 4 refused: a branch series did not leave as it "
    "is, locally or on REMOTE (nothing changed; --force replaces it after a backup), or "
    "REMOTE lacks the upstream history the push needs; 1 REMOTE unreachable, or "
    "upstream's pinned commit cannot be fetched. Manual: docs/branches.md."
)
OPTIONS = (
    DIR,
    Option("--prefix", "put P before every branch name", default="", metavar="P"),
    Option("--alone", "each branch: the pin plus its patch only", action="store_true"),
    Option("--dry-run", "list what would change; change nothing", action="store_true"),
    Option(
        "--push",
        "push the branches too, each leased against what REMOTE had",
        type=URL,
        metavar="REMOTE",
    ),
    Option(
        "--upstream",
        "fetch upstream's pinned commit from this URL or clone (a checkout made from the "
        "sdist; default: upstream.repository)",
        type=URL,
        metavar="URL|PATH",
    ),
    Option(
        "--prune",
        "delete the branches series made for patches no longer in series.toml",
        action="store_true",
    ),
    Option(
        "--force",
        "replace branches someone else moved (the old commits are kept as backup refs)",
        action="store_true",
    ),
    JSON,
)


def run(
    series: Series,
    ui: Ui,
    *,
    directory: Path | None = None,
    prefix: str = "",
    alone: bool = False,
    dry_run: bool = False,
    push: str | None = None,
    upstream: str | None = None,
    prune: bool = False,
    force: bool = False,
    as_json: bool = False,
) -> Exit:
    from series.stack.branch_plan import Options
    from series.stack.branches import branches
    from series.stack.branches import conflict as conflict_error

    options = Options(prefix, alone, dry_run, push, prune, force, upstream)
    checkout = series.checkout(directory)
    # A dry run that nothing changed since the last one is answered before the CLI is
    # imported (series.stack.branches_kept); this one keeps what it writes for the next.
    keeping = _keeping(series, ui, checkout, options, directory, as_json)
    outcome = branches(series, ui, checkout, options)
    if as_json:
        ui.json(outcome.to_json())
    else:
        _show(ui, outcome)
    if keeping is not None:
        keeping.done(series, ui, outcome)
    error = conflict_error(outcome, checkout)
    if error is not None:
        raise error
    return Exit.OK


class _Keeping:
    """What a dry run reads and writes, for series.stack.branches_kept to keep."""

    def __init__(self, series: Series, ui: Ui, checkout: Checkout, opts: Options, js: bool):
        from series.stack import branches_kept as kept

        self.kept = kept
        self.root, self.cache = str(series.root), os.path.abspath(series.cache_dir)
        self.opts = kept.options(
            {"json": js, "prefix": opts.prefix, "alone": opts.alone, "prune": opts.prune}
            | {"force": opts.force}
        )
        self.checkout = series.manifest.checkout  # resolved by branches_kept each time
        self.files = [file for _, file in series.named()]
        self.pin = series.manifest.upstream.commit
        self.refs = _cache_refs(series, self.pin, opts.alone)
        self.before = self._digest()
        self.streams = (ui.out.file, ui.err.file)
        tees = kept.Tee(ui.out.file), kept.Tee(ui.err.file)
        ui.out.file, ui.err.file = tees  # type: ignore[assignment]  # a file, as far as it goes

    def _digest(self) -> str | None:
        args = (self.root, self.cache, self.opts, self.checkout, self.files, self.refs)
        return self.kept.digest(*args)

    def done(self, series: Series, ui: Ui, outcome: Outcome) -> None:
        """Keep what was written, when the run went well and nothing changed under it."""
        out, err = ui.out.file, ui.err.file
        ui.out.file, ui.err.file = self.streams
        if outcome.failure is not None or outcome.pin != self.pin or "logging" in sys.modules:
            return  # a patch that does not apply, the pin fetched, a log line: the full run
        if self.before is None or self._digest() != self.before:
            return
        if not self._parsed_is_now(series):
            return
        assert isinstance(out, self.kept.Tee) and isinstance(err, self.kept.Tee)
        stdout = "".join(out.said)
        if ui.keep_json:  # the envelope series.cli.run prints after a command that went well
            from series import envelope, json_text

            stdout += (
                json_text.dumps(envelope.build("branches", 0, None, ui.payload), indent=2) + "\n"
            )
        said = {"files": self.files, "cache_refs": self.refs, "stdout": stdout}
        said["stderr"] = "".join(err.said)
        said["identities"] = self.kept.identities(self.root, self.files)
        text = self.kept.entry(self.before, self.checkout, said)
        if text is None:
            return
        from series.files import write_atomic

        path = Path(self.kept.record_path(self.root, self.cache, self.opts))
        with contextlib.suppress(OSError):  # a record not written costs only speed
            write_atomic(path, text, within=None, durable=False)

    @staticmethod
    def _parsed_is_now(series: Series) -> bool:
        """Whether series.toml as it is now (the bytes in the digest, read after the run's
        parse) parses to the manifest the run answered from: a save in between would key
        the old parse's answer by the new bytes."""
        from series.manifest import load  # loaded already: the run parsed series.toml

        try:
            return load(series.root / "series.toml") == series.manifest
        except (OSError, ValueError, SeriesError):  # unreadable now: the next run says
            return False


def _keeping(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    opts: Options,
    directory: Path | None,
    as_json: bool,
) -> _Keeping | None:
    """A dry run of the kind series.stack.branches_kept answers, with its inputs; or None."""
    from series.stack.branches_kept import may_keep

    if not opts.dry_run or opts.push is not None or opts.upstream is not None:
        return None
    if directory is not None or not may_keep(ui.out.file, ui.err.file):
        return None
    try:
        return _Keeping(series, ui, checkout, opts, as_json)
    except OSError:  # a patch file that cannot be read: the run says so, keeping nothing
        return None


def _cache_refs(series: Series, pin: str, alone: bool) -> list[str]:
    """The cache's refs the dry run reads: the pin's, and the memo's of each step built."""
    from series.builder.memo import MEMO, keys_of
    from series.upstream.refs import git_pin

    named = [(p.id, series.patch_path(p).read_bytes()) for p in series.manifest.patches]
    keys = [keys_of(pin, [one])[0] for one in named] if alone else keys_of(pin, named)
    return [git_pin(pin)] + [f"{MEMO}{k}{end}" for k in keys for end in ("", ".3way")]


def _show(ui: Ui, outcome: Outcome) -> None:
    from series.ui import Grid  # rich only for a terminal's boxed table

    remote = outcome.remote
    title = f"{len(outcome.items)} branches ({outcome.mode}) on {outcome.pin[:12]}"
    columns = ("branch", "patch", "local", *(["remote"] if remote else []), "PR base")
    table = Grid(title + (f", remote {remote}" if remote else ""), columns)
    for item in outcome.items:
        patch = item.patch or ("the pin" if item.position == 0 else "-")
        row = [item.branch, patch, _local(item, outcome.prune)]
        if remote:
            row.append(_remote(item))
        table.add_row(*row, item.base or "-")
    ui.table(table)
    changes = outcome.changes
    where = f" (and on {remote})" if remote else ""
    if not changes:
        ui.result(f"nothing to change: every branch is up to date{where}")
    elif outcome.dry_run:
        ui.result(f"dry run: {len(changes)} branch(es) would change{where}; nothing was changed")
    else:
        ui.result(f"changed {len(changes)} branch(es){where}")
    for ref in outcome.backups:
        ui.status(f"kept the commit that was replaced as {ref}")


def _local(item: Item, prune: bool) -> str:
    from series.stack.branch_plan import CREATE, DELETE, MOVE, SKIP

    old, new = (item.old or "")[:10], (item.new or "")[:10]
    if item.action == SKIP:
        return f"skipped: {item.why}"
    if item.action == CREATE:
        return f"create at {new}"
    if item.action == MOVE:
        return f"move {old} -> {new}" + (" (--force)" if item.forced else "")
    if item.action == DELETE:
        verb = "delete" if prune else "to delete (pass --prune)"
        return f"{verb} {old or '(gone locally)'}: {item.why.split(';')[0]}"
    return f"unchanged at {new}"


def _remote(item: Item) -> str:
    from series.stack.branch_plan import CREATE, DELETE, MOVE

    action, old, new = item.remote_action, (item.remote_old or "")[:10], (item.new or "")[:10]
    if action is None:
        return "-"
    if action == CREATE:
        return f"create at {new}"
    if action == MOVE:
        return f"move {old} -> {new}" + (" (--force)" if item.remote_forced else "")
    if action == DELETE:
        return f"delete {old}"
    return f"unchanged at {new}" if new else "absent"
