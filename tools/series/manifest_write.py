"""Writing series.toml back: what export and rebase change, nothing else.

``tomlkit`` edits the document in place, so the maintainer's comments, key
order and formatting survive; series.manifest reads and validates it.
A rebase that only moves the pin (the common case: nothing dropped, the
patches in the same order under the same titles, nothing partly upstream)
edits the pin's lines of the text itself, and keeps that text only when
``tomllib`` reads it as exactly what the tomlkit edit would give
(:func:`_pin_edit`, :func:`_proven`); tomlkit, imported only when it is needed, does
the rest.
What ``tomllib`` reads of that text is made and kept when the rebase starts
(:func:`keep_pin_moved`, series.manifest_kept): its end, often in a later
``--continue``, takes it from there.
"""

from __future__ import annotations

import re

from series import manifest_kept
from series.errors import ManifestError
from series.manifest import Dropped, Manifest, UpstreamPart, loads
from series.records import NamedTuple  # not dataclasses: it imports inspect and ast

# tomlkit is imported by each function that uses it: a rebase --skip or --continue that
# stops again writes no series.toml, and tomlkit's import was a tenth of such a run.
# tomllib (with typing and datetime) too: a rebase's end imports this module before it
# starts its export (series.stack.rebase_finish), and asks tomllib only what the start
# of the rebase did not keep (keep_pin_moved).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    import tomlkit


class PatchUpdate(NamedTuple):
    """What export learned about one patch, in new series order."""

    id: str
    title: str
    file: str
    branch: str


def write_patches(
    manifest: Manifest, updates: list[PatchUpdate], *, text: str | None = None
) -> str:
    """The manifest text with [[patch]] tables reordered/added/removed per ``updates``.

    Existing tables are reused (comments and extra keys survive); new patches
    get a minimal table marked ``unsubmitted``. ``text`` is the manifest to
    start from (default: the file as it is now).
    """
    import tomlkit

    doc = tomlkit.parse(text if text is not None else manifest.path.read_text(encoding="utf-8"))
    _patches(doc, updates)
    return tomlkit.dumps(doc)


def _patches(doc: tomlkit.TOMLDocument, updates: list[PatchUpdate]) -> None:
    import tomlkit

    aot = doc["patch"]
    assert isinstance(aot, tomlkit.items.AoT)
    old = {str(t["id"]): t for t in aot}
    tables = []
    for update in updates:
        table = old.get(update.id)
        if table is None:
            table = tomlkit.table()
            table["id"] = update.id
            table["title"] = update.title
            table["file"] = update.file
            table["branch"] = update.branch
            table["state"] = "unsubmitted"
            table["subset"] = tomlkit.array()
        else:
            if table["title"] != update.title:
                table["title"] = update.title
            if table["file"] != update.file:
                table["file"] = update.file
        tables.append(table)
    # Reorder in place: rebuilding the array of tables would reflow blank lines.
    while len(aot):
        del aot[0]
    for table in tables:
        aot.append(table)


def write_pin(text: str, *, ref: str, commit: str, dropped: list[Dropped]) -> str:
    """``text`` with the pin moved to ``commit`` (a git commit) and ``dropped`` recorded.

    The sdist stand-in describes the old pin only, so it is removed (a
    comment says so) and ``source`` becomes ``git``: an offline ``series
    apply`` then says that the pin needs git, instead of silently using an
    sdist of another version. Comments and key order elsewhere survive.
    """
    import tomlkit

    text, had_sdist = _without_sdist(text, ref, commit)
    doc = tomlkit.parse(text)
    _pin(doc, ref, commit, dropped, had_sdist)
    return tomlkit.dumps(doc)


