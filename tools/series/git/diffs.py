"""Diffs: what changed between trees and commits, as paths, hunks, patches and patch ids.

Every diff here is hermetic (no user configuration, a repository's own
pinned to git's defaults: no colour, no renames, full blob ids; no
attributes: ``Runner.no_attributes``), so the same inputs give the same
bytes. A commit is written out with
``format-patch`` in the one canonical form series uses, with nothing
volatile in it, so the same commit always gives the same patch file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from series.errors import InternalError
from series.git.objects import TREE_MODE, tree_entries
from series.git.run import GitFailed, Part, Started, start_together

Entry = tuple[str, str] | None  # a file's (mode, object id) in a tree; None: not there

_ZERO_FROM = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"


class Diffs(Part):
    """Differences between trees and commits, and commits as patch files."""

    def _env(self) -> dict[str, str]:
        """HERMETIC, and no attribute of the repository's (``diff=``, ``-diff``)."""
        return self._run.no_attributes()

    def changed_paths(self, old: str, new: str) -> list[str]:
        """Paths whose content differs between two commits or trees."""
        out = self._run.git(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new, env=self._env()
        )
        return [path for path in out.split("\0") if path]

    def changed_lines(self, old: str, new: str, path: str) -> list[tuple[int, int]]:
        """(first, count) of each hunk's new-side lines in ``path`` (``diff -U0``).

        A hunk that only deletes has count 0: ``first`` is the line after
        which the deleted lines stood.
        """
        out = self._run.git(
            "diff", "-U0", *_PLAIN, "--no-renames", old, new, "--", path, env=self._env()
        )
        hunks = []
        for line in out.splitlines():
            if line.startswith("@@ "):
                new_side = line.split(" ")[2].removeprefix("+")
                first, _, count = new_side.partition(",")
                hunks.append((int(first), int(count) if count else 1))
        return hunks

    def tree_changes(self, old: str, new: str) -> dict[str, tuple[Entry, Entry]]:
        """Each file whose entry (mode and object id) differs between trees ``old`` and
        ``new``: (old's, new's), None on a side without it (a gitlink a file too): the
        files ``diff-tree -r --no-renames`` lists. The trees are read from the long-lived
        ``cat-file`` and only the subtrees whose ids differ are read: no process of its own
        where it runs already, a few objects where the trees differ in a few files;
        ``diff-tree`` answers where a tree cannot be read so."""
        width = len(old) // 2
        changes: dict[str, tuple[Entry, Entry]] = {}
        try:
            if self._compare(old, new, "", width, changes):
                return changes
        except ValueError:  # not what git writes: git's own diff-tree says what is wrong
            pass
        raw = self._run.git("diff-tree", "-r", "-z", "--no-renames", old, new, env=self._env())
        fields, changes = raw.split("\0"), {}
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            head = meta.split()  # ":MODE MODE OID OID STATUS"
            if len(head) == 5:
                before = None if set(head[2]) == {"0"} else (head[0][1:], head[2])
                after = None if set(head[3]) == {"0"} else (head[1], head[3])
                changes[path] = (before, after)
        return changes

    def _compare(
        self,
        old: str | None,
        new: str | None,
        prefix: str,
        width: int,
        changes: dict[str, tuple[Entry, Entry]],
    ) -> bool:
        """Add what differs between trees ``old`` and ``new`` (None: no tree there) under
        ``prefix`` to ``changes``; False where a tree cannot be read."""
        sides = []
        for tree in (old, new):
            data = self._run.object_data(tree, "tree") if tree is not None else b""
            if data is None:
                return False
            sides.append(tree_entries(data, width))
        before, after = sides
        for name in sorted({*before, *after}):
            a, b = before.get(name), after.get(name)
            if a == b:
                continue
            path = prefix + name
            a_tree = a[1] if a is not None and a[0] == TREE_MODE else None
            b_tree = b[1] if b is not None and b[0] == TREE_MODE else None
            if (a_tree or b_tree) and not self._compare(a_tree, b_tree, f"{path}/", width, changes):
                return False
            a_file = a if a is not None and a_tree is None else None
            b_file = b if b is not None and b_tree is None else None
            if a_file != b_file:
                changes[path] = (a_file, b_file)
        return True

    def trees(self, old: str, new: str) -> bytes:
        """The patch from tree ``old`` to tree ``new`` (full blob ids, no renames)."""
        argv = ["diff-tree", "-p", "--full-index", "--binary", "--no-renames", "--no-color"]
        return self._run.git_bytes(*argv, old, new, env=self._env())

    def commits(self, commits: Sequence[str], paths: Sequence[str] = ()) -> dict[str, bytes]:
        """commit -> its diff against its parent, all with one ``diff-tree --stdin``.

        ``paths``: only these files' diffs (literal paths, no pattern); a commit that
        changes none of them is left out, as a commit that changes nothing is.
        """
        if not commits:
            return {}
        argv, env, data, parse = self._commits(commits, paths)
        return parse(self._run.git_input(*argv, data=data, env=env))

    def commits_later(self, commits: Sequence[str], paths: Sequence[str] = ()) -> Later:
        """:meth:`commits`, its process started now, beside series, and read by
        :meth:`Later.result` (or ended by :meth:`Later.abandon`)."""
        if not commits:
            return Later(None, [], lambda out: {})
        argv, env, data, parse = self._commits(commits, paths)
        return Later(start_together(self.path, [(argv, env)], [data]), argv, parse)

    def _commits(
        self, commits: Sequence[str], paths: Sequence[str]
    ) -> tuple[list[str], dict[str, str], bytes, Callable[[bytes], dict[str, bytes]]]:
        """:meth:`commits`' argv, environment and stdin, and the reading of its output."""
        argv = ["diff-tree", "--stdin", "-p", "--full-index", "--no-renames", "--no-color"]
        env = self._env()
        if paths:
            argv += ["--", *paths]
            env = {**env, "GIT_LITERAL_PATHSPECS": "1"}
        data = ("\n".join(commits) + "\n").encode()
        wanted = set(commits)

        def parse(out: bytes) -> dict[str, bytes]:
            parts: dict[str, list[bytes]] = {}
            current: list[bytes] | None = None
            for line in out.splitlines(keepends=True):
                head = line.strip()
                if len(head) == 40 and not line.startswith((b"+", b"-", b" ")):
                    name = head.decode("ascii", "replace")
                    if name in wanted:
                        current = parts[name] = []
                        continue
                if current is not None:
                    current.append(line)
            return {commit: b"".join(lines) for commit, lines in parts.items()}

        return argv, env, data, parse

    def raw_commits(self, commits: Sequence[str]) -> dict[str, bytes]:
        """commit -> its ``diff-tree --raw`` against its parent (mode, blob ids and path of
        each changed file; nothing for a commit that changes none), with one process.

        Two commits with the same raw diff have the same :meth:`commits` bytes, as that is
        made from these blobs alone: a caller compares these before asking for those.
        """
        if not commits:
            return {}
        argv, data, parse = self._raw_commits(commits)
        return parse(self._run.git_input(*argv, data=data, env=self._env()))

    def raw_commits_later(self, commits: Sequence[str]) -> Later:
        """:meth:`raw_commits`, its process started now, beside series (as
        :meth:`commits_later`)."""
        if not commits:
            return Later(None, [], lambda out: {})
        argv, data, parse = self._raw_commits(commits)
        return Later(start_together(self.path, [(argv, self._env())], [data]), argv, parse)

    def _raw_commits(
        self, commits: Sequence[str]
    ) -> tuple[list[str], bytes, Callable[[bytes], dict[str, bytes]]]:
        """:meth:`raw_commits`' argv and stdin, and the reading of its output."""
        argv = ["diff-tree", "--stdin", "-r", "--raw", "--full-index", "--no-renames"]
        data = ("\n".join(commits) + "\n").encode()
        wanted = set(commits)

        def parse(out: bytes) -> dict[str, bytes]:
            parts: dict[str, list[bytes]] = {c: [] for c in commits}
            current: list[bytes] | None = None
            for line in out.splitlines(keepends=True):
                if line.startswith(b":"):
                    if current is None:
                        raise InternalError(
                            f"diff-tree --raw: a change before any commit: {line!r}"
                        )
                    current.append(line)
                    continue
                name = line.strip().decode("ascii", "replace")
                if name not in wanted:
                    raise InternalError(f"diff-tree --raw: not a commit asked for: {line!r}")
                current = parts[name] = []  # a commit asked for twice: its changes once
            return {commit: b"".join(lines) for commit, lines in parts.items()}

        return argv, data, parse

    @staticmethod
    def of_patch(patch: bytes, raw: bytes, paths: Sequence[str] = ()) -> bytes | None:
        """:func:`diff_of_patch`: a commit's :meth:`commits` answer from its exported patch."""
        return diff_of_patch(patch, raw, paths)

    def range_diff(self, old: str, new: str) -> str:
        """``git range-diff OLD NEW`` (two revision ranges), without colour."""
        return self._run.git(*_RANGE_DIFF, old, new, env=self._env())

    def range_diffs(self, ranges: Sequence[tuple[str, str]]) -> list[str]:
        """:meth:`range_diff` of each (old, new) pair of ranges, all running at once, one
        on each core (series.stack.rangediff cuts a long series in two): each text as
        :meth:`range_diff` gives it, in order."""
        calls = [([*_RANGE_DIFF, old, new], self._env()) for old, new in ranges]
        texts = []
        for (argv, _), (status, out, err) in zip(calls, self._run.git_together(calls), strict=True):
            if status != 0:
                raise GitFailed(argv, status, err, cwd=self.path)
            texts.append(out.decode("utf-8", "surrogateescape"))  # as Runner.git decodes it
        return texts

    def patch_ids(self, revs: Sequence[str], paths: Sequence[str] = ()) -> dict[str, str]:
        """commit -> ``patch-id --stable`` for the non-merge, non-root commits of ``revs``.

        ``paths`` limits which commits are read, not their diffs (--full-diff),
        so the ids are those of whole commits.
        """
        argv = ["log", "-p", "--min-parents=1", "--max-parents=1", "--full-diff", *_PLAIN]
        diff = self._run.git_bytes(
            *argv, "--format=commit %H", *revs, "--", *paths, env=self._env()
        )
        if not diff.strip():
            return {}
        out = self._run.git_input("patch-id", "--stable", data=diff, env=self._env()).decode()
        return {commit: pid for pid, commit in (line.split() for line in out.splitlines())}

    def patch_ids_of(self, commits: Sequence[str]) -> dict[str, str]:
        """commit -> ``patch-id --stable`` of each of ``commits`` (non-merge, non-root)."""
        if not commits:
            return {}
        argv = ["log", "-p", "--no-walk=unsorted", "--stdin", "--min-parents=1"]
        argv += ["--max-parents=1", *_PLAIN, "--format=commit %H"]
        data = ("\n".join(commits) + "\n").encode()
        diff = self._run.git_input(*argv, data=data, env=self._env())
        if not diff.strip():
            return {}
        out = self._run.git_input("patch-id", "--stable", data=diff, env=self._env()).decode()
        return {commit: pid for pid, commit in (line.split() for line in out.splitlines())}

    def format_patch(self, commit: str) -> bytes:
        """One commit as a patch file with no volatile content."""
        return self._run.git_bytes("format-patch", "-1", commit, *_FORMAT, env=self._env())

    def format_patches(self, base: str, tip: str, cuts: Sequence[str] = ()) -> list[bytes]:
        """Every commit of base..tip as :meth:`format_patch` writes it, with one process
        (or one per piece, ``cuts``).

        git computes a diffstat with a diff of its own, which reads every blob again:
        about 45% of the run. So it is asked for the patches without it, and each
        diffstat is counted from the patch's own ``+``/``-`` lines and laid out as git
        lays it out (:func:`with_stat`), where that layout is the plain one (text files
        changed in place, printable ASCII names); any other patch in the range, and
        format-patch is asked again, with its own diffstat, for all of them.

        ``cuts``: commits of the line base..tip (oldest first) where it is cut in pieces,
        each written by its own process, all at once (one on each core: a commit's patch
        is its own, with no number or id in it, so the pieces' parts are the range's). A
        cut that is not where the pieces say on the line from ``base`` to ``tip``, and the
        range is asked again in one piece, with git's own diffstats.
        """
        if cuts:
            return self.format_patches_later(base, tip, cuts).result()
        argv, env = ["format-patch", f"{base}..{tip}", *_NO_STAT], self._env()
        out = self._run.git_bytes(*argv, env=env)
        return self._patches((base, tip, cuts), [(argv, env)], [(0, out, "")])

    def format_patches_later(self, base: str, tip: str, cuts: Sequence[str] = ()) -> Patches:
        """:meth:`format_patches`, its processes started now, beside series: read by
        :meth:`Patches.result` (or ended by :meth:`Patches.abandon`)."""
        ends = [base, *cuts, tip]
        ranges = [f"{ends[k]}..{ends[k + 1]}" for k in range(len(cuts) + 1)]
        calls = [(["format-patch", r, *_NO_STAT], self._env()) for r in ranges]
        return Patches(self, (base, tip, cuts), calls, self._run.start_together(calls))

    def _patches(
        self,
        line: tuple[str, str, Sequence[str]],
        calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]],
        done: list[tuple[int, bytes, str]],
    ) -> list[bytes]:
        """:meth:`format_patches`' answer from its processes' (``calls``) answers."""
        base, tip, cuts = line
        pieces = []
        answers = self._run.checked(calls, done)
        for (argv, _), (status, out, err) in zip(calls, answers, strict=True):
            if status != 0:
                raise GitFailed(argv, status, err, cwd=self.path)
            pieces.append(_split(out))
        parts = [part for piece in pieces for part in piece]
        at: dict[str, int] = {}
        counts = 0
        for cut, piece in zip(cuts, pieces, strict=False):
            counts += len(piece)
            at[cut] = counts
        changed = self._changes_tree(base, tip, len(parts), at) if parts else None
        if not parts:
            return []
        if changed is not None:
            # A commit that changes nothing has no raw lines, diff or diffstat: its part
            # is the same either way (and a message cannot pass for its raw lines).
            stated = [with_stat(p) if c else p for p, c in zip(parts, changed, strict=True)]
            if all(part is not None for part in stated):
                return [part for part in stated if part is not None]
        env = self._env()
        return _split(self._run.git_bytes("format-patch", f"{base}..{tip}", *_FORMAT, env=env))

    def _changes_tree(
        self, base: str, tip: str, count: int, at: Mapping[str, int]
    ) -> list[bool] | None:
        """Whether each of the ``count`` commits of base..tip (oldest first) changes its
        parent's tree, read from the commits (the long-lived ``cat-file``); None unless
        base..tip is a line of exactly ``count`` commits from ``base``, the ``n``-th of
        which is the commit that ``at`` maps to ``n`` (1 the oldest)."""
        trees: list[bytes] = []
        met: set[str] = set()
        commit = tip
        for _ in range(count + 1):
            if commit in at:
                if at[commit] != count - len(trees):
                    return None
                met.add(commit)
            data = self._run.object_data(commit, "commit")
            if data is None:
                return None
            head = data.split(b"\n\n", 1)[0].split(b"\n")
            parents = [line[7:] for line in head if line.startswith(b"parent ")]
            if not head[0].startswith(b"tree ") or (len(parents) != 1 and len(trees) < count):
                return None
            trees.append(head[0][5:])
            if len(trees) == count + 1:
                break
            commit = parents[0].decode("ascii")
        if commit != base or met != set(at):  # each cut met on the way down, where it was
            return None
        trees.reverse()
        return [trees[i + 1] != trees[i] for i in range(count)]


