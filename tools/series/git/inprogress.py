"""Whether git is in the middle of a command of the user's in a repository: one answer for all.

git leaves a file or directory in the git directory while a command that
can stop for the user is under way, and removes it when that command is
continued or aborted:

* ``rebase-merge/``: ``git rebase`` (the merge backend);
* ``rebase-apply/``: ``git am`` (with ``applying``) or ``git rebase --apply``;
* ``MERGE_HEAD``: ``git merge`` (stopped at a conflict, or ``--no-commit``);
* ``CHERRY_PICK_HEAD``: ``git cherry-pick``; ``REVERT_HEAD``: ``git revert``;
* ``sequencer/``: a cherry-pick or revert of several commits, between them;
* ``BISECT_LOG``: ``git bisect`` (it moves HEAD from commit to commit).

While one is there, the branch and files are not what the user works on
(the command's own commits are elsewhere, or half made), and a
``git commit`` would record the command's parents: series neither answers
from what it kept (series.stack.verified, verified_kept) nor writes the
checkout (apply, export, rebase and edit refuse, naming it:
series.checkout.refuse_git_in_progress).

:func:`unreadable` says which of the files ``git status`` opens is there but no
plain file: a FIFO there makes git wait for ever, so series.git.worktree refuses
it before every ``git status``, and verified_kept does not wait on its own.

Only ``os`` (and ``stat``, which ``os`` loads) and series.plain: series.stack.verified_kept
asks it before the CLI is imported.
"""

from __future__ import annotations

import os
from stat import S_ISCHR, S_ISDIR, S_ISFIFO, S_ISREG

from series.plain import read_plain

# (the marker in the git directory, the command it is of, how to end it)
MARKERS = (
    ("rebase-merge", "rebase", "git rebase --continue, or --abort"),
    ("rebase-apply", "rebase", "git rebase --continue, or --abort"),
    ("MERGE_HEAD", "merge", "git merge --continue (or git commit), or git merge --abort"),
    ("CHERRY_PICK_HEAD", "cherry-pick", "git cherry-pick --continue, or --abort"),
    ("REVERT_HEAD", "revert", "git revert --continue, or --abort"),
    ("sequencer", "cherry-pick", "git cherry-pick --continue, or --abort"),
    ("BISECT_LOG", "bisect", "git bisect reset"),
)
AM = ("am", "git am --continue, or --skip, or --abort")
REVERT = ("revert", "git revert --continue, or --abort")
# The files of the git directory that ``git status`` opens, found by putting a FIFO in
# the place of each (git 2.39, in each state of MARKERS): a FIFO, a socket or a device
# there makes it wait for a writer for ever. git writes all of them as plain files.
STATUS_READS = (
    "HEAD",
    "index",
    "packed-refs",
    "logs/HEAD",
    "sequencer/todo",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "rebase-merge/head-name",
    "rebase-merge/onto",
    "rebase-apply/head-name",
    "rebase-apply/onto",
    "BISECT_START",
)
# The files of the git directory (or, for those kept there, of the common directory a
# linked work tree's ``commondir`` names) that the first git of any command opens, found
# the same way (git 2.39: ``rev-parse HEAD``, ``log -1``, ``cat-file --batch-check``): a
# FIFO at any of them makes every git there wait for ever. Also the loose ref HEAD names.
EVERY_READS = (  # HEAD and commondir first: COMMON is the rest
    "HEAD",
    "commondir",
    "config",
    "packed-refs",
    "shallow",
    "objects/info/alternates",
    "info/grafts",
)
# Kept in the common directory (a linked work tree's git directory has only HEAD, commondir).
COMMON = EVERY_READS[2:]
# The directories git looks in for them: anything else there (a FIFO at ``refs``).
EVERY_DIRS = ("objects", "refs")
# The configuration file of the system that git reads when nothing names another: the one
# of a git installed in /usr (git's ETC_GITCONFIG; a git built with another prefix reads
# PREFIX/etc/gitconfig, not looked at).
SYSTEM_CONFIG = "/etc/gitconfig"
_CONFIGS_FINE: set[tuple[str | None, ...]] = set()  # the environments config_blocking cleared
_FALSE = ("", "0", "false", "no", "off")  # git_env_bool's false (GIT_CONFIG_NOSYSTEM)


