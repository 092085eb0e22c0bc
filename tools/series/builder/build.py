"""Turn patch files into commits, in memory, the way ``git am -3`` would.

Each patch is split with ``git mailinfo``, applied with ``git apply --cached``
to a scratch index holding its parent's tree (falling back to ``--3way``,
which uses the blob ids in the patch's index lines), and committed with
``commit-tree`` using the patch's author, date and message for both author
and committer. The result depends only on the base and the patch bytes, so
the same inputs always give the same commit ids, and no work tree is
touched. That is what lets :mod:`series.builder.memo` keep the results.

It takes any patch entry that has an ``id`` (the manifest's ``Patch``,
:class:`Entry`) and hands the same entries back in its steps and failure,
so nothing here reads series.toml.
"""

from __future__ import annotations

import re
from pathlib import Path

from series.builder.message import with_trailer
from series.errors import UsageError
from series.git.mail import mailinfo  # not through series.git: it imports every part
from series.git.run import scratch_dir
from series.records import NamedTuple

# typing (and dataclasses, which imports inspect and ast) is for mypy alone: a range-diff
# or a rebase's resume loads this module, and its records are made without them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Generic, NoReturn, Protocol, TypeVar

    from series.git import Repo

    class Entry(Protocol):
        """What the builder needs of a patch: its id (the ``Series-Id`` trailer)."""

        @property
        def id(self) -> str: ...

    P = TypeVar("P", bound=Entry)
else:

    class Generic:
        """typing's ``Generic`` as a base, for mypy: nothing at run time."""

        def __class_getitem__(cls, item: object) -> type:
            return object

    P = "P"  # the patch type: for mypy (annotations are not evaluated)


class PatchFile(NamedTuple, Generic[P]):
    """A manifest entry and the file that holds its patch."""

    patch: P
    path: Path


class Step(NamedTuple, Generic[P]):
    patch: P
    commit: str
    three_way: bool


class Failure(NamedTuple, Generic[P]):
    patch: P
    conflicted: tuple[str, ...]
    failed_hunks: tuple[str, ...]
    stderr: str

    def describe(self) -> str:
        """One line for a report: where it conflicts, else git's last word."""
        where = [*self.conflicted, *self.failed_hunks]
        if where:
            return f"conflicts in {', '.join(where)}"
        lines = self.stderr.strip().splitlines()
        return lines[-1] if lines else "git apply failed"


# What `git apply` says about a diff it cannot parse, as opposed to one that
# does not fit the tree: no rebase would make such a patch apply.
_CORRUPT = re.compile(
    r"corrupt patch|patch fragment without header|only garbage|No valid patches|unrecognized input"
)


class Built(Generic[P]):
    """A build's result, filled in as it goes (a dataclass's fields, eq and repr)."""

    __slots__ = ("base", "data", "failure", "reused", "steps")
    _FIELDS = ("base", "steps", "failure", "reused", "data")  # in the order of __init__

    def __init__(
        self,
        base: str,
        steps: list[Step[P]] | None = None,
        failure: Failure[P] | None = None,
        reused: int = 0,  # leading steps taken from the memo
        # Each file's bytes as the build read them once (series.builder.memo), in the order
        # of the files it was given: what its steps, its failure and the memo's keys are of.
        data: list[bytes] | None = None,
    ) -> None:
        self.base = base
        self.steps: list[Step[P]] = [] if steps is None else steps
        self.failure = failure
        self.reused = reused
        self.data: list[bytes] = [] if data is None else data

    def _fields(self) -> tuple[object, ...]:
        return (self.base, self.steps, self.failure, self.reused, self.data)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Built)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in zip(self._FIELDS, self._fields(), strict=True))
        return f"Built({shown})"

    @property
    def tip(self) -> str:
        return self.steps[-1].commit if self.steps else self.base

    @property
    def commits(self) -> dict[str, str]:
        """patch id -> commit, for the patches that applied."""
        return {s.patch.id: s.commit for s in self.steps}

    @property
    def parents(self) -> dict[str, str]:
        """patch id -> the commit it was applied on (the base for the first)."""
        tips = [self.base, *(s.commit for s in self.steps)]
        return {s.patch.id: parent for s, parent in zip(self.steps, tips, strict=False)}

    def why_not(self, patch_id: str) -> str:
        """Why ``patch_id`` is not on the stack: its own failure, or an earlier one."""
        if self.failure is not None and self.failure.patch.id == patch_id:
            return self.failure.describe()
        return "an earlier patch does not apply"


