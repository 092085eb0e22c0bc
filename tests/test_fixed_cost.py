"""What every everyday command pays before its work (issue 23): no ``git version``
from GitPython's import, no logging when nobody asked for debug output.

Counted with a ``git`` shim first on PATH (tests/helpers.GitShim) and by the
modules a fresh interpreter has imported; never timed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import GitShim, make_project


def _python(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=GitShim.BOUND,
        check=True,
    )
    return proc.stdout


def test_a_cold_apply_starts_no_git_version(tmp_path: Path) -> None:
    """GitPython's import ran ``git version`` twice (its refresh, then its fetch's flags).
    series' own check of git's version (series.git.version) asks once per git executable
    and per-user cache (and each run for a wrapper script like this shim, whose check
    GitShim leaves out): a cold apply starts no other."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    _, calls = shim.run(project.root, "apply")
    assert calls and not [c for c in calls if c.split()[0] == "version"], calls
    assert (project.root / "work").is_dir()
    _, calls = shim.run(project.root, "apply", "--dir", str(tmp_path / "second"))
    assert calls and not [c for c in calls if c.split()[0] == "version"], calls
    assert (tmp_path / "second").is_dir()


def test_gitpython_imported_by_series_works_as_its_own_import(tmp_path: Path) -> None:
    """The git it runs, its version, its later refresh and its fetch flag are GitPython's."""
    shim = GitShim(tmp_path)
    code = (
        "from pathlib import Path\n"
        "from series.git.child import gitpython\n"
        "cmd = gitpython(Path('.'))\n"
        "import git\n"
        "from git.remote import FetchInfo\n"
        "flag = FetchInfo._flag_map.get('t') == FetchInfo.TAG_UPDATE\n"
        "print(git.GIT_OK, type(cmd).GIT_PYTHON_GIT_EXECUTABLE, flag)\n"
        "print(cmd.version_info >= (2, 38))\n"
        "git.refresh()\n"
        "print(git.GIT_OK)\n"
    )
    out = _python(code, shim.env).split()
    assert out == ["True", "git", "True", "True", "True"], out
    calls = shim.log.read_text().split("\n") if shim.log.exists() else []
    # one for version_info, two for the explicit refresh: GitPython's own, left in place
    assert [c for c in calls if c] == ["version"] * 3


def test_a_git_executable_named_in_the_environment_is_checked_as_gitpython_does(
    tmp_path: Path,
) -> None:
    shim = GitShim(tmp_path)
    env = {**shim.env, "GIT_PYTHON_GIT_EXECUTABLE": "git"}
    _python(
        "from pathlib import Path\nfrom series.git.child import gitpython\ngitpython(Path('.'))\n",
        env,
    )
    assert shim.log.read_text().split() == ["version", "version"]