def config_files() -> list[tuple[str, str]]:
    """The configuration files outside any repository that every git started now reads
    first, as git 2.39 finds them (``git config --show-origin``), each with its scope: the
    system's (``GIT_CONFIG_SYSTEM``, else SYSTEM_CONFIG; none with ``GIT_CONFIG_NOSYSTEM``),
    then the user's, ``global`` (``GIT_CONFIG_GLOBAL`` alone when it is set, else
    ``$XDG_CONFIG_HOME/git/config`` (``~/.config/git/config``) and ``~/.gitconfig``).
    Whether each is there is not asked."""
    env = os.environ
    found = []
    if env.get("GIT_CONFIG_NOSYSTEM", "").lower() in _FALSE:
        found.append(("system", env.get("GIT_CONFIG_SYSTEM", SYSTEM_CONFIG)))
    if "GIT_CONFIG_GLOBAL" in env:
        return [*found, ("global", env["GIT_CONFIG_GLOBAL"])]
    home = env.get("HOME")
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg:
        found.append(("global", os.path.join(xdg, "git", "config")))
    elif home:
        found.append(("global", os.path.join(home, ".config", "git", "config")))
    if home:
        found.append(("global", os.path.join(home, ".gitconfig")))
    return found


def config_blocking() -> tuple[str, str] | None:
    """The first of :func:`config_files` (this process's environment) that git would wait
    on for ever: a FIFO, or a character device other than the null device (a terminal
    waits for input), links followed as git follows them; its scope and path. None when
    none is (absent, a plain file, ``/dev/null``; a directory or a socket: git says it
    cannot read it, at once). One ``stat`` each, once per process and environment (an
    answer of None is kept; the environment is a few lookups)."""
    key = tuple(os.environ.get(k) for k in _CONFIG_VARIABLES)
    if key in _CONFIGS_FINE:
        return None
    for scope, path in config_files():
        if waits(path):
            return scope, path
    _CONFIGS_FINE.add(key)
    return None


_CONFIG_VARIABLES = (
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_GLOBAL",
    "XDG_CONFIG_HOME",
    "HOME",
)


def _null(device: int) -> bool:
    """Whether ``device`` is the null device's (``/dev/null``: git reads nothing there)."""
    try:
        return os.stat(os.devnull).st_rdev == device
    except OSError:
        return False


def in_progress(git_dir: str) -> tuple[str, str, str] | None:
    """The git command in progress in ``git_dir``: its marker, its name and how to end it;
    None when there is none. A marker that cannot be looked at counts as one."""
    for marker, command, end in MARKERS:
        path = os.path.join(git_dir, marker)
        try:
            os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError:
            return marker, command, end
        if marker == "rebase-apply" and os.path.lexists(os.path.join(path, "applying")):
            return (marker, *AM)
        if marker == "sequencer" and _reverts(path):
            return (marker, *REVERT)
        return marker, command, end
    return None


def unreadable(git_dir: str, names: tuple[str, ...] = STATUS_READS) -> str | None:
    """The first of the files ``git status`` opens in ``git_dir`` (``names``: STATUS_READS)
    that is there but no plain file once links are followed (a FIFO would make git wait
    for ever): its path; None when each is a plain file or absent. Only ``stat``, nothing
    opened; for STATUS_READS with HEAD detached, also the loose ref HEAD was detached at
    (:func:`_detached_at`: ``git status`` resolves it to say "HEAD detached at NAME")."""
    for name in names:
        path = os.path.join(git_dir, name)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not S_ISREG(mode):
            return path
    if names is STATUS_READS:
        return _detached_at(git_dir)
    return None


_TAIL = 8192  # bytes of HEAD's reflog read from its end: its last entries
_MOVED = b"\tcheckout: moving from "


