"""Facts about commits, kept in the per-user cache by commit id.

A commit id names the commit's tree and its parents, so what git says of
one commit alone (its ``patch-id --stable``, the files it changes against
its parent) is the same every time it is asked, in any repository. A
``Store`` keeps such facts under ``<kind>/<first two hex digits>.json``
in the cache, and a second run over the same commits reads them back
instead of asking git: only new commits are asked.

A file is versioned and validated on read: the format, the kind, the
shard, every commit id and every value. One that does not validate
(written by another version of series, of another kind, truncated,
edited by hand) is never trusted: it counts as empty, its commits are
asked of git again, it is rewritten with the answers, and the store
says so (``Store.ignored``: one line for the caller to print). A cache
that cannot be written costs only speed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from series import json_text
from series.digests import is_hex
from series.files import write_atomic
from series.plain import NotPlain, read_plain

TYPE_CHECKING = False  # typing is not imported: a rebase's resume loads this module
if TYPE_CHECKING:
    from typing import Any


def is_commit_id(text: object) -> bool:
    return isinstance(text, str) and is_hex(text)


class Store:
    """``kind`` facts (each checked by ``valid``) of commits, in ``cache_dir``."""

    def __init__(self, cache_dir: Path, kind: str, fmt: int, valid: Callable[[Any], bool]) -> None:
        self.root = cache_dir / kind
        self.kind = kind
        self.format = fmt
        self.valid = valid
        self._shards: dict[str, dict[str, Any]] = {}
        self._bad: dict[str, str] = {}  # shard -> why its file was not trusted

    def recall(self, commits: Iterable[str]) -> dict[str, Any]:
        """commit -> its fact, for those of ``commits`` the cache holds."""
        found: dict[str, Any] = {}
        for commit in commits:
            value = self._shard(commit[:2]).get(commit)
            if value is not None:
                found[commit] = value
        return found

    def keep(self, facts: Mapping[str, Any]) -> None:
        """Add ``facts`` (commit -> fact) to the cache; a shard is written only when it
        gains a commit (or did not validate)."""
        new: dict[str, dict[str, Any]] = {}
        for commit, value in facts.items():
            if is_commit_id(commit) and self.valid(value):
                new.setdefault(commit[:2], {})[commit] = value
        for shard, values in new.items():
            record = self._shard(shard)
            if shard not in self._bad and all(record.get(c) == v for c, v in values.items()):
                continue
            record.update(values)
            data = {"format": self.format, "kind": self.kind, "shard": shard, "commits": record}
            with contextlib.suppress(OSError):  # a read-only or full cache: only not kept
                write_atomic(
                    self.root / f"{shard}.json",
                    json_text.dumps(data, sort_keys=True),
                    within=None,
                    durable=False,
                )

    @property
    def ignored(self) -> str | None:
        """One line on the files read that were not trusted, or None."""
        if not self._bad:
            return None
        shard, why = next(iter(sorted(self._bad.items())))
        more = f" and {len(self._bad) - 1} more" if len(self._bad) > 1 else ""
        return (
            f"warning: ignored the cache file {self.root / f'{shard}.json'} ({why}){more}: "
            "not trusted, its commits are asked of git again and the file rewritten"
        )

    def _shard(self, shard: str) -> dict[str, Any]:
        if shard not in self._shards:
            self._shards[shard] = self._read(shard)
        return self._shards[shard]

    def _read(self, shard: str) -> dict[str, Any]:
        """The facts of one shard; empty when there is no file or it does not validate."""
        try:
            text = read_plain(self.root / f"{shard}.json").decode()
        except FileNotFoundError:
            return {}
        except NotPlain:  # a FIFO would make open() wait for ever; a link leads elsewhere
            self._bad[shard] = "not a plain file"
            return {}
        except (OSError, ValueError) as exc:  # unreadable, or not UTF-8
            self._bad[shard] = f"unreadable: {type(exc).__name__}"
            return {}
        try:
            record = json_text.loads(text)  # once: a range of thousands reads every shard
        except ValueError:
            self._bad[shard] = "not JSON"
            return {}
        why = self._invalid(shard, record)
        if why is not None:
            self._bad[shard] = why
            return {}
        commits: dict[str, Any] = record["commits"]
        return commits

    def _invalid(self, shard: str, record: object) -> str | None:
        """Why the parsed text of a shard's file is not to be trusted (None: it is)."""
        if not isinstance(record, dict):
            return "not a record"
        if record.get("format") != self.format:
            return f"format {record.get('format')!r}, not {self.format}"
        if record.get("kind") != self.kind:
            return f"holds {record.get('kind')!r}, not {self.kind!r}"
        if record.get("shard") != shard:
            return f"holds shard {record.get('shard')!r}, not {shard!r}"
        commits = record.get("commits")
        if not isinstance(commits, dict):
            return "no commits"
        for commit, value in commits.items():
            if not (is_commit_id(commit) and commit.startswith(shard)):
                return f"a key that is not a commit id of this shard: {str(commit)[:50]!r}"
            if not self.valid(value):
                return f"a value that is not a {self.kind} entry, for {commit[:12]}"
        return None
