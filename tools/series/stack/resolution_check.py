"""What ``series rebase --continue`` checks in a resolution before it commits and records it.

A conflict half resolved must not become a patch: every file that was
conflicted at the stop is read as staged, and refused when

* a conflict marker is left: a line that starts with exactly seven ``<``,
  ``|`` (the diff3/zdiff3 base section), ``=`` or ``>`` followed by a space
  or the end of the line (git's ``conflict-marker-size`` default, its rule
  in rerere), unless the same line comes from one of the conflict's inputs
  (base, upstream, patch): an RST or markdown heading underlined with
  ``=======`` is no marker. A line comes from an input when it is part of
  the lines the two have in common (difflib, without its "junk" heuristic,
  which would drop frequent lines like those);
* the file no longer parses where its language allows (``.py``, ``.toml``,
  ``.json``), when every input that exists parsed: a syntax error the
  resolution made, not one upstream or the patch already had.

The refusal is a ConflictError (exit 3) naming each file, line and marker
or syntax error; nothing is committed, recorded or exported.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from series import json_text
from series.errors import ConflictError
from series.git.repo import Repo

MARKER_SIZE = 7
_MARKER_CHARS = b"<|=>"
_SIDES = (1, 2, 3)  # base, upstream, patch


def check(
    repo: Repo,
    resolved: str,
    stages: Sequence[tuple[str, str, int, str]],
    *,
    patch_id: str,
    where: Path,
) -> None:
    """Refuse ``resolved`` if a conflicted file keeps a marker or no longer parses."""
    inputs: dict[str, dict[int, str]] = {}
    for _mode, oid, stage, path in stages:
        if stage in _SIDES:
            inputs.setdefault(path, {})[stage] = oid
    staged = repo.objects.tree_files(resolved, only=sorted(inputs))
    oids = sorted({*staged.values(), *(o for sides in inputs.values() for o in sides.values())})
    blobs = {oid: repo.objects.read_blob(oid) for oid in oids}  # the long-lived cat-file's
    problems: list[str] = []
    for path in sorted(staged):
        data, sides = blobs[staged[path]], inputs[path]
        left = leftovers(data, [blobs[oid] for oid in sides.values()])
        problems += [f"{path}:{n}: conflict marker {line!r} left" for n, line in left]
        both = [blobs[sides[k]] for k in (2, 3) if k in sides]  # upstream, patch
        error = "" if left else parse_error(path, data, both)
        if error:
            problems.append(error)
    if problems:
        marked = any("conflict marker" in p for p in problems)
        raise ConflictError(
            f"refusing to take the resolution of {patch_id}: "
            + ("conflict markers are left in it" if marked else "a file no longer parses"),
            why="\n".join(
                [
                    *problems[:20],
                    f"these files would be committed into {patch_id} as they are staged",
                ]
            ),
            hint=f"edit the file(s), `git -C {where} add` them, then `series rebase --continue`; "
            f"or `series rebase --skip` drops {patch_id}, `series rebase --abort` undoes "
            "the rebase",
        )


def markers(data: bytes) -> list[tuple[int, str]]:
    """(line number, line) of every line that looks like a conflict marker."""
    if b"\0" in data:
        return []  # a binary file: git writes no markers into it
    found = []
    for n, line in enumerate(data.split(b"\n"), 1):
        head, rest = line[:MARKER_SIZE], line[MARKER_SIZE : MARKER_SIZE + 1]
        if (
            len(head) == MARKER_SIZE
            and head[0] in _MARKER_CHARS
            and head == head[:1] * MARKER_SIZE
            and (not rest or rest.isspace())
        ):
            found.append((n, line.rstrip(b"\r").decode("utf-8", "replace")))
    return found


def leftovers(data: bytes, sides: Sequence[bytes]) -> list[tuple[int, str]]:
    """The marker-looking lines of ``data`` that none of ``sides`` gave it."""
    found = markers(data)
    if not found:
        return []
    import difflib  # only when markers are found: a resume without them does not load it

    lines = data.split(b"\n")
    given: set[int] = set()
    for side in sides:
        matcher = difflib.SequenceMatcher(None, lines, side.split(b"\n"), autojunk=False)
        for block in matcher.get_matching_blocks():
            given.update(range(block.a + 1, block.a + block.size + 1))
    return [(n, line) for n, line in found if n not in given]


# tomllib (with typing, datetime) is imported when a file of its is checked: a --continue
# whose resolution has no TOML file loads no tomllib (its import was most of the
# resolution's check); a rebase --skip loads not even this module. Python's own parse
# needs only ``_ast`` (built in), when a Python file is checked: ``ast.parse`` is
# ``compile`` to a tree, and the ast module's import was most of a --continue's check
# of a Python file.


def _python(data: bytes) -> None:
    """Raise SyntaxError where ``ast.parse(data)`` would: the same call, its ``filename``
    and flags, without importing ast."""
    from _ast import PyCF_ONLY_AST  # built in; its import makes the grammar's node classes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like: not our concern
        compile(data, "<unknown>", "exec", PyCF_ONLY_AST, dont_inherit=True, _feature_version=-1)


class _TomlError(ValueError):
    """tomllib's refusal, said as TOML's (:func:`_fails`): tomllib is imported only by
    :func:`_toml`, so that a resolution with no TOML file in it does not load it."""


def _toml(data: bytes) -> None:
    import tomllib

    try:
        tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise _TomlError(str(exc)) from exc


def _json(data: bytes) -> None:
    json_text.loads(data)


_PARSERS: dict[str, Callable[[bytes], None]] = {".py": _python, ".toml": _toml, ".json": _json}


def parse_error(path: str, data: bytes, sides: Sequence[bytes]) -> str:
    """ "PATH:LINE: does not parse ..." when every one of ``sides`` parsed, else ""."""
    parser = _PARSERS.get(PurePosixPath(path).suffix)
    if parser is None or not sides:
        return ""
    # The resolution first: one that parses is the answer, without parsing its sides
    # (three parses of a large file were most of a --continue's own Python).
    error = _fails(parser, data)
    if not error or any(_fails(parser, side) for side in sides):
        return ""
    return f"{path}{error}"


def _fails(parser: Callable[[bytes], None], data: bytes) -> str:
    """ ":LINE: does not parse: WHY" if ``parser`` rejects ``data``, else ""."""
    try:
        parser(data)
    except SyntaxError as exc:
        return f":{exc.lineno or '?'}: does not parse (syntax error: {exc.msg})"
    except _TomlError as exc:
        return f": does not parse (TOML: {exc})"
    except (ValueError, RecursionError, MemoryError) as exc:
        at = json_text.error_at(exc)
        if at is not None:
            return f":{at[0]}: does not parse (JSON: {at[1]})"
        return f": does not parse ({exc or type(exc).__name__})"
    return ""
