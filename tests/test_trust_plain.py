"""Files series or git keeps, replaced by what no one writes there: nothing waits for ever.

Every record series keeps (the per-user cache's ``patchinfo/``, ``known/``,
``commitfiles/``, ``patchids/``, ``manifests/``, ``status/``, ``verified/``, and
``series/verified.json`` in the checkout's git directory) is read through one
reader, series.plain.read_plain: a plain file only, no link followed, a FIFO
opened without waiting. main opened the first four plainly: a FIFO there made
the command wait for a writer for ever. git status itself waits on a FIFO in
the place of its own files (``sequencer/todo``, ``index``...): series refuses
before starting it, naming the file. And a git killed by a file size limit
(SIGXFSZ, ``ulimit -f``), which says nothing, is named as that, not taken for an
unreachable URL or a bug in series.

Each command runs as its own process, bounded (helpers.series_process): a test
that fails fails within the bound, it does not hang the suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Project, make_project, run_fresh, series_process
from rebase_helpers import moving_project, resolve_p1
from series import known, manifest_kept, patchinfo, refnames, status_memo
from series.errors import Exit
from series.evidence import patchids
from series.stack import verified, verified_kept
from series.upstream import rangelog

BOUND = 60  # seconds: a run that waits on a FIFO never ends

# the commands that read each record, their answers compared before and after
COMMANDS = (
    ("list",),
    ("show", "P1"),
    ("status",),
    ("apply",),
    ("check-conflicts", "--onto", "main"),  # last: see below
)
KEPT = (
    patchinfo.DIR,
    known.DIR,
    rangelog.KIND,
    patchids.KIND,
    manifest_kept.DIR,
    status_memo.DIR,
    verified_kept.DIR,  # apply's kept answer: so its full run reads known/
)


def _cache() -> Path:
    return Path(os.environ["SERIES_CACHE_DIR"])


def _records(project: Project) -> list[Path]:
    """Every record kept for ``project``: in the cache's directories, and in its checkout."""
    found = [p for d in KEPT for p in sorted((_cache() / d).glob("*")) if p.is_file()]
    return [*found, project.work / ".git" / verified.NAME]


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link_to_fifo(path: Path) -> None:
    fifo = path.parent / f"fifo-{path.name}"
    os.mkfifo(fifo)
    path.unlink()
    path.symlink_to(fifo)