def _modules_after(root: Path, env: dict[str, str], *argv: str) -> set[str]:
    """The modules a fresh interpreter has imported after ``series -C root argv``."""
    code = (
        "import sys\n"
        f"sys.argv = ['series', '-C', {str(root)!r}, *{list(argv)!r}]\n"
        "from series.entry import main\n"
        "code = main()\n"
        "print(' '.join(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    return set(_python(code, env).split("\n")[-2].split())


def test_a_rerun_imports_no_logging(tmp_path: Path) -> None:
    """logging (a few ms of every command) is imported only when a line is written."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, "export")
    for command in ("apply", "export", "status"):
        shim.run(project.root, command)
        modules = _modules_after(project.root, shim.env, command)
        assert "series.git.child" in modules and "logging" not in modules, command
        if command != "status":  # a re-run answered from what was verified
            assert not {"dataclasses", "inspect"} & modules, command


def test_debug_lines_with_v_and_warnings_without_it(tmp_path: Path) -> None:
    """The same lines as before logging was imported lazily: ``name: message`` on stderr."""
    code = (
        "import sys\n"
        "from series import logs\n"
        "logs.configure(False)\n"
        "logs.debug('series.git', 'hidden %s', 1)\n"
        "assert not logs.debugging('series.faults')\n"
        "print('logging' in sys.modules)\n"
        "logs.warning('series', 'removed %s', 'x.lock')\n"
        "logs.configure(True)\n"
        "logs.debug('series.git', 'git %s', 'status')\n"
        "assert logs.debugging('series.faults')\n"
        "logs.configure(False)\n"
        "logs.debug('series.git', 'hidden again')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=GitShim(tmp_path).env,
        timeout=GitShim.BOUND,
        check=True,
    )
    assert proc.stdout == "False\n"
    assert proc.stderr == "series: removed x.lock\nseries.git: git status\n"


def test_a_rerun_imports_neither_argparse_nor_tempfile_nor_typing(tmp_path: Path) -> None:
    """A plain ``series -C DIR apply`` (``export``) answered from what was verified is parsed
    without argparse (with gettext, and shutil for its help formatter), writes no file
    (tempfile with random, shutil with bz2 and lzma), and its records are made without
    typing (series.records)."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, "export")
    for command in ("apply", "export"):
        shim.run(project.root, command)
        modules = _modules_after(project.root, shim.env, command)
        assert {"series.stack.verified", "series.stack.verified_kept"} & modules, command
        found = {"argparse", "gettext", "tempfile", "shutil", "typing", "series.cli.parse"}
        found &= modules
        assert not found, (command, sorted(found))


PLAIN = [
    ["apply"],
    ["export"],
    ["-C", "some/dir", "apply"],
    ["-v", "export"],
    ["--verbose", "-C", "x", "apply"],
    ["-C", "x", "-v", "-C", "y", "export"],
    ["-C", "", "apply"],
    ["range-diff"],
    ["-v", "-C", "x", "range-diff"],
    ["rebase", "--abort"],
    ["-C", "x", "-v", "rebase", "--skip"],
    ["--verbose", "rebase", "--continue"],
    ["list"],
    ["status"],
    ["-C", "x", "-v", "status"],
]


@pytest.mark.parametrize("words", PLAIN)
def test_a_plain_rerun_is_parsed_as_argparse_parses_it(words: list[str]) -> None:
    from series import cli

    fast = cli.plain(words)
    assert fast is not None
    assert vars(fast) == vars(cli.parser().parse_args(words))


@pytest.mark.parametrize(
    "words",
    [
        ["apply", "--json"],
        ["apply", "--force"],
        ["export", "--dir", "d"],
        ["-Cx", "apply"],
        ["-C", "-x", "apply"],
        ["-C", "x"],
        ["appl"],
        ["list", "--json"],
        ["status", "--dir", "d"],
        ["show"],
        ["show", "P5"],
        ["--", "apply"],
        ["apply", "apply"],
        ["range-diff", "P1"],
        ["range-diff", "--json"],
        ["range-diff", "--since", "HEAD"],
        ["rebase"],
        ["rebase", "--abort", "--abort"],
        ["rebase", "--json", "--abort"],
        ["rebase", "--abort", "--json"],
        ["rebase", "--onto", "master"],
        ["-C", "rebase", "--abort"],
        ["edit", "--abort"],
        ["apply", "--abort"],
        ["rebase", "--abort", "-v"],
        [],
    ],
)
def test_any_other_command_line_is_argparse_s(words: list[str]) -> None:
    from series import cli

    assert cli.plain(words) is None


def test_a_record_without_typing_is_typing_s_named_tuple() -> None:
    """series.records.NamedTuple makes what typing.NamedTuple makes of the same class."""
    import typing

    from series import records

    def make(base: Any) -> Any:
        class Point(base):  # type: ignore[misc]
            """A point."""

            x: int
            y: str = "b"
            z: tuple[int, ...] = ()

            def shown(self) -> str:
                return f"{self.x}{self.y}"

        return Point

    ours, theirs = make(records.NamedTuple), make(typing.NamedTuple)
    point: Any
    for point in (ours, theirs):
        assert point._fields == ("x", "y", "z")
        assert point._field_defaults == {"y": "b", "z": ()}
        assert point.__doc__ == "A point." and point.__name__ == "Point"
        assert point.__qualname__.endswith("make.<locals>.Point")
        value: Any = point(1)
        assert value == (1, "b", ()) and isinstance(point(1), tuple)
        assert value.shown() == "1b" and value._asdict() == {"x": 1, "y": "b", "z": ()}
        assert value._replace(y="c") == (1, "c", ())
        assert repr(value) == "Point(x=1, y='b', z=())"
        with pytest.raises(AttributeError):
            value.x = 2
        with pytest.raises(TypeError):
            point()
    assert ours.__module__ == theirs.__module__


def test_a_record_field_without_default_after_one_with_is_refused() -> None:
    from series import records

    with pytest.raises(TypeError):

        class Bad(records.NamedTuple):
            x: int = 1
            y: int  # type: ignore[misc]


def _outcome(way: Any, made: Any) -> object:
    try:
        return ("value", way(made))
    except Exception as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("count", [1, 2, 3, 7, 14, 16, 17, 20])
@pytest.mark.parametrize("with_defaults", [0, 1, "all"])
def test_a_record_is_what_namedtuple_makes(count: int, with_defaults: int | str) -> None:
    """A record's class (its ``__new__`` taken from series.records' own, by number of
    fields, or namedtuple's beyond them) is collections.namedtuple's of the same fields and
    defaults: the same signature, docstrings, names, and the same value or error for every
    way of making, reading and replacing one."""
    import collections
    import inspect

    from series import records

    fields = [f"f{i}" for i in range(count)]
    given = count if with_defaults == "all" else int(with_defaults)
    defaults = list(range(100, 100 + given))
    body: dict[str, object] = {
        "__module__": __name__,
        "__qualname__": "Rec",
        "__annotations__": dict.fromkeys(fields, "int"),
        **dict(zip(fields[count - given :], defaults, strict=True)),
    }
    ours: Any = records._Made("Rec", (), body)  # type: ignore[attr-defined]
    make: Any = collections.namedtuple  # its fields as a list: mypy checks only literals
    theirs: Any = make("Rec", fields, defaults=defaults, module=__name__)
    attributes = ["__doc__", "_fields", "_field_defaults", "__match_args__", "__slots__"]
    for name in [*attributes, "__module__", "__qualname__", "__name__"]:
        assert getattr(ours, name) == getattr(theirs, name), name
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert (ours.__new__.__defaults__ or ()) == (theirs.__new__.__defaults__ or ())
    for name in ["__new__", "_make", "_replace", "__repr__", "_asdict", "__getnewargs__"]:
        mine, its = getattr(ours, name), getattr(theirs, name)
        assert (mine.__doc__, mine.__qualname__) == (its.__doc__, its.__qualname__), name
    for field in fields:
        assert getattr(ours, field).__doc__ == getattr(theirs, field).__doc__
    values = list(range(count))
    ways: list[Any] = [
        lambda c: c(),
        lambda c: c(*values),
        lambda c: c(*values, 0),
        lambda c: c(*values[:-1]),
        lambda c: c(**dict(zip(fields, values, strict=True))),
        lambda c: c(*values, f0=1),
        lambda c: c(nothing=1),
        lambda c: c._make(values),
        lambda c: c._make(values[1:]),
        lambda c: repr(c(*values)),
        lambda c: c(*values)._asdict(),
        lambda c: c(*values)._replace(f0=9),
        lambda c: c(*values)._replace(nothing=9),
        lambda c: c(*values).__getnewargs__(),
        lambda c: c(*values)[-1],
        lambda c: c(*values).f0,
        lambda c: setattr(c(*values), "f0", 1),
    ]
    for way in ways:
        assert _outcome(way, ours) == _outcome(way, theirs)


# The modules a re-run answered from what was verified must not load: subprocess (with
# threading, selectors and locale) for its one git status, signal (enums over _signal).
SPAWN_FREE = {"subprocess", "threading", "selectors", "locale", "signal"}
STATUS = "--no-optional-locks status --porcelain=v1 -z --untracked-files=all"


def test_a_rerun_starts_its_git_status_without_subprocess(tmp_path: Path) -> None:
    """The one git process of a re-run is started by series.git.child.spawn: the same argv,
    and none of what subprocess imports."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, "export")
    for command in ("apply", "export"):
        shim.run(project.root, command)  # what it verified is kept
        _, calls = shim.run(project.root, command)
        assert calls == [STATUS], (command, calls)
        modules = _modules_after(project.root, shim.env, command)
        assert {"series.stack.verified", "series.stack.verified_kept"} & modules, command
        assert not SPAWN_FREE & modules, (command, sorted(SPAWN_FREE & modules))


def test_a_rerun_with_changes_is_refused_as_before(tmp_path: Path) -> None:
    """The spawned git status still sees an untracked file: the re-run is not answered."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, "apply")
    (project.root / "work" / "new.txt").write_text("mine\n")
    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(project.root), "apply"],
        capture_output=True,
        text=True,
        env=shim.env,
        timeout=GitShim.BOUND,
        check=False,
    )
    assert proc.returncode != 0 and "uncommitted changes" in proc.stderr, proc.stderr
    assert "new.txt" in proc.stderr


