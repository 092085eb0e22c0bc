"""The git that runs is new enough, known without a ``git version`` per command.

series asks git for what older gits refuse, or do otherwise: ``merge-tree
--write-tree --stdin`` (2.39: ``--write-tree`` came in 2.38, ``--stdin`` in
2.39), ``cat-file --batch-command`` (2.36), its configuration pinned through
``GIT_CONFIG_COUNT`` (2.31; an older git ignores it, and a repository's own
``.git/config`` then changes the bytes series writes), ``rev-parse
--end-of-options`` (2.30), ``fetch --no-write-fetch-head`` (2.29). So an older
git is refused up front (:class:`GitTooOld`, exit 1), before a command writes
anything: by ``series.cli.run`` before the project is locked, and by the git
layer before any git process starts (:func:`ensure`, a check once per process
and per git executable).

Two gits may run: the one first on ``PATH``, which series starts itself,
and the one ``GIT_PYTHON_GIT_EXECUTABLE`` names, which GitPython starts
(series.git.run). The check up front (:func:`check`) looks at both: a
command that starts no process through GitPython (a re-run of ``apply``
or ``status`` answered from what was verified or kept) would otherwise
say "ok" where the full run, reaching GitPython, refuses its git. The
refusal names which of the two it is.

What ``git version`` said is remembered in the per-user cache
(``git-version``), keyed by the git that ``PATH`` leads to: its resolved path,
device, inode, size, modification and change times. A git installed, upgraded
or replaced at that path is another file and is asked again; a git first on
PATH elsewhere is another key. Only a new-enough verdict is kept: a refusal
asks again each time. The record keeps what git said, and that is read
again against this series' own minimum: the cache is shared by every
series of the user, and one that needs less keeps "new enough" for a git
this one refuses.

A verdict is kept only for a file that is git itself as far as its file can
say: a binary executable (ELF, Mach-O) whose resolved name is ``git``. A
wrapper script (``#!``: a version manager's shim, a logging wrapper) runs a
git its file does not name for sure (another one per directory, per
configuration file, per environment), and a binary of another name that PATH
leads to through a link (a multi-call shim that picks a git by its
configuration) is not git either: their file says nothing of the git behind
them, so git is asked each run (one ``git version``, once per process).
"""

from __future__ import annotations

import os

from series.errors import SeriesError
from series.git.itself import MINIMUM, ask, is_git_itself, parse
from series.plain import read_plain

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from pathlib import Path

NEEDS = (
    "merge-tree --write-tree --stdin (git 2.39), cat-file --batch-command (2.36) and "
    "configuration given in the environment (GIT_CONFIG_COUNT, 2.31)"
)
ENV = "GIT_PYTHON_GIT_EXECUTABLE"  # the git GitPython starts (series.git.run._executable)
RECORD = "git-version"  # in the per-user cache directory
_KEPT = 8  # verdicts kept: one per git a user's PATHs lead to

_good: set[str] = set()  # the keys of gits found new enough by this process
_store: list[Path] = []  # where the verdicts are remembered (set by :func:`check`)


class GitTooOld(SeriesError):
    """The git on PATH, or the one GIT_PYTHON_GIT_EXECUTABLE names (``named``), is older
    than series needs, or says no version series can read."""

    def __init__(self, path: str, said: str, version: str | None, named: bool = False) -> None:
        need = ".".join(map(str, MINIMUM))
        what = f"git {version} is too old" if version else "cannot tell which version git is"
        which = f"the git {ENV} names" if named else "the git first on PATH"
        way = f"install git {need} or later (or put one first on PATH)"
        if named:
            way = f"set {ENV} to git {need} or later (or unset it)"
        super().__init__(
            f"{what}: series needs git {need} or later",
            why=f"{path} ({which}) says: {said.strip() or '(nothing)'}\n"
            f"series uses {NEEDS}; an older git refuses them, or ignores what keeps "
            "the patch files series writes the same; nothing was changed",
            hint=f"{way}, then run the command again",
        )
        self.path = path
        self.version = version


def check(store: Path | None) -> None:
    """Refuse an old git up front: :func:`ensure` of the git on PATH and, when
    ``GIT_PYTHON_GIT_EXECUTABLE`` is set, of the one it names (the module's docstring),
    remembering verdicts in ``store``."""
    if store is not None:
        _store[:] = [store]
    ensure()
    named = os.environ.get(ENV)
    if named:
        ensure(named)


def ensure(executable: str = "git") -> None:
    """Raise :class:`GitTooOld` unless ``executable`` (as ``PATH`` finds it) is new enough.
    ``executable``: ``git``, or what ``GIT_PYTHON_GIT_EXECUTABLE`` names (the refusal
    says which).

    No git found: nothing is said here (the start of git says it: GitMissing);
    nor when git would wait for ever on a configuration file it reads first (the
    start of git refuses it, naming it: series.git.run.refuse_blocking_files).
    Costs a look along ``PATH``, a ``stat``, the read of git's first bytes and of
    one small file when the verdict is known; one ``git version`` when it is not
    (each run for a wrapper script).
    """
    found = _locate(executable)
    if found is None:
        return
    key = _key(found)
    if key is None or key in _good:
        return
    kept = is_git_itself(found)
    if kept and _new_enough(_recall().get(key)):
        _good.add(key)
        return
    from series.git.inprogress import config_blocking  # rule 12: only before git is asked

    if config_blocking() is not None:
        return  # git version would wait for ever: no verdict, the start of git refuses
    said, version = ask(found)
    if version is None or version < MINIMUM:
        shown = ".".join(map(str, version)) if version is not None else None
        raise GitTooOld(found, said, shown, named=executable != "git")
    _good.add(key)
    if kept:
        _remember(key, said.strip())


def _locate(executable: str) -> str | None:
    """The file ``execvp`` would run for ``executable`` (the first one along PATH)."""
    if "/" in executable:
        return executable if os.access(executable, os.X_OK) else None
    for directory in os.get_exec_path():
        candidate = os.path.join(directory or ".", executable)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _key(path: str) -> str | None:
    """The identity of the file ``path`` resolves to, one line of text; None if gone."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return None
    if "\t" in real or "\n" in real:
        real = repr(real)
    return f"{real}\t{st.st_dev}\t{st.st_ino}\t{st.st_size}\t{st.st_mtime_ns}\t{st.st_ctime_ns}"


def _recall() -> dict[str, str]:
    """What each git remembered said to ``git version``, by key."""
    if not _store:
        return {}
    try:
        text = read_plain(_store[0] / RECORD).decode(errors="replace")
    except OSError:
        return {}
    lines = (line.rpartition("\t") for line in text.splitlines() if line.count("\t") == 6)
    return {key: said for key, _, said in lines}


def _new_enough(said: str | None) -> bool:
    """Whether a remembered ``git version`` says a git this series can use.

    The record is shared by every series that uses this cache: an older one that
    needed less, or a later one that needs less, keeps "new enough" for a git
    this one refuses. So what git said is read again against this series' own
    :data:`MINIMUM`; anything else (another version, no version) asks git."""
    version = parse(said) if said is not None else None
    return version is not None and version >= MINIMUM


def _remember(key: str, said: str) -> None:
    """Keep the verdict (temporary file and rename); one that cannot be kept costs speed."""
    if not _store:
        return
    import contextlib

    path = _store[0] / RECORD
    try:
        old = read_plain(path).decode(errors="replace").splitlines()
    except OSError:
        old = []
    lines = [f"{key}\t{said}"] + [line for line in old if not line.startswith(key + "\t")]
    tmp = path.with_name(f"{RECORD}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text("\n".join(lines[:_KEPT]) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