class Later:
    """A diff made beside series (series.git.run.start_together): :meth:`result` reads it
    (once); :meth:`abandon` ends it unread, on any exception before (nothing after)."""

    def __init__(
        self,
        started: Started | None,
        argv: Sequence[str],
        parse: Callable[[bytes], dict[str, bytes]],
    ) -> None:
        self._started, self._argv, self._parse = started, argv, parse

    def result(self) -> dict[str, bytes]:
        if self._started is None:
            return self._parse(b"")
        status, out, err = self._started.finish()[0]
        if status != 0:
            raise GitFailed(self._argv, status, err, cwd=self._started.cwd)
        return self._parse(out)

    def abandon(self) -> None:
        if self._started is not None:
            self._started.abandon()


class Patches:
    """The ``format-patch`` processes of :meth:`Diffs.format_patches_later`, running:
    :meth:`result` reads them (once) as :meth:`Diffs.format_patches` answers; :meth:`abandon`
    ends them unread, on any exception before (nothing after)."""

    def __init__(
        self,
        diffs: Diffs,
        line: tuple[str, str, Sequence[str]],
        calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]],
        started: Started,
    ) -> None:
        self._diffs, self._line, self._calls, self._started = diffs, line, calls, started

    def result(self) -> list[bytes]:
        return self._diffs._patches(self._line, self._calls, self._started.finish())

    def abandon(self) -> None:
        self._started.abandon()


