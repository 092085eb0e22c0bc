"""What apply and export know of series.toml without parsing it: kept from its last parse.

A re-run of ``apply`` or ``export`` that nothing changed since the last one
is answered from what that run verified (series.stack.verified): a digest
of series.toml, the patch files, the checkout's refs and series' own code,
and one ``git status``. To compute that digest it needs, of the manifest,
only the checkout's place, the branch and each patch's id and file; parsing
the manifest for them (tomllib, the validation, its records) cost more than
the rest of such a run. So when apply or export parses the manifest, those
values are kept in the per-user cache (``known/<sha256 of the project's
path>.json``, beside status's record) under a digest of series.toml's
bytes, the project's path, series' code (:func:`code_digest`) and the
values themselves; the next apply or export that finds series.toml with
the same digest takes them from there, and parses the manifest only if it
goes further than the answer kept (series.project). Deleting the cache
deletes the record: the next run parses.

Why that is the parse's answer: the values are a function of the bytes and
of series' code, both in the digest. What the parse checks besides on the
file system is that the checkout and the patch files resolve inside the
project, and that the patch files exist and are not empty. The first is
checked here, strictly: a path that goes through any symlink (or ``..``) is
not taken from what was kept, and the manifest is parsed, which judges it.
The others hold for a run answered from what was verified, whose digest
holds every patch file's bytes as the run that parsed them read them; a run
not answered that way parses the manifest before using it. Anything that
cannot be read, or is not exactly what this module writes, is the parse.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from series import json_text
from series.code import code_digest
from series.digests import sha256
from series.files import write_atomic
from series.plain import read_plain
from series.records import NamedTuple

FORMAT = 1
DIR = "known"


class Known(NamedTuple):
    """What a re-run needs of the manifest: ``[series] checkout`` and ``branch``, and
    each ``[[patch]]``'s id and file, in order."""

    checkout: str
    branch: str
    patches: tuple[tuple[str, str], ...]


def _key(root: Path, text: bytes, known: Known) -> str:
    """The digest of the parse's inputs (the project's path, series' code, series.toml's
    bytes) and of what it gave: a record altered in any of them is not taken."""
    digest = sha256(f"{FORMAT}\0{root}\0".encode() + code_digest())
    digest.update(sha256(text).digest())
    digest.update(json_text.dumps(known).encode())
    return digest.hexdigest()


def _path(root: Path, cache_dir: Path) -> Path:
    return cache_dir / DIR / f"{sha256(str(root).encode()).hexdigest()}.json"


def recall(root: Path, cache_dir: Path) -> Known | None:
    """What the last parse of ``root``'s series.toml said, when the file is the same and
    no path it names goes through a symlink; else None (the manifest is to be parsed)."""
    memo = _path(root, cache_dir)
    try:
        text = (root / "series.toml").read_bytes()
        record = json_text.loads(read_plain(memo))  # a FIFO or a link there: none kept
    except (OSError, ValueError):
        return None
    known = _valid(record)
    if known is None or record["key"] != _key(root, text, known):
        return None
    real_root = os.path.realpath(root)
    links: dict[str, bool] = {}  # each part looked at once
    for value in (known.checkout, *(file for _, file in known.patches)):
        if not _plain_path(real_root, value, links):
            return None  # a link, "..", "./": the parse judges where it leads
    return known


def _plain_path(real_root: str, value: str, links: dict[str, bool]) -> bool:
    """Whether ``value`` leads from ``real_root`` (resolved) to ``real_root/value`` as
    written: no empty, "." or ".." part (nor a leading "/"), and no part a symbolic link
    (``os.lstat``; one that does not exist is none, as for ``os.path.realpath``).

    What ``os.path.realpath(root / value) == os.path.join(real_root, value)`` says, or
    stricter (a link that leads back to itself is not taken), with one ``lstat`` per
    part: ``links`` keeps each answer, so the patches' directory is looked at once,
    not once per patch with every directory above the project (a millisecond of each
    ``--abort`` and re-run of apply or export)."""
    parts = value.split("/")
    if "" in parts or "." in parts or ".." in parts:
        return False
    path = real_root
    for part in parts:
        path = os.path.join(path, part)
        link = links.get(path)
        if link is None:
            try:
                link = stat.S_ISLNK(os.lstat(path).st_mode)
            except OSError:  # not there (or not a directory above): no link
                link = False
            except ValueError:  # a NUL in it: the parse judges it
                link = True
            links[path] = link
        if link:
            return False
    return True


def keep(root: Path, cache_dir: Path, text: bytes, known: Known) -> None:
    """Keep ``known``, what the parse of series.toml's bytes ``text`` gave; nothing when the
    file is no longer those bytes, or the record cannot be written (it costs only speed)."""
    memo = _path(root, cache_dir)
    record = {"format": FORMAT, "key": _key(root, text, known), **known._asdict()}
    record["patches"] = [list(pair) for pair in known.patches]
    try:
        if (root / "series.toml").read_bytes() != text:
            return
        with contextlib.suppress(OSError, ValueError):
            if json_text.loads(read_plain(memo)) == record:
                return  # kept already: nothing to write
        write_atomic(memo, json_text.dumps(record), within=None, durable=False)
    except OSError:
        return


def _valid(record: object) -> Known | None:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    if set(record) != {"format", "key", "checkout", "branch", "patches"}:
        return None
    checkout, branch, patches = record["checkout"], record["branch"], record["patches"]
    if not (isinstance(record["key"], str) and isinstance(checkout, str) and checkout):
        return None
    if not (isinstance(branch, str) and branch and isinstance(patches, list) and patches):
        return None
    pairs = []
    for pair in patches:
        if not (isinstance(pair, list) and len(pair) == 2):
            return None
        if not all(isinstance(v, str) and v for v in pair):
            return None
        pairs.append((pair[0], pair[1]))
    return Known(checkout, branch, tuple(pairs))
