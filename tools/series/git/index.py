"""Scratch indexes: applying patches and building trees without a work tree.

A scratch index is a temporary ``GIT_INDEX_FILE`` that holds a tree; a
patch is applied to it with ``apply --cached`` (falling back to
``--3way``, which uses the blob ids in the patch's index lines) and the
result is written back as a tree. Nothing here touches the repository's
own index or files (``files_tree`` reads the work tree, and writes nothing there).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from series.git.run import HERMETIC, Part, input_file


@dataclass(frozen=True)
class ApplyResult:
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
        tmp = Path(tempfile.mkdtemp(prefix="series-index-"))
        scratch = {**HERMETIC, **(env or {}), "GIT_INDEX_FILE": str(tmp / "index")}
        try:
            if tree is not None:
                self._run.git("read-tree", tree, env=scratch)
            yield scratch
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

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
        ``tree`` None: the tree of those entries alone."""
        with self.scratch(tree, env) as scratch:
            data = ("\n".join(index_info) + "\n").encode()
            self._run.git_input("update-index", "--index-info", data=data, env=scratch)
            return self.write_tree(scratch)

    def tree_from_directory(self, root: Path) -> str:
        """The tree of every file under ``root`` (ignore rules off), written to the store."""
        with self.scratch(self.empty_tree()) as env:
            self._run.git("--work-tree", str(root), "add", "-A", "-f", ".", env=env)
            return self.write_tree(env)

    def files_tree(self, start: str, changed: Sequence[str] | None = None) -> str:
        """The tree of this work tree's files as they are: tracked, changed and untracked.

        Built in a scratch index from the tree ``start`` (``add -A`` honours
        the ignore rules), so the repository's own index, conflict stages
        and all, is left alone. ``changed``: the only paths that may differ
        from ``start`` (HEAD's tree and ``Worktree.changed``): only they are
        read and hashed, not every file of the tree; none: ``start`` itself.
        """
        if changed is not None and not changed:
            return start
        with self.scratch(start) as env:
            if changed is None:
                self._run.git("add", "-A", ".", env=env)
            else:
                data = b"".join(p.encode() + b"\0" for p in changed)
                literal = {**env, "GIT_LITERAL_PATHSPECS": "1"}
                argv = ["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"]
                self._run.git_input(*argv, data=data, env=literal)
            return self.write_tree(env)

    def empty_tree(self) -> str:
        return self._run.git(
            "hash-object", "-t", "tree", "-w", "--stdin", env=HERMETIC, stdin=Path("/dev/null")
        ).strip()

    def apply_all(self, tree: str, patches: Sequence[Path]) -> str | None:
        """``tree`` with every patch file applied in order (one ``apply --cached``), or None."""
        with self.scratch(tree) as env:
            argv = ["apply", "--cached", "--whitespace=nowarn", *map(str, patches)]
            status, _, _ = self._run.git_status(*argv, env=env)
            return self.write_tree(env) if status == 0 else None

    def apply_exact(
        self, tree: str, diff: bytes, env: Mapping[str, str] | None = None
    ) -> str | None:
        """``tree`` with ``diff`` applied exactly (no fuzz, no 3-way), or None.

        ``env``: a scratch-object environment ``tree`` lives in, if any.
        """
        with self.scratch(tree, env) as index, input_file(diff) as path:
            status, _, _ = self._run.git_status("apply", "--cached", str(path), env=index)
            return self.write_tree(index) if status == 0 else None

    def rewrite_and_apply(
        self,
        tree: str,
        index_info: Sequence[str],
        diff: bytes,
        env: Mapping[str, str] | None = None,
    ) -> tuple[str, str | None]:
        """:meth:`rewrite` of ``tree`` with ``index_info`` (``tree`` itself when there is
        none), and :meth:`apply_exact` of ``diff`` to that tree (None where it does not
        apply), in one scratch index: no second ``read-tree`` of the tree just written."""
        with self.scratch(tree, env) as index, input_file(diff) as path:
            rewritten = tree
            if index_info:
                data = ("\n".join(index_info) + "\n").encode()
                self._run.git_input("update-index", "--index-info", data=data, env=index)
                rewritten = self.write_tree(index)
            status, _, _ = self._run.git_status("apply", "--cached", str(path), env=index)
            return rewritten, self.write_tree(index) if status == 0 else None

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


def _failed_hunks(stderr: str) -> list[str]:
    hunks = re.findall(r"error: patch failed: (\S+)", stderr)
    missing = re.findall(r"error: (\S+): (?:does not exist in index|No such file)", stderr)
    return hunks + [f"{m} (missing)" for m in missing]