@pytest.mark.parametrize("make", [_fifo, _link_to_fifo], ids=["fifo", "link to a fifo"])
def test_records_replaced_by_a_fifo_block_no_command(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    project = moving_project(tmp_path)
    for args in COMMANDS:
        assert series_process(project.root, *args, timeout=BOUND)[0] == 0, args  # kept
    # check-conflicts first: show says when it last ran (conflicts/alone.py, not replaced)
    order = (COMMANDS[-1], *COMMANDS[:-1])
    said = {args: series_process(project.root, *args, timeout=BOUND)[:2] for args in order}
    records = _records(project)
    kinds = {p.parent.name for p in records}
    assert set(KEPT) | {verified.NAME.parent.name} == kinds, kinds  # each was kept
    for path in records:
        make(path)
    for args in COMMANDS:
        code, out, err = series_process(project.root, *args, timeout=BOUND)  # ends
        assert (code, out) == said[args], (args, err)  # the answer worked out again
        assert "Traceback" not in err, err
    for path in records[:-1]:  # kept again as files
        if make is _link_to_fifo and path.parent.name == verified_kept.DIR:
            continue  # kept with the checkout's record only, which stays a link (below)
        assert path.is_file() and not path.is_symlink(), path
    # the checkout's record: a link there is not replaced (series.files.confined: series
    # writes no file of the project through a link), nor followed
    assert records[-1].is_symlink() if make is _link_to_fifo else records[-1].is_file()


@pytest.fixture
def applied(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    return project


@pytest.mark.parametrize(
    "name",
    ["sequencer/todo", "CHERRY_PICK_HEAD", "rebase-merge/head-name", "index", "logs/HEAD"],
)
def test_a_fifo_git_status_would_wait_on_is_refused_naming_it(applied: Project, name: str) -> None:
    """main: ``series status`` (and every command that asks ``git status``) waited for ever
    with git on a FIFO at ``.git/sequencer/todo``; also with its report kept."""
    project = applied
    assert series_process(project.root, "status", timeout=BOUND)[0] == 0  # the report kept
    path = project.work / ".git" / name
    path.parent.mkdir(exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    for args in (("status",), ("status", "--json")):
        code, _, err = series_process(project.root, *args, timeout=BOUND)
        assert code == Exit.REFUSED, (args, err)
        assert f"{path} is not a plain file" in err and f"rm '{path}'" in err, err
    path.unlink()
    assert series_process(project.root, "status", timeout=BOUND)[0] == 0  # the way on works


LIMIT = 200  # bytes a process may write to a file: git's first object is larger


def test_a_file_size_limit_is_named_for_every_command(applied: Project) -> None:
    """Under ``ulimit -f``, git is killed by SIGXFSZ and says nothing. main: an internal
    error "git init failed unexpectedly (exit -25)" (status, check-conflicts), and for a
    write of series' own a file operation that failed "on a file" (list)."""
    project = applied
    shutil.rmtree(_cache())  # a fresh cache: its repository is made, objects are written
    for args in (("status",), ("check-conflicts",), ("list",), ("apply", "--force")):
        code, _, err = series_process(project.root, *args, limit=LIMIT, timeout=BOUND)
        assert code == Exit.FAILED, (args, err)
        assert "file size limit exceeded (ulimit -f)" in err, (args, err)
        assert "internal error" not in err, err
    assert series_process(project.root, "status", timeout=BOUND)[0] == 0  # without the limit


def test_range_diff_under_a_file_size_limit_names_it_not_the_url(tmp_path: Path) -> None:
    """main: an internal error (git init killed, exit -25) on a fresh cache; with a cache
    that lacked the pin, "cannot fetch ... check the URL, or use --source sdist"
    (docs/hardening.md, row 217's note): its fetch killed by SIGXFSZ."""
    project = moving_project(tmp_path, conflict=True)
    assert project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))[0] == 3
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    shutil.rmtree(_cache())
    code, _, err = series_process(project.root, "range-diff", limit=LIMIT, timeout=BOUND)
    assert code == Exit.FAILED, err
    assert "file size limit exceeded (ulimit -f)" in err and "check the URL" not in err, err
    assert series_process(project.root, "range-diff", timeout=BOUND)[0] == 0


# The files every git command opens in the checkout's git directory (series.git.inprogress.
# EVERY_READS; "BRANCH": the loose ref HEAD names), and what each should be.
EVERY = (
    ("HEAD", "plain file"),
    ("config", "plain file"),
    ("packed-refs", "plain file"),
    ("BRANCH", "plain file"),
    ("objects/info/alternates", "plain file"),
    ("shallow", "plain file"),
    ("commondir", "plain file"),
    ("info/grafts", "plain file"),
    ("objects", "directory"),
)


def _swap_for_fifo(git_dir: Path, name: str) -> tuple[Path, Callable[[], None]]:
    """A FIFO put at ``name`` of ``git_dir`` ("BRANCH": the ref HEAD names), and the way
    back to what was there (the user's ``rm``, then the file or directory moved back)."""
    if name == "BRANCH":
        name = (git_dir / "HEAD").read_text().removeprefix("ref: ").strip()
    path = git_dir / name
    kept = git_dir.parent / f"kept-{path.name}"
    if path.exists():
        path.rename(kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)

    def back() -> None:
        path.unlink()
        if kept.exists():
            kept.rename(path)

    return path, back


@pytest.mark.parametrize(("name", "kind"), EVERY, ids=[n for n, _ in EVERY])
def test_a_fifo_every_git_would_wait_on_is_refused_naming_it(
    applied: Project, name: str, kind: str
) -> None:
    """main: apply's re-run (its first git: ``rev-parse``, or verified's ``git status``)
    and ``series status`` waited for ever on a FIFO at ``.git/config`` (or HEAD's loose
    ref, ``shallow``, ``objects/info/alternates`` ...): every git command opens it."""
    project = applied
    for args in (("apply",), ("status",)):
        assert series_process(project.root, *args, timeout=BOUND)[0] == 0  # kept
    path, back = _swap_for_fifo(project.work / ".git", name)
    for args in (("apply",), ("status",), ("list",)):
        code, _, err = series_process(project.root, *args, timeout=BOUND)
        if args == ("list",):  # answered from the patch files: no git
            assert code == 0, err
            continue
        assert code == Exit.REFUSED, (args, err)
        assert "refusing to run git" in err and f"{path} is not a {kind}" in err, err
        assert f"ls -l '{path}'" in err and f"rm '{path}'" in err, err
    back()
    for args in (("apply",), ("status",)):  # the way on works
        assert series_process(project.root, *args, timeout=BOUND)[0] == 0, args


@pytest.mark.parametrize("name", ["config", "HEAD", "packed-refs"])
def test_a_fifo_in_the_cache_repository_is_refused_naming_it(applied: Project, name: str) -> None:
    """The cache repository's files, which the first git a full run starts there opens:
    main waited for ever (``apply --force`` builds the stack there)."""
    project = applied
    cache_repo = Path(os.environ["SERIES_CACHE_DIR"]) / "upstream.git"
    path, back = _swap_for_fifo(cache_repo, name)
    code, _, err = series_process(project.root, "apply", "--force", timeout=BOUND)
    assert code == Exit.REFUSED, err
    assert f"refusing to run git: {path} is not a plain file" in err, err
    back()
    assert series_process(project.root, "apply", "--force", timeout=BOUND)[0] == 0


FIFO_PROBE = """
import os, sys
from series.stack import branches_kept, verified_kept
root = sys.argv[1] if len(sys.argv) > 1 else {root!r}
os.mkfifo(os.path.join(root, "0001-a.patch"))
os.makedirs(os.path.join(root, ".series"))
os.mkfifo(os.path.join(root, branches_kept.LOCK))
print(branches_kept.identities(root, ["0001-a.patch"]))
print(branches_kept._held(root), verified_kept._shared(root))
"""


def test_a_fifo_the_kept_answers_read_waits_for_nothing(tmp_path: Path) -> None:
    """main: ``branches_kept.identities`` opened each patch file with ``open`` (a FIFO put
    there after the full run made it wait for a writer), and the project lock was opened
    without ``O_NONBLOCK`` by both kept answers (``_held``, ``_shared``)."""
    code, out, err = run_fresh(FIFO_PROBE.format(root=str(tmp_path)))
    assert code == 0, err
    assert out.split("\n")[:2] == ["-", "True None"], out


def _config_env(home: Path, scope: str) -> tuple[dict[str, str], Path]:
    """This test's environment with git's ``scope`` configuration file a FIFO (or a link to
    one), and the path of that file: as a user's machine has it, not the test's."""
    env = dict(os.environ)
    fifo = home / "fifo-config"
    os.mkfifo(fifo)
    if scope == "system":  # /etc/gitconfig itself is the machine's: GIT_CONFIG_SYSTEM names it
        del env["GIT_CONFIG_NOSYSTEM"]
        env["GIT_CONFIG_SYSTEM"] = str(fifo)
        return env, fifo
    if scope == "GIT_CONFIG_GLOBAL":
        env["GIT_CONFIG_GLOBAL"] = str(fifo)
        return env, fifo
    del env["GIT_CONFIG_GLOBAL"]  # git reads ~/.gitconfig and XDG's (the test's home)
    path = {
        "~/.gitconfig": home / ".gitconfig",
        "link at ~/.gitconfig": home / ".gitconfig",
        "XDG_CONFIG_HOME": Path(env["XDG_CONFIG_HOME"]) / "git" / "config",
        "~/.config/git/config": home / ".config" / "git" / "config",
    }[scope]
    if scope == "~/.config/git/config":
        del env["XDG_CONFIG_HOME"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if scope.startswith("link"):
        path.symlink_to(fifo)
    else:
        fifo.rename(path)
    return env, path


CONFIG_SCOPES = (
    "~/.gitconfig",
    "link at ~/.gitconfig",
    "XDG_CONFIG_HOME",
    "~/.config/git/config",
    "GIT_CONFIG_GLOBAL",
    "system",
)


@pytest.mark.parametrize("scope", CONFIG_SCOPES)
def test_a_fifo_at_git_s_own_configuration_is_refused_naming_it(
    applied: Project, hermetic: Path, scope: str
) -> None:
    """main: every git series started waited for ever on a FIFO at ``~/.gitconfig`` (or
    XDG's, or the system's): apply's re-run in its ``git status``, the full runs in their
    first git, and ``git version`` where no verdict on it was kept."""
    project = applied
    for kept in ("apply", "check-conflicts", "list"):
        assert series_process(project.root, kept, timeout=BOUND)[0] == 0, kept  # kept
    identity = (hermetic / ".gitconfig").read_bytes()
    env, path = _config_env(hermetic, scope)
    commands: list[tuple[str, ...]] = [("apply",), ("status",), ("check-conflicts",)]
    for args in [*commands, ("rebase", "--onto", "main"), ("list",), ("apply", "--force")]:
        if args == ("apply", "--force"):  # git version asked: no verdict kept on it
            (_cache() / "git-version").unlink()
        code, _, err = series_process(project.root, *args, env=env, timeout=BOUND)
        if args == ("list",):  # answered from what it kept of the patch files: no git
            assert code == 0, err
            continue
        assert code == Exit.REFUSED, (args, err)
        assert f"refusing to run git: {path} is not a plain file" in err, (args, err)
        assert f"rm '{path}'" in err and "Traceback" not in err, err
    path.unlink()  # the way on
    if scope in ("~/.gitconfig", "link at ~/.gitconfig"):
        (hermetic / ".gitconfig").write_bytes(identity)
    for args in [*commands, ("apply", "--force")]:
        assert series_process(project.root, *args, env=env, timeout=BOUND)[0] == 0, args


JOURNAL = Path(".series") / "export-journal.json"  # series.stack.export_files.JOURNAL


@pytest.mark.parametrize("make", ["fifo", "link", "directory"])
def test_an_export_journal_that_is_no_plain_file_is_refused_naming_it(
    applied: Project, make: str
) -> None:
    """main took the journal when ``is_file()``: a FIFO there was no journal (apply said
    "ok", with a file there no export of series wrote), and a link was followed to any
    file of the project, taken for the journal of an export cut short."""
    project = applied
    journal = project.root / JOURNAL
    journal.parent.mkdir(exist_ok=True)
    if make == "fifo":
        os.mkfifo(journal)
    elif make == "link":  # to a journal as export writes one, elsewhere in the project
        elsewhere = journal.with_name("elsewhere.json")
        elsewhere.write_text('{"backup": ".series/backups/none", "files": [], "created": []}\n')
        journal.symlink_to(elsewhere.name)
    else:
        journal.mkdir()
    for args in (("apply",), ("export",), ("edit", "P1")):
        code, _, err = series_process(project.root, *args, timeout=BOUND)
        assert code == Exit.REFUSED, (args, err)
        assert f"refusing to go on: {JOURNAL} is not a plain file" in err, (args, err)
        assert f"rm '{journal}'" in err and "Traceback" not in err, err
    journal.rmdir() if make == "directory" else journal.unlink()  # the way on
    for args in (("apply",), ("export",)):
        assert series_process(project.root, *args, timeout=BOUND)[0] == 0, args


def test_a_legacy_checkout_state_that_is_no_plain_file_is_refused_naming_it(
    applied: Project,
) -> None:
    """A checkout without the state ref is read from main's legacy ``state.json``, which main
    took when ``is_file()``: a FIFO there said "not a series checkout"."""
    project = applied
    subprocess.run(
        ["git", "update-ref", "-d", refnames.STATE], cwd=project.work, check=True, timeout=BOUND
    )
    path = project.work / ".git" / "series" / "state.json"
    path.parent.mkdir(exist_ok=True)
    os.mkfifo(path)
    for args in (("status",), ("apply",), ("export",)):
        code, _, err = series_process(project.root, *args, timeout=BOUND)
        assert code == Exit.REFUSED, (args, err)
        assert f"{path} is not a plain file" in err and f"rm '{path}'" in err, (args, err)
    path.unlink()  # the way on: what a checkout without a state is
    code, _, err = series_process(project.root, "apply", timeout=BOUND)
    assert "not a plain file" not in err, err


def test_a_link_at_the_checkout_s_verified_record_is_taken_as_absent(applied: Project) -> None:
    """``.git/series/verified.json`` as a link (here to a copy of the record itself, valid
    for this very state): not followed, so the re-run of apply is the full run, which
    answers the same; the link is neither written through nor replaced (series writes no
    file of the project through a link). Only speed is lost."""
    project = applied
    record = project.work / ".git" / verified.NAME
    kept = _cache() / verified_kept.DIR  # the answer before the CLI: not what is tested
    assert series_process(project.root, "apply", timeout=BOUND)[0] == 0
    shutil.rmtree(kept, ignore_errors=True)
    code, _, err = series_process(project.root, "apply", timeout=BOUND)
    assert code == 0 and "not rebuilt" in err, err  # the control: the record answers
    copy = record.with_name("copy.json")
    before = record.read_bytes()
    copy.write_bytes(before)
    record.unlink()
    record.symlink_to(copy.name)
    for _ in range(2):  # and again: nothing was kept through the link
        shutil.rmtree(kept, ignore_errors=True)
        code, _, err = series_process(project.root, "apply", timeout=BOUND)
        assert code == 0 and "not rebuilt" not in err, err  # the full run: rebuilt, checked
    assert record.is_symlink() and copy.read_bytes() == before
