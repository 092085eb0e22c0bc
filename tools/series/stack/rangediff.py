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
so it reads like range-diff output everywhere else. ``series range-diff``
asks git once for the whole series (:func:`range_diffs`: one ``range-diff``
of the two stacks, cut into patches and numbered as the one-patch form
numbers them; from CUT_AT pairs on two cores, two at once, each of
one half of both stacks: :func:`_cut`) and once for every diff
(``diff-tree --stdin``); a
patch that git pairs with another patch's commit in the whole-series run
(or that a cut parts) is asked alone, so the text is always the one-patch
form's. A pair git's range-diff marks ``=`` (the same text) is
``unchanged`` without a diff of its own (:func:`_same`); only the others
are diffed, and of those, where patches change several files, only the
files whose raw diff lines differ (one ``diff-tree --raw`` first:
:func:`_diffs`). Its git processes start
without importing GitPython (series.git.run.light_processes: one
``cat-file`` per repository); the memo is listed once for both versions,
both pins are found in the cache without the fetch machinery
(series.upstream.cached_pin), and the current version's series.toml is
the one the command parsed, its patch files read once (for the version
and for its keys in the memo) and hashed once (the memo's keys take the
digests series.stack.rangediff_kept took of them before the run, for a
plain range-diff that keeps its answer). The earlier version is parsed from its
bytes and its stack taken from the memo without writing its files out, where
neither can depend on where the files are (:func:`_parsed`,
:func:`_remembered`). The snapshot a rebase kept is read from the checkout's
repository without series.checkout where git opens it as its own work tree
(:func:`_checkout`). Only the parts of the git layer it uses are imported
(not series.git's names, which import every part). A build of either stack packs the cache's loose
objects once there are many (series.upstream.pack_cache): the range-diff
reads the commits' trees and blobs from a pack.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from series import upstream
from series.builder import memo
from series.errors import UsageError
from series.git.repo import Repo  # not through series.git: it imports every part
from series.git.run import light_processes, scratch_dir
from series.manifest import load, loads  # the session parsed the project's: loaded already
from series.records import NamedTuple
from series.refnames import REBASE_LAST
from series.stack.branches_kept import CACHE_REPO  # series.upstream.cache_repo
from series.stack.diffclass import CONTENT as CONTENT
from series.stack.diffclass import CONTEXT as CONTEXT
from series.stack.diffclass import UNCHANGED, differing_files
from series.stack.diffclass import classify_diffs as classify_diffs
from series.stack.rangediff_kept import Seen, read_known

TYPE_CHECKING = False  # neither typing nor dataclasses is imported for a range-diff
if TYPE_CHECKING:
    from series.git.refs import Listing
    from series.manifest import Manifest
    from series.project import Series
    from series.ui import Ui


# The pins this process resolved anew rather than found in the cache: what a resolve
# answers may depend on more than the cache holds (series.stack.rangediff_kept keeps
# nothing then).
RESOLVED: list[str] = []


def range_diff(repo: Repo, old: str, new: str) -> str:
    """``git range-diff`` of one commit against another: the form reviewers know."""
    return repo.diffs.range_diff(f"{old}^!", f"{new}^!")


# One pair's header line of ``git range-diff``: "N:  abbrev = M:  abbrev subject", where a
# side git did not pair is "-:  -------", and N and M are right-aligned to the widest number.
_HEADER = re.compile(r"^ *(\d+|-):  ([0-9a-f]+|-+) ([=!<>]) +(\d+|-):  ([0-9a-f]+|-+) (.*)$")


def range_diffs(
    repo: Repo,
    old: tuple[str, str],
    new: tuple[str, str],
    pairs: Sequence[tuple[str, str]],
    cut: tuple[str, str] | None = None,
) -> dict[tuple[str, str], str]:
    """:func:`range_diff` of each (old commit, new commit) pair, with one ``git range-diff``
    (or two at once: ``cut``).

    ``old`` and ``new`` are (base, tip) of the two stacks holding the
    pairs' commits. git pairs the commits of the two ranges itself; a pair
    it does not pair the same way (a patch that now reads more like
    another one) is asked alone. Each text is the one-pair form's:
    numbered 1, with no padding. ``cut``: a commit of each stack where both
    are cut in two (:func:`_cut`), each half's range-diff run beside the
    other's, one on each core: git reads the commits of each range with a
    ``git log`` of its own, one after the other, most of the work. A pair's
    text is its two commits' alone, whichever range holds them; a pair git
    does not pair within a half (one whose commits the cut parts) is asked
    alone, as above.
    """
    if len(pairs) < 2:
        return {(o, n): range_diff(repo, o, n) for o, n in pairs}
    if cut is None:
        outs = [repo.diffs.range_diff(f"{old[0]}..{old[1]}", f"{new[0]}..{new[1]}")]
    else:
        outs = repo.diffs.range_diffs(
            [
                (f"{old[0]}..{cut[0]}", f"{new[0]}..{cut[1]}"),
                (f"{cut[0]}..{old[1]}", f"{cut[1]}..{new[1]}"),
            ]
        )
    found: dict[tuple[str, str], list[str]] = {}
    index: dict[tuple[int, int], dict[tuple[str, str], tuple[str, str]]] = {}  # by abbrev length
    for out in outs:
        current: list[str] | None = None
        for line in out.splitlines(keepends=True):
            match = _HEADER.match(line.rstrip("\n"))
            if match is None:
                if current is not None:
                    current.append(line)
                continue
            current = None
            _, a, mark, _, b, subject = match.groups()
            size = (len(a), len(b))
            if size not in index:
                index[size] = {(o[: size[0]], n[: size[1]]): (o, n) for o, n in pairs}
            pair = index[size].get((a, b))
            if pair is not None and mark in "=!":
                current = found[pair] = [f"1:  {a} {mark} 1:  {b} {subject}\n"]
    texts = {pair: "".join(lines) for pair, lines in found.items()}
    for pair in pairs:
        if pair not in texts:
            texts[pair] = range_diff(repo, *pair)
    return texts


# -- series range-diff -------------------------------------------------------------


class Version(NamedTuple):
    """One version of the series: where it came from, and its files by relative path;
    ``manifest``: its series.toml parsed, when the project's own was (the current one)."""

    label: str
    files: dict[str, bytes]
    manifest: Manifest | None = None
    digests: dict[str, bytes] | None = None  # of files, as series.builder.memo takes them


class Row(NamedTuple):
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


def report(
    series: Series, ui: Ui, since: str | None, only: str | None, seen: Seen | None = None
) -> tuple[Version, Version, list[Row]]:
    """The old version (:func:`previous`), the new one, and :func:`compare`'s rows.
    ``seen``: what the digest of series.stack.rangediff_kept hashed before the run (the
    patch files' digests, taken for the memo's keys where they are of the bytes read)."""
    with light_processes():  # a few queries and one range-diff: GitPython's import costs more
        files, digests = _current_files(series, seen or {})  # read once, for both
        listing = _memo_later(series)  # beside the reading of the earlier version
        try:
            old = previous(series, since, files)
            new = current(series, files, digests)
        except BaseException:
            if listing is not None:
                listing.abandon()
            raise
        return old, new, compare(series, ui, old, new, only, listing)


def _memo_later(series: Series) -> Listing | None:
    """The listing of the memo (series.builder.memo.recorded_later), started now, and the
    cache's ``cat-file`` that finds both pins (series.git.objects.Objects.warm), where the
    cache repository is there already; else None: ``series.cache`` makes it, once the
    earlier version is found (a range-diff that has none to compare with refuses without
    making it)."""
    if not os.path.isfile(os.path.join(series.cache_dir, CACHE_REPO, "HEAD")):
        return None
    listing = memo.recorded_later(series.cache)
    try:
        series.cache.objects.warm()
    except BaseException:
        listing.abandon()
        raise
    return listing


def previous(series: Series, since: str | None, current: dict[str, bytes]) -> Version:
    """The version to compare with: ``--since REV``, else the default (docs/range-diff.md);
    ``current``: the project's files now (:func:`_current_files`)."""
    project = series.project_repo()
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
    checkout = _checkout(series)
    saved = checkout.objects.rev(REBASE_LAST) if checkout is not None else None
    if checkout is not None and saved is not None:
        files = checkout.objects.files_of(saved)  # the snapshot series rebase kept
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


def _checkout(series: Series) -> Repo | None:
    """The checkout's repository, None where there is none: what ``series.checkout()``
    and its ``exists()`` answer, without series.checkout (its states, backups and drift
    checks: a range-diff reads one ref) where git opens the checkout as its own work
    tree, or finds no repository there. Anything else is refused by ``exists()``, in
    its words."""
    repo = Repo(series.checkout_path())
    found = repo.is_repo()
    if repo.unopened is None and (not found or repo.own_work_tree):
        return repo if found else None
    checkout = series.checkout()
    return checkout.repo if checkout.exists() else None


def current(
    series: Series, files: dict[str, bytes], digests: dict[str, bytes] | None = None
) -> Version:
    """The project's files now (``files``, ``digests``: :func:`_current_files`), with its
    series.toml as the command parsed it (when that names only files of patches/, as the
    version's files hold)."""
    manifest = series.manifest
    named = all(p.file in files for p in manifest.patches)
    return Version("patches/ as they are now", files, manifest if named else None, digests)


def compare(
    series: Series,
    ui: Ui,
    old: Version,
    new: Version,
    only: str | None,
    listing: Listing | None = None,
) -> list[Row]:
    """One row per patch of either version (new order first, then the dropped ones);
    ``listing``: the memo's, started already (:func:`_memo_later`)."""
    cache = series.cache
    # one listing of the memo for both versions
    known = memo.known_of(listing.result()) if listing is not None else memo.recorded(cache)
    a, a_range, _ = _build(series, ui, old, cache, known)
    b, b_range, manifest = _build(series, ui, new, cache, known)
    if only is not None and only not in a and only not in b:
        raise UsageError(
            f"no patch {only} in either version",
            why=f"old: {', '.join(a) or 'none'}\nnew: {', '.join(b) or 'none'}",
        )
    reasons = {d.id: d.reason for d in manifest.dropped}  # why each was dropped
    ids = [pid for pid in [*b, *(p for p in a if p not in b)] if only in (None, pid)]
    both = [(a[pid], b[pid]) for pid in ids if pid in a and pid in b]
    pairs = [(o[0], n[0]) for o, n in both]
    texts = range_diffs(cache, a_range, b_range, pairs, _cut(a, b, ids))
    same = {(o[0], n[0]) for o, n in both if _same(texts[o[0], n[0]], old, new, o, n)}
    diffs = _diffs(cache, old, new, both, same)
    rows = []
    for pid in ids:
        o, n = a.get(pid), b.get(pid)
        title = (n or o or ("", "", ""))[1]
        if o is not None and n is not None:
            kind = (
                UNCHANGED
                if (o[0], n[0]) in same
                else classify_diffs(diffs.get(o[0], b""), diffs.get(n[0], b""))
            )
            rows.append(Row(pid, kind, o[0], n[0], title, texts[o[0], n[0]]))
        elif n is not None:
            rows.append(Row(pid, "new", None, n[0], title, ""))
        else:
            assert o is not None
            rows.append(Row(pid, "dropped", o[0], None, title, "", reasons.get(pid, "")))
    return rows


CUT_AT = 8  # pairs from which range-diff is cut in two halves (:func:`_cut`): below, the
# second half's processes (range-diff and its two logs) cost more than the half of the
# work they take off the first


def _cut(
    a: dict[str, tuple[str, str, str]], b: dict[str, tuple[str, str, str]], ids: list[str]
) -> tuple[str, str] | None:
    """(old commit, new commit) after which :func:`range_diffs` cuts both stacks (``a``,
    ``b``: patch id -> (commit, ...), in each stack's order), nearest the middle of the
    pairs of ``ids``: the patches of those pairs before the cut are the same in both
    orders, so git meets each pair within one half. None under CUT_AT pairs, without a
    core to spare (:func:`_spare_core`), or where the two orders leave no such cut."""
    paired = set(ids) & a.keys() & b.keys()
    old = [pid for pid in a if pid in paired]
    new = [pid for pid in b if pid in paired]
    if len(old) < CUT_AT or not _spare_core():
        return None
    before_old: set[str] = set()
    before_new: set[str] = set()
    best: int | None = None
    for k in range(len(old) - 1):  # cut after k + 1 pairs: each half keeps one at least
        before_old.add(old[k])
        before_new.add(new[k])
        if before_old == before_new and (
            best is None or abs(2 * k + 2 - len(old)) < abs(2 * best + 2 - len(old))
        ):
            best = k
    return None if best is None else (a[old[best]][0], b[new[best]][0])


def _spare_core() -> bool:
    """Whether the second half can have a core of its own: two cores or more for this
    process. The halves cost more CPU than one range-diff (a second range-diff and its
    two ``git log`` start, and each reads its half's blobs afresh: about 4% more
    instructions, 10-15% more CPU time, on the bench's 26 patches): on one core that is
    all they add. The machine's load is not asked: what a command starts, and so what
    the tests count, does not change with what else runs (beside other work that keeps
    both cores busy the halves cost a few per cent of wall time; on an idle core they
    save about a seventh)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) > 1
    return (os.cpu_count() or 1) > 1


# What makes git range-diff's own diffs differ from :func:`shape`'s (``--no-renames``): a
# file deleted, renamed or copied, which range-diff may show as a rename. One pass over a
# patch's bytes for the three (``in`` three times read the half megabyte thrice).
_RENAMES = re.compile(rb"\n(?:deleted file mode |rename from |copy from )")


def _same(
    text: str, old: Version, new: Version, o: tuple[str, str, str], n: tuple[str, str, str]
) -> bool:
    """Whether git range-diff's ``=`` for this pair already says :data:`UNCHANGED`.

    ``=`` is git's verdict that the two commits' texts are equal: message, file
    headers, every added, removed and context line (only line numbers and blob ids
    dropped), so the lines :func:`classify_diffs` compares are equal too, and the
    pair needs no diff of its own. Unless a patch deletes, renames or copies a file:
    range-diff's diffs find renames, :func:`shape`'s do not, so those are diffed.
    """
    match = _HEADER.match(text.split("\n", 1)[0])
    if match is None or match.group(3) != "=":
        return False
    files = (old.files.get(o[2], b""), new.files.get(n[2], b""))
    return not any(_RENAMES.search(data) for data in files)


def _diffs(
    cache: Repo,
    old: Version,
    new: Version,
    pairs: list[tuple[tuple[str, str, str], tuple[str, str, str]]],
    same: set[tuple[str, str]],
) -> dict[str, bytes]:
    """The diffs that classify the ``pairs`` (old, new: commit, title, file) not ``same``
    (unchanged, needing none), with one ``diff-tree``; adds to ``same`` the pairs found
    unchanged without it.

    Where a pair's patch files name more than one file, the commits' raw diffs are asked
    first (one ``diff-tree --raw``: no blob read): two commits with the same raw diff
    (modes, blob ids, paths) have the same diff, so they are unchanged, and the others
    are diffed only in the files whose raw lines differ in some pair
    (series.stack.diffclass.differing_files).
    A rebase moves a few of the files under the patches, not every file they touch (the
    tests they add), and those diffs are most of the work; for patches of one file each
    the raw diffs would leave nothing out. The patch files only choose whether to ask:
    what is diffed and left out is git's raw answer."""
    todo = [(o, n) for o, n in pairs if (o[0], n[0]) not in same]
    raw: dict[str, bytes] = {}
    if any(
        _several(old.files.get(o[2], b"")) or _several(new.files.get(n[2], b"")) for o, n in todo
    ):
        raw = cache.diffs.raw_commits([c for o, n in todo for c in (o[0], n[0])])
        same |= {(o[0], n[0]) for o, n in todo if raw[o[0]] == raw[n[0]]}
    commits = [(o[0], n[0]) for o, n in todo if (o[0], n[0]) not in same]
    paths = differing_files(raw, commits) if raw else []
    return cache.diffs.commits([c for pair in commits for c in pair], paths)


def _several(patch: bytes) -> bool:
    """Whether the patch file ``patch`` seems to change more than one file (a message
    that quotes a diff seems to as well)."""
    return patch.count(b"\ndiff --git ") > 1


# patch id -> (commit, title, file); (base, tip); the version's manifest
Stack = tuple[dict[str, tuple[str, str, str]], tuple[str, str], "Manifest"]


def _build(series: Series, ui: Ui, version: Version, cache: Repo, known: memo.Known) -> Stack:
    """patch id -> (commit, title, patch file) of ``version`` built on its own pin, in the
    cache; (pin, tip) of that stack; its manifest. The current version is the project's
    own files, as parsed already; another is parsed from its files' bytes when the parse
    cannot depend on where they are (:func:`_parsed`), else written out to be parsed."""
    if version.manifest is not None:
        mine = version.manifest
        files, digests = version.files, version.digests
        return _built(series, ui, version.label, mine, series.root, cache, known, files, digests)
    manifest = _parsed(version.files, series.cache_dir)
    if manifest is not None:
        return _built(series, ui, version.label, manifest, None, cache, known, version.files)
    with _written(version.files) as root:
        manifest = load(root / "series.toml", kept=series.cache_dir)
        return _built(series, ui, version.label, manifest, root, cache, known)


@contextmanager
def _written(files: dict[str, bytes]) -> Iterator[Path]:
    """``files`` written out in a new temporary directory, removed afterwards."""
    with scratch_dir("series-range-diff-") as tmp:
        root = Path(tmp)
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        yield root


# Where a version parsed from its bytes (:func:`_parsed`) says its series.toml is: a path
# that names nothing, so the parse's check that each path resolves inside the project is
# the lexical one it is in a directory of written files.
_NOWHERE = Path("/nonexistent/series-range-diff")


def _parsed(files: dict[str, bytes], kept: Path | None = None) -> Manifest | None:
    """``files``' series.toml parsed as :func:`series.manifest.load` parses it once the
    files are written out in a directory of their own, without writing them: None unless
    that is sure to be the same manifest (the same values, no error).

    The parse reads the disk only to check the paths it names: the checkout and every
    patch file must resolve inside the project, and each patch file must be a file that
    is not empty. In a directory holding only the written files, a path without ``..``
    always resolves inside it (its parse would fail only on ``.``, as here), and a patch
    file is such a file exactly when it is one of ``files`` with some bytes. Anything
    else (an error, a ``..``, a file named otherwise) is left to that parse, which says
    what is wrong in its own words. ``kept``: the per-user cache (series.manifest_kept).
    """
    text = files.get("series.toml")
    if text is None:
        return None
    try:  # decoded as Path.read_text decodes (universal newlines), as load() reads it
        decoded = io.TextIOWrapper(io.BytesIO(text), encoding="utf-8").read()
        manifest = loads(_NOWHERE / "series.toml", decoded, missing_ok=True, kept=kept)
    except Exception:  # that parse raises it again, in its own words
        return None
    named = [manifest.checkout, *(p.file for p in manifest.patches)]
    if any(".." in value.split("/") for value in named):
        return None
    if not all(files.get(p.file) for p in manifest.patches):
        return None
    return manifest


def _built(
    series: Series,
    ui: Ui,
    label: str,
    manifest: Manifest,
    root: Path | None,
    cache: Repo,
    known: memo.Known,
    files: dict[str, bytes] | None = None,
    digests: dict[str, bytes] | None = None,
) -> Stack:
    """The stack of ``manifest``'s patches, whose files are under ``root`` (their bytes
    ``files``, as read already, and some of their ``digests``), or (``root`` None) are
    ``files``' bytes: reused from the memo when it has every one of them (of those
    bytes), else built from the files (under ``root``, or written out)."""
    base = upstream.cached_pin(manifest.upstream, cache, series.cache_dir)
    if base is None:  # resolved anew (fetched, or from the sdist): no answer is kept
        RESOLVED.append(manifest.upstream.commit)
        base = upstream.resolve(manifest.upstream, series.cache_dir, source=None, override=None)
    ui.status(f"{label}: {len(manifest.patches)} patches on {base.label}")
    if files is not None:
        steps = _remembered(manifest, files, base.commit, known, digests or {})
        if steps is not None:
            tip = list(steps.values())[-1][0] if steps else base.commit
            return steps, (base.commit, tip), manifest
    if root is None:
        assert files is not None
        with _written(files) as written:
            return (*_stack(series, manifest, written, base.commit, cache, known), manifest)
    return (*_stack(series, manifest, root, base.commit, cache, known), manifest)


def _remembered(
    manifest: Manifest,
    files: dict[str, bytes],
    base: str,
    known: memo.Known,
    digests: dict[str, bytes],
) -> dict[str, tuple[str, str, str]] | None:
    """What :func:`series.builder.memo.build` answers without building when the memo has
    every patch (the same keys, of the same bytes: ``digests`` holds the digest of some of
    ``files``, hashed already); None when it has not."""
    digest = memo.content_digest
    keys = memo.keys_of_digests(
        base, [(p.id, digests.get(p.file) or digest(files[p.file])) for p in manifest.patches]
    )
    if not all(key in known for key in keys):
        return None
    return {
        p.id: (known[key][0], p.title, p.file)
        for p, key in zip(manifest.patches, keys, strict=True)
    }


def _stack(
    series: Series, manifest: Manifest, root: Path, base: str, cache: Repo, known: memo.Known
) -> tuple[dict[str, tuple[str, str, str]], tuple[str, str]]:
    from series.builder.build import PatchFile  # a build: not loaded when the memo has both

    files = [PatchFile(p, root / p.file) for p in manifest.patches]
    built = memo.build(cache, base, files, known)
    if built.reused < len(built.steps) or built.failure is not None:
        upstream.pack_cache(cache, series.cache_dir)  # this build wrote objects
    steps = {s.patch.id: (s.commit, s.patch.title, s.patch.file) for s in built.steps}
    return steps, (built.base, built.tip)


def _current_files(series: Series, seen: Seen) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """series.toml and every ``patches/*.patch`` by relative path (what ``Path.glob``
    lists: any name that ends so, a leading dot too), without glob's pattern machinery;
    and the digests of those whose bytes ``seen`` hashed (rangediff_kept.read_known)."""
    files = {"series.toml": series.manifest.path.read_bytes()}
    digests = {}
    patches = series.root / "patches"
    try:
        names = sorted(os.listdir(patches)) if patches.is_dir() else []
    except PermissionError:  # as glob: nothing listed
        names = []
    for name in names:
        if name.endswith(".patch"):
            data, digest = read_known(str(patches / name), seen)
            files[f"patches/{name}"] = data
            if digest is not None:
                digests[f"patches/{name}"] = digest
    return files, digests


def _files_at(project: Repo, rev: str) -> dict[str, bytes]:
    files = {
        path: oid
        for path, oid in project.objects.tree_files(rev).items()
        if path == "series.toml" or (path.startswith("patches/") and path.endswith(".patch"))
    }
    blobs = project.objects.read_blobs(sorted(set(files.values())))
    return {path: blobs[oid] for path, oid in files.items()}
