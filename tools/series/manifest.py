"""series.toml: reading and validating the manifest.

The manifest is read with ``tomllib`` and validated here and only here; every
error names the file and the key path (``patch[3].file``). It is written back
by series.manifest_write with ``tomlkit``, so the maintainer's comments, key
order and formatting survive an export. The format is versioned (``format = 1``) and documented in
docs/manifest.md.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from stat import S_ISLNK, S_ISREG

from series import manifest_kept
from series.digests import is_hex
from series.errors import ManifestError
from series.records import NamedTuple
from series.untrusted import LETTERS_DIGITS, URL_RULE, revision_problem, spelled, url_problem

TYPE_CHECKING = False  # typing is for mypy alone (series.records)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

FORMAT = 1
STATES = ("open", "merged", "closed", "unsubmitted")
SOURCES = ("auto", "git", "sdist")
# The spellings of ids, commits, branches and of the sdist's names, checked without re
# (its import, with enum's, was 2 ms of every command that reads series.toml): each
# function is the regular expression in its docstring, matched in full (ASCII only);
# tests/test_import_diet.py compares them.
_DIGITS = "0123456789"


def is_id(value: str) -> bool:
    """``P[0-9]+``"""
    return value[:1] == "P" and len(value) > 1 and not value[1:].strip(_DIGITS)


def is_branch(value: str) -> bool:
    """``[A-Za-z0-9][A-Za-z0-9._/-]*``"""
    return spelled(value, LETTERS_DIGITS, LETTERS_DIGITS + "._/-")


# PEP 508 names and PEP 440-ish versions: they name a file of the package index.
def is_package(value: str) -> bool:
    """``[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?``"""
    return spelled(value, LETTERS_DIGITS, LETTERS_DIGITS + "._-", LETTERS_DIGITS)


def is_version(value: str) -> bool:
    """``[A-Za-z0-9][A-Za-z0-9.+!_-]*``"""
    return spelled(value, LETTERS_DIGITS, LETTERS_DIGITS + ".+!_-")


_TOP_KEYS = {"format", "upstream", "series", "patch", "dropped"}
_DROPPED_KEYS = {"id", "title", "pr", "reason", "upstream_commit", "onto", "file"}
_UPSTREAM_KEYS = {"name", "repository", "ref", "commit", "source", "sdist"}
_SDIST_KEYS = {"package", "version", "sha256"}
_SERIES_KEYS = {"branch", "checkout"}
_PATCH_KEYS = {
    "id",
    "title",
    "file",
    "pr",
    "branch",
    "state",
    "state_note",
    "subset",
    "pin_failures",
    "applies_alone",
    "no_behaviour_test",
    "no_tests",
    "partly_upstream",
}
_PART_KEYS = {"commit", "onto", "took"}
_PATCH_REQUIRED = ("id", "title", "file", "branch", "state")
MAX_PR = 2**31  # GitHub's PR numbers are 32-bit


class Sdist(NamedTuple):
    package: str
    version: str
    sha256: str | None


class Upstream(NamedTuple):
    name: str
    repository: str
    ref: str
    commit: str
    source: str
    sdist: Sdist | None  # None once a rebase moved the pin where no sdist stands in


class PinFailure(NamedTuple):
    """Tests of a subset that fail at the pin too (so not a patch's fault)."""

    tests: str  # a node id or node-id prefix
    reason: str


class Patch(NamedTuple):
    id: str
    title: str
    file: str  # relative to the project root
    branch: str
    state: str
    pr: int | None = None
    state_note: str = ""
    subset: tuple[str, ...] = ()
    pin_failures: tuple[PinFailure, ...] = ()
    applies_alone: bool | None = None
    no_behaviour_test: str = ""  # why `series prove` may find no behavioural test
    no_tests: str = ""  # why the patch has no test subset (else `series test` fails it)
    partly_upstream: tuple[UpstreamPart, ...] = ()  # what upstream took of it already

    @property
    def pr_url(self) -> str | None:
        return None if self.pr is None else f"https://github.com/keras-team/keras/pull/{self.pr}"


class UpstreamPart(NamedTuple):
    """Part of a patch that upstream took (``partly_upstream``, written by ``series rebase``)."""

    commit: str  # the upstream commit that took it
    took: tuple[str, ...]  # the hunks, "path:first-last in its own lines|in another form"
    onto: str = ""  # the upstream commit the series was moved to then


class Dropped(NamedTuple):
    """A patch removed from the series by ``series rebase``, and why (``[[dropped]]``)."""

    id: str
    title: str
    reason: str
    pr: int | None = None
    upstream_commit: str = ""  # the upstream commit that has it, or that it conflicted with
    onto: str = ""  # the upstream commit the series was moved to
    file: str = ""  # where its patch file was


class Manifest:
    """series.toml, validated: a frozen record compared by its values, as a frozen
    dataclass is (not a tuple, whose ``index`` would hide this one's), without the import
    of dataclasses (and inspect) and the class it makes, a tenth of a range-diff's work."""

    _FIELDS = ("path", "upstream", "branch", "checkout", "patches", "dropped")
    __slots__ = _FIELDS
    path: Path
    upstream: Upstream
    branch: str
    checkout: str
    patches: tuple[Patch, ...]
    dropped: tuple[Dropped, ...]

    def __init__(
        self,
        path: Path,
        upstream: Upstream,
        branch: str,
        checkout: str,
        patches: tuple[Patch, ...] = (),
        dropped: tuple[Dropped, ...] = (),
    ) -> None:
        values = (path, upstream, branch, checkout, patches, dropped)
        for name, value in zip(self._FIELDS, values, strict=True):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def _replace(self, **changes: Any) -> Manifest:
        """A copy with ``changes`` (field names), as a NamedTuple's ``_replace`` makes."""
        values = dict(zip(self._FIELDS, self._values(), strict=True))
        unknown = sorted(set(changes) - set(values))
        if unknown:
            raise TypeError(f"Manifest has no field {unknown[0]!r}")
        return Manifest(**{**values, **changes})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Manifest):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(self._FIELDS, self._values(), strict=True))
        return f"Manifest({shown})"

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"Manifest is frozen: cannot set {name}")

    def by_id(self, patch_id: str) -> Patch:
        """The patch an id from the command line names, in any case (``p5`` is ``P5``).

        Ids are ``P<number>`` and unique (checked on load), so two ids never
        differ only in case: ignoring it is never ambiguous.
        """
        for patch in self.patches:
            if patch.id.casefold() == patch_id.casefold():
                return patch
        known = ", ".join(p.id for p in self.patches)
        raise ManifestError(
            f"no patch {patch_id!r} in {self.path.name}",
            why=f"the series has: {known}",
            hint="`series list` shows the ids",
        )

    def index(self, patch_id: str) -> int:
        return self.patches.index(self.by_id(patch_id))