def _detached_at(git_dir: str) -> str | None:
    """The loose ref file ``git status`` would wait on to say where HEAD was detached (the
    ``to NAME`` of the last "checkout: moving from A to NAME" in HEAD's reflog, looked up
    as git looks a name up: a FIFO at ``refs/series/stop/...`` or at a tag), or None: HEAD
    on a branch, no such entry in the reflog's last _TAIL bytes (git reads further back;
    not looked at), or no file git would wait on. Read only when HEAD is detached."""
    try:
        if read_plain(os.path.join(git_dir, "HEAD"), follow=True).startswith(b"ref:"):
            return None
        fd = os.open(os.path.join(git_dir, "logs", "HEAD"), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not S_ISREG(found.st_mode):
            return None  # (STATUS_READS names it: refused before)
        tail = os.pread(fd, _TAIL, max(0, found.st_size - _TAIL))
    except OSError:
        return None
    finally:
        os.close(fd)
    at = tail.rfind(_MOVED)
    if at == -1:
        return None
    line = tail[at + len(_MOVED) :].split(b"\n", 1)[0]
    name = line.rpartition(b" to ")[2].decode("utf-8", "surrogateescape")
    return _ref_file(git_dir, _common(git_dir), name)


def blocking(cwd: str) -> tuple[str, str] | None:
    """The first file every git command run in ``cwd`` opens (a configuration file outside
    the repository git would wait on: :func:`config_blocking`; EVERY_READS, the loose ref
    HEAD names) that is there but no plain file, or directory of EVERY_DIRS that is there
    but no directory: its path and what it should be (``plain file``, ``directory``); None
    when none is, or ``cwd`` holds no repository series
    can name (git looks further up, or says there is none, without waiting).

    ``cwd`` is a work tree (its ``.git`` a directory, or a plain file naming one, as a
    linked work tree's) or a bare repository. Only ``stat`` and read_plain (HEAD,
    ``.git`` and ``commondir``, when plain files): a few calls."""
    config = config_blocking()
    if config is not None:
        return config[1], "plain file"
    git_dir = _git_dir(cwd)
    if git_dir is None:
        return None
    common = git_dir
    found = unreadable(git_dir, EVERY_READS)
    if found is None:
        common = _common(git_dir)
        if common != git_dir:
            found = unreadable(common, COMMON)
    if found is None:
        for name in EVERY_DIRS:
            path = os.path.join(common, name)
            try:
                if not S_ISDIR(os.stat(path).st_mode):
                    return path, "directory"
            except OSError:
                continue
        found = _head_ref(git_dir, common)
    return None if found is None else (found, "plain file")


def _git_dir(cwd: str) -> str | None:
    """The git directory of the repository in ``cwd`` (a work tree's ``.git``, the one a
    linked work tree's ``.git`` file names, a bare repository); None when git finds none
    there that series can name (it looks further up, or says there is none, at once)."""
    dot = os.path.join(cwd, ".git")
    try:
        mode = os.stat(dot).st_mode
    except OSError:
        mode = 0
    if S_ISDIR(mode):
        return dot
    if S_ISREG(mode):  # a linked work tree: "gitdir: DIR"
        try:
            named = read_plain(dot, follow=True).decode("utf-8", "surrogateescape").strip()
        except OSError:
            return None  # git says it cannot read it, without waiting
        if not named.startswith("gitdir: "):
            return None
        return os.path.join(cwd, named[len("gitdir: ") :])
    if os.path.lexists(os.path.join(cwd, "HEAD")):
        return cwd  # a bare repository (the cache's)
    return None  # (a FIFO at .git: git fails at once)


# git's rules for the ref a short name names (refs.c, ref_rev_parse_rules), in its order
_RULES = (
    "{}",
    "refs/{}",
    "refs/tags/{}",
    "refs/heads/{}",
    "refs/remotes/{}",
    "refs/remotes/{}/HEAD",
)
# refs kept per work tree, in a linked work tree's own git directory (the rest: common)
_PER_WORKTREE = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")
_HEX = frozenset("0123456789abcdef")


def ref_blocking(cwd: str, name: str) -> str | None:
    """The loose ref file that git, asked for the revision ``name`` in ``cwd`` (``REF``,
    ``REF^{commit}``, ``REF~2``, ``REF:path``; a short name as git looks it up:
    ``refs/tags/NAME``, ``refs/heads/NAME`` ...), would open and wait on for ever (a FIFO:
    :func:`waits`); None when there is none. An object id names no ref file. A ``stat``
    per file git may look at (one for a full name, six for a short one); nothing for an
    object id."""
    if _ref_part(name) is None:
        return None
    dirs = _dirs(cwd)
    return None if dirs is None else _ref_file(*dirs, name)


_DIRS: dict[str, tuple[str, str]] = {}  # work tree -> its git and common directories


def _dirs(cwd: str) -> tuple[str, str] | None:
    """The git directory and the common directory of the repository in ``cwd``, found once
    per process (None, not kept: no repository there yet)."""
    found = _DIRS.get(cwd)
    if found is None:
        git_dir = _git_dir(cwd)
        if git_dir is None:
            return None
        found = _DIRS[cwd] = (git_dir, _common(git_dir))
    return found


def _ref_file(git_dir: str, common: str, name: str) -> str | None:
    """:func:`ref_blocking` in the repository of ``git_dir`` and ``common``."""
    ref = _ref_part(name)
    if ref is None:
        return None
    for rule in ("{}",) if ref.startswith("refs/") else _RULES:
        full = rule.format(ref)
        own = not full.startswith("refs/") or full.startswith(_PER_WORKTREE)
        path = os.path.join(git_dir if own else common, full)
        if waits(path):
            return path
    return None


def _ref_part(name: str) -> str | None:
    """The ref a revision starts with (``REF`` of ``REF^{commit}``, ``REF~1``, ``REF:path``,
    ``REF@{1}``); None for an object id, or a name no ref file can hold."""
    end = len(name)
    for mark in ("^", "~", ":", "@{"):
        at = name.find(mark)
        if at != -1:
            end = min(end, at)
    ref = name[:end]
    if not ref or (len(ref) in (40, 64) and _HEX.issuperset(ref)):
        return None
    if ref.startswith("/") or ".." in ref or "\0" in ref:
        return None  # git takes no such ref name (check-ref-format): it says so
    return ref


def refs_blocking(cwd: str, prefix: str = "refs/") -> str | None:
    """The first loose ref file under ``prefix`` (``refs/heads/``; a ref's own name too)
    that git, listing the refs of ``cwd`` (``for-each-ref``, a fetch's negotiation, a
    repack), would open and wait on for ever (:func:`waits`); None when there is none.
    A walk of the directories git reads for the same list: a ``stat`` only for what is
    neither a directory nor a plain file."""
    if not prefix.startswith("refs/") or ".." in prefix.split("/"):
        return None
    dirs = _dirs(cwd)
    return None if dirs is None else _walk_waits(os.path.join(dirs[1], prefix.rstrip("/")))


def _walk_waits(path: str) -> str | None:
    try:
        entries = os.scandir(path)
    except NotADirectoryError:
        return path if waits(path) else None  # a ref's own name
    except OSError:
        return None  # missing (no such ref), or unreadable: git says so at once
    with entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                found = _walk_waits(entry.path)
                if found is not None:
                    return found
            elif not entry.is_file(follow_symlinks=False) and waits(entry.path):
                return entry.path
    return None


def waits(path: str) -> bool:
    """Whether an ``open`` of ``path`` for reading, as git's, waits for ever: a FIFO, or a
    character device other than the null device (a terminal waits for input); links
    followed. A socket, a directory, a missing file: git fails, or skips it, at once."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return False
    return S_ISFIFO(found.st_mode) or (S_ISCHR(found.st_mode) and not _null(found.st_rdev))


def _common(git_dir: str) -> str:
    """The common directory of ``git_dir``: the one its ``commondir`` names, or itself."""
    try:
        named = read_plain(os.path.join(git_dir, "commondir"), follow=True)
    except OSError:
        return git_dir
    return os.path.join(git_dir, named.decode("utf-8", "surrogateescape").strip())


def _head_ref(git_dir: str, common: str) -> str | None:
    """The loose ref HEAD names (``ref: refs/heads/NAME``) when it is there but no plain
    file; None otherwise (HEAD detached, or the ref packed or missing)."""
    try:
        head = read_plain(os.path.join(git_dir, "HEAD"), follow=True)
    except OSError:
        return None
    if not head.startswith(b"ref: refs/"):
        return None
    name = head[len(b"ref: ") :].strip().decode("utf-8", "surrogateescape")
    if ".." in name.split("/"):
        return None  # no ref git would take: it says so
    return unreadable(common, (name,))


def _reverts(sequencer: str) -> bool:
    """Whether the sequencer's next step is a revert (``git revert A..B``). Read only from
    a plain file: a FIFO put there would make ``open`` wait for a writer for ever."""
    try:
        todo = read_plain(os.path.join(sequencer, "todo"))
    except OSError:
        return False
    return todo.split(b"\n", 1)[0].split(b" ", 1)[0] == b"revert"
