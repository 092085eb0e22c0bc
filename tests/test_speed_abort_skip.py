"""``series rebase --abort`` and ``--skip`` start few git processes and no GitPython (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is what the two ask of git (a ``git`` shim first on PATH counts
the processes), which modules they load, and that the checkout, the
series and the backup refs are what they were before the cuts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import GitShim, files_commit, git, modules_in, run_fresh, series_probe
from rebase_helpers import commit_upstream, moving_project, resolve_p1
from series.errors import SeriesError
from series.git import GitFailed, Repo
from series.git.history import start_infos
from series.git.objects import loose_blob
from series.git.ref_files import loose_ref
from series.git.run import light_processes
from series.git.worktree import start_added
from test_speed_rebase import modules_after, stopped


def test_abort_does_not_import_gitpython(tmp_path: Path) -> None:
    """--abort's git work is a few queries and one move of the files: its processes start
    without GitPython, whose import cost more than all of them (series.git.run)."""
    project, _ = stopped(tmp_path)
    before = git(project.work, "rev-parse", "series")
    modules = modules_after(project.root, "rebase", "--abort")
    assert "series.stack.rebase_abort" in modules
    assert not [m for m in modules if m == "git" or m.startswith(("git.", "gitdb", "smmap"))]
    work = project.work
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "rev-parse", "HEAD") == before
    assert git(work, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(work, "for-each-ref", "refs/series/rebase/", "refs/series/backup/") == ""


def test_the_abort_floor_of_the_bench_does_the_abort_s_git_work(tmp_path: Path) -> None:
    """ci/abort_floor.py, the bench's floor of --abort (its row against git's abort), runs
    the git processes series' abort cannot do without and nothing else: it must leave the
    checkout as series' abort does (HEAD on the branch at its tip, the files the branch's,
    the rebase's and the stop's refs gone), or its row would be a floor of less work."""
    project, _ = stopped(tmp_path)
    work = project.work
    tip = git(work, "rev-parse", "refs/heads/series")
    assert git(work, "for-each-ref", "refs/series/rebase/", "refs/series/stop/") != ""
    floor = Path(__file__).resolve().parent.parent / "ci" / "abort_floor.py"
    done = subprocess.run(
        [sys.executable, str(floor), str(work), "series"], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "rev-parse", "HEAD") == tip
    assert git(work, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(work, "for-each-ref", "refs/series/rebase/", "refs/series/stop/") == ""


def test_skip_does_not_import_gitpython(tmp_path: Path) -> None:
    """--skip, the replay of the patches after the stop included: no GitPython; the
    patch is dropped with its record, what the user left at the stop kept, as before."""
    project, _ = stopped(tmp_path)
    work = project.work
    (work / "notes.txt").write_text("mine\n")
    modules = modules_after(project.root, "rebase", "--skip")
    assert "series.stack.rebase_driver" in modules
    assert not [m for m in modules if m == "git" or m.startswith(("git.", "gitdb", "smmap"))]
    refs = git(work, "for-each-ref", "--format=%(refname)", "refs/series/backup/").split()
    kept = [r for r in refs if r.endswith("-rebase-skip")]
    assert len(kept) == 1 and "notes.txt" in git(work, "ls-tree", "--name-only", kept[0])
    assert "P1" in (project.root / "series.toml").read_text().split("[[dropped]]", 1)[1]
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "for-each-ref", "refs/series/rebase/state") == ""


def test_a_small_tree_read_through_cat_file_is_ls_trees_answer(tmp_path: Path) -> None:
    """``Objects.small_tree_files`` (the snapshot --abort restores, read through the
    long-lived cat-file) gives exactly ``ls-tree -r``'s paths, ids and order: nested
    directories, a name that sorts after its directory's, spaces, non-ASCII, a gitlink;
    and ls-tree's own answer for a tree it cannot read that way."""
    repo_dir = tmp_path / "repo"
    files = {
        "series.toml": "x\n",
        "patches/a b.patch": "1\n",
        "patches/deep/é.patch": "2\n",
        "patches.txt": "3\n",
        "patches-x/z": "4\n",
    }
    commit = files_commit(repo_dir, files, gitlink="vendored", message="snapshot")
    repo = Repo(repo_dir)
    wanted = repo.objects.tree_files(commit)
    assert list(repo.objects.small_tree_files(commit).items()) == list(wanted.items())
    assert "patches/deep/é.patch" in wanted and wanted["vendored"] == "1" * 40
    # a blob is no tree: the answer is ls-tree's (which refuses it, as before)
    blob = wanted["series.toml"]
    with pytest.raises(GitFailed):
        repo.objects.small_tree_files(blob)