def write_rebased(
    manifest: Manifest,
    text: str,
    *,
    ref: str,
    commit: str,
    dropped: list[Dropped],
    updates: list[PatchUpdate],
    parts: dict[str, list[UpstreamPart]],
    data: dict[str, Any] | None = None,
    kept: Path | None = None,
) -> str:
    """What ``series rebase`` writes: :func:`write_pin`, then :func:`write_patches`, then
    :func:`write_parts` of ``text``, the same text, with one parse and one dump of it
    (tomlkit's parse is most of the end of a rebase's own work), or no parse by tomlkit
    at all where only the pin moves (:func:`_pin_edit`). ``data``: ``text`` as
    ``tomllib`` reads it, where the caller has it (series.manifest_kept kept it);
    ``kept``: the per-user cache, where what ``tomllib`` reads of the line edit's text
    may be kept (:func:`keep_pin_moved`)."""
    if data is None:
        import tomllib

        data = tomllib.loads(text)
    text, had_sdist = _without_sdist(text, ref, commit, data)
    if not dropped and not any(parts.values()):
        edited = _pin_edit(text, data, ref, commit, had_sdist, updates)
        if edited is not None and _proven(*edited, kept):
            return edited[0]
    import tomlkit

    doc = tomlkit.parse(text)
    _pin(doc, ref, commit, dropped, had_sdist)
    _patches(doc, updates)
    if any(parts.values()):
        _parts(doc, parts)
    return tomlkit.dumps(doc)


def _without_sdist(
    text: str, ref: str, commit: str, data: dict[str, Any] | None = None
) -> tuple[str, bool]:
    """``text`` without its sdist stand-in (a comment says why), and whether it had one.

    ``data``: ``text`` as ``tomllib`` reads it, when the caller has read it already.
    """
    if data is None:
        import tomllib

        data = tomllib.loads(text)
    old_sdist = data.get("upstream", {}).get("sdist")
    if old_sdist is None:
        return text, False
    was = f"{old_sdist.get('package')}=={old_sdist.get('version')}"
    note = (
        f"# [upstream.sdist] ({was}) was removed by series rebase: no sdist stands\n"
        f'# in for {ref} ({commit[:12]}); see docs/rebase.md, "At the end".\n'
    )
    return _drop_table(text, "[upstream.sdist]", note), True


def _pin(
    doc: tomlkit.TOMLDocument, ref: str, commit: str, dropped: list[Dropped], had_sdist: bool
) -> None:
    import tomlkit

    up = doc["upstream"]
    assert isinstance(up, tomlkit.items.Table)
    up["ref"] = ref
    up["commit"] = commit
    if had_sdist or up.get("source") == "sdist":
        up["source"] = "git"
    if dropped:
        aot = doc.get("dropped")
        if aot is None:
            aot = tomlkit.aot()
            doc.append("dropped", aot)
        for d in dropped:
            table = tomlkit.table()
            table["id"] = d.id
            table["title"] = d.title
            if d.pr is not None:
                table["pr"] = d.pr
            table["reason"] = d.reason
            if d.upstream_commit:
                table["upstream_commit"] = d.upstream_commit
            table["onto"] = d.onto
            if d.file:
                table["file"] = d.file
            aot.append(table)


def write_parts(text: str, parts: dict[str, list[UpstreamPart]]) -> str:
    """``text`` with each patch's ``partly_upstream`` records extended by ``parts``.

    Records of earlier rebases stay: what upstream took then is still upstream.
    """
    if not any(parts.values()):
        return text
    import tomlkit

    doc = tomlkit.parse(text)
    _parts(doc, parts)
    return tomlkit.dumps(doc)


def _parts(doc: tomlkit.TOMLDocument, parts: dict[str, list[UpstreamPart]]) -> None:
    import tomlkit

    aot = doc["patch"]
    assert isinstance(aot, tomlkit.items.AoT)
    for table in aot:
        new = parts.get(str(table["id"]), [])
        if not new:
            continue
        records = table.get("partly_upstream")
        if records is None:
            records = tomlkit.array()
            records.multiline(True)
            table["partly_upstream"] = records
        for part in new:
            record = tomlkit.inline_table()
            record["commit"] = part.commit
            if part.onto:
                record["onto"] = part.onto
            record["took"] = list(part.took)
            records.append(record)


_PLAIN_VALUE = re.compile(r"[A-Za-z0-9._/+@-]*")  # a basic string with nothing to escape


def _proven(out: str, want: dict[str, Any], kept: Path | None) -> bool:
    """Whether ``tomllib`` reads ``out``, the pin moved by :func:`_pin_edit`, as ``want``:
    the old document with those values replaced (not so where the edited line is inside
    a multi-line string, or the key is given twice or elsewhere). What ``tomllib`` reads
    of it is taken from the per-user cache ``kept`` where it was kept
    (:func:`keep_pin_moved`, at the rebase's start: a text named by its digest,
    series.manifest_kept), else ``tomllib`` is asked now."""
    read = manifest_kept.recall(kept, out) if kept is not None else None
    if read is None:
        import tomllib

        read = tomllib.loads(out)
    return read == want


