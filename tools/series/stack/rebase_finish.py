"""The end of ``series rebase``: patches/ and series.toml written, then the branch moved.

Finishing writes patches/ and series.toml first (all staged and flushed to
disk before any is renamed into place: series.files.stage_all; the
new series.toml is made from the snapshot taken at the start, read through
series.manifest and rewritten by series.manifest_write, so doing it twice
gives the same bytes; the files of dropped patches go after it, so
series.toml never names a file that is gone), then moves the branch, the
checkout state and the rebase state in one transaction, then the files of
the checkout. Each step can be done again after a kill: ``--continue``
walks the plan to its end and finishes again.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

from series import manifest, manifest_kept, refnames
from series.checkout import Checkout, Writing
from series.errors import InternalError
from series.files import Staged, confined_all, stage_all
from series.git.diffs import Later
from series.git.index import Applying
from series.git.repo import Repo
from series.git.run import scratch_dir
from series.manifest import Dropped, Patch, UpstreamPart
from series.manifest_write import PatchUpdate, write_rebased
from series.stack import rebase_state as rstate
from series.stack.diffclass import UNCHANGED, classify_diffs, differing_files
from series.stack.part_notes import records
from series.stack.rebase_plan import DROP_REASONS, Action, Outcome, RebaseState
from series.stack.snapshot import keep_edited
from series.ui import Grid, Ui
from series.upstream import pin_kept

TYPE_CHECKING = False  # typing is not imported before the export starts (see finish)
if TYPE_CHECKING:
    from typing import Any

    from series.project import Series

REASONS = {  # why a patch left the series, by its outcome (drops say their own: rebase_plan)
    "empty": "empty on the new base",
    "skipped": "skipped at a conflict (series rebase --skip)",
}


def reason(action: Action, outcome: Outcome) -> str | None:
    """Why the rebase removed the patch (the start of its [[dropped]] reason), or None."""
    if outcome.status == "dropped":
        return DROP_REASONS[action.reason][1]
    return REASONS.get(outcome.status)


def finish(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    st: RebaseState,
    subjects: Mapping[str, str],
) -> None:
    """Export the rebased series, move the branch, forget the rebase; print the summary.

    ``subjects``: the subject line of each patch's commit before the rebase.
    A ``series edit`` keeps its pin: its end is an export (series.stack.edit_finish,
    the driver's ``Run.end``).
    """
    assert st.kind == "rebase", "an edit ends with its export (series.stack.edit_finish)"
    repo = checkout.repo
    kept = [(a, o) for a, o in st.walked() if o.kept]
    # A long series is exported and checked in two halves, one on each core (the same
    # bytes, the same check: each half reproduces its end, from the other's).
    cut = [kept[len(kept) // 2 - 1][1].new] if len(kept) >= CUT_AT else []
    # The summary's raw diffs are read beside the export (a light process beside its
    # two), its diffs beside the end's transaction and move (their git on the other core).
    reads = _Reads(repo, st)
    try:
        patches = repo.diffs.format_patches_later(st.onto, st.current, cut) if kept else None
        try:
            # While git exports: series.toml's new text made, and what the end's
            # transaction needs read and written (objects only): nothing visible changes
            # before the exported bytes are checked.
            old_text, tables, old = _saved(series, repo, st)
            writing = _prepare_move(series, ui, checkout, st, kept)
            dropped = _dropped(st, old)
            text = _manifest(series, st, old_text, tables, old, kept, subjects, dropped)
            exported = patches.result() if patches is not None else []
        except BaseException:
            if patches is not None:
                patches.abandon()
            raise
        data = {a.id: d for (a, _), d in zip(kept, exported, strict=True)}
        half = len(kept) // 2 if cut else 0
        copies = _write(series, repo, st, kept, data, (old, text, dropped), half, reads)
        if copies is not None:
            ui.status(
                f"series.toml or patch files edited since the rebase began are kept in {copies}"
                " (the rebased series replaced them)"
            )
        backed = writing.commit()
        if backed is not None:
            ui.status(backed.describe(checkout.path))
        diffs = reads.diffs()
    finally:
        reads.abandon()
    _summary(ui, st, dropped, len(kept), reads.raw, diffs)


def _saved(
    series: Series, repo: Repo, st: RebaseState
) -> tuple[str, dict[str, Any] | None, dict[str, Patch]]:
    """series.toml as the rebase's snapshot holds it: its text, what tomllib read of it
    when the rebase began (series.manifest_kept, None where not kept), and its patches."""
    old_text = repo.objects.blob_read(st.saved, "series.toml").decode("utf-8")
    # As the project's own parse takes those tables: validated again, without the parse;
    # series.toml's new text is made from them too (cont9: one parse of 20 KB less).
    tables = manifest_kept.recall(series.cache_dir, old_text)
    path = series.manifest.path
    saved = (
        manifest.parse(path, tables, missing_ok=True)
        if tables is not None
        else manifest.loads(path, old_text, missing_ok=True, kept=series.cache_dir)
    )
    return old_text, tables, {p.id: p for p in saved.patches}


def _write(
    series: Series,
    repo: Repo,
    st: RebaseState,
    kept: list[tuple[Action, Outcome]],
    data: Mapping[str, bytes],
    new: tuple[Mapping[str, Patch], str, list[Dropped]],
    half: int,
    reads: _Reads,
) -> Path | None:
    """The exported ``data`` checked (:class:`_Verify`, ``half``) while patches/ and
    series.toml are staged and flushed; renamed into place only once checked. ``new``:
    the old patches' records, series.toml's new text, the dropped patches' records.
    ``reads`` starts the summary's diffs once the check passed. Before the renames, the
    files they replace that were edited since the rebase began are copied aside
    (series.stack.snapshot ``keep_edited``): where, or None."""
    old, text, dropped = new
    verifying = _Verify(repo, st, [data[a.id] for a, _ in kept], half)
    try:
        staged = _stage(series, old, kept, data, text, dropped)
    except BaseException:
        verifying.abandon()
        raise
    try:
        verifying.check()
        reads.start({o.new: data[a.id] for a, o in kept})
        copies = keep_edited(repo, series.root, st.saved, list(staged.changes), "rebase")
    except BaseException:
        staged.discard()
        raise
    staged.commit()
    return copies


def _manifest(
    series: Series,
    st: RebaseState,
    old_text: str,
    tables: dict[str, Any] | None,
    old: Mapping[str, Patch],
    kept: list[tuple[Action, Outcome]],
    subjects: Mapping[str, str],
    dropped: list[Dropped],
) -> str:
    """series.toml's new text. ``tables``: ``old_text`` as tomllib reads it, where that
    was kept; ``dropped``: the dropped patches' records."""
    updates = [
        PatchUpdate(a.id, subjects[a.commit], old[a.id].file, old[a.id].branch) for a, _ in kept
    ]
    return write_rebased(
        series.manifest,
        old_text,
        ref=st.onto_rev,
        commit=st.onto,
        dropped=dropped,
        updates=updates,
        parts=_parts(st),
        data=tables,
        kept=series.cache_dir,
    )


def _stage(
    series: Series,
    old: Mapping[str, Patch],
    kept: list[tuple[Action, Outcome]],
    data: Mapping[str, bytes],
    text: str,
    dropped: list[Dropped],
) -> Staged:
    """patches/ and series.toml (``text``) staged: all checked, then all written and
    flushed beside their targets; :meth:`Staged.commit` renames them (patches first, then
    series.toml), then removes the files of the ``dropped`` patches."""
    writes = {series.root / old[a.id].file: data[a.id] for a, _ in kept}
    writes[series.manifest.path] = text.encode("utf-8")
    confined_all(series.root, writes)  # all checked before any is read or written
    changes: dict[Path, bytes | None] = {p: b for p, b in writes.items() if _differs(p, b)}
    for d in dropped:  # after series.toml no longer names them: a kill leaves no dangling file
        if d.file:
            changes.setdefault(series.root / d.file, None)
    return stage_all(changes, within=series.root)


def _prepare_move(
    series: Series, ui: Ui, checkout: Checkout, st: RebaseState, kept: list[tuple[Action, Outcome]]
) -> Writing:
    """The new pin kept in the cache; the one transaction that moves the branch, the
    checkout state and the rebase's refs made ready (committed, then the checkout's files
    moved, by :meth:`Writing.commit`)."""
    repo = checkout.repo
    # The new pin, in the cache: `series apply` needs no network for it now. One the
    # cache keeps already (the --onto that began the rebase fetched it there) is found
    # without loading the fetch.
    failed = (
        None
        if pin_kept(series.cache, st.onto)
        else series.upstream(ui).keep(st.onto, source=checkout.path, ref=rstate.ONTO_REF)
    )
    if failed is not None:
        ui.status(
            f"warning: could not keep the new pin in the cache ({failed}): "
            "`series apply` will fetch it (pass --upstream)"
        )
    tip = kept[-1][1].new if kept else st.onto
    # The rebase's refs to delete, and what keeps commits: from their loose files where
    # those hold them all (as --skip and --abort read them), else one for-each-ref.
    listed = repo.refs.under_read(repo.git_dir, "refs/")
    # a file of the user's in the way: refused before any write
    cmd = st.command
    then = f"`{cmd} --continue` ends the rebase (after a refused --skip: `{cmd} --skip`)"
    checkout.check_move(tip, then=then)
    return checkout.prepare_write(
        "rebase",
        prior=checkout.state(),
        tip=(st.tip, tip),
        base=st.onto,
        applied=[a.id for a, _ in kept],
        source="git",
        move_files=True,
        also=lambda txn: rstate.forget(
            repo,
            txn,
            keep_last=True,
            refs={n: v for n, v in listed.items() if n.startswith(refnames.ROOT)},
        ),
        replaces_series=True,
        listed=listed,
        line=[st.onto, *(o.new for _, o in kept)],
    )


class _Reads:
    """The summary's diffs, read by git beside the end's own work (series.git.diffs'
    ``*_later``): the raw diffs of the picked patches' old and new commits started first;
    then (:meth:`start`) the diffs of the pairs whose raw diffs differ, of the files whose
    raw lines differ, but the new sides the exported patches give (``Diffs.of_patch``:
    git made them once, for the export). The same diffs as read one after the other."""

    def __init__(self, repo: Repo, st: RebaseState) -> None:
        self.repo = repo
        self.pairs = [(a.commit, o.new) for a, o in st.walked() if o.status == "picked"]
        self.raw_later = repo.diffs.raw_commits_later([c for pair in self.pairs for c in pair])
        self.raw: dict[str, bytes] = {}
        self.taken: dict[str, bytes] = {}
        self.later: Later | None = None

    def start(self, patches: Mapping[str, bytes]) -> None:
        """``patches``: the exported bytes of each new commit."""
        raw = self.raw = self.raw_later.result()
        pairs = [(was, now) for was, now in self.pairs if raw[was] != raw[now]]
        paths = differing_files(raw, pairs)
        of_patch = self.repo.diffs.of_patch
        self.taken = {
            now: diff
            for _, now in pairs
            if now in patches and (diff := of_patch(patches[now], raw[now], paths)) is not None
        }
        read = [c for pair in pairs for c in pair if c not in self.taken]
        self.later = self.repo.diffs.commits_later(read, paths)

    def diffs(self) -> dict[str, bytes]:
        assert self.later is not None, "the summary's diffs are read once started"
        diffs = self.later.result()
        diffs.update(self.taken)
        return diffs

    def abandon(self) -> None:
        """End what is still running (nothing once read)."""
        self.raw_later.abandon()
        if self.later is not None:
            self.later.abandon()


CUT_AT = 8  # kept patches from which the export is cut in two halves (_verify): below,
# the second half's processes (format-patch, read-tree, apply, write-tree) cost more
# than the half of the work they take off the first


def _kept_commits(st: RebaseState) -> list[str]:
    return [o.new for _, o in st.walked() if o.kept]


def _parts(st: RebaseState) -> dict[str, list[UpstreamPart]]:
    """The ``partly_upstream`` records of the kept patches upstream took part of."""
    return {
        a.id: records(a.part, st.onto)
        for a, o in st.walked()
        if o.kept and a.part is not None and a.part.verdict == "partial"
    }


def _dropped(st: RebaseState, old: Mapping[str, Patch]) -> list[Dropped]:
    """The ``[[dropped]]`` records of the patches the rebase removed."""
    return [
        Dropped(
            id=a.id,
            title=old[a.id].title if a.id in old else a.id,
            reason=f"{why}: {o.note}" if o.note else why,
            pr=old[a.id].pr if a.id in old else None,
            upstream_commit=o.upstream_commit,
            onto=st.onto,
            file=old[a.id].file if a.id in old else "",
        )
        for a, o in st.walked()
        if (why := reason(a, o)) is not None
    ]


def _differs(path: Path, data: bytes) -> bool:
    return not path.is_file() or path.read_bytes() != data


class _Verify:
    """The bytes about to be written, applied again by git beside series: they must give
    the replayed tree (:meth:`check`, else nothing is written).

    ``half``: the first ``half`` patches are applied on the new base and must give the
    tree of the commit they end at, and the others, at the same time, on that tree, must
    give the replayed tree (the same check, in two processes, one on each core)."""

    def __init__(self, repo: Repo, st: RebaseState, patches: list[bytes], half: int = 0) -> None:
        self.repo, self.st, self.half = repo, st, half
        self.middle: str | None = None
        self.applying: Applying | None = None
        self.tmp = ExitStack()
        if not patches:
            return
        try:  # the files in RAM where there is a place for them
            tmp = self.tmp.enter_context(scratch_dir("series-rebase-"))
            files = []
            for i, data in enumerate(patches):
                path = tmp / f"{i:04d}.patch"
                path.write_bytes(data)
                files.append(path)
            onto = repo.objects.tree_of(st.onto)
            if half:
                self.middle = repo.objects.tree_of(_kept_commits(st)[half - 1])
                pieces = [(onto, files[:half]), (self.middle, files[half:])]
            else:
                pieces = [(onto, files)]
            self.applying = repo.index.apply_pieces_later(pieces)
        except BaseException:
            self.tmp.close()
            raise

    def check(self) -> None:
        """Raise unless the patches gave the replayed tree."""
        st = self.st
        tree: str | None
        with self.tmp:
            if self.applying is None:
                tree = self.repo.objects.tree_of(st.onto)
            elif self.half:
                first, tree = self.applying.result()
                tree = tree if first == self.middle else None
            else:
                (tree,) = self.applying.result()
        if tree != self.repo.objects.tree_of(st.current):
            raise InternalError(
                "the re-exported patches would not reproduce the rebased commits",
                why="nothing was written; the rebase stays where it is",
            )

    def abandon(self) -> None:
        with self.tmp:
            if self.applying is not None:
                self.applying.abandon()


def _summary(
    ui: Ui,
    st: RebaseState,
    dropped: list[Dropped],
    kept: int,
    raw: Mapping[str, bytes],
    diffs: Mapping[str, bytes],
) -> None:
    """The table of what became of each patch; ``raw`` and ``diffs``: the picked patches'
    raw diffs and the diffs of those whose raw diffs differ (:class:`_Reads`)."""
    table = Grid(f"rebased onto {st.onto_label}", ("#", "id", "result", "details"))
    walked = st.walked()
    for n, (a, o) in enumerate(walked, 1):
        reduced = o.kept and a.part is not None and a.part.verdict == "partial"
        if o.status == "picked" and reduced:
            result, detail = "reduced (partly upstream)", o.note
        elif o.status == "picked":
            if raw[a.commit] == raw[o.new]:
                result, detail = UNCHANGED, ""
            else:
                was, now = diffs.get(a.commit, b""), diffs.get(o.new, b"")  # the same: equal
                result, detail = UNCHANGED if was == now else classify_diffs(was, now), ""
        elif reduced:
            result, detail = "reduced (partly upstream), remainder recorded", o.resolution
        elif o.status == "resolved":
            result, detail = "resolved (recorded)", o.resolution
        else:
            result, detail = f"dropped ({reason(a, o)})", o.note
        table.add_row(str(n), a.id, result, detail)
    ui.table(table)
    ui.result(
        f"rebased {kept} patches onto {st.onto_label}; {len(dropped)} dropped "
        "(recorded in series.toml [[dropped]]); series.toml pins "
        f"{st.onto[:12]}; patches/ re-exported. `series range-diff` shows what changed."
    )
