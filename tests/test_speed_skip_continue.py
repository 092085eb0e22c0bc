"""``series rebase --skip`` and ``--continue``: what they load and how they start git (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is which modules a resume imports and that its git processes are
started without a fork of series (series.git.child.spawn: posix_spawn).
"""

from __future__ import annotations

import ast
import tomllib
import warnings
from pathlib import Path

import pytest

from helpers import git, modules_in, run_fresh, series_probe
from rebase_helpers import resolve_p1
from series.stack.resolution_check import _python, parse_error
from test_speed_rebase import stopped

REMAINDER_ENGINE = ("series.evidence",)
# What a rebase's resume has no use for: an edit's end (an export, its builds), range-diff's
# builds (the summary's classes are series.stack.diffclass's)
EXPORT_AND_BUILDS = {
    "series.stack.edit_finish",
    "series.stack.export",
    "series.stack.rangediff",
    "series.builder.build",
    "series.builder.memo",
}
# OpenSSL's hashlib (loading libcrypto; a --skip imported it for a few small digests): the
# digests a resume computes (git's ids, kept keys) are series.digests' builtin ones; and
# what imports it (hmac, secrets)
OPENSSL = {"_hashlib", "hashlib", "hmac", "secrets"}
# What only --continue and --abort use: the check of a resolution (with _ast, whose import
# makes a class per node of Python's grammar: 5% of a --skip's own instructions) and the
# project files put back from the snapshot
NOT_A_SKIPS = {"series.stack.resolution_check", "_ast", "series.stack.snapshot"}