def test_head_read_from_its_file_is_rev_parses_answer_or_none(tmp_path: Path) -> None:
    """``Refs.head_and_ref_read`` (--abort reads HEAD from its file, no process) gives
    ``head_and_ref``'s answer on a branch, detached, and detached at an annotated tag
    (peeled to its commit); None where the file alone cannot tell it: an unborn branch,
    a branch the listing lacks, a HEAD naming no commit, a HEAD file git would not
    write."""
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q", "-b", "main")
    (repo_dir / "f").write_text("1\n")
    git(repo_dir, "add", "f")
    git(repo_dir, "commit", "-qm", "one")
    first = git(repo_dir, "rev-parse", "HEAD")
    git(repo_dir, "commit", "-qm", "two", "--allow-empty")
    git(repo_dir, "tag", "-a", "-m", "t", "v1", first)
    repo = Repo(repo_dir)
    git_dir = repo_dir / ".git"

    def read() -> tuple[str | None, str | None] | None:
        return repo.refs.head_and_ref_read(git_dir, repo.refs.under("refs/"))

    assert (
        read()
        == repo.refs.head_and_ref()
        == (git(repo_dir, "rev-parse", "HEAD"), "refs/heads/main")
    )
    git(repo_dir, "checkout", "-q", "--detach", first)
    assert read() == repo.refs.head_and_ref() == (first, None)
    tag = git(repo_dir, "rev-parse", "v1")
    (git_dir / "HEAD").write_text(f"{tag}\n")  # git refuses to, a hand may not
    assert tag != first and read() == repo.refs.head_and_ref() == (first, None)
    tree = git(repo_dir, "rev-parse", f"{first}^{{tree}}")
    (git_dir / "HEAD").write_text(f"{tree}\n")
    assert read() is None and repo.refs.head_and_ref()[0] is None  # no commit for either
    git(repo_dir, "checkout", "-q", "main")
    assert repo.refs.head_and_ref_read(git_dir, {}) is None  # the branch not listed
    git(repo_dir, "checkout", "-q", "--orphan", "unborn")
    assert read() is None
    listed = repo.refs.under("refs/")
    for text in ("garbage\n", "ref: HEAD\n", f"{first.upper()}\n"):
        (git_dir / "HEAD").write_text(text)
        assert repo.refs.head_and_ref_read(git_dir, listed) is None, text


def test_refs_read_from_their_files_are_for_each_refs_answer_or_gits(tmp_path: Path) -> None:
    """``Refs.under_read`` (--abort and --skip list the refs from their loose files, no
    process) gives exactly ``for-each-ref``'s answer (names, ids, order); and git's own
    answer wherever the files alone might not hold it: a ref to a missing object (git
    leaves it out), a symbolic ref, a link, a name git would not take, a
    half-written file, packed refs (a FIFO: git itself waits on it for ever)."""
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q", "-b", "main")
    git(repo_dir, "commit", "-qm", "one", "--allow-empty")
    head = git(repo_dir, "rev-parse", "HEAD")
    for name in ("refs/heads/a-b_c.d", "refs/series/rebase/state", "refs/tags/v1", "refs/x/y/z"):
        git(repo_dir, "update-ref", name, head)
    git(repo_dir, "tag", "-a", "-m", "t", "v2")
    repo = Repo(repo_dir)
    git_dir = repo_dir / ".git"
    calls: list[str] = []
    real = repo.refs.under

    def asked(prefix: str, *more: str) -> dict[str, str]:
        calls.append(prefix)
        return real(prefix, *more)

    repo.refs.under = asked  # type: ignore[method-assign]

    def same(prefix: str = "refs/") -> bool:
        read, wanted = repo.refs.under_read(git_dir, prefix), real(prefix)
        return list(read.items()) == list(wanted.items())

    assert same() and same("refs/series/") and same("refs/nothing/") and not calls
    assert len(real("refs/")) == 6
    loose = git_dir / "refs" / "heads"
    cases: list[tuple[str, Callable[[], object]]] = [
        ("missing", lambda: (loose / "gone").write_text("1" * 40 + "\n")),
        ("symref", lambda: (loose / "sym").write_text("ref: refs/heads/main\n")),
        ("link", lambda: (loose / "link").symlink_to(loose / "main")),
        ("lock", lambda: (loose / "main.lock").write_text(head + "\n")),
        ("half", lambda: (loose / "half").write_text(head[:20])),
        ("upper", lambda: (loose / "upper").write_text(head.upper() + "\n")),
    ]
    for case, make in cases:
        before = {p for p in loose.iterdir()}
        make()
        assert same() and calls == ["refs/"], case
        calls.clear()
        for path in set(loose.iterdir()) - before:
            path.unlink()
    git(repo_dir, "pack-refs", "--all")
    assert same() and same("refs/heads/") and calls == ["refs/", "refs/heads/"]


