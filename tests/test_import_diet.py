"""What the everyday commands do without ``re``, ``enum`` and the json package (issue 23).

``re`` (with the ``enum`` it imports) and json were 4 to 5 ms of every command's
start on this machine, for a few patterns and a C scanner. The commands that a
maintainer types most (``rebase --abort``, ``--skip``) now load none of them:
series.json_text reads and writes JSON with json's own C code, the spellings
that series.toml, URLs and index lines must have are checked without patterns,
pathlib's import leaves ``re`` and ``fnmatch`` to their first use
(series.entry), and the exit codes are ints with names, not an IntEnum. Each
check written out is compared here with the regular expression it replaces,
the listing of recorded resolutions with ``Path.glob``, and ``Exit`` with the
IntEnum it was. Speed is measured by ci/bench_commands.py, never here.
"""

from __future__ import annotations

import enum
import os
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from helpers import GitShim, git, modules_in, run_fresh, series_probe
from rebase_helpers import commit_upstream, moving_project
from series import digests, manifest, untrusted
from series.errors import Exit
from series.files import confined
from series.git.index import info_line
from series.merge import resolutions
from test_speed_rebase import stopped

DIET = {"re", "enum", "json", "fnmatch"}

# Characters near the edges of every pattern: ASCII letters and digits, the punctuation
# the patterns name and some they do not, a newline (``$`` matches before a final one),
# control characters, and letters and digits outside ASCII (``str.isalnum`` takes them).
EDGES = "Pab09AZz._/-+!~: \t\n\x00\x1f\x7f\u00e9\u0663\uff11"
NEAR = st.text(alphabet=EDGES, max_size=12) | st.text(max_size=6)


def _full(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


@settings(max_examples=500, deadline=None)
@given(NEAR)
@example("P1")
@example("P")
@example("P\u0663")
@example("main\n")  # re.match("^...$") took a final newline: these checks do not
@example("a" * 40)
def test_the_manifest_s_spellings_are_their_patterns_in_full(value: str) -> None:
    assert manifest.is_id(value) == _full(r"P[0-9]+", value)
    assert manifest.is_branch(value) == _full(r"[A-Za-z0-9][A-Za-z0-9._/-]*", value)
    assert manifest.is_package(value) == _full(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", value)
    assert manifest.is_version(value) == _full(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*", value)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789abcdefABCDEF g\n\u0663", min_size=38, max_size=42) | NEAR)
@example("0" * 40)
@example("0" * 39 + "\n")
@example("0" * 64)
def test_a_hex_id_is_its_pattern_in_full(value: str) -> None:
    assert digests.is_hex(value) == _full(r"[0-9a-f]{40}", value)
    assert digests.is_hex(value, 64) == _full(r"[0-9a-f]{64}", value)


@settings(max_examples=500, deadline=None)
@given(NEAR.map(lambda s: s.replace("~", "::", 1)) | NEAR.map(lambda s: s.replace(":", "://")))
@example("ext::sh -c touch% /tmp/x")
@example("::x")
@example("a:b::c")
@example("x~y.z_+-1::addr")
@example("https://example.com/x")
@example("git+ssh://h/p")
@example("1x://h")
@example("://h")
@example("h\u00e9://x")
def test_the_url_checks_are_their_patterns(value: str) -> None:
    assert untrusted.control(value) == (re.search(r"[\x00-\x1f\x7f]", value) is not None)
    named = re.match(r"[A-Za-z0-9._~+-]*::", value)
    assert untrusted.helper(value) == (named.group(0)[:-2] if named else None)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", value)
    assert untrusted.scheme_of(value) == (scheme.group(1) if scheme else None)


INFO = r"(100644|100755|120000) ([0-9a-f]{40})\t([^\n]+)"


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["100644", "100755", "120000", "160000", "10064", "100644 "]),
    st.sampled_from([" ", "\t", "  "]),
    st.sampled_from(["a" * 40, "0123456789abcdef" * 2 + "01234567", "A" * 40, "a" * 39]),
    st.sampled_from(["\t", " ", "\t\t"]),
    st.text(alphabet="ab /\t\n.", max_size=6),
)
@example("100644", " ", "a" * 40, "\t", "dir/file with space")
@example("100644", " ", "a" * 40, "\t", "")
@example("100644", " ", "a" * 40, "\t", "x\n")
def test_an_index_info_line_is_read_as_its_pattern(
    mode: str, space: str, oid: str, tab: str, path: str
) -> None:
    line = f"{mode}{space}{oid}{tab}{path}"
    found = re.fullmatch(INFO, line)
    assert info_line(line) == (found.groups() if found else None)