def test_a_resume_loads_no_remainder_engine() -> None:
    """--skip and --continue walk on from the saved plan: what a stop says of a patch
    upstream holds part of, and its series.toml records, come from the plan's part
    (series.stack.part_notes), not from the engine that weighed it at the start."""
    probe = (
        "import sys\n"
        "import series.stack.rebase_resume, series.stack.rebase_skip\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    code, out, err = run_fresh(probe)
    assert code == 0, err
    modules = modules_in(out)
    assert {"series.stack.rebase_driver", "series.stack.part_notes"} <= modules
    assert not [m for m in modules if m.startswith(REMAINDER_ENGINE)]
    assert not EXPORT_AND_BUILDS & modules, sorted(EXPORT_AND_BUILDS & modules)
    assert not NOT_A_SKIPS & modules, sorted(NOT_A_SKIPS & modules)


def _run_without_fork(
    root: Path, *args: str, cache: Path | None = None
) -> tuple[int, set[str], str]:
    """``series -C root ARGS`` in a fresh interpreter whose ``os.fork`` refuses: its exit
    code, the modules it imported, its stderr. ``cache``: its per-user cache (the one of
    the GitShim that ran the commands before it)."""
    refuse = (
        "import os\n"
        "def refused():\n"
        "    raise AssertionError('series forked itself to start a process')\n"
        "os.fork = refused\n"
    )
    if cache is not None:
        refuse += f"os.environ['SERIES_CACHE_DIR'] = {str(cache)!r}\n"
    probe = series_probe(root, *args, before=refuse)
    code, out, err = run_fresh(probe)
    return code, modules_in(out), err


def test_skip_starts_its_git_without_forking_series(tmp_path: Path) -> None:
    """Each of --skip's git processes (the replay's included) is started by posix_spawn:
    a fork copied series' memory and ran Python in the child, per process. What --skip
    does is as before: the patch dropped with its record, the rebase finished."""
    project, _ = stopped(tmp_path)
    code, modules, err = _run_without_fork(project.root, "rebase", "--skip")
    assert code == 0, err
    assert "series.stack.rebase_driver" in modules
    assert not [m for m in modules if m.startswith(REMAINDER_ENGINE)]
    assert not EXPORT_AND_BUILDS & modules, sorted(EXPORT_AND_BUILDS & modules)
    assert not OPENSSL & modules, sorted(OPENSSL & modules)
    assert "P1" in (project.root / "series.toml").read_text().split("[[dropped]]", 1)[1]
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"


def test_continue_to_the_end_loads_no_export_and_forks_nothing(tmp_path: Path) -> None:
    """--continue with the resolution staged, to the rebase's end (patches/ written, the
    summary's classes): neither an edit's export nor range-diff's builds are loaded, and
    no git process is started by a fork of series. Nor tomllib or tomlkit: series.toml's
    new text, only its pin moved, is proven by what tomllib read of it when the rebase
    started, kept in the per-user cache (series.manifest_write ``keep_pin_moved``)."""
    project, shim = stopped(tmp_path)
    resolve_p1(project.work)
    code, modules, err = _run_without_fork(project.root, "rebase", "--continue", cache=shim.cache)
    assert code == 0, err
    assert {"series.stack.rebase_finish", "series.stack.diffclass"} <= modules
    assert not OPENSSL & modules, sorted(OPENSSL & modules)
    assert not [m for m in modules if m.startswith(REMAINDER_ENGINE)]
    assert not EXPORT_AND_BUILDS & modules, sorted(EXPORT_AND_BUILDS & modules)
    assert not {"tomllib", "tomlkit"} & modules, sorted({"tomllib", "tomlkit"} & modules)
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") == ""
    pin = tomllib.loads((project.root / "series.toml").read_text())["upstream"]
    assert (pin["ref"], pin["commit"]) == ("main", git(project.upstream, "rev-parse", "main"))


def test_the_check_of_a_python_resolution_and_the_ends_import_load_no_tomllib() -> None:
    """--continue checks a resolved Python file without tomllib (with typing and datetime, it
    was imported for its error class whatever the file: most of the check's own time, on
    the way of the first merge's answer) and without ast (``compile`` to a tree is
    ``ast.parse``), and the rebase's end is imported without them (series.manifest_write
    imports tomllib where it uses it). A TOML file is still refused as TOML."""
    said, modules = _checked(
        "import series.stack.rebase_resume, series.stack.rebase_finish\n"
        "bad = parse_error('a.py', b'x = (\\n', [b'x = 1\\n'])\n"
        "good = parse_error('b.py', b'x = 2\\n', [b'x = 1\\n'])\n"
        "print(bad + '|' + good)\n"
    )
    assert said.startswith("a.py:1: does not parse (syntax error:"), said
    assert said.endswith("|"), said  # b.py parses
    assert not {"tomllib", "typing", "datetime", "ast"} & modules
    toml = parse_error("a.toml", b"x = [1,\n", [b"x = 1\n"])
    assert toml.startswith("a.toml: does not parse (TOML: "), toml


def test_the_check_of_a_resolution_with_no_python_file_loads_no_parser() -> None:
    """The check's module, and a check of files that are not Python (JSON here), load no
    _ast: its import makes a class per node of Python's grammar (about 12M instructions,
    5% of a --skip's own Python before --skip stopped loading the check at all)."""
    said, modules = _checked("print(parse_error('a.json', b'[1,', [b'[1]']))\n")
    assert said.startswith("a.json:1: does not parse (JSON: "), said
    assert not {"_ast", "ast"} & modules


def _checked(code: str) -> tuple[str, set[str]]:
    """``code`` run in a fresh interpreter with resolution_check's ``parse_error``
    imported: the first line it printed, and the modules imported by its end."""
    probe = (
        "import sys\n"
        "from series.stack.resolution_check import parse_error\n"
        f"{code}"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    status, out, err = run_fresh(probe)
    assert status == 0, err
    return out.splitlines()[0], modules_in(out)


PYTHON_SOURCES = [
    b"x = 1\n",
    b"x = (\n",
    b"def f(:\n    pass\n",
    b"return 1\n",  # no function: ast.parse takes it, a compile to code would not
    b"nonlocal x\n",
    b"x = 1\x00\n",
    "\u00e9 = 1\n".encode(),
    b"\xff = 1\n",  # not UTF-8
    b'print "a"\n',
    b'a = "\\q"\n',  # an invalid escape: a warning, not an error
    b"async def f():\n    await x\n",
    b"match x:\n    case 1:\n        pass\n",
    b"def f(x: Undefined) -> None: ...\n",
    b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    b"if x:\npass\n",
    b"x = [" * 300 + b"]" * 300 + b"\n",  # nested beyond the parser's limit
]


@pytest.mark.parametrize("source", PYTHON_SOURCES)
def test_a_resolved_python_file_is_refused_as_ast_parse_refuses_it(source: bytes) -> None:
    """The check of a resolved Python file (series.stack.resolution_check) says what
    ``ast.parse`` would: the same error, its line, or none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(source)
            want = ""
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            lineno = exc.lineno if isinstance(exc, SyntaxError) else None
            want = f"{type(exc).__name__}:{getattr(exc, 'msg', str(exc))}:{lineno}"
    try:
        _python(source)
        got = ""
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        lineno = exc.lineno if isinstance(exc, SyntaxError) else None
        got = f"{type(exc).__name__}:{getattr(exc, 'msg', str(exc))}:{lineno}"
    assert got == want