def test_abort_reads_the_snapshot_without_ls_tree(tmp_path: Path) -> None:
    """What --abort puts back (series.toml, patches/) is read from the long-lived
    cat-file, not from an ``ls-tree`` process; the files are put back byte for byte."""
    project, shimmed = stopped(tmp_path)
    files = sorted((project.root / "patches").glob("*.patch"))
    before = {p: p.read_bytes() for p in [project.root / "series.toml", *files]}
    files[0].write_bytes(before[files[0]] + b"changed\n")
    (project.root / "series.toml").write_bytes(b"# mine\n" + before[project.root / "series.toml"])
    out, calls = shimmed.run(project.root, "rebase", "--abort")
    assert not [c for c in calls if c.startswith("ls-tree")], calls
    assert len(calls) <= 13, calls  # 14 before (with the one-shot read of the two blobs)
    assert "2 project file(s) restored" in out, out
    assert {p: p.read_bytes() for p in before} == before


def test_abort_parses_neither_its_words_nor_series_toml_and_loads_no_engine(
    tmp_path: Path,
) -> None:
    """``series rebase --abort`` is parsed without argparse (series.cli.plain), takes the
    checkout and the patch files from what the start's parse kept (series.known: the
    same series.toml), and loads neither typing nor the parts of the git layer it does
    not use (merges, fetches, history, mail): a fixed cost near git's own (issue 23)."""
    project, _ = stopped(tmp_path)
    modules = modules_after(project.root, "rebase", "--abort")
    assert "series.stack.rebase_abort" in modules
    unused = {
        "argparse",
        "series.cli.parse",
        "series.manifest",
        "tomllib",
        "typing",
        "series.git.names",
        "series.git.mergetree",
        "series.git.remote",
        "series.git.history",
        "series.git.mail",
        "series.git.diffs",
    }
    assert not unused & modules, sorted(unused & modules)
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") == ""