_PROBE = (
    "import os, sys\n"
    "fds = sorted(os.listdir('/proc/self/fd'))\n"
    "env = [os.environ.get(k) for k in ('LANGUAGE', 'LC_ALL', 'PROBE')]\n"
    "print(os.getcwd(), fds, env, repr(sys.stdin.read()))\n"
    "sys.stdout.write('o' * 300000); sys.stderr.write('e' * 300000)\n"
    "sys.exit(3)\n"
)


def _both(argv: list[str], tmp_path: Path) -> list[Any]:
    """What ``argv`` says when started by spawn and by subprocess (plain), side by side."""
    from series.git import child

    inherited = os.open(os.devnull, os.O_RDONLY)  # a descriptor series was handed
    os.set_inheritable(inherited, True)
    try:
        env = {"PROBE": "yes"}
        spawned = child.run_child(tmp_path, argv, env=env, stdin=None, stall=None, light=True)
        popen = child.plain(tmp_path, argv, env, None)
        out, err = popen.communicate(timeout=GitShim.BOUND)
        return [spawned, child.Outcome(popen.returncode, out, err, False)]
    finally:
        os.close(inherited)


def test_a_spawned_git_gets_what_subprocess_gives_it(tmp_path: Path) -> None:
    """Directory, environment, descriptors (none inherited but the three), stdin from
    /dev/null, both pipes read to the end (neither fills), the exit status; and the
    signals: none ignored that Python ignores (SIGPIPE), the same blocked (grep reads
    its own: Python and a shell change theirs)."""
    spawned, popen = _both([sys.executable, "-c", _PROBE], tmp_path)
    assert spawned == popen
    assert spawned.status == 3 and len(spawned.out) > 300000 and len(spawned.err) == 300000
    spawned, popen = _both(["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"], tmp_path)
    assert _user_signals(spawned) == _user_signals(popen) and spawned.out.count(b"Sig") == 2


