"""The console entry point: SIGINT is handled before anything heavy is imported.

Importing what a command needs (series.cli.run: the project, rich, the
engines) takes a noticeable moment; a Ctrl-C in that window would print a
``KeyboardInterrupt`` traceback from the middle of an import. Until
``cli`` is imported, SIGINT ends the process quietly with 130; from then
on it unwinds as ``KeyboardInterrupt``, which ``cli.run`` (or, during the
import of ``cli.run`` itself, ``main`` here) turns into "series:
interrupted" after the ``finally`` blocks ran. SIGTERM and SIGHUP
are handled the same way (exit status 128 plus the signal's number): a
signal sent to series alone does not reach git, so series ends git and
what it started while it unwinds (series.git.child), and no git process
outlives series. (A Ctrl-C during Python's own start-up, before this
module runs, is Python's to report.)
``SERIES_TEST_IMPORT_WINDOW=SECONDS`` is for the tests: it announces on
stderr that the handler is installed, then waits, so a test can interrupt
the import deterministically.

``series --version`` alone is answered here, as the CLI's parser would
answer it: it needs nothing the CLI imports; so is a ``series branches
--dry-run`` that nothing changed since the last one
(series.stack.branches_kept), and so is a plain ``series range-diff``
(series.stack.rangediff_kept), and a ``series apply`` that nothing changed
since the last one verified (series.stack.verified_kept: one ``git
status``, ended with series as in the CLI), and ``series --help`` as the
CLI printed it last (series.help_kept). ``--version`` and the help are
written as the CLI writes them (series.stack.branches_kept.say_text): on
stderr when there is no stdout, and exit 141 when the reader went away.

stdout and stderr escape what their encoding cannot hold (a commit subject
with "é" under an ASCII locale prints as ``\\xe9``) instead of ending the
command with ``UnicodeEncodeError``.

The ``series`` script ends the process with :func:`end`: once the command is
done and nothing is left for Python's own exit to do but free memory (no child
process, no thread, no object with a finalizer but the standard streams, no
tracer or profiler, no ``-i``), it writes the standard streams, runs the
``atexit`` functions and ends with ``os._exit``, which skips the teardown of
every module and object (3 to 4 ms of a ``rebase --abort``, issue 23); otherwise it
exits as any program does.
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import sys
import time

from series import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _thread
    import signal as _signal  # the functions of _signal, typed
    from types import FrameType  # annotations only: types is not imported at run time
    from typing import Any, NoReturn
else:
    import _signal  # signal's functions without its enums and wrappers: every command
    import _thread


class _PathlibWithoutUrllib:
    """pathlib's first import made with its uses of urllib.parse (``Path.as_uri``), ``re``
    and ``fnmatch`` (``glob``, ``match``) left to their first call, as Python 3.13's
    pathlib does for urllib.parse.

    On 3.11, pathlib imports urllib.parse for ``quote_from_bytes`` alone (urllib.parse
    imports ipaddress and makes six named tuples: 2.5 ms), and ``re`` and ``fnmatch``
    for its patterns (``re`` imports ``enum``: 2 ms), in every command that imports
    pathlib (issue 23), where series matches no pattern of pathlib's on its everyday
    paths. This finder, first on ``sys.meta_path`` until pathlib's import comes
    (wherever it comes from: ``--version`` and the help never import it), removes
    itself, finds pathlib as Python would, and runs its module with stand-ins for those
    not imported yet in ``sys.modules``: for urllib.parse a module of that one function,
    which imports the real one and returns its answer; for ``re`` and ``fnmatch`` a
    module that imports the real one at the first attribute asked of it and answers from
    it (:func:`_later`). The stand-ins are gone before pathlib's import returns, so any
    other import of these modules (a URL checked, GitPython's) is Python's own. Where
    pathlib's module asks them for something as it loads (3.12's and 3.13's: a pattern
    compiled), that is the real module's answer, imported then. Not installed where
    pathlib or urllib.parse is imported already (under a test runner)."""

    @classmethod
    def install(cls) -> None:
        if "pathlib" not in sys.modules and "urllib.parse" not in sys.modules:
            sys.meta_path.insert(0, cls)

    @classmethod
    def find_spec(cls, name: str, path: object = None, target: object = None) -> Any:
        if name != "pathlib":
            return None
        sys.meta_path.remove(cls)
        finders: list[Any] = list(sys.meta_path)
        spec = next((s for f in finders if (s := f.find_spec(name, path, target))), None)
        loader: Any = spec.loader if spec is not None else None
        if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
            return spec  # found as Python finds it (a loader shared by all: not changed)
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            stand_ins = {
                name: _quoting() if name == "urllib.parse" else _later(name)
                for name in ("urllib.parse", "re", "fnmatch")
                if name not in sys.modules
            }
            sys.modules.update(stand_ins)
            try:
                run(module)
            finally:
                for name, stand_in in stand_ins.items():
                    if sys.modules.get(name) is stand_in:
                        del sys.modules[name]

        loader.exec_module = exec_module
        return spec


def _quoting() -> Any:
    """The stand-in for urllib.parse: pathlib takes ``quote_from_bytes`` from it as it loads
    (``from urllib.parse import ...``), a function that imports the real one at its call."""
    stand_in = type(sys)("urllib.parse")  # types.ModuleType, without types
    stand_in.quote_from_bytes = _quote_from_bytes  # type: ignore[attr-defined]
    return stand_in


def _later(name: str) -> Any:
    """A stand-in for the module ``name`` that imports the real one at the first attribute
    asked of it (PEP 562's module ``__getattr__``) and answers every one from it."""
    stand_in = type(sys)(name)

    def __getattr__(attr: str) -> Any:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]  # still pathlib's import: the real one in its place
        return getattr(__import__(name), attr)

    stand_in.__getattr__ = __getattr__  # type: ignore[method-assign]
    return stand_in


