"""The end of ``series rebase``: patches/ and series.toml written, then the branch moved.

Finishing writes patches/ and series.toml first (all staged and flushed to
disk before any is renamed into place: series.files.replace_all; the
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
from pathlib import Path
from typing import TYPE_CHECKING

from series import manifest, refnames
from series.checkout import Checkout
from series.errors import InternalError
from series.files import confined, replace_all
from series.git.repo import Repo
from series.git.run import scratch_dir
from series.manifest import Dropped, Patch, UpstreamPart
from series.manifest_write import PatchUpdate, write_rebased
from series.stack import rebase_state as rstate
from series.stack.diffclass import UNCHANGED, classify_diffs
from series.stack.part_notes import records
from series.stack.rebase_plan import DROP_REASONS, Action, Outcome, RebaseState
from series.ui import Grid, Ui

if TYPE_CHECKING:
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
    old_text = repo.objects.blob_read(st.saved, "series.toml").decode("utf-8")
    old = {p.id: p for p in manifest.loads(series.manifest.path, old_text, missing_ok=True).patches}
    kept = [(a, o) for a, o in st.walked() if o.kept]
    exported = repo.diffs.format_patches(st.onto, st.current) if kept else []
    data = {a.id: d for (a, _), d in zip(kept, exported, strict=True)}
    _verify(repo, st, [data[a.id] for a, _ in kept])
    dropped = _dropped(st, old)
    updates = [
        PatchUpdate(a.id, subjects[a.commit], old[a.id].file, old[a.id].branch) for a, _ in kept
    ]
    text = write_rebased(
        series.manifest,
        old_text,
        ref=st.onto_rev,
        commit=st.onto,
        dropped=dropped,
        updates=updates,
        parts=_parts(st),
    )
    writes = {series.root / old[a.id].file: data[a.id] for a, _ in kept}
    writes[series.manifest.path] = text.encode("utf-8")
    for path in writes:
        confined(series.root, path)  # all checked before any is read or written
    changes: dict[Path, bytes | None] = {p: b for p, b in writes.items() if _differs(p, b)}
    for d in dropped:  # after series.toml no longer names them: a kill leaves no dangling file
        if d.file:
            changes.setdefault(series.root / d.file, None)
    # All checked, then all staged and flushed before any is renamed (patches first, then
    # series.toml, then the removals): files.replace_all.
    replace_all(changes, within=series.root)
    # The new pin, in the cache: `series apply` needs no network for it now.
    failed = series.upstream(ui).keep(st.onto, source=checkout.path, ref=rstate.ONTO_REF)
    if failed is not None:
        ui.status(
            f"warning: could not keep the new pin in the cache ({failed}): "
            "`series apply` will fetch it (pass --upstream)"
        )
    tip = kept[-1][1].new if kept else st.onto
    listed = repo.refs.under("refs/")  # the rebase's refs to delete, and what keeps commits
    backed = checkout.write(
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
    )
    if backed is not None:
        ui.status(backed.describe(checkout.path))
    _summary(repo, ui, st, dropped, len(kept), {o.new: data[a.id] for a, o in kept})


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


def _verify(repo: Repo, st: RebaseState, patches: list[bytes]) -> None:
    """Re-apply the bytes about to be written: they must give the replayed tree."""
    with scratch_dir("series-rebase-") as tmp:
        files = []
        for i, data in enumerate(patches):
            path = Path(tmp) / f"{i:04d}.patch"
            path.write_bytes(data)
            files.append(path)
        tree = (
            repo.index.apply_all(repo.objects.tree_of(st.onto), files)
            if files
            else repo.objects.tree_of(st.onto)
        )
    if tree != repo.objects.tree_of(st.current):
        raise InternalError(
            "the re-exported patches would not reproduce the rebased commits",
            why="nothing was written; the rebase stays where it is",
        )


def _differing(raw: Mapping[str, bytes], pairs: list[tuple[str, str]]) -> list[str]:
    """The files whose raw line differs between the two commits of some pair (none: every
    file, where a path is quoted or there are too many for one command line).

    A file with the same raw line (modes, blob ids, status, path) in both commits of a
    pair has the same part in both diffs: leaving it out of both leaves the comparison of
    series.stack.rangediff.classify_diffs as it was (each file's part starts with its
    ``diff --git`` line, in the changes and in the context alike), and the diffs to read
    small (a rebase's upstream moves a few files under the patches, not all they touch).
    """
    paths: set[str] = set()
    for was, now in pairs:
        for line in set(raw[was].splitlines()) ^ set(raw[now].splitlines()):
            path = line.split(b"\t", 1)[-1].decode("utf-8", "surrogateescape")
            if path.startswith('"'):
                return []
            paths.add(path)
    return sorted(paths) if len(paths) <= _PATHS else []


_PATHS = 1000  # at most this many paths on diff-tree's command line


def _summary(
    repo: Repo,
    ui: Ui,
    st: RebaseState,
    dropped: list[Dropped],
    kept: int,
    patches: Mapping[str, bytes],
) -> None:
    """``patches``: the exported bytes of each new commit, where the new side's diffs are
    read (``Diffs.of_patch``: git made them once, for the export)."""
    table = Grid(f"rebased onto {st.onto_label}", ("#", "id", "result", "details"))
    walked = st.walked()
    picked = [c for a, o in walked if o.status == "picked" for c in (a.commit, o.new)]
    # The same raw diff (paths, modes, blob ids) is the same patch: only the others are
    # read as patches and compared line by line, and of those only the files whose raw
    # lines differ in some pair (a file's raw line makes its part of the patch).
    raw = repo.diffs.raw_commits(picked)
    pairs = [(a.commit, o.new) for a, o in walked if o.status == "picked"]
    pairs = [(was, now) for was, now in pairs if raw[was] != raw[now]]
    paths = _differing(raw, pairs)
    of_patch = repo.diffs.of_patch
    taken = {
        now: diff
        for _, now in pairs
        if now in patches and (diff := of_patch(patches[now], raw[now], paths)) is not None
    }
    diffs = repo.diffs.commits([c for pair in pairs for c in pair if c not in taken], paths)
    diffs.update(taken)
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
