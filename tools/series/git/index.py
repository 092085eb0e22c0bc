"""Scratch indexes: applying patches and building trees without a work tree.

A scratch index is a temporary ``GIT_INDEX_FILE`` that holds a tree; a
patch is applied to it with ``apply --cached`` (falling back to
``--3way``, which uses the blob ids in the patch's index lines) and the
result is written back as a tree. Nothing here touches the repository's
own index or files (``files_tree`` reads the work tree, and writes nothing there).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from series.digests import blob_id, sha1
from series.errors import SeriesError
from series.git.run import (
    HERMETIC,
    GitFailed,
    Part,
    Runner,
    Started,
    input_file,
    scratch_dir,
)
from series.records import NamedTuple

# What git add says of a repository of its own that has no commit yet (git 2.39).
# compiled where it is used (re's cache), not as the module loads: a failure's words
_NO_COMMIT = r"^error: '(.+)' does not have a commit checked out$"


class ApplyResult(NamedTuple):
    ok: bool
    three_way: bool
    conflicted: tuple[str, ...]  # paths left unmerged by a 3-way apply
    failed: tuple[str, ...]  # "path:line" hunks that did not apply
    stderr: str


class Index(Part):
    """Scratch indexes: patches applied and trees built without touching a work tree."""

    @contextmanager
    def scratch(
        self, tree: str | None, env: Mapping[str, str] | None = None
    ) -> Iterator[dict[str, str]]:
        """An environment whose GIT_INDEX_FILE is a fresh index holding ``tree``.

        ``tree`` None: an empty index, with no ``read-tree`` (git reads an index file
        that does not exist yet as an empty one, and the empty tree need not be written).
        """
        with scratch_dir("series-index-") as tmp:
            scratch = {**HERMETIC, **(env or {}), "GIT_INDEX_FILE": str(tmp / "index")}
            if tree is not None:
                self._run.git("read-tree", tree, env=scratch)
            yield scratch

    def apply(self, env: Mapping[str, str], diff: Path) -> ApplyResult:
        status, _, err = self._run.git_status(
            "apply", "--cached", "--whitespace=nowarn", str(diff), env=env
        )
        if status == 0:
            return ApplyResult(True, False, (), (), "")
        failed = tuple(_failed_hunks(err))
        status3, _, err3 = self._run.git_status(
            "apply", "--cached", "--3way", "--whitespace=nowarn", str(diff), env=env
        )
        unmerged = self._run.git("ls-files", "-u", env=env)
        conflicted = tuple(sorted({line.split("\t", 1)[1] for line in unmerged.splitlines()}))
        if status3 == 0 and not conflicted:
            return ApplyResult(True, True, (), failed, "")
        return ApplyResult(False, True, conflicted, failed, (err + "\n" + err3).strip())

    def apply_each(
        self, tree: str, diffs: Sequence[bytes], env: Mapping[str, str] | None = None
    ) -> list[str | None]:
        """``tree`` with each of ``diffs`` applied alone, exactly: a tree per diff, or None.

        One scratch index, put back to ``tree`` before each diff.
        """
        trees: list[str | None] = []
        with self.scratch(tree, env) as scratch:
            for diff in diffs:
                with input_file(diff) as path:
                    status, _, _ = self._run.git_status(
                        "apply", "--cached", "--whitespace=nowarn", str(path), env=scratch
                    )
                trees.append(self.write_tree(scratch) if status == 0 else None)
                self._run.git("read-tree", tree, env=scratch)
        return trees

    def write_tree(self, env: Mapping[str, str]) -> str:
        return self._run.git("write-tree", env=env).strip()

    def rewrite(
        self, tree: str | None, index_info: Sequence[str], env: Mapping[str, str] | None = None
    ) -> str:
        """``tree`` with the entries of ``index_info`` (``update-index --index-info``);
        ``tree`` None: the tree of those entries alone.

        Files put over a tree (a merge's conflicted files marked up, a side
        favoured) are an edit of the trees on their paths only: those are read
        from the long-lived ``cat-file`` and written with one ``mktree``
        (:meth:`_edit`), where a scratch index would read and write the whole
        tree (``read-tree``, ``update-index``, ``write-tree``: three processes,
        each over every file of the tree). Anything else, or an edit whose trees
        ``mktree`` does not write with the ids computed here, goes the long way. The
        files alone (``tree`` None, a snapshot of a few files) are one ``mktree`` too.
        """
        edited = self._edit(tree, index_info, env)
        if edited is not None:
            return edited
        with self.scratch(tree, env) as scratch:
            data = ("\n".join(index_info) + "\n").encode()
            self._run.git_input("update-index", "--index-info", data=data, env=scratch)
            return self.write_tree(scratch)

    def edits(self, tree: str, env: Mapping[str, str] | None = None) -> bool:
        """Whether :meth:`rewrite_many` can write edits of ``tree`` with one ``mktree``
        (in the repository's own object store), not a scratch index per edit."""
        return len(tree) == 40 and not any(k in (env or {}) for k in _OWN_STORE)

    def rewrite_many(
        self, tree: str, infos: Sequence[Sequence[str]], env: Mapping[str, str] | None = None
    ) -> list[str]:
        """:meth:`rewrite` of ``tree`` with each of ``infos``: a tree per edit, all written by
        one ``mktree --batch`` where :meth:`_edit` answers every one (else each the way
        :meth:`rewrite` goes)."""
        batches = [self._edit_batch(tree, info, env) for info in infos]
        if infos and all(b is not None for b in batches):
            batch = [line for b in batches if b is not None for line in b[0]]
            ids = [oid for b in batches if b is not None for oid in b[1]]
            if self._mktree(batch, ids, env):
                return [b[1][-1] for b in batches if b is not None]
        return [self.rewrite(tree, info, env) for info in infos]

    def _edit(
        self, tree: str | None, index_info: Sequence[str], env: Mapping[str, str] | None
    ) -> str | None:
        """:meth:`rewrite` of files (stage 0, regular or symlink) put over ``tree``, in the
        repository's own object store, with trees read from the long-lived ``cat-file`` and
        written by one ``mktree --batch``; None where that does not answer (removals,
        stages, a file where a directory is, or the other way, an object store of the
        environment's, a tree not read, ids that are not SHA-1, or ``mktree`` writing
        trees whose ids are not the ones computed here: the caller goes the long way).
        """
        made = self._edit_batch(tree, index_info, env)
        if made is None or not self._mktree(made[0], made[1], env):
            return None
        return made[1][-1]

    def _mktree(self, batch: list[bytes], ids: list[str], env: Mapping[str, str] | None) -> bool:
        """Write the trees of ``batch``: whether ``mktree`` wrote exactly ``ids``."""
        try:
            out = self._run.git_input("mktree", "-z", "--batch", data=b"".join(batch), env=env)
        except GitFailed:  # an entry mktree does not take as it is: the long way says why
            return False
        return out.decode().split() == ids

    def _edit_batch(
        self, tree: str | None, index_info: Sequence[str], env: Mapping[str, str] | None
    ) -> tuple[list[bytes], list[str]] | None:
        """The ``mktree -z --batch`` input of :meth:`_edit` and the ids of the trees it
        writes, the edited ``tree`` last (None: the files alone, over no tree); None
        where :meth:`_edit` does not answer."""
        if not index_info or any(k in (env or {}) for k in _OWN_STORE):
            return None
        if tree is not None and not self.edits(tree, env):
            return None
        edits: dict[tuple[bytes, ...], dict[bytes, tuple[bytes, bytes]]] = {}
        for line in index_info:
            found = info_line(line)
            if found is None:
                return None
            file_mode, file_id, path = found
            parts = tuple(os.fsencode(path).split(b"/"))
            if any(part in (b"", b".", b"..") for part in parts):
                return None
            edits.setdefault(parts[:-1], {})[parts[-1]] = (
                file_mode.encode(),
                bytes.fromhex(file_id),
            )
        dirs: set[tuple[bytes, ...]] = set()
        for d in edits:  # every tree on the way to an edited file is written again
            dirs.update(d[:k] for k in range(len(d) + 1))
        read: dict[tuple[bytes, ...], dict[bytes, tuple[bytes, bytes]]] = {}
        for d in sorted(dirs, key=len):  # parents first: each names its child's id
            if not d:
                if tree is None:
                    read[d] = {}  # no tree under the files: nothing to read
                    continue
                oid = bytes.fromhex(tree)
            else:
                found_entry = read[d[:-1]].get(d[-1])
                if found_entry is None:
                    read[d] = {}  # a new directory
                    continue
                mode, oid = found_entry
                if mode != b"40000":
                    return None  # a file where a directory would go
            data = self._run.object_data(oid.hex(), "tree")
            if data is None:
                return None
            read[d] = _tree_entries(data)
        for d, files in edits.items():
            for name, (mode, oid) in files.items():
                if read[d].get(name, (b"", b""))[0] == b"40000":
                    return None  # a directory where a file would go
                read[d][name] = (mode, oid)
        batch, ids = [], []
        for d in sorted(dirs, key=len, reverse=True):  # children first: mktree checks them
            entries = read[d]
            body = b"".join(
                mode + b" " + name + b"\0" + oid
                for name, (mode, oid) in sorted(entries.items(), key=_tree_order)
            )
            oid = sha1(b"tree %d\0" % len(body) + body).digest()
            ids.append(oid.hex())
            if d:
                read[d[:-1]][d[-1]] = (b"40000", oid)
            batch += [
                b"%s %s %s\t%s\0" % (mode, _KIND.get(mode, b"blob"), oid.hex().encode(), name)
                for name, (mode, oid) in entries.items()
            ]
            batch.append(b"\0")
        return batch, ids

    def tree_from_directory(self, root: Path) -> str:
        """The tree of every file under ``root`` (no ignore rules, no ``.git``), written to
        the store: each file's bytes exactly, as the directory holds them.

        Not ``git add``: it converts what it adds as the attributes say (``text``,
        ``eol``, ``filter=``: a ``.gitattributes`` in ``root``, an unpacked archive's
        own, or the repository's ``info/attributes``). ``hash-object --no-filters``
        reads no attribute and runs no filter; the tree is put together with
        ``update-index --index-info``, which converts nothing either.
        """
        import shutil  # (with bz2, lzma) only where a directory is imported

        entries = _directory_entries(root)
        with scratch_dir("series-import-", ram=False) as tmp:
            names = []  # what hash-object reads: the file, or a copy where its name cannot go
            for i, (path, mode) in enumerate(entries):
                if mode == "120000":  # a symbolic link: its blob is the link's target
                    names.append(Path(tmp) / str(i))
                    names[-1].write_bytes(os.fsencode(os.readlink(path)))
                elif b"\n" in os.fsencode(path):  # one name a line on hash-object's stdin
                    names.append(Path(tmp) / str(i))
                    shutil.copyfile(path, names[-1])
                else:
                    names.append(path)
            data = b"".join(os.fsencode(name) + b"\n" for name in names)
            argv = ["hash-object", "-w", "--no-filters", "--stdin-paths"]
            ids = (
                self._run.git_input(*argv, data=data, env=HERMETIC).decode().split()
                if names
                else []
            )
        info = b"".join(
            f"{mode} {oid}\t".encode() + os.fsencode(path.relative_to(root)) + b"\0"
            for (path, mode), oid in zip(entries, ids, strict=True)
        )
        with self.scratch(self.empty_tree()) as env:
            if info:
                self._run.git_input("update-index", "-z", "--index-info", data=info, env=env)
                # update-index skips a path git cannot hold (a ``.git`` component in any
                # case) with a line on stderr and exit 0: the tree would lack the file
                listed = self._run.git_input("ls-files", "-z", data=b"", env=env).split(b"\0")
                stored = set(listed) - {b""}
                lost = [
                    rel
                    for rel in (os.fsencode(path.relative_to(root)) for path, _ in entries)
                    if rel not in stored
                ]
                if lost:
                    shown = [os.fsdecode(rel) for rel in lost[:10]]
                    raise SeriesError(
                        f"{root.name} holds {len(lost)} path(s) git cannot store in a tree",
                        why="\n".join(shown)
                        + (f"\n... and {len(lost) - 10} more" * (len(lost) > 10)),
                        hint="git holds no path with a .git component (in any case); the "
                        "tree would lack these files: use an archive without them, or "
                        "--source git",
                    )
            return self.write_tree(env)

    def files_tree(self, start: str, changed: Sequence[str] | None = None) -> str:
        """The tree of this work tree's files as they are: tracked, changed and untracked.

        Built in a scratch index from the tree ``start`` (``add -A`` honours
        the ignore rules), so the repository's own index, conflict stages
        and all, is left alone. ``changed``: the only paths that may differ
        from ``start`` (HEAD's tree and ``Worktree.changed``): only they are
        read and hashed, not every file of the tree; none: ``start`` itself.

        Through ``git add`` on purpose, unlike :meth:`tree_from_directory`: the
        files as git stores them (the checkout's attributes, filters of its own
        ``.git/config`` only, under HERMETIC), as ``git stash`` keeps them, so the
        tree compares with HEAD's and a restore with git converts them back
        (docs/hardening.md, "A repository's own attributes").
        """
        if changed is not None and not changed:
            return start
        with self.scratch(start) as env:
            if changed is None:
                self._run.git("add", "-A", ".", env=env)
            else:
                self._add_listed(list(changed), env)
            return self.write_tree(env)

    def _add_listed(self, paths: list[str], env: Mapping[str, str]) -> None:
        """``git add -A`` of ``paths`` (as git status lists them) into the scratch index of
        ``env``. -f: git status lists no ignored file but one the user staged (`git add
        -f`), which the scratch index, HEAD's, does not track (refused without it). A
        repository of its own with no commit yet (git status lists ``dir/``) git cannot
        add, and failed the whole snapshot (exit 70): left out, as git names them (it
        holds no commit to keep; a move refuses it where it is in the way)."""
        literal = {**env, "GIT_LITERAL_PATHSPECS": "1"}
        argv = ["add", "-A", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"]
        while paths:  # none left: no pathspec at all would add the whole tree
            data = b"".join(p.encode() + b"\0" for p in paths)
            try:
                self._run.git_input(*argv, data=data, env=literal)
                return
            except GitFailed as exc:
                import re  # git refused: not the everyday path

                empty = set(re.findall(_NO_COMMIT, exc.stderr, re.MULTILINE)) & set(paths)
                if not empty:
                    raise
                paths = [p for p in paths if p not in empty]

    def files_are(self, start: str, changed: Sequence[str], trees: Sequence[str]) -> bool:
        """Whether :meth:`files_tree` of ``start`` and ``changed`` is one of ``trees``,
        told from the files themselves: no process, no object written.

        That snapshot is ``start`` with each path of ``changed`` as the work tree
        has it. It is the tree ``K`` when every path where ``start`` and ``K``
        differ is one of ``changed``, and every path of ``changed`` is on disk
        as in ``K``: a regular file whose bytes are K's blob (git's id of them)
        with K's executable bit, a symbolic link to K's target, or absent from
        both. The trees are read from the long-lived ``cat-file``. Anything else
        (a directory or a gitlink at a path, a tree that cannot be read) is
        False, and :meth:`files_tree` answers: False is never wrong, only the
        slower way. True means the files on disk are byte for byte a tree
        series holds (a content filter in ``.gitattributes`` would make git's
        own snapshot of the same bytes differ; the bytes are still K's).
        """
        wanted = set(changed)
        read: dict[str, dict[str, tuple[str, str]] | None] = {}
        disk: dict[str, tuple[str, str] | None] = {}  # each file read and hashed once

        def on_disk(path: str, width: int) -> tuple[str, str] | None:
            if path not in disk:
                disk[path] = _on_disk(self.path / path, width)
            return disk[path]

        try:
            for tree in dict.fromkeys(trees):
                differ: dict[str, tuple[str, str] | None] = {}
                if not _differ(self._run, read, start, tree, "", wanted, differ):
                    continue
                if all(
                    on_disk(path, len(tree))
                    == (differ[path] if path in differ else _entry(self._run, read, start, path))
                    for path in changed
                ):
                    return True
        except ValueError:  # a tree object not as git writes them: git's own way answers
            return False
        return False

    def empty_tree(self) -> str:
        return self._run.git(
            "hash-object", "-t", "tree", "-w", "--stdin", env=HERMETIC, stdin=Path("/dev/null")
        ).strip()

    def apply_pieces(self, pieces: Sequence[tuple[str, Sequence[Path]]]) -> list[str | None]:
        """``tree`` with every patch file applied in order (one ``apply --cached``), for each
        ``(tree, patches)`` of ``pieces``, their ``read-tree``,
        ``apply`` and ``write-tree`` each run at once, one scratch index each (a long series
        cut in halves, one on each core); None for a piece whose patches do not apply."""
        return self.apply_pieces_later(pieces).result()

    def apply_pieces_later(self, pieces: Sequence[tuple[str, Sequence[Path]]]) -> Applying:
        """:meth:`apply_pieces` with its ``apply`` processes left running: the caller
        works meanwhile, then reads :meth:`Applying.result` (or ends them:
        :meth:`Applying.abandon`)."""
        stack = ExitStack()
        try:
            envs = [stack.enter_context(self.scratch(None)) for _ in pieces]
            read = self._run.git_together(
                [(["read-tree", tree], env) for (tree, _), env in zip(pieces, envs, strict=True)]
            )
            for (tree, _), (status, _, err) in zip(pieces, read, strict=True):
                if status != 0:
                    raise GitFailed(["read-tree", tree], status, err, cwd=self.path)
            argv = ["apply", "--cached", "--whitespace=nowarn"]
            calls: list[tuple[Sequence[str], Mapping[str, str] | None]] = [
                ([*argv, *map(str, patches)], env)
                for (_, patches), env in zip(pieces, envs, strict=True)
            ]
            started = self._run.start_together(calls)
        except BaseException:
            stack.close()
            raise
        return Applying(self._run, stack, calls, started, envs)

    def rewrite_and_apply(
        self,
        tree: str,
        index_info: Sequence[str],
        diff: bytes,
        env: Mapping[str, str] | None = None,
    ) -> tuple[str, str | None]:
        """:meth:`rewrite` of ``tree`` with ``index_info`` (``tree`` itself when there is
        none), and that tree with ``diff`` applied exactly (no fuzz, no 3-way; None where
        it does not apply), in one scratch index: no second ``read-tree`` of the tree just
        written. ``env``: a scratch-object environment ``tree`` lives in, if any."""
        with self.scratch(tree, env) as index, input_file(diff) as path:
            rewritten = tree
            if index_info:
                data = ("\n".join(index_info) + "\n").encode()
                self._run.git_input("update-index", "--index-info", data=data, env=index)
                rewritten = self.write_tree(index)
            status, _, _ = self._run.git_status("apply", "--cached", str(path), env=index)
            return rewritten, self.write_tree(index) if status == 0 else None

    def rewrite_twice(
        self,
        tree: str,
        first: Sequence[str],
        then: Sequence[str],
        env: Mapping[str, str] | None = None,
    ) -> tuple[str, str]:
        """:meth:`rewrite` of ``tree`` with ``first``, and with ``then``, in one scratch
        index: ``then`` names every path ``first`` names (the marked-up files, then the
        same files resolved), so it is written over the first edit."""
        assert {line.split("\t", 1)[1] for line in first} <= {
            line.split("\t", 1)[1] for line in then
        }, "each path of the first edit is in the second"
        with self.scratch(tree, env) as index:
            written = []
            for info in (first, then):
                data = ("\n".join(info) + "\n").encode()
                self._run.git_input("update-index", "--index-info", data=data, env=index)
                written.append(self.write_tree(index))
            return written[0], written[1]

    def entries(self, rev: str, paths: Sequence[str]) -> list[str]:
        """``update-index --index-info`` lines that give ``paths`` their state in ``rev``.

        A path that ``rev`` does not have gets a removal line (mode 0), so
        applying the lines to another tree makes those paths exactly as in ``rev``.
        """
        if not paths:
            return []
        out = self._run.git("ls-tree", "-z", "--full-tree", rev, "--", *paths, env=HERMETIC)
        found = {}
        for entry in out.split("\0"):
            if entry:
                meta, _, path = entry.partition("\t")
                mode, _, sha = meta.split(" ")
                found[path] = f"{mode} {sha}\t{path}"
        return [found.get(path, f"0 {'0' * 40}\t{path}") for path in paths]


_FILE_MODES = ("100644", "100755", "120000")
_HEX = "0123456789abcdef"


def info_line(line: str) -> tuple[str, str, str] | None:
    """The mode, id and path of an ``--index-info`` line :meth:`Index._edit` answers: a file
    at stage 0 (no removal), ``MODE SHA-1<TAB>PATH``; None for any other line. The regular
    expression ``(100644|100755|120000) ([0-9a-f]{40})\\t([^\\n]+)`` fully matched, without
    ``re`` (whose import, with enum's, was 2 ms of a ``rebase --skip``)."""
    mode, space, rest = line.partition(" ")
    oid, tab, path = rest.partition("\t")
    if not (space and tab and path) or mode not in _FILE_MODES or "\n" in path:
        return None
    if len(oid) != 40 or oid.strip(_HEX):
        return None
    return mode, oid, path


_OWN_STORE = ("GIT_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_KIND = {b"40000": b"tree", b"160000": b"commit"}


def _tree_entries(data: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """A raw SHA-1 tree object: name -> (mode, binary id)."""
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = (data[pos:space], data[nul + 1 : nul + 21])
        pos = nul + 21
    return entries


def _tree_order(item: tuple[bytes, tuple[bytes, bytes]]) -> bytes:
    """git's order of a tree's entries: by name, a directory's as if it ended with ``/``."""
    name, (mode, _) = item
    return name + b"/" if mode == b"40000" else name


def _directory_entries(root: Path) -> list[tuple[Path, str]]:
    """Every file and symbolic link under ``root`` with its mode as ``git add`` gives it
    (executable by its owner: 100755), sorted; a ``.git`` too, which git cannot store
    (:meth:`Index.tree_from_directory` refuses it rather than leave it out)."""
    found: list[tuple[Path, str]] = []
    with os.scandir(root) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        path = Path(entry.path)
        if entry.is_symlink():
            found.append((path, "120000"))
        elif entry.is_dir(follow_symlinks=False):
            found += _directory_entries(path)
        elif entry.is_file(follow_symlinks=False):
            executable = entry.stat(follow_symlinks=False).st_mode & stat.S_IXUSR
            found.append((path, "100755" if executable else "100644"))
    return found


def _failed_hunks(stderr: str) -> list[str]:
    import re  # a patch that did not apply: not the everyday path

    hunks = re.findall(r"error: patch failed: (\S+)", stderr)
    missing = re.findall(r"error: (\S+): (?:does not exist in index|No such file)", stderr)
    return hunks + [f"{m} (missing)" for m in missing]


_TREE = "40000"  # the mode of a tree in a tree object
_UNREAD = ("?", "unread")  # a file of a tree that cannot be read: no file on disk is it
_OTHER = ("?", "other")  # on disk, neither a file nor a link: no tree's file is it


def _tree(
    run: Runner, read: dict[str, dict[str, tuple[str, str]] | None], tree: str
) -> dict[str, tuple[str, str]] | None:
    """name -> (mode, id) of the entries of ``tree`` (from the long-lived ``cat-file``, read
    once per call of :meth:`Index.files_are`); None when it cannot be read."""
    if tree not in read:
        data = run.object_data(tree, "tree")
        entries: dict[str, tuple[str, str]] | None = None
        if data is not None:
            entries = {}
            width, pos = len(tree) // 2, 0  # the raw id's bytes: 20 (SHA-1) or 32 (SHA-256)
            while pos < len(data):  # entries: "<mode> <name>\0<raw id>"
                space = data.index(b" ", pos)
                nul = data.index(b"\0", space)
                name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
                entries[name] = (data[pos:space].decode(), data[nul + 1 : nul + 1 + width].hex())
                pos = nul + 1 + width
        read[tree] = entries
    return read[tree]


def _differ(
    run: Runner,
    read: dict[str, dict[str, tuple[str, str]] | None],
    a: str | None,
    b: str | None,
    prefix: str,
    allowed: set[str],
    found: dict[str, tuple[str, str] | None],
) -> bool:
    """Add to ``found`` every file path under ``prefix`` where the trees ``a`` and ``b``
    differ (None: no tree there), with its (mode, id) in ``b`` (None: absent or a tree);
    False as soon as one is not in ``allowed``, or a tree cannot be read."""
    if a == b:
        return True
    left = _tree(run, read, a) if a is not None else {}
    right = _tree(run, read, b) if b is not None else {}
    if left is None or right is None:
        return False
    for name in left.keys() | right.keys():
        x, y = left.get(name), right.get(name)
        if x == y:
            continue
        path = prefix + name
        x_tree = x is not None and x[0] == _TREE
        y_tree = y is not None and y[0] == _TREE
        if (x_tree or y_tree) and not _differ(
            run,
            read,
            x[1] if x is not None and x_tree else None,
            y[1] if y is not None and y_tree else None,
            f"{path}/",
            allowed,
            found,
        ):
            return False
        if (x is not None and not x_tree) or (y is not None and not y_tree):
            if path not in allowed:
                return False
            found[path] = y if y is not None and not y_tree else None
    return True


def _entry(
    run: Runner, read: dict[str, dict[str, tuple[str, str]] | None], tree: str, path: str
) -> tuple[str, str] | None:
    """(mode, id) of the file ``path`` in ``tree``; None when it has none there; ``_UNREAD``
    when a tree on the way cannot be read."""
    *dirs, name = path.split("/")
    current = tree
    for part in dirs:
        entries = _tree(run, read, current)
        if entries is None:
            return _UNREAD
        found = entries.get(part)
        if found is None or found[0] != _TREE:
            return None
        current = found[1]
    entries = _tree(run, read, current)
    if entries is None:
        return _UNREAD
    found = entries.get(name)
    return found if found is not None and found[0] != _TREE else None


def _on_disk(path: Path, width: int) -> tuple[str, str] | None:
    """(mode, blob id) git would give the file at ``path`` (None: no file there; a
    directory or another kind: ``_OTHER``, which no tree holds). ``width``: the length of the
    repository's ids (40 for SHA-1, 64 for SHA-256)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(st.st_mode):
        data = path.read_bytes()
        mode = "100755" if st.st_mode & stat.S_IXUSR else "100644"
    elif stat.S_ISLNK(st.st_mode):
        data = os.fsencode(os.readlink(path))
        mode = "120000"
    else:
        return _OTHER
    return mode, blob_id(data, width)


class Applying:
    """The ``apply`` processes of :meth:`Index.apply_pieces_later`, running: read once by
    :meth:`result` (each piece's tree, by ``write-tree``; None where its patches do not
    apply), or ended unread by :meth:`abandon`; either removes the scratch indexes."""

    def __init__(
        self,
        run: Runner,
        stack: ExitStack,
        calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]],
        started: Started,
        envs: Sequence[dict[str, str]],
    ) -> None:
        self._run, self._stack, self._calls = run, stack, calls
        self._started, self._envs = started, envs

    def result(self) -> list[str | None]:
        with self._stack:
            done = self._run.checked(self._calls, self._started.finish())
            ok = [env for (status, _, _), env in zip(done, self._envs, strict=True) if not status]
            trees = self._run.git_together([(["write-tree"], env) for env in ok])
            for status, _, err in trees:
                if status != 0:
                    raise GitFailed(["write-tree"], status, err, cwd=self._run.path)
            written = iter(out.decode("ascii").strip() for _, out, _ in trees)
            return [next(written) if status == 0 else None for status, _, _ in done]

    def abandon(self) -> None:
        with self._stack:
            self._started.abandon()