def _quote_from_bytes(*args: Any, **kwargs: Any) -> str:
    """urllib.parse's ``quote_from_bytes``, imported at its first call (pathlib's ``as_uri``)."""
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(*args, **kwargs)


_PathlibWithoutUrllib.install()

# When this module was imported: before the command's parse of series.toml (when it
# was imported before the CLI ran: series.commands.range_diff looks it up only then).
STARTED = time.time_ns()
_STOPS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
_received: list[int] = []  # the signal that is stopping this process, once one came
# Whether the objects made so far are frozen (_freeze): gc.get_freeze_count() would say
# it by walking them all (ten thousand: a millisecond at the end of a rebase --abort).
_frozen: list[bool] = []


def _early_interrupt(signum: int, frame: FrameType | None) -> None:
    os.write(2, b"series: interrupted\n")
    os._exit(128 + signum)


def _stop(signum: int, frame: FrameType | None) -> None:
    """SIGINT, SIGTERM, SIGHUP: unwind as for Ctrl-C, so that series ends its git processes."""
    _received.append(signum)
    raise KeyboardInterrupt


def main() -> int:
    # A signal ignored when we were started (nohup, a background job) stays ignored.
    stops = [s for s in _STOPS if _signal.getsignal(s) != _signal.SIG_IGN]
    for sig in stops:
        _signal.signal(sig, _early_interrupt)
    window = os.environ.get("SERIES_TEST_IMPORT_WINDOW")
    if window:  # tests only: say the handler is in place, and hold the window open
        os.write(2, b"series: test: importing\n")
        time.sleep(float(window))
    _lenient_streams()
    # The answers below make few objects and no cycles to free: a collection of the
    # objects the start-up made would cost them more than the rest of their work. An
    # answer freezes them before it ends: Python's shutdown collects once more even with
    # the collector off (finalize_modules), and walks all but frozen objects (by
    # callgrind, 3.9M of a kept dry run's 54M instructions). The CLI runs the command
    # with the collector on (_imported).
    gc.disable()
    try:
        code = _kept(stops)
    except BaseException:
        gc.enable()
        raise
    if code is not None:
        _freeze()
        return code
    from series.cli import main as cli_main  # the collector still off: see _imported

    for sig in stops:
        _signal.signal(sig, _stop)
    try:
        code = cli_main(imported=_imported)
    except KeyboardInterrupt:  # one that came outside the command's own handling
        os.write(2, b"series: interrupted\n")
        code = 130
    return 128 + _received[0] if _received else code


def _imported() -> None:
    """The CLI has imported what the command needs to start (series.cli calls this just
    before it runs the command): from here the collector is on, as for any program.

    Until then it stays off, as for the answers above: importing makes the objects of
    the modules (functions, classes, their dicts), which live until the process ends,
    and no garbage; a collection would only walk them again (by callgrind, about 7% of
    the instructions of series' own process in a ``rebase --abort``). They are frozen
    out of the collector's generations (``gc.freeze``) before it is turned on, so its
    collections during the command and at exit do not walk them either. Only what the
    imports made is frozen: what the command makes (a git process's object that ends
    it when collected) is collected as before. ``series --help`` and a usage error end
    before this, with the collector off."""
    _freeze()
    gc.enable()


def _freeze() -> None:
    """Move every object made so far out of the collector's generations (``gc.freeze``)."""
    gc.freeze()
    _frozen.append(True)


