"""Batched three-way merges in a scratch object store: ``merge-tree --stdin``.

check-conflicts and rebase ask many "does this merge cleanly?" questions;
a git process costs milliseconds, so merges go to one
``git merge-tree --write-tree -z --stdin`` per batch, objects are written
with one ``hash-object --stdin-paths`` and read with one
``cat-file --batch``. Everything written under :meth:`scratch_objects`
goes to a temporary object store that is deleted afterwards, so the
repository does not grow.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from series.errors import InternalError
from series.git.run import HERMETIC, GitFailed, Part, execute, input_file, ram_dir


@dataclass(frozen=True)
class StageEntry:
    """One conflicted index entry from merge-tree: stage 1 base, 2 ours, 3 theirs."""

    mode: str
    oid: str
    stage: int
    path: str


@dataclass(frozen=True)
class MergeMessage:
    paths: tuple[str, ...]
    kind: str  # git's stable type string, e.g. "CONFLICT (contents)"
    text: str


@dataclass(frozen=True)
class TreeMerge:
    """The outcome of one ``merge-tree --write-tree`` merge."""

    clean: bool
    tree: str  # on conflict, files in it carry conflict markers
    entries: tuple[StageEntry, ...] = ()
    messages: tuple[MergeMessage, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({e.path for e in self.entries}))

    @property
    def conflicts(self) -> tuple[MergeMessage, ...]:
        return tuple(m for m in self.messages if m.kind.startswith("CONFLICT"))


class Merge(Part):
    """Three-way merges: of trees in batches, of single files, in scratch object stores."""

    @contextmanager
    def scratch_objects(self) -> Iterator[dict[str, str]]:
        """A hermetic environment whose new objects go to a temporary store.

        Reads still see the repository's objects (as an alternate), so merges
        and synthetic commits made under it leave nothing behind. The store
        is in RAM when the machine has a tmpfs: a run writes hundreds of
        loose objects, and on a busy disk that was most of its time.
        """
        objects = self.path / "objects"
        if not (self.path / "HEAD").is_file() or not objects.is_dir():
            objects = self.path / self._run.git("rev-parse", "--git-path", "objects").strip()
        tmp = Path(tempfile.mkdtemp(prefix="series-objects-", dir=ram_dir()))
        try:
            yield {
                **HERMETIC,
                "GIT_OBJECT_DIRECTORY": str(tmp),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects.resolve()),
            }
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def trees(self, lines: Sequence[str], env: Mapping[str, str] | None = None) -> list[TreeMerge]:
        """Many merges in one ``merge-tree --write-tree --stdin``, one per input line."""
        if not lines:
            return []
        data = ("\n".join(lines) + "\n").encode()
        results = parse_merge_tree(
            self._run.git_input("merge-tree", "--write-tree", "-z", "--stdin", data=data, env=env)
        )
        if len(results) != len(lines):
            raise InternalError(f"merge-tree gave {len(results)} results for {len(lines)} merges")
        return results

    def base_on_stdin(self, commit: str, env: Mapping[str, str] | None = None) -> bool:
        """Whether this git takes ``<base> -- <one> <two>`` on ``merge-tree --stdin``.

        That is the batch form of ``--merge-base`` (newer than 2.39); probing
        it answers for the git actually installed, whatever its version says.
        """
        argv = ["merge-tree", "--write-tree", "-z", "--stdin"]
        with input_file(f"{commit} -- {commit} {commit}\n".encode()) as path:
            status, _, _ = execute(self.path, argv, env=env, stdin=path, raw=True)
        return status == 0

    def file(
        self,
        base: bytes,
        ours: bytes,
        theirs: bytes,
        *,
        favour: str | None,
        labels: tuple[str, str, str] = ("ours", "base", "theirs"),
    ) -> bytes:
        """``git merge-file -p``: ``--ours``/``--theirs`` leave no markers; None keeps them.

        With markers, ``labels`` name the sides, so the same three blobs
        always give the same bytes (recorded resolutions rely on it).
        """
        with tempfile.TemporaryDirectory(prefix="series-merge-file-") as tmp:
            names = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                (Path(tmp) / name).write_bytes(data)
                names.append(str(Path(tmp) / name))
            how = [f"--{favour}"] if favour else []
            marks = [a for label in labels for a in ("-L", label)]
            argv = ["merge-file", "-p", *how, *marks, *names]
            status, out, err = execute(self.path, argv, env=HERMETIC, raw=True)
        if not 0 <= status < 128:
            raise GitFailed(argv, status, err)
        assert isinstance(out, bytes)
        return out


def parse_merge_tree(out: bytes) -> list[TreeMerge]:
    """Split ``merge-tree --write-tree -z --stdin`` output into its merges.

    Per merge: status NUL, tree NUL; when conflicted, the stage entries each
    NUL-terminated, an empty field, then message records (count, paths,
    type, text); then an empty field ends the merge.
    """
    fields = [f.decode("utf-8", "surrogateescape") for f in out.split(b"\0")]
    results: list[TreeMerge] = []
    i = 0
    while i + 1 < len(fields) and fields[i] != "":
        status, tree = int(fields[i]), fields[i + 1]
        i += 2
        if status < 0:
            raise InternalError(f"git merge-tree could not merge (status {status})")
        entries: list[StageEntry] = []
        messages: list[MergeMessage] = []
        if status == 0:
            while fields[i] != "":
                head, path = fields[i].split("\t", 1)
                mode, oid, stage = head.split(" ")
                entries.append(StageEntry(mode, oid, int(stage), path))
                i += 1
            i += 1
            while fields[i] != "":
                count = int(fields[i])
                paths = tuple(fields[i + 1 : i + 1 + count])
                kind, text = fields[i + 1 + count], fields[i + 2 + count]
                messages.append(MergeMessage(paths, kind, text.rstrip("\n")))
                i += count + 3
        i += 1
        results.append(TreeMerge(status == 1, tree, tuple(entries), tuple(messages)))
    return results