# glibc's own two signals (32 and 33, below SIGRTMIN: its thread cancellation and set*id):
# its posix_spawn leaves them ignored in the program it starts, which installs its own
# handlers for them when it needs them; no program can send or catch them by name.
_GLIBC_OWN = (1 << 31) | (1 << 32)


def _user_signals(outcome: Any) -> list[tuple[bytes, int]]:
    """``SigBlk``/``SigIgn`` of /proc/self/status as masks, glibc's own two left out."""
    return [
        (name, int(mask, 16) & ~_GLIBC_OWN)
        for name, mask in (line.split(b":\t") for line in outcome.out.splitlines())
    ]


def test_a_spawn_that_cannot_start_says_so_as_subprocess_does(tmp_path: Path) -> None:
    from series.git import child

    for cwd, argv in ((tmp_path / "gone", ["true"]), (tmp_path, ["no-such-program-here"])):
        with pytest.raises(FileNotFoundError) as spawned:
            child.run_child(cwd, argv, env={}, stdin=None, stall=None, light=True)
        with pytest.raises(FileNotFoundError) as popen:
            child.plain(cwd, argv, {}, None)
        assert spawned.value.filename == popen.value.filename


def test_an_interrupted_spawn_ends_its_process(tmp_path: Path) -> None:
    """Ctrl-C while the spawned process runs: it is ended before the interrupt goes on."""
    from series.git import child

    pid_file = tmp_path / "pid"
    argv = ["sh", "-c", f"echo $$ > '{pid_file}'; exec sleep 60"]

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            child.run_child(tmp_path, argv, env={}, stdin=None, stall=None, light=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended and reaped


def test_a_spawn_is_not_a_fork(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A light git process is started by posix_spawn (a vfork: series' memory is not
    copied, no Python runs in the child): no fork of series."""
    from series.git import child

    def refused() -> int:
        raise AssertionError("os.fork called")

    monkeypatch.setattr(os, "fork", refused)
    spawned = child.run_child(tmp_path, ["pwd"], env={}, stdin=None, stall=None, light=True)
    assert spawned.status == 0 and spawned.out.strip() == str(tmp_path).encode()
    assert Path.cwd() != tmp_path  # series went back to its own directory


# An atexit function that says who ran it: series.entry.end (a Python frame below it) or
# Python's own exit (none), then the script as tools/bin/series is, with SETUP run after
# the command (what the command would have left), before end.
_ENDING = """\
import atexit, os, sys
def said(write=os.write, frame=sys._getframe):
    below = frame(0).f_back
    write(2, b"end\\n" if below is not None and below.f_code.co_name == "end" else b"exit\\n")
atexit.register(said)
sys.argv = ["series", "--version"]
from series.entry import end, main
sys.stdout.write("x" * 100000)
code = main()
{setup}
end(code)
"""


def _ended(tmp_path: Path, setup: str = "") -> tuple[int, str, str]:
    script = tmp_path / "script.py"
    script.write_text(_ENDING.format(setup=setup))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_a_command_done_ends_without_python_s_teardown(tmp_path: Path) -> None:
    """With nothing left for Python's exit to do but free memory, series.entry.end runs the
    atexit functions itself and ends the process: every byte written to stdout is there
    (a pipe, 100 kB: more than any buffer), and the status is the command's."""
    code, out, err = _ended(tmp_path)
    assert (code, err) == (0, "end\n")
    assert out == "x" * 100000 + f"series {__import__('series').__version__}\n"


@pytest.mark.parametrize(
    "setup",
    [
        "f = open(__file__ + '.txt', 'w'); f.write('kept')",  # a file's buffer not written
        "pid = os.posix_spawnp('true', ['true'], os.environ)",  # a child not reaped
        "import threading, time; threading.Thread(target=time.sleep, args=(0.3,)).start()",
        "sys.settrace(lambda *a: None)",  # a tracer (coverage, a debugger) after the script
        "def g(write=os.write):\n    try:\n        yield\n"
        "    finally:\n        write(1, b'finally')\n"
        "running = g(); next(running)",  # a generator whose finally is still to run
    ],
)
def test_anything_left_for_python_s_exit_is_left_to_it(tmp_path: Path, setup: str) -> None:
    """A file not closed, a child process, a thread, a tracer, a generator suspended in
    its ``try``: end leaves the process to Python's exit, as before (which finishes what
    it can: with the collector off, as ``--version`` leaves it, not a file held in a cycle,
    on main as here)."""
    code, out, err = _ended(tmp_path, setup)
    assert (code, err) == (0, "exit\n"), err
    assert out.startswith("x" * 100000 + "series ")


def test_the_imports_make_no_object_with_a_finalizer() -> None:
    """What series.entry.end does not look at, the objects made while the command's modules
    were imported (frozen), holds nothing with a finalizer but the standard streams: with
    every series module imported, none."""
    probe = (
        "import gc, importlib, pkgutil, sys, series\n"
        "for m in pkgutil.walk_packages(series.__path__, 'series.'):\n"
        "    if m.name != 'series.__main__':\n"
        "        importlib.import_module(m.name)\n"
        "own = set()\n"
        "for s in (sys.__stdin__, sys.__stdout__, sys.__stderr__):\n"
        "    b = getattr(s, 'buffer', None)\n"
        "    own |= {id(s), id(b), id(getattr(b, 'raw', None))}\n"
        "left = [o for o in gc.get_objects() if hasattr(type(o), '__del__') and id(o) not in own]\n"
        "print(len(sys.modules), [repr(type(o)) for o in left])\n"
    )
    out = _python(probe, dict(os.environ)).split(" ", 1)
    assert int(out[0]) > 300 and out[1].strip() == "[]", out


def test_a_command_line_is_quoted_as_shlex_quotes_it() -> None:
    """series.locks.command_line (the command a lock and a session record) is shlex.join."""
    import random
    import shlex

    from series.locks import command_line

    words = ["", "plain", "a b", "it's", "-C", "ä", "x\ny", "$HOME", "a'b\"c", "@%+=:,./-_"]
    alphabet = "aZ9_@%+=:,./- '\"\\$\té!*?[]{}();&|<>~#`"
    chosen = random.Random(23)
    words += ["".join(chosen.choices(alphabet, k=chosen.randrange(6))) for _ in range(500)]
    assert command_line(words) == shlex.join(words)
    for word in words:
        assert command_line(["series", word]) == shlex.join(["series", word])


def test_a_command_imports_pathlib_without_urllib_parse(tmp_path: Path) -> None:
    """pathlib's import of urllib.parse (with ipaddress) is left to ``Path.as_uri``'s first
    call (series.entry, as Python 3.13's pathlib does): a command that parses no URL
    imports neither (GitPython's import does: these two, run once before, load none)."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    for command in ("status", "list"):
        shim.run(project.root, command)  # then without GitPython (whose import needs it)
        modules = _modules_after(project.root, shim.env, command)
        assert "pathlib" in modules and "series.git.child" in modules, command
        assert "git" not in modules, command
        assert not {"urllib.parse", "ipaddress"} & modules, (command, modules)


def test_pathlib_without_urllib_parse_is_pathlib_and_urllib_parse_python_s(
    tmp_path: Path,
) -> None:
    """After series.entry: ``as_uri`` gives what Python's gives, an import of urllib.parse is
    the real module (its functions, its spec), and none of the stand-in is left."""
    code = (
        "import sys\n"
        "import series.entry\n"
        "import pathlib\n"
        "before = 'urllib.parse' in sys.modules\n"
        "uris = [pathlib.PurePosixPath('/a b/ü%').as_uri(),\n"
        "        pathlib.PureWindowsPath('c:/a b/x').as_uri()]\n"
        "import urllib.parse\n"
        "from urllib.parse import quote_from_bytes, urlsplit\n"
        "print(before, urllib.parse.__spec__.name, urlsplit('http://h/p').netloc,\n"
        "      quote_from_bytes(b'a b'), sys.modules['urllib.parse'] is urllib.parse)\n"
        "print(*uris)\n"
    )
    out = _python(code, GitShim(tmp_path).env).split("\n")
    assert out[0].split() == ["False", "urllib.parse", "h", "a%20b", "True"], out
    assert out[1].split() == ["file:///a%20b/%C3%BC%25", "file:///c:/a%20b/x"], out