def _kept(stops: list[_signal.Signals]) -> int | None:
    """The exit status of a command answered without the CLI (the module's docstring
    says which), or None: the CLI runs it."""
    if sys.argv[1:] == ["--version"]:  # what argparse prints, without importing the CLI
        from series.stack.branches_kept import say_text

        return say_text(f"series {__version__}\n")  # as the CLI writes it (no stdout, a pipe)
    if "--help" in sys.argv[1:4] or "-h" in sys.argv[1:4]:  # as the CLI printed it, if kept
        from series.help_kept import recall, words

        text = recall() if words(sys.argv[1:]) else None
        if text is not None:
            from series.stack.branches_kept import say_text

            return say_text(text)  # as series.cli writes it: no stdout, a reader gone
    if sys.argv[-1] == "apply" and len(sys.argv) in (2, 4):  # [-C DIR] apply: a re-run
        code = _verified(sys.argv[1:], stops)
        if code is not None:
            return code
    if "branches" in sys.argv[1:4]:  # a dry run nothing changed since: said again, if kept
        from series.stack.branches_kept import rerun

        code = rerun(sys.argv[1:])
        if code is not None:
            return code
    if "range-diff" in sys.argv[1:4]:  # a plain range-diff nothing changed since: kept
        from series.stack.rangediff_kept import rerun as again

        return again(sys.argv[1:])
    return None


def _verified(words: list[str], stops: list[_signal.Signals]) -> int | None:
    """series.stack.verified_kept's answer to ``words``, or None. Its ``git status`` ends
    with series: a signal that stops series unwinds through it as in the CLI."""
    from series.stack.verified_kept import rerun

    for sig in stops:
        _signal.signal(sig, _stop)
    try:
        code = rerun(words)
    except KeyboardInterrupt:
        os.write(2, b"series: interrupted\n")
        return 128 + _received[0] if _received else 130
    for sig in stops:
        _signal.signal(sig, _early_interrupt)
    return code


def _lenient_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def end(code: int) -> NoReturn:
    """End the process with exit status ``code`` (what ``main`` returned), for the script
    that called ``main``: as ``sys.exit`` does, without the teardown of Python's exit
    when that teardown has nothing left to do.

    What Python's exit does beyond freeing memory: it joins threads, runs the ``atexit``
    functions (a scratch directory's removal, ``weakref.finalize``), flushes stdout and
    stderr, and finalizes each object as it frees it: a file's buffer written, a
    generator's ``finally`` run, a git process ended by its owner's ``__del__``. When no
    thread runs but this one, no child process is left (running or not yet reaped), and
    no object made since the imports (series.entry freezes those: ``_imported``) has a
    finalizer, that is the ``atexit`` functions and the two streams: they are done here,
    and ``os._exit`` skips the rest. The objects the imports made, frozen, hold none but
    the standard streams (tests/test_fixed_cost.py). Signals that stop series are held
    meanwhile: the command is done, its status stands. Anything else, or a profiler,
    tracer or ``-i`` that runs after the script, is Python's own exit."""
    stops = tuple(_STOPS)
    held = _signal.pthread_sigmask(_signal.SIG_BLOCK, stops)
    if _only_memory_left(sys._getframe(1)) and _written():
        atexit._run_exitfuncs()
        if _only_memory_left(sys._getframe(1)) and _written():
            os._exit(code)
    try:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, held)
    except KeyboardInterrupt:  # a signal that came while it was held: as main says one
        code = 128 + _received[-1] if _received else 130
    raise SystemExit(code)


def _only_memory_left(script: FrameType) -> bool:
    """Whether Python's exit would only free memory, once the ``atexit`` functions ran and
    stdout and stderr are written (:func:`end`). ``script``: the frame that called it."""
    if sys.flags.inspect or sys.gettrace() is not None or sys.getprofile() is not None:
        return False
    if script.f_code.co_name != "<module>" or script.f_globals.get("__name__") != "__main__":
        return False
    below = script.f_back
    while below is not None:  # python -m series: runpy's frames only
        if below.f_globals.get("__name__") != "runpy":
            return False
        below = below.f_back
    if _thread._count() or not _no_children():
        return False
    streams = {sys.__stdin__, sys.__stdout__, sys.__stderr__}
    if not {sys.stdin, sys.stdout, sys.stderr} <= streams:
        return False
    own = set()
    for stream in streams:
        buffer = getattr(stream, "buffer", None)
        own |= {id(stream), id(buffer), id(getattr(buffer, "raw", None))}
    if not _frozen:  # ended before the imports were frozen (--help, a usage
        return False  # error): every object would be looked at, for no teardown to skip
    made = gc.get_objects()  # since the imports: those are frozen
    kinds = [kind for kind in set(map(type, made)) if hasattr(kind, "__del__")]
    return not kinds or not any(type(o) in kinds and id(o) not in own for o in made)


def _no_children() -> bool:
    """Whether this process has no child, running or ended and not yet reaped (none is
    reaped here)."""
    if not hasattr(os, "waitid"):  # not on every system: Python's exit then
        return False
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return False


def _written() -> bool:
    """stdout and stderr flushed; False if either cannot be (Python's exit says so)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True