def test_a_resume_loads_neither_the_fetch_nor_the_sdist_nor_tomlkit() -> None:
    """What --skip and --continue import before they run (series.stack.rebase_resume and
    the CLI's words) holds neither the fetch nor the pin's sdist machinery (tarfile,
    html.parser): a resume replays on the target the start fetched. tomlkit is loaded
    only to write series.toml, difflib only where a resolution shows conflict markers,
    argparse not for ``rebase --skip``."""
    probe = (
        "import sys\n"
        "from series import cli\n"
        "assert cli.plain(['rebase', '--skip']) is not None\n"
        "import series.stack.rebase_resume, series.stack.rebase_skip\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    code, out, err = run_fresh(probe)
    assert code == 0, err
    modules = modules_in(out)
    assert "series.stack.rebase_driver" in modules
    unused = {
        "argparse",
        "series.upstream.fetch",
        "series.upstream.pin",
        "series.upstream.sdist_download",
        "tarfile",
        "html.parser",
        "tomlkit",
        "difflib",
    }
    assert not unused & modules, sorted(unused & modules)


def _snapshot_built(calls: list[str]) -> bool:
    """Whether the files were snapshot in a scratch index (``add -A``, ``write-tree``)."""
    return any(c.startswith(("add -A", "write-tree")) for c in calls)


def test_abort_at_a_stop_left_as_it_was_builds_no_snapshot(tmp_path: Path) -> None:
    """The files at the stop are the conflict series wrote: told from the paths git status
    names, hashed against the trees the long-lived cat-file reads (Index.files_are), so no
    scratch index, ``add -A`` or ``write-tree`` (three processes before); nothing kept."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    calls = shimmed.calls(project.root, "rebase", "--abort")
    assert not _snapshot_built(calls), calls
    assert not [c for c in calls if c.startswith("read-tree") and "-u" not in c], calls
    assert len(calls) <= 10, calls  # 13 before
    assert git(work, "for-each-ref", "refs/series/backup/") == ""
    assert git(work, "status", "--porcelain", "--untracked-files=all") == ""


def _conflicted(work: Path) -> str:
    return git(work, "diff", "--name-only", "--diff-filter=U")


def _edit(work: Path, rel: str) -> None:
    (work / rel).write_bytes(b"mine\n")


def _link(work: Path, rel: str) -> None:
    (work / rel).unlink()
    (work / rel).symlink_to("elsewhere")


def _resolve(work: Path, rel: str) -> None:
    (work / rel).write_bytes(b"resolved\n")
    git(work, "add", rel)


CHANGES: dict[str, Callable[[Path, str], None]] = {
    "the conflicted file edited": _edit,
    "the conflicted file removed": lambda w, rel: (w / rel).unlink(),
    "the conflicted file made executable": lambda w, rel: (w / rel).chmod(0o755),
    "the conflicted file made a link": _link,
    "another tracked file edited": lambda w, rel: _edit(w, "pkg/util.py"),
    "an untracked file": lambda w, rel: _edit(w, "pkg/notes.txt"),
    "a file resolved and added": _resolve,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_abort_keeps_what_the_user_changed_at_the_stop(tmp_path: Path, change: str) -> None:
    """Any change of the files at the stop (bytes, removal, mode, kind, a new file, in the
    conflicted file or elsewhere) is no tree series wrote: the snapshot is built and kept
    under a backup ref, every byte as it was on disk, and --abort says where."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    conflicted = _conflicted(work)
    CHANGES[change](work, conflicted)
    on_disk: dict[str, tuple[str, str]] = {}
    for rel in (conflicted, "pkg/util.py", "pkg/notes.txt"):
        file = work / rel
        if file.is_symlink():
            target = tmp_path / "link-target"
            target.write_text(str(file.readlink()))
            on_disk[rel] = ("120000", git(work, "hash-object", "--no-filters", str(target)))
        elif file.exists():
            mode = "100755" if file.stat().st_mode & 0o100 else "100644"
            on_disk[rel] = (mode, git(work, "hash-object", "--no-filters", "--", rel))
    code, out, err, calls = shimmed.said(project.root, "rebase", "--abort")
    assert code == 0, err
    assert _snapshot_built(calls), calls
    refs = git(work, "for-each-ref", "--format=%(refname)", "refs/series/backup/").split()
    assert len(refs) == 1 and refs[0].endswith("-rebase-abort"), refs
    assert refs[0] in out + err
    listed = git(work, "ls-tree", "-r", refs[0], "--", conflicted, "pkg/util.py", "pkg/notes.txt")
    kept: dict[str, tuple[str, str]] = {}
    for line in listed.splitlines():
        meta, path = line.split("\t", 1)
        mode, _, oid = meta.split(" ")
        kept[path] = (mode, oid)
    assert kept == on_disk
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"


def test_abort_loads_neither_subprocess_nor_tempfile(tmp_path: Path) -> None:
    """--abort's long-lived cat-file is started as its one-shot queries are (spawn: no
    subprocess, threading, selectors, locale), its ref transaction's input written
    without tempfile (random, shutil, bz2, lzma): none of them is loaded."""
    project, _ = stopped(tmp_path)
    # git's version known in this cache, as after any command (the first asks it once)
    subprocess.run(
        [sys.executable, "-m", "series", "-C", str(project.root), "status"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    modules = modules_after(project.root, "rebase", "--abort")
    assert "series.stack.rebase_abort" in modules
    loaded = {"subprocess", "threading", "selectors", "tempfile", "shutil", "random"} & modules
    assert not loaded, sorted(loaded)
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") == ""


def test_a_skip_that_stops_again_loads_neither_subprocess_nor_tempfile(tmp_path: Path) -> None:
    """--skip replays the next patch into its own conflict: the merge stream's processes
    are started as the one-shot queries are (spawn: no subprocess, threading, selectors,
    locale), the marked-up files and the objects written in private directories made
    without tempfile (random, shutil, bz2, lzma): none of them is loaded; the stop is the
    next patch's, its file with markers and its stages."""
    project = moving_project(tmp_path, conflict=True)
    up = project.upstream
    commit_upstream(up, "pkg/util.py", "VALUE_5 = 5\n", "VALUE_5 = -5\n", "util: VALUE_5 is -5")
    onto = [sys.executable, "-m", "series", "-C", str(project.root), "rebase", "--onto", "main"]
    done = subprocess.run(
        [*onto, "--upstream", str(up)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 3 and "P1" in done.stderr, done.stderr
    code, out, err = run_fresh(series_probe(project.root, "rebase", "--skip"))
    assert code == 3, err
    modules = modules_in(out)
    assert "series.stack.rebase_driver" in modules
    loaded = {"subprocess", "threading", "selectors", "tempfile", "shutil", "random"} & modules
    assert not loaded, sorted(loaded)
    assert "P2" in err and "pkg/util.py" in err
    assert git(project.work, "ls-files", "-u", "pkg/util.py") != ""
    assert "<<<<<<<" in (project.work / "pkg" / "util.py").read_text()


def test_abort_loads_neither_dataclasses_nor_openssl(tmp_path: Path) -> None:
    """--abort's records (the rebase state, the checkout state, a backup, an ident) are
    series.records' NamedTuple, not dataclasses (which import inspect, ast, dis,
    tokenize, copy); the blob ids of the files it puts back are hashed by Python's own
    ``_sha1`` (series.digests), not OpenSSL's hashlib. The abort is what it was."""
    project, _ = stopped(tmp_path)
    before = git(project.work, "rev-parse", "series")
    modules = modules_after(project.root, "rebase", "--abort")
    assert "series.stack.rebase_abort" in modules
    heavy = {"dataclasses", "inspect", "ast", "dis", "tokenize", "copy", "hashlib", "_hashlib"}
    assert not heavy & modules, sorted(heavy & modules)
    assert len(modules) <= 124, len(modules)  # 138 before, 124 when written, + series.plain, 127
    # then; 122 without shlex and importlib (a command line quoted by series.locks, a
    # command module imported with __import__); 123 with series.git.index_file (the index
    # checked before git reads it: docs/hardening.md, rows 870-877); 124 with zlib (the
    # rebase's state read from its loose object, no wait for cat-file's start)
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(project.work, "rev-parse", "HEAD") == before
    assert git(project.work, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(project.work, "for-each-ref", "refs/series/rebase/", "refs/series/backup/") == ""


def test_the_long_lived_cat_file_ends_with_its_reader(tmp_path: Path) -> None:
    """The cat-file a light query starts answers, and exits (reaped, not left a zombie)
    when its reader goes; a missing name is None, as before."""
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    (repo_dir / "a.txt").write_text("a\n")
    git(repo_dir, "add", "a.txt")
    git(repo_dir, "commit", "-qm", "one")
    probe = (
        "import os\n"
        "from pathlib import Path\n"
        "from series.git.run import Runner, light_processes\n"
        f"run = Runner(Path({str(repo_dir)!r}))\n"
        "with light_processes():\n"
        "    found = run.lookup('HEAD:a.txt')\n"
        "    data = run.object_data(found[0], 'blob')\n"
        "    missing = run.lookup('HEAD:b.txt')\n"
        "pid = run.__dict__['_plain'].proc.pid\n"
        "del run\n"
        "gone = not os.path.exists(f'/proc/{pid}')\n"
        "print(found[1], data, missing, gone)\n"
    )
    code, out, err = run_fresh(probe)
    assert code == 0, err
    assert out.split() == ["blob", "b'a\\n'", "None", "True"], out


def _logged(err: str, *words: str) -> int:
    """The place in ``-v``'s log (series' own order of its steps) of the first line that
    holds every one of ``words``."""
    lines = err.splitlines()
    return next(k for k, line in enumerate(lines) if all(w in line for w in words))


def test_abort_asks_what_its_move_adds_beside_the_status_once(tmp_path: Path) -> None:
    """--abort starts the diff-index of what its move adds (its check of what is in the
    way) with the stop's git status, before it reads the rebase's state from cat-file,
    from the branch's own file: one diff-index, taken by the move; the abort as before."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    tip = git(work, "rev-parse", "refs/heads/series")
    code, _, err, calls = shimmed.said(project.root, "-v", "rebase", "--abort")
    assert code == 0, err
    adds = [c for c in calls if c.startswith("diff-index --cached")]
    assert adds == [f"diff-index --cached -z --no-renames --diff-filter=D {tip}"], calls
    status = _logged(err, "series.git: git --no-optional-locks status")
    asked = _logged(err, "series.git: git diff-index --cached")
    state = _logged(err, "(git cat-file")
    assert status < asked < state, err
    assert "the paths the move adds, read already" in err, err
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "rev-parse", "HEAD") == tip
    assert git(work, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_diff_index_started_early_is_taken_only_from_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """series.git.worktree ``start_added``: the move's check takes the early answer where
    the index file is the one it read (no second diff-index); where the index changed since (a
    path unstaged, so the move would add it again over an ignored file that differs),
    the check asks git again and refuses, as it refuses without the early start."""
    repo_dir = tmp_path / "repo"
    files_commit(repo_dir, {"kept.txt": "one\n", "build.out": "tracked\n"})
    (repo_dir / ".git" / "info" / "exclude").write_text("build.out\n")
    tree = git(repo_dir, "rev-parse", "HEAD^{tree}")
    shim = GitShim(tmp_path)
    monkeypatch.setenv("PATH", shim.env["PATH"])

    def asked() -> int:
        return len([c for c in shim.log.read_text().splitlines() if c.startswith("diff-index")])

    worktree = Repo(repo_dir).worktree
    same = start_added(worktree, tree)
    assert same is not None
    worktree.checkout_tree(None, tree, dry_run=True)  # nothing added, nothing in the way
    same.abandon()
    assert asked() == 1  # the early one, taken

    changed = start_added(worktree, tree)
    assert changed is not None
    git(repo_dir, "rm", "-q", "--cached", "build.out")  # a new index: the move adds it
    (repo_dir / "build.out").write_text("the user's build\n")  # ignored, not the tree's
    with pytest.raises(SeriesError) as refused:
        worktree.checkout_tree(None, tree, dry_run=True)
    assert "build.out" in str(refused.value) + (refused.value.why or ""), refused.value
    changed.abandon()
    assert asked() == 3  # the early one not taken: asked again of the new index
    assert (repo_dir / "build.out").read_text() == "the user's build\n"

    git(repo_dir, "add", "-f", "build.out")  # the index lacks nothing again
    # started as --abort starts it (light processes, a fresh interpreter: here, with
    # subprocess loaded, git runs to its end at the start), then ended unread by its
    # caller (a move that will not come): the move's check asks again, and no answer is
    # taken from the process ended
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from series.git import Repo\n"
        "from series.git.run import light_processes\n"
        "from series.git.worktree import start_added\n"
        f"worktree = Repo(Path({str(repo_dir)!r})).worktree\n"
        "with light_processes():\n"
        f"    ended = start_added(worktree, {tree!r})\n"
        "    assert ended is not None\n"
        "    ended.abandon()\n"
        f"    worktree.checkout_tree(None, {tree!r}, dry_run=True)\n"
        "print('subprocess' in sys.modules)\n"
    )
    code, out, err = run_fresh(probe)
    assert code == 0 and out.split() == ["False"], err
    assert asked() == 5  # the one ended, and the check's own


def test_a_branch_read_from_its_own_file_is_rev_parses_answer_or_none(tmp_path: Path) -> None:
    """``loose_ref`` (--abort's early diff-index names the branch's commit from its file,
    no process): rev-parse's answer for a loose branch; None wherever the file alone may
    not be git's answer: a packed branch, a symbolic ref, a half-written file, a name git
    would question, a linked work tree's git directory, no such branch."""
    repo_dir = tmp_path / "repo"
    head = files_commit(repo_dir, {"f": "1\n"})
    git(repo_dir, "branch", "-M", "main")
    git(repo_dir, "branch", "topic/a-b_c.d")
    git_dir = str(repo_dir / ".git")
    assert loose_ref(git_dir, "refs/heads/main") == head
    assert loose_ref(git_dir, "refs/heads/topic/a-b_c.d") == head
    heads = repo_dir / ".git" / "refs" / "heads"
    for name, text in (("sym", "ref: refs/heads/main\n"), ("half", head[:20])):
        (heads / name).write_text(text)
        assert loose_ref(git_dir, f"refs/heads/{name}") is None, name
    (heads / "link").symlink_to(heads / "main")  # git's to read, not followed here
    assert loose_ref(git_dir, "refs/heads/link") is None
    (heads / "main.lock").write_text(head + "\n")  # a ref being written: git's to read
    (repo_dir / ".git" / "outside").write_text(head + "\n")  # no ref's file
    for name in ("refs/../outside", "refs/heads/main.lock", "heads/main", "refs/heads/no"):
        assert loose_ref(git_dir, name) is None, name
    (heads / "main.lock").unlink()
    git(repo_dir, "worktree", "add", "-q", "--detach", str(tmp_path / "linked"))
    linked = git(tmp_path / "linked", "rev-parse", "--absolute-git-dir")
    (Path(linked) / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (Path(linked) / "refs" / "heads" / "main").write_text("1" * 40 + "\n")  # not git's
    assert loose_ref(linked, "refs/heads/main") is None
    git(repo_dir, "pack-refs", "--all")
    assert loose_ref(git_dir, "refs/heads/main") is None
    assert git(repo_dir, "rev-parse", "refs/heads/main") == head


def test_a_stop_asks_what_its_move_adds_beside_its_transaction(tmp_path: Path) -> None:
    """A --skip that stops again at the next patch: the diff-index of what the conflict's
    move adds starts before the stop's transaction (neither needs the other), once, and
    the move takes it; the stop is written as before (markers, stages, the state)."""
    project = moving_project(tmp_path, conflict=True)
    up = project.upstream
    commit_upstream(up, "pkg/util.py", "VALUE_5 = 5\n", "VALUE_5 = -5\n", "util: VALUE_5 is -5")
    shim = GitShim(tmp_path)
    code, _, err, _ = shim.said(project.root, "rebase", "--onto", "main", "--upstream", str(up))
    assert code == 3 and "P1" in err, err
    code, _, err, calls = shim.said(project.root, "-v", "rebase", "--skip")
    assert code == 3 and "P2" in err, err
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") != ""
    adds = [c for c in calls if c.startswith("diff-index --cached")]
    assert len(adds) == len(set(adds)), calls  # none asked twice
    stop_txn = _logged(err, "series.git: git update-ref -m checkout: moving from")
    asked = [k for k, line in enumerate(err.splitlines()) if "git diff-index --cached" in line]
    assert asked and asked[-1] < stop_txn, err
    assert "the paths the move adds, read already" in err.split("moving from", 1)[1], err
    assert git(project.work, "ls-files", "-u", "pkg/util.py") != ""
    assert "<<<<<<<" in (project.work / "pkg" / "util.py").read_text()


def test_a_blob_read_from_its_loose_file_is_cat_files_answer_or_none(tmp_path: Path) -> None:
    """``loose_blob`` (the rebase's state read with no process): cat-file's bytes for a
    loose blob; None wherever the file alone may not be git's answer: the object packed,
    a replace ref (loose or packed), a file holding another object's bytes, a truncated
    file, an object that is no blob, a name that is no object id."""
    repo_dir = tmp_path / "repo"
    files_commit(repo_dir, {"f": "state\n"})
    git_dir = str(repo_dir / ".git")
    blob = git(repo_dir, "rev-parse", "HEAD:f")
    other = git(repo_dir, "rev-parse", "HEAD^{tree}")
    assert loose_blob(git_dir, blob) == b"state\n" == Repo(repo_dir).objects.read_blob(blob)
    assert loose_blob(git_dir, other) is None  # a tree
    assert loose_blob(git_dir, blob.upper()) is None and loose_blob(git_dir, "../f") is None
    path = repo_dir / ".git" / "objects" / blob[:2] / blob[2:]
    good = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(good[:-3])  # cut short
    assert loose_blob(git_dir, blob) is None
    (tmp_path / "other").write_text("not the state\n")
    replacement = git(repo_dir, "hash-object", "-w", str(tmp_path / "other"))
    other_file = repo_dir / ".git" / "objects" / replacement[:2] / replacement[2:]
    path.write_bytes(other_file.read_bytes())  # another blob's bytes under its name
    assert loose_blob(git_dir, blob) is None
    path.write_bytes(good)
    assert loose_blob(git_dir, blob) == b"state\n"
    path.rename(tmp_path / "elsewhere")
    path.symlink_to(tmp_path / "elsewhere")  # a link in the object store: not followed
    assert loose_blob(git_dir, blob) is None
    path.unlink()
    (tmp_path / "elsewhere").rename(path)
    git(repo_dir, "replace", blob, replacement)
    assert loose_blob(git_dir, blob) is None  # git reads the replacement
    git(repo_dir, "pack-refs", "--all")
    for empty in sorted((repo_dir / ".git" / "refs" / "replace").glob("**/"), reverse=True):
        empty.rmdir()  # what pack-refs left: no loose replace ref, nor its directory
    assert git(repo_dir, "cat-file", "blob", blob) == "not the state"  # git reads it
    assert loose_blob(git_dir, blob) is None  # the replace ref packed
    git(repo_dir, "replace", "-d", blob)
    git(repo_dir, "repack", "-q", "-a", "-d")
    git(repo_dir, "prune-packed")
    assert not path.exists() and loose_blob(git_dir, blob) is None  # packed


def test_abort_reads_the_state_from_its_files_or_through_git(tmp_path: Path) -> None:
    """--abort reads the rebase's state from its ref's loose file and its loose object (no
    question to cat-file for either); with the state's ref packed and its object packed,
    through git, as before: the abort is the same either way."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    state = git(work, "rev-parse", "refs/series/rebase/state")
    code, _, err, _ = shimmed.said(project.root, "-v", "rebase", "--abort")
    assert code == 0, err
    asked = [f"read {state}", "lookup refs/series/rebase/state"]
    assert not [line for line in err.splitlines() if any(a in line for a in asked)], err
    assert git(work, "for-each-ref", "refs/series/rebase/") == ""

    again = moving_project(tmp_path / "again", conflict=True)
    up = str(again.upstream)
    shimmed.calls(again.root, "rebase", "--onto", "main", "--upstream", up, code=3)
    work = again.work
    state = git(work, "rev-parse", "refs/series/rebase/state")
    git(work, "pack-refs", "--all")
    git(work, "repack", "-q", "-a", "-d")
    git(work, "prune-packed")
    assert not (work / ".git" / "objects" / state[:2] / state[2:]).exists()
    code, out, err, _ = shimmed.said(again.root, "-v", "rebase", "--abort")
    assert code == 0, err
    assert [line for line in err.splitlines() if "lookup refs/series/rebase/state" in line], err
    assert "rebase aborted" in out + err
    assert git(work, "for-each-ref", "refs/series/rebase/") == ""
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"


_SPAWNS = (
    "import os, sys\n"
    "SPAWNED = []\n"
    "_spawn = os.posix_spawnp\n"
    "def _recorded(path, argv, *rest, **kw):\n"
    "    SPAWNED.append((' '.join(argv[1:]), 'series.stack.rebase_driver' in sys.modules))\n"
    "    return _spawn(path, argv, *rest, **kw)\n"
    "os.posix_spawnp = _recorded\n"
    "import atexit, json\n"
    "atexit.register(lambda: sys.stderr.write('SPAWNED ' + json.dumps(SPAWNED) + '\\n'))\n"
)


def _spawned(root: Path, *args: str) -> tuple[int, str, list[tuple[str, bool]]]:
    """Exit code and stderr of ``series -C root ARGS`` in a fresh interpreter, and each git
    it started, in order: its arguments, and whether the rebase's driver
    (series.stack.rebase_driver) was imported by then."""
    code, _, err = run_fresh(series_probe(root, *args, before=_SPAWNS))
    line = next(x for x in err.splitlines() if x.startswith("SPAWNED "))
    spawned = [(argv, loaded) for argv, loaded in json.loads(line.removeprefix("SPAWNED "))]
    return code, err, spawned


def test_skip_starts_its_status_before_the_driver_is_imported(tmp_path: Path) -> None:
    """--skip's git status of what the user changed at the stop starts as --abort's does,
    before the checkout and the driver are imported: it runs meanwhile; the long-lived
    cat-file starts before the merge stream, not at the first question. The skip as
    before: P1 dropped, the rebase at its end, what the user changed kept."""
    project, _ = stopped(tmp_path)
    (project.work / "notes.txt").write_text("mine\n")
    code, err, spawned = _spawned(project.root, "rebase", "--skip")
    assert code == 0, err
    status = [loaded for argv, loaded in spawned if "status" in argv.split()]
    assert status and not status[0], spawned  # the first status: before the driver
    work = [argv for argv, _ in spawned if argv != "version"]  # the check of git's, if run
    assert "status" in work[0].split(), spawned
    assert _first(spawned, "cat-file") < _first(spawned, "merge-tree"), spawned
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") == ""
    assert (project.work / "notes.txt").read_text() == "mine\n"
    assert git(project.work, "for-each-ref", "refs/series/backup/") != ""  # notes.txt kept


def _first(spawned: list[tuple[str, bool]], word: str) -> int:
    """Where the first git with ``word`` among its arguments was started."""
    return next(k for k, (argv, _) in enumerate(spawned) if word in argv.split())


def test_continue_starts_its_merges_and_reads_beside_its_checks(tmp_path: Path) -> None:
    """--continue starts its merge stream (merge-tree, hash-object) before it checks what is
    staged (write-tree), and the log of the series' commits before it reads whether the
    branch or the target moved (cat-file's answers): none waits for another's start.
    The rebase as before: to its end, P1's resolution recorded."""
    project, _ = stopped(tmp_path)
    resolve_p1(project.work)
    code, err, spawned = _spawned(project.root, "rebase", "--continue")
    assert code == 0, err
    assert _first(spawned, "merge-tree") < _first(spawned, "write-tree"), spawned
    assert "return 1001" in (project.work / "pkg" / "core.py").read_text()
    assert list((project.root / "resolutions" / "P1").glob("*.patch"))
    assert git(project.work, "for-each-ref", "refs/series/rebase/state") == ""


def test_a_resume_starts_the_log_of_its_commits_before_its_checks(tmp_path: Path) -> None:
    """--continue (and --skip, --edit's resumes: the same code) starts the ``log`` of the
    series' commits beside its checks of whether the branch or the target moved, and
    reads it after them: one log, taken."""
    project, shimmed = stopped(tmp_path)
    resolve_p1(project.work)
    code, _, err, calls = shimmed.said(project.root, "-v", "rebase", "--continue")
    assert code == 0, err
    logs = [c for c in calls if c.startswith("log --reverse --first-parent")]
    assert len(logs) == 1, calls
    started = _logged(err, "series.git: git log --reverse --first-parent", "started beside")
    onto = _logged(err, "lookup refs/series/rebase/onto")
    assert started < onto, err


def test_commit_infos_take_an_early_log_only_for_their_range(tmp_path: Path) -> None:
    """series.git.history ``start_infos``: ``commit_infos`` reads the log started early for
    the very range it is asked; one started for another range is ended unread and the
    range asked is read as without it."""
    repo_dir = tmp_path / "r"
    commits = [files_commit(repo_dir, {"f0.txt": "0\n"})]
    for k in range(1, 4):
        (repo_dir / f"f{k}.txt").write_text(f"{k}\n")
        git(repo_dir, "add", "-A")
        git(repo_dir, "commit", "-q", "-m", f"c{k}")
        commits.append(git(repo_dir, "rev-parse", "HEAD"))
    history = Repo(repo_dir).history
    plain = history.commit_infos(commits[0], commits[3])
    assert [i.commit for i in plain] == commits[1:]
    with light_processes():
        early = start_infos(history, commits[0], commits[3])
        assert history.commit_infos(commits[0], commits[3], early=early) == plain
        other = start_infos(history, commits[1], commits[3])
        assert history.commit_infos(commits[0], commits[3], early=other) == plain
        assert other.done  # read or ended: never left running
