"""How each patch changed between two versions of the series, as ``git range-diff`` shows it.

Two versions of one patch are compared by their diffs (each commit against
its parent), and put in one of three classes that ``series rebase`` and
``series range-diff`` share:

* ``unchanged``: the same lines added and removed, with the same context
  (only line numbers and blob ids moved);
* ``context only``: the same lines added and removed, but the lines
  around them changed (upstream edited nearby);
* ``content changed``: the patch adds or removes other lines.

The per-patch text is ``git range-diff``'s own (``git range-diff A^! B^!``),
so it reads like range-diff output everywhere else.
"""

from __future__ import annotations

import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from series import upstream
from series.builder import memo
from series.builder.build import PatchFile
from series.errors import UsageError
from series.git import Repo
from series.manifest import load
from series.stack.rebase_state import LAST_REF
from series.stack.snapshot import saved_files
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series

UNCHANGED = "unchanged"
CONTEXT = "context only"
CONTENT = "content changed"


@dataclass(frozen=True)
class Shape:
    changes: tuple[str, ...]  # file headers and +/- lines
    context: tuple[str, ...]  # file headers and context lines


def shape(diff: bytes) -> Shape:
    changes: list[str] = []
    context: list[str] = []
    for raw in diff.decode("utf-8", "surrogateescape").splitlines():
        if raw.startswith(("diff --git", "index ", "@@")):
            if raw.startswith("diff --git"):
                changes.append(raw)
                context.append(raw)
            continue
        if raw.startswith(("+++", "---")):
            continue
        if raw.startswith(("+", "-")):
            changes.append(raw)
        elif raw.startswith(" "):
            context.append(raw)
    return Shape(tuple(changes), tuple(context))


def classify_diffs(old: bytes, new: bytes) -> str:
    a, b = shape(old), shape(new)
    if a.changes != b.changes:
        return CONTENT
    return UNCHANGED if a.context == b.context else CONTEXT


def classify(repo: Repo, old: str, new: str) -> str:
    """The class of the change from commit ``old`` to commit ``new`` (each against its parent)."""
    return classify_diffs(_diff(repo, old), _diff(repo, new))


def _diff(repo: Repo, commit: str) -> bytes:
    return repo.diffs.trees(f"{commit}^", commit)


def range_diff(repo: Repo, old: str, new: str) -> str:
    """``git range-diff`` of one commit against another: the form reviewers know."""
    return repo.diffs.range_diff(f"{old}^!", f"{new}^!")


# -- series range-diff -------------------------------------------------------------


@dataclass(frozen=True)
class Version:
    """One version of the series: where it came from, and its files by relative path."""

    label: str
    files: dict[str, bytes]


@dataclass(frozen=True)
class Row:
    id: str
    kind: str  # unchanged | context only | content changed | new | dropped
    old: str | None  # the patch's commit in the old version (built on the old pin)
    new: str | None
    title: str
    text: str  # git range-diff's lines for this patch
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind,
            "old": self.old,
            "new": self.new,
            "title": self.title,
            "note": self.note,
            "range_diff": self.text,
        }


def previous(series: Series, since: str | None) -> Version:
    """The version to compare with: ``--since REV``, else the default (docs/range-diff.md)."""
    project = series.project_repo()
    current = _current_files(series)
    if since is not None:
        if project is None or project.objects.rev(since) is None:
            raise UsageError(
                f"--since {since}: not a commit of the project repository",
                hint="name a commit of this repository (git log -- patches/ lists them)",
            )
        return Version(f"{since} ({project.objects.rev(since)!s:.12})", _files_at(project, since))
    last = project.history.last_change("patches") if project is not None else None
    if project is not None and last is not None and _files_at(project, last) != current:
        return Version(
            f"{last[:12]} (the last commit that changed patches/)", _files_at(project, last)
        )
    checkout = series.checkout()
    saved = checkout.repo.objects.rev(LAST_REF) if checkout.exists() else None
    if saved is not None:
        files = saved_files(checkout.repo, saved)
        if files != current:
            return Version("the series before the last `series rebase`", files)
    if project is not None and last is not None and project.objects.rev(f"{last}^") is not None:
        return Version(f"{last[:12]}^ (before the last commit that changed patches/)",
                       _files_at(project, f"{last}^"))  # fmt: skip
    raise UsageError(
        "there is no earlier version of the series to compare with",
        why="patches/ is as the last commit and the last rebase left it, or there is neither",
        hint="pass --since REV, a commit of this repository",
    )


def current(series: Series) -> Version:
    return Version("patches/ as they are now", _current_files(series))


def compare(series: Series, ui: Ui, old: Version, new: Version, only: str | None) -> list[Row]:
    """One row per patch of either version (new order first, then the dropped ones)."""
    cache = series.cache
    a, b = _build(series, ui, old), _build(series, ui, new)
    if only is not None and only not in a and only not in b:
        raise UsageError(
            f"no patch {only} in either version",
            why=f"old: {', '.join(a) or 'none'}\nnew: {', '.join(b) or 'none'}",
        )
    reasons = _drop_reasons(new)
    rows = []
    for pid in [*b, *(p for p in a if p not in b)]:
        if only is not None and pid != only:
            continue
        o, n = a.get(pid), b.get(pid)
        title = (n or o or ("", ""))[1]
        if o is not None and n is not None:
            kind = classify(cache, o[0], n[0])
            rows.append(Row(pid, kind, o[0], n[0], title, range_diff(cache, o[0], n[0])))
        elif n is not None:
            rows.append(Row(pid, "new", None, n[0], title, ""))
        else:
            assert o is not None
            rows.append(Row(pid, "dropped", o[0], None, title, "", reasons.get(pid, "")))
    return rows


def _build(series: Series, ui: Ui, version: Version) -> dict[str, tuple[str, str]]:
    """patch id -> (commit, title) of ``version`` built on its own pin, in the cache."""
    with tempfile.TemporaryDirectory(prefix="series-range-diff-") as tmp:
        root = Path(tmp)
        for rel, data in version.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        manifest = load(root / "series.toml")
        base = upstream.resolve(manifest.upstream, series.cache_dir, source=None, override=None)
        ui.status(f"{version.label}: {len(manifest.patches)} patches on {base.label}")
        files = [PatchFile(p, root / p.file) for p in manifest.patches]
        built = memo.build(series.cache, base.commit, files)
    return {s.patch.id: (s.commit, s.patch.title) for s in built.steps}


def _drop_reasons(version: Version) -> dict[str, str]:
    data = tomllib.loads(version.files["series.toml"].decode("utf-8"))
    return {str(d.get("id")): str(d.get("reason", "")) for d in data.get("dropped", [])}


def _current_files(series: Series) -> dict[str, bytes]:
    files = {"series.toml": series.manifest.path.read_bytes()}
    for path in sorted((series.root / "patches").glob("*.patch")):
        files[path.relative_to(series.root).as_posix()] = path.read_bytes()
    return files


def _files_at(project: Repo, rev: str) -> dict[str, bytes]:
    files = {
        path: oid
        for path, oid in project.objects.tree_files(rev).items()
        if path == "series.toml" or (path.startswith("patches/") and path.endswith(".patch"))
    }
    blobs = project.objects.read_blobs(sorted(set(files.values())))
    return {path: blobs[oid] for path, oid in files.items()}
