"""Export: a checkout's branch back into patches/ and series.toml.

Commits map to manifest entries through their ``Series-Id`` trailer (which
``series apply`` writes), so an amended commit, a reworded title and a
reordered stack keep their identity; a commit without the trailer is a new
patch and gets the next free id; an entry whose commit is gone was dropped.
Patches that were never applied (``apply --to``) keep their place at the end.

Before writing anything, export normalises the commits (committer = author,
one trailer) and re-applies the files it is about to write: only if that
gives back exactly the same trees does it write patches/ and series.toml, so
apply followed by export is byte-identical, and an export can never write a
patch that does not reproduce the branch. Every file it changes or deletes
is first copied under ``.series/backups/export-<time>/``, and all files are
staged beside their targets before any is renamed into place
(series.stack.export_files): a full disk changes nothing, a kill leaves
each file old or new and a journal that the next command reports. The
files are written before the refs move (one transaction); if the refs
cannot move, the files are put back from the backup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from series import logs
from series.backup import Kept
from series.builder import memo
from series.builder.build import Built, PatchFile, build
from series.builder.message import series_id, with_trailer
from series.checkout import (
    BASE_REF,
    finish_cut_move,
    refuse_during_rebase,
    refuse_git_in_progress,
)
from series.errors import InternalError, RefusedError, SeriesError
from series.git import CommitInfo, RefMoved, Repo, Transaction
from series.git.run import light_processes, scratch_dir
from series.manifest import Patch, load
from series.manifest_write import PatchUpdate, write_patches
from series.stack import export_files, verified
from series.stack.edit_plan import FIXUP_PREFIXES
from series.ui import Ui

if TYPE_CHECKING:
    from series.checkout import Checkout, CheckoutState
    from series.project import Series


@dataclass(frozen=True)
class Exported:
    patch: Patch
    commit: str  # the normalised commit
    data: bytes


def export(series: Series, ui: Ui, checkout: Checkout, digest: str | None) -> dict[str, Any]:
    """Write the branch of ``checkout`` to patches/ and series.toml; what was done.

    The caller asked series.stack.verified first (``rerun``: when the last
    export changed nothing and nothing changed since, that is the answer,
    after one ``git status``); ``digest`` is what it read, kept with the
    answer when this run changes nothing either.

    Its git processes start without importing GitPython (series.git.run.light_processes:
    the same processes; the import cost more than most of them, as in rebase).
    """
    with light_processes():
        return _export(series, ui, checkout, digest)


def _export(series: Series, ui: Ui, checkout: Checkout, digest: str | None) -> dict[str, Any]:
    state, tip = _prepare(series, ui, checkout)
    done = export_tip(series, ui, checkout, state, tip)
    quiet = checkout.on_branch() and not checkout.repo.worktree.dirty(read_only=True)
    if quiet and not done["changed"] and done["tip"] == tip and done["kept"] is None:
        result = f"exported {len(done['exported'])} patches from {checkout.path}: 0 file(s) changed"
        verified.keep(series, checkout, "export", digest, ([], result, done))
    return done


def export_tip(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    state: CheckoutState,
    tip: str,
    *,
    branch: str | None = None,
    verb: str = "export",
    also: Callable[[Transaction], None] | None = None,
) -> dict[str, Any]:
    """Export the commits base..``tip`` and move the branch (at ``branch``) to them.

    ``series export`` exports the branch itself. ``series edit`` ends by
    exporting the series it made (``tip``, not yet on the branch, which is
    still at ``branch``): the files are written, then the branch, the
    checkout state and ``also`` (the end of the edit's state) move in one
    transaction, and the checkout's files follow.
    """
    repo = checkout.repo
    old = tip if branch is None else branch
    plan = _plan(series, repo.history.commit_infos(state.base, tip), checkout.path)
    _refuse_fixups(plan, checkout)
    exported = _normalise(series, repo, state.base, plan)
    _verify(series, repo, state.base, exported, tip)
    new_tip = exported[-1].commit if exported else state.base
    if checkout.tip() != old:  # checked again right before writing: nothing to undo yet
        raise RefMoved(
            f"refusing to {verb}: {checkout.branch} in {checkout.path} moved while exporting",
            why="another command changed the branch; nothing was written",
            hint=f"run `series {verb}` again",
        )
    written, kept = _write(series, ui, checkout, state, (old, new_tip), exported, verb, also)
    if kept is not None:
        ui.status(kept.describe(checkout.path) + " (as they were before export normalised them)")
    ui.result(
        f"exported {len(exported)} patches from {checkout.path}: "
        f"{len(written.changed)} file(s) changed"
        + (f" (branch now at {new_tip[:12]})" if new_tip != old else "")
    )
    return {
        "checkout": str(checkout.path),
        "branch": checkout.branch,
        "tip": new_tip,
        "exported": [e.patch.id for e in exported],
        "changed": [str(p) for p in written.changed],
        "backup": str(written.backup) if written.backup else None,
        "kept": kept.ref if kept is not None else None,
    }


def _prepare(series: Series, ui: Ui, checkout: Checkout) -> tuple[CheckoutState, str]:
    """The refusals before anything is read; an interrupted export undone first."""
    refuse_during_rebase(checkout, "export")
    journal = export_files.interrupted(series.root)
    tip = checkout.tip() if journal is not None and checkout.exists() else None
    if export_files.edit_end_cut_short(journal, tip):
        raise export_files.edit_end_refusal("export")  # before anything moves
    finish_cut_move(checkout, ui)
    state = checkout.require()
    repo = checkout.repo
    refuse_git_in_progress(checkout, "export")
    if journal is not None:
        export_files.undo_interrupted(series.root, journal)
        series.manifest = load(series.manifest.path, missing_ok=True)
        ui.status(
            "finishing an interrupted export: put back the files it had written from "
            f"{journal.get('backup', '.series/backups')}, exporting again"
        )
    tip = checkout.tip()
    if tip is None or not repo.history.is_ancestor(state.base, tip):
        raise RefusedError(
            f"refusing to export: branch {checkout.branch} in {checkout.path} does not "
            "sit on the upstream base",
            hint=f"rebase it onto {BASE_REF}, or run `series apply --force`",
        )
    if repo.history.merges(state.base, tip):
        raise RefusedError(
            "refusing to export: the branch has merge commits",
            hint="a series is a straight line of commits: rebase to linearise it",
        )
    _note_ignored(checkout, tip, ui)
    return state, tip


def _write(
    series: Series,
    ui: Ui,
    checkout: Checkout,
    state: CheckoutState,
    tips: tuple[str, str],
    exported: list[Exported],
    verb: str = "export",
    also: Callable[[Transaction], None] | None = None,
) -> tuple[export_files.Written, Kept | None]:
    """The files (all or nothing), then the refs; the files are put back if the refs fail.

    The commits as the user made them are kept under a backup ref when the
    normalised ones replace them (in the refs' transaction, series.backup).
    """
    changes = _changes(series, exported, set(state.applied))
    written = export_files.write(series.root, changes, verb=verb, tip=tips[1])
    for rel in written.changed:
        gone = not (series.root / rel).exists()
        ui.status(f"  {'removed' if gone else 'wrote'} {rel}" + (" (dropped)" if gone else ""))
    if written.backup:
        ui.status(f"previous versions kept in {written.backup}")
    try:
        kept = checkout.prepare_write(
            verb,
            prior=state,
            tip=tips,
            base=state.base,
            applied=[e.patch.id for e in exported],
            source=state.source,
            move_files=also is not None,
            also=also,
            replaces_series=also is not None,
        ).commit()
    except RefMoved as exc:
        export_files.roll_back(series.root, written)
        raise RefMoved(
            exc.message,
            why=f"{exc.why}\nexport put back the {len(written.changed)} file(s) it had "
            "written: patches/ and series.toml are as before",
            hint=exc.hint,
        ) from None
    export_files.finish(series.root)
    return written, kept


def _note_ignored(checkout: Checkout, tip: str, ui: Ui) -> None:
    repo = checkout.repo
    dirty = repo.worktree.dirty()
    if dirty:
        ui.status(f"note: {len(dirty)} uncommitted change(s) in {checkout.path} are not exported")
    if checkout.on_branch():
        return
    head = repo.objects.rev("HEAD")
    where = repo.refs.symbolic_head() or f"detached at {head[:12] if head else '?'}"
    extra = (
        repo.history.commits(tip, head) if head and not repo.history.is_ancestor(head, tip) else []
    )
    ui.status(
        f"note: HEAD in {checkout.path} is {where}, not {checkout.branch}: exporting "
        f"{checkout.branch} only"
        + (f"; {len(extra)} commit(s) on HEAD are not exported" if extra else "")
        + f" (git -C {checkout.path} switch {checkout.branch} to work on the series)"
    )


def _refuse_fixups(plan: list[_Entry], checkout: Checkout) -> None:
    fixups = [e for e in plan if e.patch.title.startswith(FIXUP_PREFIXES)]
    if not fixups:
        return
    raise RefusedError(
        f"refusing to export: {len(fixups)} fixup commit(s) were never squashed",
        why="\n".join(f"{e.commit[:12]} {e.patch.title}" for e in fixups)
        + "\nexported as they are, each would become a patch of its own",
        hint=f"squash them: GIT_SEQUENCE_EDITOR=: git -C {checkout.path} rebase -i "
        f"--autosquash {BASE_REF}, then `series export`; or `series edit --squash`, "
        "which squashes and exports",
    )


@dataclass(frozen=True)
class _Entry:
    info: CommitInfo  # the commit as the user left it (its message, tree, author)
    patch: Patch

    @property
    def commit(self) -> str:
        return self.info.commit


def _plan(series: Series, infos: list[CommitInfo], where: Path) -> list[_Entry]:
    manifest = series.manifest
    known = {p.id: p for p in manifest.patches}
    next_id = max((int(p.id[1:]) for p in manifest.patches), default=0) + 1
    seen: set[str] = set()
    plan = []
    for info in infos:
        commit, message = info.commit, info.message
        subject = message.splitlines()[0] if message.strip() else ""
        pid = series_id(message)
        if pid in seen:
            raise RefusedError(
                f"refusing to export: two commits carry {pid}",
                why=f"the second is {commit[:12]}",
                hint=f"squash them, or delete the Series-Id trailer from the new one "
                f"(git -C {where} commit --amend)",
            )
        if pid is None or pid not in known:
            pid = pid if pid and re.fullmatch(r"P[0-9]+", pid) else f"P{next_id}"
            next_id = max(next_id, int(pid[1:])) + 1
            branch = f"perf-{pid}-{_slug(subject)}"
            patch = Patch(pid, subject, f"patches/{branch}.patch", branch, "unsubmitted")
        else:
            patch = known[pid]
        seen.add(pid)
        plan.append(_Entry(info, patch._replace(title=subject)))
    return plan


def _normalise(series: Series, repo: Repo, base: str, plan: list[_Entry]) -> list[Exported]:
    """Each commit again with committer = author and its trailer: one process for all."""
    chain = [(e.info.tree, with_trailer(e.info.message, e.patch.id), e.info.author) for e in plan]
    commits = repo.objects.write_commits(chain, base) if plan else []
    tip = commits[-1] if commits else base
    data = repo.diffs.format_patches(base, tip) if plan else []  # one process for all
    return [Exported(e.patch, c, d) for e, c, d in zip(plan, commits, data, strict=True)]


def _verify(series: Series, repo: Repo, base: str, exported: list[Exported], tip: str) -> None:
    """Re-apply the bytes about to be written; they must give the same commits.

    In the per-user cache when it has the base (:func:`_in_cache`): the leading files
    its memo proves are not applied again, and what is applied is recorded there for
    the next export. Without a cache, or when it does not give exactly ``exported``'s
    commits, every file is applied in the checkout, as export always did, and that
    answers (a refusal is the checkout's, never the cache's).
    """
    with scratch_dir("series-verify-") as tmp:
        files = []
        for i, e in enumerate(exported):
            path = Path(tmp) / f"{i:04d}.patch"
            path.write_bytes(e.data)
            files.append(PatchFile(e.patch, path))
        want = [e.commit for e in exported]
        built = _in_cache(series, base, files, want)
        if built is None or built.failure is not None or [s.commit for s in built.steps] != want:
            built = build(repo, base, files)  # what the cache could not prove, said here
    got = [s.commit for s in built.steps]
    if built.failure is not None or got != want:
        bad = (
            built.failure.patch.id
            if built.failure
            else next(e.patch.id for e, g in zip(exported, got, strict=False) if e.commit != g)
        )
        raise SeriesError(
            f"refusing to export: the patch for {bad} would not reproduce its commit",
            why="re-applying the exported files gave a different result; nothing was written",
            hint="this is a bug in series or an unusual commit (binary, mode-only, ...): "
            "please report it with `git -C <checkout> show` of that commit",
        )
    if repo.objects.tree_of(want[-1] if want else base) != repo.objects.tree_of(tip):
        raise InternalError("the normalised stack does not match the branch's tree")


def _in_cache(
    series: Series, base: str, files: list[PatchFile[Patch]], commits: list[str]
) -> Built[Patch] | None:
    """``files`` applied on ``base`` in the per-user cache, the leading ones its memo
    proves (those exact bytes, on this base, by this series code, gave exactly these
    commits: series.builder.memo.check) not applied again. None when there is no cache,
    it lacks the commit to apply onto, or it cannot be read: the caller applies them all
    in the checkout."""
    if not files or not (series.cache_dir / "upstream.git" / "HEAD").is_file():
        return None  # no cache: not made now only to find it empty
    try:
        return memo.check(series.cache, base, files, commits)
    except SeriesError as exc:  # a damaged cache proves nothing; the files are applied again
        logs.debug("series.stack", "memo not read: %s", exc.message)
        return None


def _changes(
    series: Series, exported: list[Exported], applied: set[str]
) -> dict[Path, bytes | None]:
    """What changes; a missing entry that was applied is dropped, one never
    applied (``apply --to``) is kept, after the exported ones."""
    manifest = series.manifest
    present = {e.patch.id for e in exported}
    missing = [p for p in manifest.patches if p.id not in present]
    kept = [p for p in missing if p.id not in applied]
    dropped = [p for p in missing if p.id in applied]
    writes: dict[Path, bytes | None] = {}
    for e in exported:
        writes[series.patch_path(e.patch)] = e.data
    for p in dropped:
        writes.setdefault(series.patch_path(p), None)
    updates = [
        PatchUpdate(e.patch.id, e.patch.title, e.patch.file, e.patch.branch) for e in exported
    ]
    updates += [PatchUpdate(p.id, p.title, p.file, p.branch) for p in kept]
    writes[manifest.path] = write_patches(manifest, updates).encode("utf-8")
    return {
        path: data
        for path, data in writes.items()
        if (data is None and path.exists())
        or (data is not None and (not path.exists() or path.read_bytes() != data))
    }


def _slug(subject: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", subject.lower().split(":", 1)[-1]).strip("-")
    return "-".join(words.split("-")[:5]) or "patch"