class _Checker:
    """Collects the key path while walking the parsed TOML."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.roots: dict[Path, Path] = {}  # each root resolved once: inside() asks per path
        self.lstats: dict[str, os.stat_result | None] = {}  # inside(): each directory once

    def fail(self, key: str, problem: str, hint: str = "") -> ManifestError:
        return ManifestError(
            f"{self.path}: {key}: {problem}",
            hint=hint or "see docs/manifest.md for every key and its type",
        )

    def table(self, data: Any, key: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.fail(key, "must be a table")
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise self.fail(
                f"{key}.{unknown[0]}" if key else unknown[0],
                "unknown key",
                f"known keys here: {', '.join(sorted(allowed))}",
            )
        return data

    def string(self, data: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
        value = data.get(key, default)
        if value is None:
            raise self.fail(f"{where}.{key}", "missing")
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{where}.{key}", "must be a non-empty string")
        return value


def load(path: Path, *, missing_ok: bool = False, kept: Path | None = None) -> Manifest:
    """Read and validate ``path``; ``missing_ok``: a patch file may be missing (export);
    ``kept``: the per-user cache, where what tomllib reads is kept (series.manifest_kept)."""
    if not path.is_file():
        raise ManifestError(
            f"no manifest at {path}",
            hint="run series from the project root, or pass -C DIR",
        )
    return loads(path, path.read_text(encoding="utf-8"), missing_ok=missing_ok, kept=kept)


def loads(path: Path, text: str, *, missing_ok: bool = False, kept: Path | None = None) -> Manifest:
    """Read and validate ``text`` as the manifest at ``path`` (a saved copy of it).

    ``kept``: the per-user cache, where tomllib's reading of ``text`` is taken from when
    it was kept, and kept once the manifest is valid (series.manifest_kept); the tables
    are validated here all the same."""
    data = manifest_kept.recall(kept, text) if kept is not None else None
    if data is not None:
        return parse(path, data, missing_ok=missing_ok)
    import tomllib  # only when the text was not read before: a third of the parse

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ManifestError(
            f"{path}: not valid TOML for series: arrays or inline tables nested too deeply "
            "for the parser",
            hint="series.toml nests at most a few levels (see docs/manifest.md); "
            "restore it from git (git checkout -- series.toml)",
        ) from None
    manifest = parse(path, data, missing_ok=missing_ok)
    if kept is not None:
        manifest_kept.keep(kept, text, data, path.parent)
    return manifest


def parse(path: Path, data: dict[str, Any], *, missing_ok: bool = False) -> Manifest:
    c = _Checker(path)
    c.table(data, "", _TOP_KEYS)
    fmt = data.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt != FORMAT:
        raise c.fail("format", f"must be {FORMAT} (got {data.get('format')!r})")
    upstream = _upstream(c, data.get("upstream"))
    series = c.table(data.get("series", {}), "series", _SERIES_KEYS)
    branch = c.string(series, "branch", "series", "series")
    if not is_branch(branch):
        raise c.fail("series.branch", f"{branch!r} is not a valid branch name")
    checkout = c.string(series, "checkout", "series", "work")
    inside(c, path.parent, checkout, "series.checkout")
    raw_patches = data.get("patch")
    if not isinstance(raw_patches, list) or not raw_patches:
        raise c.fail("patch", "the series is empty", "add at least one [[patch]] table")
    root = path.parent
    patches = tuple(_patch(c, raw, i, root, missing_ok) for i, raw in enumerate(raw_patches))
    for attr in ("id", "file", "branch"):
        seen: dict[str, int] = {}
        for i, patch in enumerate(patches):
            value = getattr(patch, attr)
            if value in seen:
                raise c.fail(
                    f"patch[{i}].{attr}",
                    f"duplicate {value!r} (also patch[{seen[value]}])",
                )
            seen[value] = i
    dropped = tuple(_dropped(c, raw, i) for i, raw in enumerate(data.get("dropped", [])))
    return Manifest(path, upstream, branch, checkout, patches, dropped)


def _dropped(c: _Checker, raw: Any, i: int) -> Dropped:
    where = f"dropped[{i}]"
    data = c.table(raw, where, _DROPPED_KEYS)
    pr = data.get("pr")
    if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool) or pr <= 0):
        raise c.fail(f"{where}.pr", "must be a positive integer (the PR number)")
    for key in ("upstream_commit", "onto", "file"):
        if not isinstance(data.get(key, ""), str):
            raise c.fail(f"{where}.{key}", "must be a string")
    return Dropped(
        id=c.string(data, "id", where),
        title=c.string(data, "title", where),
        reason=c.string(data, "reason", where),
        pr=pr,
        upstream_commit=data.get("upstream_commit", ""),
        onto=data.get("onto", ""),
        file=data.get("file", ""),
    )


def _upstream(c: _Checker, raw: Any) -> Upstream:
    data = c.table(raw, "upstream", _UPSTREAM_KEYS)
    commit = c.string(data, "commit", "upstream")
    if not is_hex(commit):
        raise c.fail("upstream.commit", f"{commit!r} is not a full 40-hex commit id")
    source = c.string(data, "source", "upstream", "auto")
    if source not in SOURCES:
        raise c.fail("upstream.source", f"{source!r} is not one of {', '.join(SOURCES)}")
    sdist = None
    if "sdist" in data:
        sd = c.table(data["sdist"], "upstream.sdist", _SDIST_KEYS)
        sha256 = sd.get("sha256")
        if sha256 is not None and not (isinstance(sha256, str) and is_hex(sha256, 64)):
            raise c.fail("upstream.sdist.sha256", "must be 64 lowercase hex digits")
        sdist = Sdist(
            _matching(c, sd, "package", is_package, "a package name of the index (e.g. keras)"),
            _matching(c, sd, "version", is_version, "a release version (e.g. 3.15.1)"),
            sha256,
        )
    elif source == "sdist":
        raise c.fail("upstream.source", "is 'sdist', but there is no [upstream.sdist] table")
    repository = c.string(data, "repository", "upstream")
    problem = url_problem(repository, "repository")
    if problem:
        raise c.fail(
            "upstream.repository",
            problem,
            f"upstream.repository must be {URL_RULE} (docs/manifest.md)",
        )
    ref = c.string(data, "ref", "upstream")
    problem = revision_problem(ref)
    if problem:
        raise c.fail("upstream.ref", problem, "name the upstream tag or branch (e.g. v3.15.1)")
    return Upstream(
        name=c.string(data, "name", "upstream"),
        repository=repository,
        ref=ref,
        commit=commit,
        source=source,
        sdist=sdist,
    )


def _matching(
    c: _Checker, data: dict[str, Any], key: str, spelled: Callable[[str], bool], what: str
) -> str:
    """``upstream.sdist.<key>``, part of a file name on the index: refused unless ``what``."""
    value = c.string(data, key, "upstream.sdist")
    if not spelled(value):
        raise c.fail(f"upstream.sdist.{key}", f"{value!r} is not {what}")
    return value


def _patch(c: _Checker, raw: Any, i: int, root: Path, missing_ok: bool) -> Patch:
    where = f"patch[{i}]"
    data = c.table(raw, where, _PATCH_KEYS)
    for key in _PATCH_REQUIRED:
        c.string(data, key, where)
    if not is_id(data["id"]):
        raise c.fail(f"{where}.id", f"{data['id']!r} is not of the form P<number>")
    if data["state"] not in STATES:
        raise c.fail(f"{where}.state", f"{data['state']!r} is not one of {', '.join(STATES)}")
    found = inside(c, root, data["file"], f"{where}.file")  # the file's lstat: not a link
    if not missing_ok:
        _present(c, root, data["file"], data["id"], where, found)
    if not is_branch(data["branch"]):
        raise c.fail(f"{where}.branch", f"{data['branch']!r} is not a valid branch name")
    pr = data.get("pr")
    if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool) or not 0 < pr < MAX_PR):
        raise c.fail(f"{where}.pr", f"must be a positive integer below {MAX_PR} (the PR number)")
    subset = data.get("subset", [])
    if not isinstance(subset, list) or not all(isinstance(s, str) and s for s in subset):
        raise c.fail(f"{where}.subset", "must be a list of pytest paths or node ids")
    alone = data.get("applies_alone")
    if alone is not None and not isinstance(alone, bool):
        raise c.fail(f"{where}.applies_alone", "must be true or false")
    for key in ("state_note", "no_tests"):
        if key in data and not isinstance(data[key], str):
            raise c.fail(f"{where}.{key}", "must be a string")
    exempt = data.get("no_behaviour_test", "")
    if not isinstance(exempt, str) or ("no_behaviour_test" in data and not exempt.strip()):
        raise c.fail(
            f"{where}.no_behaviour_test", "must be a non-empty string: why no test can fail"
        )
    return Patch(
        id=data["id"],
        title=data["title"],
        file=data["file"],
        branch=data["branch"],
        state=data["state"],
        pr=pr,
        state_note=data.get("state_note", ""),
        subset=tuple(subset),
        pin_failures=_pin_failures(c, data.get("pin_failures", []), where),
        applies_alone=alone,
        no_tests=data.get("no_tests", ""),
        no_behaviour_test=exempt,
        partly_upstream=_parts(c, data.get("partly_upstream", []), where),
    )


def _present(
    c: _Checker, root: Path, file: str, patch_id: str, where: str, found: os.stat_result | None
) -> None:
    """Refuse a patch file that is not a file, or is empty; ``found``: its own ``lstat``
    when :func:`inside` found no link on its way (else it is asked here)."""
    hint = (
        f"restore it (git -C {root} checkout -- {file}), or run `series export` "
        "from a checkout that has the patch (it writes the file again), or delete this "
        "[[patch]] table to drop the patch"
    )
    if not (S_ISREG(found.st_mode) if found else (root / file).is_file()):
        raise c.fail(f"{where}.file", f"{file} does not exist", hint)
    if (found.st_size if found else (root / file).stat().st_size) == 0:
        raise c.fail(
            f"{where}.file",
            f"{file} (patch {patch_id}) is empty: 0 bytes, no commit message, no diff",
            hint,
        )


def _parts(c: _Checker, raw: Any, where: str) -> tuple[UpstreamPart, ...]:
    key = f"{where}.partly_upstream"
    if not isinstance(raw, list):
        raise c.fail(key, "must be a list of tables (commit, took, onto)")
    parts = []
    for n, item in enumerate(raw):
        data = c.table(item, f"{key}[{n}]", _PART_KEYS)
        commit, onto, took = data.get("commit"), data.get("onto", ""), data.get("took", [])
        if not isinstance(commit, str) or not is_hex(commit):
            raise c.fail(f"{key}[{n}].commit", "must be a full commit id (40 hex digits)")
        if not isinstance(onto, str) or (onto and not is_hex(onto)):
            raise c.fail(f"{key}[{n}].onto", "must be a full commit id (40 hex digits)")
        if not isinstance(took, list) or not all(isinstance(t, str) and t for t in took):
            raise c.fail(f"{key}[{n}].took", "must be a list of hunks (strings)")
        parts.append(UpstreamPart(commit, tuple(took), onto))
    return tuple(parts)


def _pin_failures(c: _Checker, raw: Any, where: str) -> tuple[PinFailure, ...]:
    if not isinstance(raw, list):
        raise c.fail(
            f"{where}.pin_failures",
            "must be a list of tables",
            'write it as pin_failures = [{ tests = "NODE", reason = "WHY" }]',
        )
    failures = []
    for j, item in enumerate(raw):
        key = f"{where}.pin_failures[{j}]"
        entry = c.table(item, key, {"tests", "reason"})
        failures.append(PinFailure(c.string(entry, "tests", key), c.string(entry, "reason", key)))
    return tuple(failures)


def inside(c: _Checker, root: Path, value: str, key: str) -> os.stat_result | None:
    """Refuse ``value``, a path in the project, if absolute or outside ``root``; its own
    ``lstat`` when it exists and is not a link (none when that was not asked).

    Resolved with symlinks followed, so a link in patches/ that points out of
    the project is refused as well: export writes and deletes these paths.
    """
    if Path(value).is_absolute() or value.startswith("~"):
        raise c.fail(
            key,
            f"{value!r} is an absolute path",
            "paths in series.toml are relative to the project root, e.g. patches/NAME.patch",
        )
    real_root = c.roots.get(root)
    if real_root is None:
        real_root = c.roots[root] = root.resolve()
    walked = _walk(c, str(real_root), value)
    if walked is not None:
        return walked[0]
    target = (root / value).resolve()
    if target == real_root or not target.is_relative_to(real_root):
        raise c.fail(
            key,
            f"{value!r} resolves to {target}, outside the project {real_root}",
            "series only writes inside the project: use a path below it (no '..', "
            "no symlink out of it)",
        )
    return None


# What lstat says of a path below which nothing is (resolving continues past it, as realpath
# does: nothing below can be a link).
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


def _walk(c: _Checker, real_root: str, value: str) -> tuple[os.stat_result | None] | None:
    """``value`` resolved below ``real_root`` without a ``realpath`` per path (the parse
    checks every patch file's: a tenth of it): when ``value`` names its components plainly
    (no empty one, no ``.`` or ``..``) and ``lstat`` finds no link among them, resolving
    it gives ``real_root/value``, inside the project: the last component's ``lstat`` (None
    when it is not there). None when that cannot be told so (a link, ``..``, an error
    other than "not there"): :func:`inside` resolves it.
    """
    parts = value.split("/")
    if "\0" in value or any(part in ("", ".", "..") for part in parts):
        return None
    path = real_root.rstrip("/")
    found: os.stat_result | None = None
    for part in parts:
        path = f"{path}/{part}"
        if path in c.lstats:
            found = c.lstats[path]
        else:
            try:
                found = os.lstat(path)
            except OSError as exc:
                if exc.errno not in _ABSENT:
                    return None
                found = None
            c.lstats[path] = found
        if found is not None and S_ISLNK(found.st_mode):
            return None
    return (found,)
