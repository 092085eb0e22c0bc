"""Objects: naming revisions, reading trees and blobs, writing objects and commits.

Reads go to the repository's long-lived ``cat-file`` process where one
question at a time is asked (:meth:`Runner.lookup`), to one batch process
where many are; writes of many objects go to one ``hash-object``. Commits
are written with their committer equal to their author, so a commit's id
depends on its content only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from series.digests import sha1, sha256
from series.errors import InternalError
from series.git.ident import Ident
from series.git.ref_files import replaced
from series.git.run import HERMETIC, Part, input_file, scratch_dir
from series.plain import read_plain


class Objects(Part):
    """The object store of a repository."""

    def rev(self, rev: str) -> str | None:
        """The commit ``rev`` names, or None."""
        found = self._run.lookup(f"{rev}^{{commit}}")
        return found[0] if found else None

    def warm(self, *, rest: bool = False) -> None:
        """The long-lived ``cat-file`` that answers :meth:`rev` and the reads started now
        (series.git.run.Runner.warm); ``rest``: ended now instead, its exit not waited for
        (``Runner.rest``: the caller asks nothing more for a while, ``rebase --abort``
        while its files move; a later question starts it again)."""
        if rest:
            self._run.rest()
        else:
            self._run.warm()

    def has(self, sha: str) -> bool:
        return self._run.lookup(sha) is not None

    def tree_of(self, commit: str) -> str:
        found = self._run.lookup(f"{commit}^{{tree}}")
        if found is None:
            raise InternalError(f"{commit} has no tree here", why=f"in {self.path}")
        return found[0]

    def blob_read(self, rev: str, path: str) -> bytes:
        """The content of ``path`` in ``rev``, asked of the long-lived ``cat-file``
        processes (no process of its own); where they do not have it, a ``cat-file blob``
        of its own (git says why)."""
        found = self._run.lookup(f"{rev}:{path}")
        if found is None or found[1] != "blob":
            return self._run.git_bytes("cat-file", "blob", "--end-of-options", f"{rev}:{path}")
        return self.read_blob(found[0])

    def read_blob(self, oid: str) -> bytes:
        """The content of the blob ``oid`` (asked of the long-lived ``cat-file``)."""
        data = self._run.object_data(oid, "blob")
        return data if data is not None else self._run.git_bytes("cat-file", "blob", oid)

    def top_level(self, rev: str) -> list[tuple[str, str]]:
        """(kind, name) of the entries at the root of ``rev``'s tree."""
        entries = []
        for entry in self._run.git("ls-tree", "-z", "--end-of-options", rev).split("\0"):
            if entry:
                entries.append((entry.split(" ")[1], entry.split("\t", 1)[1]))
        return entries

    def small_tree_files(self, rev: str) -> dict[str, str]:
        """:meth:`tree_files` of a tree of a few directories (the rebase's snapshot of the
        series), its trees read from the long-lived ``cat-file``: no process of its own.

        The same answer in the same order as ``ls-tree -r`` (paths in each tree in git's
        order, a gitlink's commit listed as a file); ``ls-tree`` answers where a tree
        cannot be read that way.
        """
        files: dict[str, str] = {}
        found = self._run.lookup(f"{rev}^{{tree}}")
        try:
            if found is not None and self._read_tree(found[0], "", files):
                return files
        except ValueError:  # not what git writes: git's own ls-tree says what is wrong
            pass
        return self.tree_files(rev)

    def _read_tree(self, tree: str, prefix: str, files: dict[str, str]) -> bool:
        """Add the files under ``tree`` (its path ``prefix``) to ``files``; False if a tree
        could not be read (gone, or not a tree)."""
        data = self._run.object_data(tree, "tree")
        if data is None:
            return False
        for name, (mode, oid) in tree_entries(data, len(tree) // 2).items():
            path = prefix + name
            if mode == TREE_MODE:
                if not self._read_tree(oid, f"{path}/", files):
                    return False
            else:
                files[path] = oid
        return True

    def tree_files(self, rev: str, only: Sequence[str] | None = None) -> dict[str, str]:
        """path -> blob id of every file in ``rev`` (recursively; a submodule's commit too).

        ``only``: of these paths alone, asked of the long-lived ``cat-file``: no process
        of its own for the few files of a conflict. Where it does not find one of them
        as a file (removed, a directory now: or that process could not answer) or a path
        has a newline (its one-line requests cannot carry it), ``ls-tree`` answers.
        """
        if only is not None and not any("\n" in path for path in only):
            found = {}
            for path in only:
                answer = self._run.lookup(f"{rev}:{path}")
                if answer is None or answer[1] not in ("blob", "commit"):
                    break
                found[path] = answer[0]
            else:
                return found
        out = self._run.git("ls-tree", "-r", "-z", "--full-tree", "--end-of-options", rev)
        files = {}
        for entry in out.split("\0"):
            if entry:
                head, path = entry.split("\t", 1)
                files[path] = head.split(" ")[2]
        if only is None:
            return files
        wanted = set(only)
        return {path: oid for path, oid in files.items() if path in wanted}

    def files_of(self, commit: str) -> dict[str, bytes]:
        """path -> bytes of every file in ``commit``'s tree (recursively): what
        :meth:`tree_files` and :meth:`read_blobs` answer, read object by object through
        the long-lived ``cat-file`` (no process of its own)."""
        files: dict[str, bytes] = {}
        trees = [("", self.tree_of(commit))]
        while trees:
            prefix, tree = trees.pop()
            data = self._run.object_data(tree, "tree")
            if data is None:
                raise InternalError(f"{tree} is not a tree here", why=f"in {self.path}")
            size = len(tree) // 2  # the binary id's bytes
            pos = 0
            while pos < len(data):
                space, nul = data.index(b" ", pos), data.index(b"\0", pos)
                mode, name = (
                    data[pos:space],
                    data[space + 1 : nul].decode("utf-8", "surrogateescape"),
                )
                oid = data[nul + 1 : nul + 1 + size].hex()
                pos = nul + 1 + size
                if mode == b"40000":
                    trees.append((f"{prefix}{name}/", oid))
                elif mode == b"160000":
                    raise InternalError(f"{oid} is a commit, not a blob")
                else:
                    files[prefix + name] = self.read_blob(oid)
        return files

    def existing_paths(self, rev: str, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` (files or directories) exist in ``rev``'s tree; one process."""
        if not paths:
            return set()
        data = "".join(f"{rev}:{path}\n" for path in paths).encode()
        with input_file(data) as stdin:
            out = self._run.git("cat-file", "--batch-check", stdin=stdin)
        answers = zip(paths, out.splitlines(), strict=True)
        return {path for path, line in answers if not line.endswith(" missing")}

    def read_blobs(
        self, oids: Sequence[str], env: Mapping[str, str] | None = None
    ) -> dict[str, bytes]:
        """Blob contents by id, with one ``cat-file --batch``; a few in the repository's
        own store (``env`` None), from its long-lived ``cat-file`` when that answers them
        all (a conflict's sides: one request each beats a process; hundreds do not)."""
        if not oids:
            return {}
        if env is None and len(oids) <= _FEW:
            found = {oid: self._run.object_data(oid, "blob") for oid in oids}
            if all(data is not None for data in found.values()):
                return {oid: data for oid, data in found.items() if data is not None}
        out = self._run.git_input(
            "cat-file", "--batch", data=("\n".join(oids) + "\n").encode(), env=env
        )
        blobs: dict[str, bytes] = {}
        pos = 0
        while pos < len(out):
            end = out.index(b"\n", pos)
            oid, kind, size = out[pos:end].decode().split(" ")
            if kind != "blob":
                raise InternalError(f"{oid} is a {kind}, not a blob")
            blobs[oid] = out[end + 1 : end + 1 + int(size)]
            pos = end + 1 + int(size) + 1
        return blobs

    def write(
        self, kind: str, payloads: Sequence[bytes], env: Mapping[str, str] | None = None
    ) -> list[str]:
        """Write many objects with one ``hash-object --stdin-paths``; ids in order.

        ``--no-filters``: the bytes as given, whatever a repository's ``core.autocrlf``
        or attributes would convert (a snapshot restored, a merge result)."""
        if not payloads:
            return []
        with scratch_dir("series-objects-") as tmp:  # as tempfile's, without its import
            names = []
            for i, payload in enumerate(payloads):
                path = tmp / str(i)
                path.write_bytes(payload)
                names.append(str(path))
            data = ("\n".join(names) + "\n").encode()
            out = self._run.git_input(
                "hash-object", "-w", "-t", kind, "--no-filters", "--stdin-paths", data=data, env=env
            )
        return out.decode().split()

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, author: Ident) -> str:
        """A commit whose committer is its author, so ids depend on content only."""
        with input_file(message.encode("utf-8")) as path:  # swept if series is killed
            argv = ["commit-tree", tree, *[a for p in parents for a in ("-p", p)], "-F", str(path)]
            env = {**HERMETIC, **author.env("AUTHOR"), **author.env("COMMITTER")}
            return self._run.git(*argv, env=env).strip()

    def write_commits(self, chain: Sequence[tuple[str, str, Ident]], parent: str) -> list[str]:
        """Commits of (tree, message, author) each on the one before, the first on ``parent``.

        One ``hash-object`` for all of them: the ids are computed here (a
        commit's id is the SHA-1 of its bytes, which name its parent), and
        git's answer must agree. Committer = author, as ``commit_tree``.
        Author dates must be raw (``<epoch> <tz>``).
        """
        payloads, ids = commit_chain(chain, parent)
        written = self.write("commit", payloads)
        if written != ids:
            raise InternalError("git computed other commit ids than series", why=f"{written}")
        return ids

    def repack(self, *, whole: bool = True) -> None:
        """``whole``: everything in one pack (``repack -a -d``; clones made with
        ``clone_local`` hard-link it).

        Else every loose object into a pack, and the small packs into bigger ones
        (``repack --geometric=2 -d``): a reader then opens a few packs rather than a
        file per object. Every object is kept, reachable or not (the loose ones and the
        rolled-up packs' all go in), so a run writing objects meanwhile loses none
        (and one whose write lost its directory to the repack writes again:
        series.git.run.execute);
        git deletes a loose object or an old pack only once a pack holding it is
        complete, so a repack killed midway leaves at most a temporary file git
        ignores. Bitmaps are not written (they need one pack of everything)."""
        if whole:
            self._run.git("repack", "-a", "-d", "-q")
        else:
            self._run.git("-c", "repack.writeBitmaps=false", "repack", "-d", "-q", "--geometric=2")


def loose(objects: Path) -> int:
    """How many loose objects the objects directory ``objects`` holds:
    the files of its fan-out directories, counted without git (a millisecond or two
    for a few hundred)."""
    count = 0
    try:
        with os.scandir(objects) as top:
            fans = [e.path for e in top if len(e.name) == 2 and e.is_dir()]
        for fan in fans:
            with os.scandir(fan) as entries:
                count += sum(1 for e in entries if len(e.name) >= 38)
    except OSError:  # no objects directory, or one removed meanwhile: none counted
        pass
    return count


def misnamed_loose(objects: Path) -> tuple[str, str] | None:
    """The first loose object of the objects directory ``objects`` whose file does not
    hold the object its name says: its path under ``objects`` and what it holds (the id
    of that other object, or why it holds none); None when every one holds its own.

    git 2.39 reads a loose object without checking its bytes against its name: a file
    holding another valid object's whole compressed bytes (a disk's stale blocks under
    a new file's name after a crash) is merged, diffed and packed as if it were the
    object named, and says nothing. Each file is inflated and hashed here (zlib and
    sha1, no git: what ``git fsck`` checks of a loose object, without its walk of
    every object the refs reach); git's own temporary files (other names) are not
    looked at, nor a file removed meanwhile (a ``repack -d``); a file that is no plain
    file is named (series.plain.read_plain: nothing waits on a FIFO).
    """
    try:
        with os.scandir(objects) as top:
            fans = sorted(e.name for e in top if len(e.name) == 2 and e.is_dir())
    except OSError:
        return None
    if not fans:  # all packed, as after a build (series.upstream.pack_cache)
        return None
    # Only here, and only with loose objects. series.digests' sha1, not hashlib's: hashlib
    # loads OpenSSL, a few ms of a --skip or --continue (tests/test_speed_skip_continue.py).
    import zlib

    for fan in fans:
        try:
            with os.scandir(objects / fan) as entries:
                names = sorted(e.name for e in entries if len(e.name) in (38, 62))
        except OSError:
            continue
        for name in names:
            try:
                data = read_plain(objects / fan / name)
            except FileNotFoundError:
                continue
            except OSError as exc:
                return f"{fan}/{name}", f"unreadable: {exc.strerror or type(exc).__name__}"
            inflate = zlib.decompressobj()
            try:
                raw = inflate.decompress(data)
            except zlib.error:
                return f"{fan}/{name}", "not a compressed object"
            if not inflate.eof or inflate.unused_data:
                return f"{fan}/{name}", "cut short, or with bytes after its object"
            digest = sha1(raw) if len(name) == 38 else sha256(raw)
            if digest.hexdigest() != fan + name:
                return f"{fan}/{name}", f"object {digest.hexdigest()}"
    return None


def loose_blob(git_dir: str, oid: str) -> bytes | None:
    """The content of the blob ``oid`` from its loose object file (zlib, no git), checked
    as ``git fsck`` checks it: its bytes hash to its name, and say a blob of their length.
    None wherever the file alone may not be what git reads for ``oid``: no such file
    (the object packed, or missing), a replace ref in the repository
    (series.git.ref_files ``replaced``), bytes damaged or of another object or type, a
    file that is no plain file. git's own environment for the repository (another
    object directory, alternates) is stripped from every git series runs
    (series.git.inherited), so the repository's ``objects`` is where git looks first."""
    if len(oid) not in (40, 64) or oid.strip("0123456789abcdef") or replaced(git_dir):
        return None
    try:
        data = read_plain(os.path.join(git_dir, "objects", oid[:2], oid[2:]))
    except OSError:
        return None
    import zlib  # a small C module: only where a loose object is read

    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(data)
    except zlib.error:
        return None
    if not inflate.eof or inflate.unused_data:
        return None
    if (sha1(raw) if len(oid) == 40 else sha256(raw)).hexdigest() != oid:
        return None
    head, nul, body = raw.partition(b"\0")
    return body if nul and head == b"blob %d" % len(body) else None


_FEW = 16  # at most this many blobs read one request at a time from the long-lived cat-file


def commit_chain(
    chain: Sequence[tuple[str, str, Ident]], parent: str
) -> tuple[list[bytes], list[str]]:
    """The bytes and ids of :meth:`Objects.write_commits`' commits, written by whoever
    writes them (series.stack.rebase_driver: the merge stream's ``hash-object``)."""
    payloads, ids = [], []
    for tree, message, who in chain:
        person = f"{who.name} <{who.email}> {who.date}".encode()
        body = b"tree %s\nparent %s\nauthor %s\ncommitter %s\n\n" % (
            tree.encode(),
            parent.encode(),
            person,
            person,
        ) + message.encode("utf-8")
        parent = sha1(b"commit %d\0" % len(body) + body).hexdigest()
        payloads.append(body)
        ids.append(parent)
    return payloads, ids


TREE_MODE = "40000"  # a subtree's mode in a tree object


def tree_entries(data: bytes, width: int) -> dict[str, tuple[str, str]]:
    """The entries of a tree object's bytes, in its order: name -> (mode, object id), a
    subtree's mode ``40000``. ``width``: the raw id's bytes, 20 (SHA-1) or 32 (SHA-256).
    ValueError where the bytes are not a tree's as git writes them."""
    entries, pos = {}, 0
    while pos < len(data):  # entries: "<mode> <name>\0<raw id>"
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        if nul + 1 + width > len(data):
            raise ValueError("a tree entry cut short")
        name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
        entries[name] = (data[pos:space].decode("ascii"), data[nul + 1 : nul + 1 + width].hex())
        pos = nul + 1 + width
    return entries