def _split(out: bytes) -> list[bytes]:
    """format-patch's ``--stdout`` cut into one patch file per commit."""
    parts = [_ZERO_FROM + part for part in out.split(_ZERO_FROM)[1:]]
    # Every patch but the last is followed by a blank line that separates it.
    return [p[:-1] if i < len(parts) - 1 else p for i, p in enumerate(parts)]


_STAT_WIDTH = 80  # --stat=80 in _FORMAT
_MODES = frozenset((b":100644", b"100644", b":100755", b"100755", b":000000", b"000000"))
_NAME = frozenset(range(0x20, 0x7F)) - {ord('"'), ord("\\")}  # printed as they are by git


def with_stat(patch: bytes) -> bytes | None:
    """``patch`` as format-patch wrote it with ``--no-stat --raw``, with the diffstat that
    ``--stat=80`` gives it in place of the raw lines, or None where this layout is not
    certainly git's.

    The raw lines (``:MODE MODE ID ID STATUS<TAB>PATH``) sit between the message and
    the diff, after a blank line; no line of a diff starts with ``:`` (a hunk's lines
    start with `` ``, ``+``, ``-`` or ``\\``), so the last lines that do are the raw
    ones, whatever the message quotes. They name the files: the diff must have one part
    per file, in that order, each headed ``diff --git a/PATH b/PATH``.

    git's layout (diff.c, ``show_stats``, git >= 2.39 as series requires): a line per
    file, `` NAME | N +++--`` with the names padded to one width and the counts
    right-aligned, the graph scaled when the widest change does not fit, a name cut to
    ``...`` and its tail from a slash when the names are too wide, then the totals line.
    Only text files added, deleted or changed in place, with lines, whose path is
    printable ASCII git does not quote, are laid out here: a rename or copy (``a => b``
    names), a binary file (``Bin``), a file with no line counted (a mode change, an
    empty file), a commit that changes nothing answer None. The counts are the patch's
    own ``+`` and ``-`` lines: git's stat counts the same diff.
    """
    last = patch.rfind(b"\n:")
    end = patch.find(b"\n", last + 1)
    if last < 0 or end < 0 or not patch.startswith(b"\ndiff --git ", end + 1):
        return None
    start = last
    while patch[patch.rfind(b"\n", 0, start) + 1 : start].startswith(b":"):
        start = patch.rfind(b"\n", 0, start)
    if patch[start - 1 : start + 1] != b"\n\n":  # the raw lines follow a blank line
        return None
    names = []
    for line in patch[start + 1 : end].split(b"\n"):
        meta, _, name = line.partition(b"\t")
        fields = meta.split(b" ")
        if len(fields) != 5 or fields[4] not in (b"M", b"A", b"D"):
            return None
        if not _MODES.issuperset(fields[:2]):  # a link's or a submodule's diff: git's stat
            return None
        if not name or not _NAME.issuperset(name):
            return None
        names.append(name)
    starts = []  # each file's part, from the newline before its "diff --git" line
    at = end + 1
    while at >= 0:
        starts.append(at)
        at = patch.find(b"\ndiff --git ", at + 1)
    if len(starts) != len(names):
        return None
    files = []
    for n, name in enumerate(names):  # read in place: the parts are most of the bytes
        first, stop = starts[n], starts[n + 1] if n + 1 < len(starts) else len(patch)
        head = patch.find(b"\n", first + 1, stop)
        hunks = patch.find(b"\n@@ ", head, stop) if head > 0 else -1
        if hunks < 0 or patch[first + 12 : head] != b"a/%s b/%s" % (name, name):
            return None
        added, deleted = patch.count(b"\n+", hunks, stop), patch.count(b"\n-", hunks, stop)
        if not added + deleted:
            return None
        files.append((name.decode("ascii"), added, deleted))
    stat = _stat_lines(files).encode("ascii")
    return patch[:start] + b"---\n" + stat + b"\n" + patch[end + 2 :]