def _pin_edit(
    text: str,
    data: dict[str, Any],
    ref: str,
    commit: str,
    had_sdist: bool,
    updates: list[PatchUpdate],
) -> tuple[str, dict[str, Any]] | None:
    """``text`` with the pin moved by editing its lines, and what ``tomllib`` must read of
    it for the edit to stand (:func:`_proven`); None where no such edit is made.

    Only where the rebase changes nothing but ``[upstream]``'s ``ref``, ``commit`` (and
    ``source``, to ``git``): the [[patch]] tables already in ``updates``' order with their
    titles and files, each key a line ``key = "value"`` of its own in ``[upstream]``,
    values that need no escape. tomlkit, replacing a value, keeps the line's indent and
    comment, as this does. ``data``: the document as it was before its sdist stand-in
    was cut out of ``text`` (``had_sdist``).
    """
    up = data.get("upstream")
    old = data.get("patch")
    if not isinstance(up, dict) or not isinstance(old, list):
        return None
    if [(p.get("id"), p.get("title"), p.get("file")) for p in old] != [
        (u.id, u.title, u.file) for u in updates
    ]:
        return None
    if had_sdist:
        up = {k: v for k, v in up.items() if k != "sdist"}
    values = {"ref": ref, "commit": commit}
    if had_sdist or up.get("source") == "sdist":
        values["source"] = "git"
    if not all(_PLAIN_VALUE.fullmatch(v) for v in values.values()):
        return None
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == "[upstream]"), None)
    if start is None:
        return None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    for key, value in values.items():
        line = re.compile(rf'(\s*{key}\s*=\s*)"[^"\\]*"(\s*(?:#.*)?\r?\n?)')
        found = [(i, m) for i in range(start + 1, end) if (m := line.fullmatch(lines[i]))]
        if len(found) != 1:
            return None
        (at, match), *_ = found
        lines[at] = f'{match[1]}"{value}"{match[2]}'
    return "".join(lines), {**data, "upstream": {**up, **values}}


def keep_pin_moved(
    manifest: Manifest, text: str, *, ref: str, commit: str, kept: Path, data: dict[str, Any]
) -> None:
    """What ``tomllib`` reads of series.toml as the end of a rebase onto ``commit`` (REV
    ``ref``) edits it when only the pin moves (:func:`_pin_edit`: nothing dropped, the
    patches as they are), read now and kept in the per-user cache ``kept``
    (series.manifest_kept), as any manifest read and accepted is kept: that end, in this
    run or a later ``--continue``, takes it from there (:func:`_proven`), and imports
    no ``tomllib`` (its import and the parse: 9 ms of a ``--continue``'s end, timed in
    the process, while git exports).
    ``text``: series.toml as the rebase saved it; ``data``: ``tomllib``'s reading of it.

    Nothing is kept where no such edit is made, or its text is no manifest series
    accepts: the end then reads it itself, as before (a text read wrong here is a
    text with another digest, or tables the end's comparison refuses)."""
    updates = [PatchUpdate(p.id, p.title, p.file, p.branch) for p in manifest.patches]
    text, had_sdist = _without_sdist(text, ref, commit, data)
    edited = _pin_edit(text, data, ref, commit, had_sdist, updates)
    if edited is None:
        return
    try:
        loads(manifest.path, edited[0], kept=kept)  # read, validated, kept
    except ManifestError:
        return


def _drop_table(text: str, header: str, note: str) -> str:
    """``text`` without the table ``header`` and the comment block right above it.

    The comment there describes the table (series.toml's explains the
    stand-in), so it goes with it; ``note`` takes their place.
    """
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if at is None:
        return text
    start = at
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    end = at + 1
    while end < len(lines) and not lines[end].lstrip().startswith(("[", "#")):
        end += 1
    while end > at + 1 and not lines[end - 1].strip():
        end -= 1  # keep the blank lines before the next table
    return "".join([*lines[:start], note, *lines[end:]])