def test_recorded_resolutions_are_what_path_glob_lists(tmp_path: Path) -> None:
    """The listing of ``resolutions/P1/*.patch`` is ``Path.glob``'s, whatever the folder
    holds or is: hidden files, a folder with the suffix, other suffixes, none at all."""
    root = tmp_path / "project"
    folder = root / "resolutions" / "P1"

    def globbed() -> list[Path]:
        found = confined(root, root / "resolutions" / "P1", reading=True).glob("*.patch")
        return sorted(confined(root, p, reading=True) for p in found)

    assert resolutions.recorded(root, "P1") == globbed() == []  # no folder
    folder.parent.mkdir(parents=True)
    folder.write_text("a file where the folder goes\n")
    assert resolutions.recorded(root, "P1") == globbed() == []
    folder.unlink()
    folder.mkdir()
    assert resolutions.recorded(root, "P1") == globbed() == []
    for name in ("b.patch", "a.patch", ".hidden.patch", ".patch", "c.patch.orig", "d.PATCH"):
        (folder / name).write_text("x\n")
    (folder / "dir.patch").mkdir()
    listed = resolutions.recorded(root, "P1")
    assert listed == globbed()
    assert [p.name for p in listed] == [
        ".hidden.patch",
        ".patch",
        "a.patch",
        "b.patch",
        "dir.patch",
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder without permission")
def test_an_unreadable_folder_of_resolutions_lists_none_as_path_glob(tmp_path: Path) -> None:
    root = tmp_path / "project"
    folder = root / "resolutions" / "P1"
    folder.mkdir(parents=True)
    (folder / "a.patch").write_text("x\n")
    folder.chmod(0)
    try:
        assert resolutions.recorded(root, "P1") == sorted(folder.glob("*.patch")) == []
    finally:
        folder.chmod(0o755)


# Exit as it was: the IntEnum the int with names replaces (named Exit: its repr names it)
_Was = enum.IntEnum(  # type: ignore[misc]
    "Exit",
    [
        ("OK", 0),
        ("FAILED", 1),
        ("BAD_INPUT", 2),
        ("CONFLICT", 3),
        ("REFUSED", 4),
        ("INTERNAL", 70),
        ("INTERRUPTED", 130),
        ("BROKEN_PIPE", 141),
    ],
)


def test_the_exit_codes_are_what_the_int_enum_was() -> None:
    assert [(c.name, int(c)) for c in Exit] == [(c.name, int(c)) for c in _Was]
    for was in _Was:
        code = getattr(Exit, was.name)
        assert Exit(int(was)) is code and Exit(code) is code
        assert isinstance(code, int) and int(code) == int(was) and hash(code) == hash(was)
        assert code == was  # type: ignore[comparison-overlap]  # an int, equal to the IntEnum
        assert (str(code), f"{code}", f"{code:>4}", repr(code)) == (
            str(was),
            f"{was}",
            f"{was:>4}",
            repr(was),
        )
    for wrong in (5, -1, 256):
        with pytest.raises(ValueError, match="is not a valid Exit"):
            Exit(wrong)
        with pytest.raises(ValueError, match="is not a valid"):
            _Was(wrong)


def _modules_of(root: Path, cache: Path, *args: str) -> tuple[int, set[str], str]:
    probe = series_probe(
        root, *args, before=f"import os\nos.environ['SERIES_CACHE_DIR'] = {str(cache)!r}\n"
    )
    code, out, err = run_fresh(probe)
    return code, modules_in(out), err


def test_an_abort_loads_neither_re_nor_enum_nor_json(tmp_path: Path) -> None:
    """From a stop, with the kept parse of series.toml (the per-user cache of the run that
    stopped): an abort imports none of re, enum, fnmatch and json, and puts the checkout
    back on its branch as before."""
    project, shim = stopped(tmp_path)
    code, modules, err = _modules_of(project.root, shim.cache, "rebase", "--abort")
    assert code == 0, err
    assert "series.json_text" in modules and "pathlib" in modules
    assert not DIET & modules, sorted(DIET & modules)
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(project.work, "for-each-ref", "refs/series/rebase/") == ""


def test_a_skip_to_the_next_stop_loads_neither_re_nor_enum_nor_json(tmp_path: Path) -> None:
    """A skip that replays the patches after the stop and stops again at the next conflict
    (P1 skipped, P2 conflicting): none of re, enum, fnmatch and json; P2's stop as
    before (exit 3, the conflict in the checkout). The end of a rebase (patches/ and
    series.toml written) may load them: it is not in this test."""
    project = moving_project(tmp_path, conflict=True)
    commit_upstream(project.upstream, "pkg/util.py", "VALUE_5 = 5\n", "VALUE_5 = -5\n", "P2's line")
    shim = GitShim(tmp_path)
    up = str(project.upstream)
    shim.calls(project.root, "rebase", "--onto", "main", "--upstream", up, code=3)
    code, modules, err = _modules_of(project.root, shim.cache, "rebase", "--skip")
    assert code == 3, err
    assert "P2" in err and "series.stack.rebase_driver" in modules
    assert not DIET & modules, sorted(DIET & modules)
    assert "<<<<<<<" in (project.work / "pkg" / "util.py").read_text()


def test_pathlib_s_patterns_after_series_entry_are_python_s(tmp_path: Path) -> None:
    """After series.entry, pathlib's import has left re and fnmatch out (3.11), its patterns
    still match as Python's do (``match``, ``glob``), and an import of re or fnmatch is the
    real module: no stand-in is left in ``sys.modules``."""
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.txt").write_text("")
    code, out, err = run_fresh(
        "import sys\n"
        "import series.entry\n"
        "import pathlib\n"
        "before = sorted(m for m in ('re', 'fnmatch') if m in sys.modules)\n"
        f"found = sorted(p.name for p in pathlib.Path({str(tmp_path)!r}).glob('*.py'))\n"
        "matched = pathlib.PurePosixPath('x/y.py').match('*.py')\n"
        "import fnmatch, re\n"
        "real = (re.__spec__.name, fnmatch.__spec__.name, sys.modules['re'] is re,\n"
        "        re.fullmatch('a+', 'aa') is not None, fnmatch.fnmatch('y.py', '*.py'))\n"
        "print(before if sys.version_info < (3, 12) else [], found, matched, real)\n"
    )
    assert code == 0, err
    assert out.strip() == "[] ['a.py'] True ('re', 'fnmatch', True, True, True)", out


def test_a_stand_in_asked_while_pathlib_loads_puts_the_real_module_in_its_place() -> None:
    """What 3.12's and 3.13's pathlib do as they load (a pattern compiled through the
    stand-in): the stand-in imports the real module, which takes its place in
    ``sys.modules``, and answers from it."""
    code, out, err = run_fresh(
        "import sys\n"
        "from series import entry\n"
        "assert 'fnmatch' not in sys.modules\n"
        "stand_in = entry._later('fnmatch')\n"
        "sys.modules['fnmatch'] = stand_in\n"
        "answer = stand_in.fnmatch('a.py', '*.py')\n"
        "real = sys.modules['fnmatch']\n"
        "same = stand_in.translate is real.translate\n"
        "print(answer, real is not stand_in, real.__spec__.name, same)\n"
    )
    assert code == 0, err
    assert out.split() == ["True", "True", "fnmatch", "True"], out