def _stat_lines(files: list[tuple[str, int, int]]) -> str:
    """git's ``--stat=80`` lines for ``files`` (name, added, deleted), the totals last."""
    max_len = max(len(name) for name, _, _ in files)
    max_change = max(a + d for _, a, d in files)
    number_width = len(str(max_change))
    width = max(_STAT_WIDTH, 16 + 6 + number_width)
    graph_width, name_width = max_change, max_len
    if name_width + number_width + 6 + graph_width > width:
        if graph_width > width * 3 // 8 - number_width - 6:
            graph_width = max(width * 3 // 8 - number_width - 6, 6)
        if name_width > width - number_width - 6 - graph_width:
            name_width = width - number_width - 6 - graph_width
        else:
            graph_width = width - number_width - 6 - name_width
    lines = []
    for name, added, deleted in files:
        prefix, room = "", name_width
        if name_width < len(name):
            prefix, room = "...", max(name_width - 3, 0)
            name = name[len(name) - room :] if room else ""
            slash = name.find("/")
            if slash >= 0:
                name = name[slash:]
        add, dele = added, deleted
        if graph_width <= max_change:
            total = _scale(added + deleted, graph_width, max_change)
            if total < 2 and added and deleted:
                total = 2
            if added < deleted:
                add = _scale(added, graph_width, max_change)
                dele = total - add
            else:
                dele = _scale(deleted, graph_width, max_change)
                add = total - dele
        count = str(added + deleted).rjust(number_width)
        pad = " " * max(room - len(name), 0)
        lines.append(f" {prefix}{name}{pad} | {count} {'+' * add}{'-' * dele}\n")
    adds, dels = sum(a for _, a, _ in files), sum(d for _, _, d in files)
    totals = f" {len(files)} file{'' if len(files) == 1 else 's'} changed"
    if adds or not dels:
        totals += f", {adds} insertion{'' if adds == 1 else 's'}(+)"
    if dels or not adds:
        totals += f", {dels} deletion{'' if dels == 1 else 's'}(-)"
    return "".join(lines) + totals + "\n"


def _scale(it: int, width: int, max_change: int) -> int:
    """diff.c's ``scale_linear``: ``it`` of ``max_change`` on ``width`` columns."""
    return 0 if not it else 1 + (it * (width - 1) // max_change)


def diff_of_patch(patch: bytes, raw: bytes, paths: Sequence[str] = ()) -> bytes | None:
    """What :meth:`Diffs.commits` answers for a commit, taken from its patch file as
    :meth:`Diffs.format_patches` wrote it (the same diff machinery, options and pinned
    configuration: each file's part is the same bytes), or None where it cannot be.

    ``raw``: the commit's :meth:`Diffs.raw_commits`; ``paths``: as for ``commits``. The
    diff is where the part of the first file ``raw`` names begins (its last ``diff --git``
    line: a message may quote one, the diff comes after it), and its parts must be those
    of ``raw``'s files, in its order, each headed ``diff --git a/PATH b/PATH``: a rename
    or copy the patch found (``--find-renames``), a quoted path, a binary file (a
    ``GIT binary patch`` there, ``Binary files ... differ`` from ``diff-tree``) answer None.
    """
    files = [line.split(b"\t", 1)[1] for line in raw.splitlines() if b"\t" in line]
    if not files:
        return b""  # a commit that changes nothing: commits() leaves it out
    start = patch.rfind(b"\ndiff --git a/%s b/%s\n" % (files[0], files[0]))
    if start < 0:
        return None
    parts = patch[start + 1 :].split(b"\ndiff --git ")
    parts = [parts[0], *(b"diff --git " + part for part in parts[1:])]
    if len(parts) != len(files):
        return None
    wanted = {p.encode("utf-8", "surrogateescape") for p in paths}
    kept = []
    for n, (part, path) in enumerate(zip(parts, files, strict=True)):
        head, _, body = part.partition(b"\n")
        if head != b"diff --git a/%s b/%s" % (path, path) or b"\nGIT binary patch\n" in part:
            return None
        if body.startswith((b"similarity index", b"dissimilarity index", b"copy from")):
            return None
        if b"\nBinary files " in b"\n" + body:
            return None
        if not paths or path in wanted:
            kept.append(part if n == len(parts) - 1 else part + b"\n")
    return b"".join(kept)


_FORMAT = (
    "--stdout",
    "--always",  # an empty commit (a patch kept for its message) is a patch too
    "--zero-commit",
    "--full-index",
    "--no-signature",
    "--no-numbered",
    "--encode-email-headers",
    "--stat=80",
    "--find-renames",
    "--diff-algorithm=myers",
    "--no-color",
    # what a repository's configuration adds that no pin resets (series.git.run.PINNED)
    "--no-to",
    "--no-cc",
    "--no-add-header",
    "--no-attach",
)
# format-patch without its diffstat, with the raw lines that name the files (with_stat)
_NO_STAT = tuple(x for o in _FORMAT for x in (("--no-stat", "--raw") if o == "--stat=80" else (o,)))
# git diff and git log -p, unlike plumbing, run a repository's diff.external and textconv
# drivers (its .git/info/attributes and .git/config): never for content or patch-ids.
_PLAIN = ("--no-color", "--no-ext-diff", "--no-textconv")
_RANGE_DIFF = ("range-diff", "--no-color", "--creation-factor=100")