def build(
    repo: Repo, base: str, files: list[PatchFile[P]], data: list[bytes] | None = None
) -> Built[P]:
    """Apply ``files`` in order on ``base`` in ``repo``; stop at the first that fails.

    ``data``: each file's bytes as the caller read them (series.builder.memo keys its
    record by them), applied instead of what the file holds when git would read it.
    """
    built: Built[P] = Built(base)
    read: list[bytes | None] = list(data) if data is not None else [None] * len(files)
    with scratch_dir("series-stack-") as tmp:
        scratch = Path(tmp)
        for item, content in zip(files, read, strict=True):
            step = _apply(repo, built.tip, item, scratch, content)
            if isinstance(step, Failure):
                built.failure = step
                return built
            built.steps.append(step)
    return built


def _apply(
    repo: Repo, parent: str, item: PatchFile[P], scratch: Path, data: bytes | None
) -> Step[P] | Failure[P]:
    info = mailinfo(item.path, scratch, data)
    escapes = unsafe_paths(info.diff)
    if escapes:
        raise UsageError(
            f"{item.path} ({item.patch.id}) names a path outside the repository",
            why="\n".join(f"path: {p}" for p in escapes),
            hint="paths in a patch are relative to the top of the upstream tree: fix the "
            "diff (no '..', no leading '/'), or export the patch again with `series export`",
        )
    three_way = False
    with repo.index.scratch(parent) as env:
        if info.diff.strip():
            result = repo.index.apply(env, scratch / "diff")
            if not result.ok and _CORRUPT.search(result.stderr):
                _refuse_corrupt(item, result.stderr)
            if not result.ok:
                return Failure(item.patch, result.conflicted, result.failed, result.stderr)
            three_way = result.three_way
        tree = repo.index.write_tree(env)
    message = with_trailer(info.message, item.patch.id)
    commit = repo.objects.commit_tree(tree, [parent], message, info.author)
    return Step(item.patch, commit, three_way)


_PATH_LINES = (b"--- ", b"+++ ", b"rename from ", b"rename to ", b"copy from ", b"copy to ")


def unsafe_paths(diff: bytes) -> list[str]:
    """Paths in ``diff`` that are absolute or climb out of the tree with ``..``."""
    found: dict[str, None] = {}
    header = False  # only file headers name paths; a hunk line may look like one
    for raw in diff.splitlines():
        if raw.startswith(b"diff --git "):
            header = True
            names = raw[len(b"diff --git ") :].split(b" ")
        elif raw.startswith(b"@@"):
            header = False
            continue
        elif header and raw.startswith(_PATH_LINES):
            names = [raw.split(b" ", 1)[1] if raw[:1] in b"-+" else raw.split(b" ", 2)[2]]
        else:
            continue
        for name in names:
            text = name.decode("utf-8", "replace").split("\t")[0].strip('"')
            if text == "/dev/null":
                continue
            bare = text[2:] if text[:2] in ("a/", "b/") else text
            if bare.startswith("/") or ".." in bare.split("/"):
                found[bare] = None
    return list(found)


def _refuse_corrupt(item: PatchFile[P], stderr: str) -> NoReturn:
    lines = dict.fromkeys(line for line in stderr.splitlines() if line.strip())
    raise UsageError(
        f"{item.path} is corrupt: git apply cannot read its diff",
        why="\n".join(lines),
        hint=f"restore it from git, or export {item.patch.id} again with `series export`",
    )
