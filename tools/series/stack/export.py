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
is first copied under ``.series/backups/<time>/``, and every file is written
to a temporary file beside it and renamed into place, so a file is either
old or new, never half written. The files are written before the refs
move (one transaction): if the refs cannot move, the branch still counts
as unexported and nothing is lost.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from series.checkout import refuse_during_rebase
from series.errors import InternalError, RefusedError, SeriesError
from series.files import write_atomic
from series.git import RefMoved, Repo
from series.manifest import Patch, PatchUpdate, write_patches
from series.stack.build import PatchFile, build
from series.stack.message import series_id, with_trailer
from series.ui import Ui

if TYPE_CHECKING:
    from series.checkout import Checkout
    from series.project import Series


@dataclass(frozen=True)
class Exported:
    patch: Patch
    commit: str  # the normalised commit
    data: bytes


def export(series: Series, ui: Ui, checkout: Checkout) -> None:
    """Write the branch of ``checkout`` to patches/ and series.toml."""
    refuse_during_rebase(checkout, "export")
    state = checkout.require()
    repo = checkout.repo
    tip = checkout.tip()
    if tip is None or not repo.is_ancestor(state.base, tip):
        raise RefusedError(
            f"refusing to export: branch {checkout.branch} in {checkout.path} does not "
            "sit on the upstream base",
            hint="rebase it onto refs/series/base, or run `series apply --force`",
        )
    if repo.merges(state.base, tip):
        raise RefusedError(
            "refusing to export: the branch has merge commits",
            hint="a series is a straight line of commits: rebase to linearise it",
        )
    dirty = repo.dirty()
    if dirty:
        ui.status(f"note: {len(dirty)} uncommitted change(s) in {checkout.path} are not exported")
    commits = repo.commits(state.base, tip)
    plan = _plan(series, commits, repo, checkout.path)
    exported = _normalise(series, repo, state.base, plan)
    _verify(series, repo, state.base, exported, tip)
    changed, backup = _write(series, exported, set(state.applied), ui)
    new_tip = exported[-1].commit if exported else state.base
    try:
        checkout.write(
            "export",
            tip=(tip, new_tip),
            base=state.base,
            applied=[e.patch.id for e in exported],
            source=state.source,
            move_files=False,
        )
    except RefMoved as exc:
        kept = f"; the files they replaced are in {backup}" if backup else ""
        raise RefMoved(
            exc.message,
            why=f"{exc.why}\npatches/ and series.toml were already written ({changed} file(s)"
            f"{kept}); the branch still counts as unexported",
            hint=exc.hint,
        ) from None
    ui.result(
        f"exported {len(exported)} patches from {checkout.path}: "
        f"{changed} file(s) changed"
        + (f" (branch now at {new_tip[:12]})" if new_tip != tip else "")
    )


@dataclass(frozen=True)
class _Entry:
    commit: str
    patch: Patch


def _plan(series: Series, commits: list[str], repo: Repo, where: Path) -> list[_Entry]:
    manifest = series.manifest
    known = {p.id: p for p in manifest.patches}
    next_id = max((int(p.id[1:]) for p in manifest.patches), default=0) + 1
    seen: set[str] = set()
    plan = []
    for commit in commits:
        message = repo.message(commit)
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
        plan.append(_Entry(commit, Patch(**{**patch.__dict__, "title": subject})))
    return plan


def _normalise(series: Series, repo: Repo, base: str, plan: list[_Entry]) -> list[Exported]:
    parent = base
    out = []
    for entry in plan:
        message = with_trailer(repo.message(entry.commit), entry.patch.id)
        commit = repo.commit_tree(
            repo.tree_of(entry.commit), [parent], message, repo.author(entry.commit)
        )
        out.append(Exported(entry.patch, commit, repo.format_patch(commit)))
        parent = commit
    return out


def _verify(series: Series, repo: Repo, base: str, exported: list[Exported], tip: str) -> None:
    """Re-apply the bytes about to be written; they must give the same commits."""
    with tempfile.TemporaryDirectory(prefix="series-verify-") as tmp:
        files = []
        for i, e in enumerate(exported):
            path = Path(tmp) / f"{i:04d}.patch"
            path.write_bytes(e.data)
            files.append(PatchFile(e.patch, path))
        built = build(repo, base, files)
    got = [s.commit for s in built.steps]
    want = [e.commit for e in exported]
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
    if repo.tree_of(want[-1] if want else base) != repo.tree_of(tip):
        raise InternalError("the normalised stack does not match the branch's tree")


def _write(
    series: Series, exported: list[Exported], applied: set[str], ui: Ui
) -> tuple[int, Path | None]:
    """Write what changed; a missing entry that was applied is dropped, one never
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
    changes = {
        path: data
        for path, data in writes.items()
        if (data is None and path.exists())
        or (data is not None and (not path.exists() or path.read_bytes() != data))
    }
    if not changes:
        return 0, None
    backup = _backup_dir(series.root)
    for path in changes:
        if path.exists():
            target = backup / path.relative_to(series.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    for path, data in changes.items():
        if data is None:
            path.unlink()
            ui.status(f"  removed {path.relative_to(series.root)} (dropped from the branch)")
        else:
            write_atomic(path, data)
            ui.status(f"  wrote {path.relative_to(series.root)}")
    if backup.exists():
        ui.status(f"previous versions kept in {backup.relative_to(series.root)}")
        return len(changes), backup
    return len(changes), None


def _backup_dir(root: Path) -> Path:
    stamp = time.strftime("export-%Y%m%dT%H%M%SZ", time.gmtime())
    backups = root / ".series" / "backups"
    candidate, n = backups / stamp, 1
    while candidate.exists():
        n += 1
        candidate = backups / f"{stamp}-{n}"
    return candidate


def _slug(subject: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", subject.lower().split(":", 1)[-1]).strip("-")
    return "-".join(words.split("-")[:5]) or "patch"
