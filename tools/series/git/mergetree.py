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

import contextlib
import os
import select
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from series.errors import InternalError
from series.faults import counting as counting_steps
from series.git.child import own_activity
from series.git.run import (
    HERMETIC,
    GitFailed,
    LongLived,
    Part,
    end_long_lived,
    execute,
    execute_together,
    fault_point,
    input_file,
    private_dir,
    remove_tree,
    scratch_dir,
    start_long_lived,
    start_together,
)
from series.git.worktree import core_idle
from series.records import NamedTuple  # not dataclasses: it imports inspect and ast

# A batch this long or longer goes to two processes when a core is idle (Merge.trees):
# below it, a second process's start costs about what it would save.
SPLIT = 16


class StageEntry(NamedTuple):
    """One conflicted index entry from merge-tree: stage 1 base, 2 ours, 3 theirs."""

    mode: str
    oid: str
    stage: int
    path: str


class MergeMessage(NamedTuple):
    paths: tuple[str, ...]
    kind: str  # git's stable type string, e.g. "CONFLICT (contents)"
    text: str


class TreeMerge(NamedTuple):
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
        env = self._run.no_attributes()  # no attribute (merge=, conflict-marker-size=)
        objects = env["GIT_OBJECT_DIRECTORY"]
        with scratch_dir("series-objects-") as tmp:
            yield {
                **env,
                "GIT_OBJECT_DIRECTORY": str(tmp),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects,
            }

    def hermetic(self) -> dict[str, str]:
        """The environment merges run in: HERMETIC, and none of the repository's own
        attributes (a ``merge=`` driver, ``conflict-marker-size``, ``binary``), which
        would change what a merge gives (series.git.run.Runner.no_attributes)."""
        return self._run.no_attributes()

    def trees(self, lines: Sequence[str], env: Mapping[str, str] | None = None) -> list[TreeMerge]:
        """Many merges in one ``merge-tree --write-tree --stdin``, one per input line; a
        batch of ``SPLIT`` lines or more in two such processes at once, its first and
        second half, when a core is idle beside series (series.git.worktree
        ``core_idle``): each line is a merge of its own, so the halves give what the
        whole gives, on both cores (the matrix's pairs of check-conflicts, the pre-push
        hook's check). Never split while steps are counted (series.faults.counting): a
        kill test numbers the steps of one run and kills another at one of them."""
        if not lines:
            return []
        argv = ("merge-tree", "--write-tree", "-z", "--stdin")
        parts = [lines]
        if len(lines) >= SPLIT and core_idle() and not counting_steps():
            parts = [lines[: len(lines) // 2], lines[len(lines) // 2 :]]
        data = [("\n".join(part) + "\n").encode() for part in parts]
        if len(parts) == 1:
            outs = [self._run.git_input(*argv, data=data[0], env=stored(env))]
        else:
            done = start_together(self.path, [(argv, stored(env))] * 2, data).finish()
            for status, _, err in done:
                if status != 0:
                    raise GitFailed(list(argv), status, err, cwd=self.path)
            outs = [out for _, out, _ in done]
        results = [merge for out in outs for merge in parse_merge_tree(out)]
        if len(results) != len(lines):
            raise InternalError(f"merge-tree gave {len(results)} results for {len(lines)} merges")
        return results

    def stream(self, env: Mapping[str, str] | None = None) -> MergeStream:
        """Merges one at a time in one process (:class:`MergeStream`), under ``env``."""
        return MergeStream(self.path, env)

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
        return self.files([(base, ours, theirs)], favour=favour, labels=labels)[0]

    def files(
        self,
        triples: Sequence[tuple[bytes, bytes, bytes]],
        *,
        favour: str | None,
        labels: tuple[str, str, str] = ("ours", "base", "theirs"),
    ) -> list[bytes]:
        """:meth:`file` of each (base, ours, theirs) of ``triples``, one ``merge-file``
        each, all started before any is read (series.git.run.execute_together: the
        conflicted files of one merge are merged on both cores)."""
        how = [f"--{favour}"] if favour else []
        marks = [a for label in labels for a in ("-L", label)]
        with scratch_dir("series-merge-file-") as tmp:
            argvs = []
            for k, (base, ours, theirs) in enumerate(triples):
                names = []
                for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                    (tmp / f"{name}{k or ''}").write_bytes(data)
                    names.append(str(tmp / f"{name}{k or ''}"))
                argvs.append(["merge-file", "-p", *how, *marks, *names])
            done = execute_together(self.path, [(argv, HERMETIC) for argv in argvs])
        merged = []
        for argv, (status, out, err) in zip(argvs, done, strict=True):
            if not 0 <= status < 128:
                raise GitFailed(argv, status, err)
            merged.append(out)
        return merged


def stored(env: Mapping[str, str] | None) -> dict[str, str]:
    """``env`` with ``core.looseCompression=0`` added to the configuration it gives git
    (``GIT_CONFIG_COUNT``): the objects a merge writes (its trees, the merged files, a
    hundred kilobytes each in a large project) are stored, not deflated.

    The objects are the same (their ids hash the content, not its compression); only
    their loose files are larger, until a repack (``git gc``) compresses them, or the
    scratch store they were written to is deleted (check-conflicts). Deflating was a
    quarter of a rebase's merges: ``merge-tree`` writes each merged file of every
    replayed patch whole.
    """
    env = env or {}
    count = int(env.get("GIT_CONFIG_COUNT", "0"))
    return {
        **env,
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": "core.looseCompression",
        f"GIT_CONFIG_VALUE_{count}": "0",
    }


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
        merge, i = _one_merge(fields, i)
        results.append(merge)
    return results


def _one_merge(fields: Sequence[str], i: int) -> tuple[TreeMerge, int]:
    """The merge whose record starts at ``fields[i]``, and where the next one starts.
    IndexError: the record goes past ``fields`` (not all of it written yet)."""
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
            if len(paths) != count:
                raise IndexError(i)
            kind, text = fields[i + 1 + count], fields[i + 2 + count]
            messages.append(MergeMessage(paths, kind, text.rstrip("\n")))
            i += count + 3
    if i >= len(fields):  # the empty field that ends the merge is not there yet
        raise IndexError(i)
    return TreeMerge(status == 1, tree, tuple(entries), tuple(messages)), i + 1


class MergeStream:
    """Merges one at a time, each as soon as the one before it is known, in one
    long-lived ``merge-tree --write-tree -z --stdin`` (and one ``hash-object
    --stdin-paths`` for the commits a merge needs).

    A replay merges patch k onto the tree patch k-1 gave: each merge needs the
    one before, which a batch cannot give (series.merge.predict guesses them
    instead, at the cost of a second merge per patch). git 2.39's merge-tree
    writes its answers through stdio's buffer, which reaches a pipe only when
    it is full or the input ends; under ``stdbuf -o0`` (coreutils) nothing is
    buffered, so each answer comes when its merge is done, and the same merge
    git would have made in a batch is made once. Where that does not hold (no
    ``stdbuf``; a git it cannot unbuffer), an answer that does not come while
    git sits idle for ``IDLE`` seconds is taken by ending git's input (git
    then finishes the merge and writes it all), and the stream is closed:
    :attr:`live` turns False and the caller goes back to batches. Every
    answer is git's own, whichever way it came.
    """

    IDLE = 1.0  # seconds of git doing nothing, no answer come: its output is buffered
    TICK = 0.05
    CHUNK = 64  # paths write_all hands hash-object at once: far below what a pipe holds

    def __init__(self, path: Path, env: Mapping[str, str] | None) -> None:
        self.path, self.env = path, dict(env or {})
        self.live = _on_path("stdbuf")
        self._merges: LongLived | None = None
        self._writer: LongLived | None = None
        self._blobs: LongLived | None = None  # blobs' hash-object: only when asked for
        self._out = b""
        self._tmp = private_dir("series-stream-") if self.live else ""

    def start(self) -> None:
        """Start both processes now, ``hash-object`` then ``merge-tree`` (each its own
        fault step, in that order), so that neither waits for the other to start: the
        first merge's line goes in as soon as its commit is written."""
        if not self.live:
            return
        try:
            self._writing()
            self._merging()
        except OSError:
            self.close()

    def _writing(self, kind: str = "commit") -> LongLived:
        found = self._writer if kind == "commit" else self._blobs
        if found is None:
            argv = ["hash-object", "-w", "-t", kind, "--no-filters", "--stdin-paths"]
            fault_point(argv)
            env = {**self.env, "GIT_FLUSH": "1"}  # an answer per path, whatever set
            # blobs (a stop's marked-up files) stored, not deflated, as the merges' are
            found = start_long_lived(self.path, argv, env if kind == "commit" else stored(env))
            if kind == "commit":
                self._writer = found
            else:
                self._blobs = found
        return found

    def start_blobs(self) -> None:
        """Start a second ``hash-object`` now, for blobs (:meth:`write` of ``"blob"``): a
        caller that will write some soon (a stop's marked-up files and its state) has it
        running by then, where a ``hash-object`` per write would start each then."""
        if not self.live:
            return
        try:
            self._writing("blob")
        except OSError:
            self.close()

    def writes_blobs(self) -> bool:
        """Whether :meth:`write` of blobs goes to a ``hash-object`` started already."""
        return self.live and self._blobs is not None

    def _merging(self) -> LongLived:
        if self._merges is None:
            argv = ["merge-tree", "--write-tree", "-z", "--stdin"]
            fault_point(argv)
            # stderr unread: where a merge fails, the batch the caller goes back to runs
            # it again and says why
            self._merges = start_long_lived(
                self.path, argv, stored(self.env), prefix=("stdbuf", "-o0")
            )
        return self._merges

    def write(self, kind: str, payload: bytes) -> str | None:
        """Write one object (``hash-object -w``) of ``kind`` (``commit``, ``blob``); its id,
        or None when the stream is closed."""
        if not self.live:
            return None
        try:
            writer = self._writing(kind)
            path = Path(self._tmp) / "object"
            path.write_bytes(payload)
            stdin, stdout = writer.stdin, writer.stdout
            assert stdin is not None and stdout is not None
            stdin.write(str(path).encode() + b"\n")
            stdin.flush()
            line = stdout.readline().decode("ascii", "replace").strip()
        except OSError:
            line = ""
        if len(line) != 40:
            self.close()
            return None
        return line

    def write_all(self, kind: str, payloads: Sequence[bytes]) -> list[str] | None:
        """:meth:`write` of each of ``payloads``, in order, with one round trip per
        ``CHUNK`` of them (a file each, their paths handed to git at once, the ids read
        after): the commits of a replayed series, written between the last merge and the
        export. None when the stream is closed (or closes: the caller writes them itself)."""
        if not self.live:
            return None
        ids: list[str] = []
        try:
            writer = self._writing(kind)
            stdin, stdout = writer.stdin, writer.stdout
            assert stdin is not None and stdout is not None
            for start in range(0, len(payloads), self.CHUNK):
                chunk = payloads[start : start + self.CHUNK]
                paths = []
                for k, payload in enumerate(chunk):
                    path = Path(self._tmp) / f"object-{k}"
                    path.write_bytes(payload)
                    paths.append(str(path).encode() + b"\n")
                stdin.write(b"".join(paths))
                stdin.flush()
                ids += [stdout.readline().decode("ascii", "replace").strip() for _ in chunk]
        except OSError:
            ids = []
        if len(ids) != len(payloads) or any(len(i) != 40 for i in ids):
            self.close()
            return None
        return ids

    def merge(self, line: str) -> TreeMerge | None:
        """The merge of one ``merge-tree --stdin`` input line; None when the stream is
        closed (it could not answer: the caller asks a batch, which says why)."""
        return self.answer() if self.send(line) else None

    def send(self, line: str) -> bool:
        """Hand git one merge (``merge-tree --stdin`` input line) without waiting for it:
        :meth:`answer` reads it, in the order sent, once the caller has done other work
        meanwhile (git merges on the other core). False: the stream is closed."""
        if not self.live:
            return False
        try:
            stdin = self._merging().stdin
            assert stdin is not None
            stdin.write(line.encode() + b"\n")
            stdin.flush()
            return True
        except OSError:
            self.close()
            return False

    def answer(self) -> TreeMerge | None:
        """The merge of the oldest line :meth:`send` handed git and not answered yet;
        None when the stream is closed (the caller asks a batch, which says why)."""
        if not self.live or self._merges is None:
            return None
        try:
            return self._answer(self._merges)
        except (OSError, ValueError, InternalError):
            self.close()
            return None

    def _answer(self, proc: LongLived) -> TreeMerge | None:
        stdout = proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        seen: tuple[int, ...] | None = None
        idle_since = time.monotonic()
        while True:
            found = self._take()
            if found is not None:
                return found
            ready, _, _ = select.select([fd], [], [], self.TICK)
            if ready:
                data = os.read(fd, 1 << 16)
                if not data:  # git ended: the batch says why
                    self.close()
                    return None
                self._out += data
                idle_since = time.monotonic()
                continue
            now, current = time.monotonic(), own_activity(proc.pid)
            if current is not None and current != seen:  # working on it
                seen, idle_since = current, now
                continue
            limit = self.IDLE if current is not None else 20 * self.IDLE  # no /proc: a bound
            if now - idle_since >= limit:  # buffered: its input ended, git writes it all
                assert proc.stdin is not None
                proc.stdin.close()
                self._out += stdout.read()
                found = self._take()
                self.close()
                return found

    def _take(self) -> TreeMerge | None:
        """The first whole merge in what git wrote so far (removed from it), or None."""
        end = self._out.rfind(b"\0")
        if end < 0:
            return None
        fields = [f.decode("utf-8", "surrogateescape") for f in self._out[:end].split(b"\0")]
        try:
            merge, used = _one_merge(fields, 0)
        except IndexError:
            return None
        consumed = sum(len(f.encode("utf-8", "surrogateescape")) + 1 for f in fields[:used])
        self._out = self._out[consumed:]
        return merge

    def end_input(self) -> None:
        """End the input of its processes (each exits on its own): the stream answers no
        more; :meth:`close` reaps them later (a stop's checkout moves meanwhile)."""
        self.live = False
        for proc in (self._merges, self._writer, self._blobs):
            if proc is not None:
                with contextlib.suppress(OSError, ValueError):
                    proc.stdin.close()

    def close(self) -> None:
        """End its processes (end of input: each exits); the stream answers no more.

        Every input is ended before any is waited for, so they exit side by side (one
        after the other, each exit was a wait of its own at a stop, before the checkout
        moves)."""
        self.end_input()
        for proc in (self._merges, self._writer, self._blobs):
            end_long_lived(proc, 5)
        self._merges = self._writer = self._blobs = None
        if self._tmp:
            remove_tree(self._tmp)
            self._tmp = ""

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _on_path(program: str) -> bool:
    """Whether ``program`` is an executable file along PATH (``shutil.which``'s answer,
    without shutil's import)."""
    for directory in os.get_exec_path():
        candidate = os.path.join(directory or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False
