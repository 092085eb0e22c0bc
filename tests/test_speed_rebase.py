"""The rebase starts few git processes and fetches once (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is what the rebase asks of git: the fetches (counted by a ``git``
shim first on PATH), the merge batches, and that the answers are still
exactly the ones git gives.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from conflict_helpers import make_case, no_stdbuf, spy_batches, upstream_commit
from helpers import (
    GitShim,
    PatchSpec,
    Project,
    files_commit,
    git,
    make_project,
    modules_in,
    replace_line,
    run_fresh,
    series_probe,
)
from rebase_helpers import commit_upstream, moving_project, resolve_p1
from series import manifest, manifest_kept
from series.git import Repo, TreeMerge, history
from series.git.diffs import diff_of_patch
from series.git.mergetree import MergeStream
from series.git.repo import IS_REPO
from series.git.run import Fed, Started
from series.manifest import Dropped, UpstreamPart
from series.manifest_write import (
    PatchUpdate,
    keep_pin_moved,
    write_parts,
    write_patches,
    write_pin,
    write_rebased,
)


def fetches(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("fetch ")]


def _pinned_off_main(tmp_path: Path) -> tuple[Project, str, str]:
    """A project pinned on a release commit on a side branch (tag v1.1, as Keras tags
    are), main one commit past the fork; the fork and the pin."""
    project = make_project(tmp_path)
    up = project.upstream
    fork = commit_upstream(up, "pkg/util.py", "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20")
    git(up, "checkout", "-q", "-b", "release")
    (up / "VERSION").write_text("1.1\n")
    git(up, "add", "VERSION")
    git(up, "commit", "-qm", "release: 1.1")
    git(up, "tag", "v1.1")
    pin = git(up, "rev-parse", "HEAD")
    git(up, "checkout", "-q", "-")
    commit_upstream(up, "pkg/util.py", "VALUE_21 = 21\n", "VALUE_21 = 2100\n", "util: 21")
    toml = project.root / "series.toml"
    text = toml.read_text().replace('ref = "v1.0"', 'ref = "v1.1"')
    toml.write_text(text.replace(project.commit, pin))
    return project, fork, pin


def test_a_pin_off_upstreams_branch_is_deepened_in_the_fetch_of_rev(tmp_path: Path) -> None:
    """The pin is a release commit on a side branch (as Keras tags are), a shallow root
    in the checkout: REV and the pin's history come in one fetch, not a fetch and a
    deepening one."""
    project, fork, pin = _pinned_off_main(tmp_path)
    up, toml = project.upstream, project.root / "series.toml"
    shimmed = GitShim(tmp_path)
    shimmed.calls(project.root, "apply")
    assert pin in (project.work / ".git" / "shallow").read_text().split()  # a shallow root
    calls = shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", str(up))
    assert len([c for c in fetches(calls) if ":refs/series/rebase/onto" in c]) == 1, fetches(calls)
    assert not [c for c in calls if "--deepen" in c]
    # The range since the pin met at the fork, as git counts it.
    main = git(up, "rev-parse", "main")
    assert git(project.work, "merge-base", pin, main) == fork
    assert git(project.work, "rev-parse", "refs/series/base") == main
    assert f'commit = "{main}"' in toml.read_text()


def test_a_pin_the_cache_keeps_already_is_not_fetched_again(tmp_path: Path) -> None:
    """Two checkouts rebased onto the same commit: the second keeps the new pin in the
    cache without a fetch (the cache's ref holds it already)."""
    project = make_project(tmp_path / "one")
    commit_upstream(
        project.upstream, "pkg/util.py", "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20"
    )
    shimmed = GitShim(tmp_path)
    shimmed.calls(project.root, "apply")
    other = tmp_path / "two"
    shutil.copytree(project.root, other, symlinks=True)
    up = str(project.upstream)
    first = shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up)
    second = shimmed.calls(other, "rebase", "--onto", "main", "--upstream", up)
    into_cache = "refs/series/git/"
    assert len([c for c in fetches(first) if into_cache in c]) == 1, first
    assert [c for c in fetches(second) if into_cache in c] == [], second
    main = git(project.upstream, "rev-parse", "main")
    cache = tmp_path / "cache" / "upstream.git"
    assert git(cache, "rev-parse", f"refs/series/git/{main}") == main
    assert (other / "series.toml").read_text() == (project.root / "series.toml").read_text()


UTIL = "pkg/util.py"
SPREAD = [  # every other line, so only the patch whose own line upstream changed conflicts
    PatchSpec(
        f"P{i}",
        f"util: VALUE_{2 * i} is {2 * i}{2 * i}",
        {UTIL: (f"VALUE_{2 * i} = {2 * i}\n", f"VALUE_{2 * i} = {2 * i}{2 * i}\n")},
    )
    for i in range(1, 13)
]


def cherry_picked(clone: Path, old: str, onto: str) -> str:
    """The tree of ``old`` cherry-picked onto ``onto`` by git itself (the oracle)."""
    git(clone, "checkout", "-q", "--detach", onto)
    git(clone, "cherry-pick", "--allow-empty", old)
    return git(clone, "rev-parse", "HEAD^{tree}")


@pytest.mark.parametrize("how", ["stream", "none", "buffering"])
def test_continue_merges_the_rest_once_each_in_one_process_or_in_two_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """After a conflict, the nine patches left are each merged once, as the walk asks for
    it, in one long-lived merge-tree (``stream``), with no batch; without a ``stdbuf``
    (``none``), or with one that leaves git's output buffered (``buffering``), they are
    speculated in two batches instead of nine. Every tree is git's own cherry-pick."""
    case = make_case(tmp_path, SPREAD)
    project: Project = case.project
    up = project.upstream
    upstream_commit(up, "next", "util: VALUE_27", {UTIL: ("VALUE_27 = 27\n", "VALUE_27 = 0\n")})
    upstream_commit(up, "next", "util: VALUE_6", {UTIL: ("VALUE_6 = 6\n", "VALUE_6 = -6\n")})
    code, _, err = project.run("apply")
    assert code == 0, err
    code, _, err = project.run("rebase", "--onto", "next", "--upstream", str(project.upstream))
    assert code == 3, err
    text = (project.work / UTIL).read_text()
    head, _, rest = text.partition("<<<<<<< new base\n")
    _, _, tail = rest.partition(">>>>>>> P3\n")
    (project.work / UTIL).write_text(head + "VALUE_6 = 66\n" + tail)
    git(project.work, "add", UTIL)
    batched = spy_batches(monkeypatch)
    streams: list[MergeStream] = []
    original = MergeStream.answer

    def answer(self: MergeStream) -> TreeMerge | None:  # each merge's answer, however asked
        streams.append(self)
        return original(self)

    monkeypatch.setattr(MergeStream, "answer", answer)
    with monkeypatch.context() as path:
        no_stdbuf(tmp_path, path, how)
        code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    if how == "stream":  # each of the nine asked of one stream, and no batch
        assert batched == [], [len(b) for b in batched]
        assert len(streams) == 9 and len(set(map(id, streams))) == 1
    else:  # predicted and verified in two batches, not nine
        assert 0 < len(batched) <= 2, [len(b) for b in batched]
        assert len(streams) == (1 if how == "buffering" else 0), streams
    work = project.work
    next_ = git(project.upstream, "rev-parse", "next")
    new = git(work, "rev-list", "--reverse", f"{next_}..series").split()
    old = dict(zip(case.ids, case.commits, strict=True))
    assert len(new) == len(SPREAD)
    clone = tmp_path / "oracle"
    git(tmp_path, "clone", "-q", str(case.author), str(clone))
    git(clone, "fetch", "-q", str(work), "+series:refs/oracle/series")
    for k in range(3, len(SPREAD)):  # P4..P12: each exactly git's cherry-pick
        tree = git(work, "rev-parse", f"{new[k]}^{{tree}}")
        assert tree == cherry_picked(clone, old[f"P{k + 1}"], new[k - 1])
    assert "VALUE_6 = 66\n" in git(work, "show", f"series:{UTIL}")


def test_continue_and_onto_import_no_gitpython(tmp_path: Path) -> None:
    """--onto and --continue start their git processes without GitPython (the same
    processes; its import cost more than any of them but the merges)."""
    project = moving_project(tmp_path, conflict=True)

    def modules(*args: str, code: int) -> set[str]:
        probe = (
            "import sys\n"
            f"sys.argv = ['series', '-C', {str(project.root)!r}, *{list(args)!r}]\n"
            "from series.entry import main\n"
            "code = main()\n"
            "print(' '.join(sorted(sys.modules)))\n"
            "sys.exit(code)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == code, proc.stderr
        return set(proc.stdout.split("\n")[-2].split())

    up = str(project.upstream)
    started = modules("rebase", "--onto", "main", "--upstream", up, code=3)
    assert "series.stack.rebase_driver" in started
    assert not [m for m in started if m == "git" or m.startswith("git.")]
    resolve_p1(project.work, "return -11")
    resumed = modules("rebase", "--continue", code=0)
    assert "series.stack.rebase_finish" in resumed
    assert not [m for m in resumed if m == "git" or m.startswith("git.")]
    # only the pin moved: series.toml's pin lines edited, tomlkit never imported
    assert "tomlkit" not in resumed
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"


def test_abort_reads_only_the_changed_files_to_keep_them(tmp_path: Path) -> None:
    """What --abort keeps of the user's files is the tree ``add -A`` of every file gives,
    found by reading only the files git status names, not hashing the whole tree."""
    project = moving_project(tmp_path, conflict=True)
    shimmed = GitShim(tmp_path)
    up = str(project.upstream)
    shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up, code=3)
    work = project.work
    replace_line(work / "pkg" / "util.py", "VALUE_7 = 7\n", "VALUE_7 = 77\n")
    (work / "notes.txt").write_text("mine\n")
    (work / "pkg" / "scratch.tmp").write_text("ignored\n")
    (work / ".git" / "info" / "exclude").write_text("*.tmp\n")
    (work / "README.md").unlink()
    index = tmp_path / "oracle-index"
    oracle_env = {
        **os.environ,
        "GIT_INDEX_FILE": str(index),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for argv in (["read-tree", "HEAD"], ["add", "-A", "."]):
        subprocess.run(["git", *argv], cwd=work, env=oracle_env, check=True)
    expected = subprocess.run(
        ["git", "write-tree"], cwd=work, env=oracle_env, check=True, capture_output=True, text=True
    ).stdout.strip()
    calls = shimmed.calls(project.root, "rebase", "--abort")
    assert "add -A ." not in calls, calls
    kept = git(work, "for-each-ref", "--format=%(refname)", "refs/series/backup/").split()
    assert len(kept) == 1, kept
    assert git(work, "rev-parse", f"{kept[0]}^{{tree}}") == expected
    assert "notes.txt" in git(work, "ls-tree", "-r", "--name-only", kept[0])


def test_patch_ids_are_read_from_the_cache_the_second_time(tmp_path: Path) -> None:
    """Upstream carries P3: each rebase finds it by patch-id; the second asks git only for
    the match it drops P3 on (P3 and its carrier: a kept patch-id another commit shares is
    asked again, evidence.patchids; tests/test_scale_evidence.py counts the commits), and a
    damaged record is asked again."""
    project = moving_project(tmp_path / "one", carries_p3=True)
    shimmed = GitShim(tmp_path)
    shimmed.calls(project.root, "apply")
    copies = []
    for n in range(3):
        copy = tmp_path / f"copy{n}"
        shutil.copytree(project.root, copy, symlinks=True)
        copies.append(copy)
    up = str(project.upstream)
    runs = []
    for n, copy in enumerate(copies):
        if n == 2:  # every record damaged: asked of git again
            for shard in (tmp_path / "cache" / "patchids").glob("*.json"):
                shard.write_text('{"format": 1, "ids": {"x": 1}}')
        calls = shimmed.calls(copy, "rebase", "--onto", "main", "--upstream", up, "--json")
        runs.append(calls)
    asked = [[c for c in calls if c.startswith("patch-id")] for calls in runs]
    assert [len(a) for a in asked] == [1, 1, 1], asked
    carrier = git(project.upstream, "rev-parse", "main")
    dropped = [(c / "series.toml").read_text() for c in copies]
    assert dropped[0] == dropped[1] == dropped[2]
    assert "P3" in dropped[0].split("[[dropped]]", 1)[1]
    assert carrier in dropped[0].split("[[dropped]]", 1)[1]


def long_upstream(up: Path, commits: int) -> str:
    """``commits`` commits on ``main`` past the pin (one ``fast-import``), each changing a
    file no patch touches; the new tip."""
    chunks = [f"reset refs/heads/main\nfrom {git(up, 'rev-parse', 'main')}\n".encode()]
    for i in range(commits):
        data, msg = f"{i}\n".encode(), f"notes: {i}\n".encode()
        chunks.append(
            f"commit refs/heads/main\ncommitter Up <up@x.invalid> {1700000000 + i} +0000\n"
            f"data {len(msg)}\n".encode()
            + msg
            + f"M 100644 inline NOTES\ndata {len(data)}\n".encode()
            + data
            + b"\n"
        )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=up, input=b"".join(chunks), check=True)
    git(up, "reset", "-q", "--hard", "main")
    return git(up, "rev-parse", "main")


def test_a_long_range_since_the_pin_is_fetched_in_three_fetches_not_doubling(
    tmp_path: Path,
) -> None:
    """3,000 upstream commits since the pin, the pin tagged upstream: REV at the first
    depth, then its history down to the pin's (``--shallow-exclude`` of the tag) and the
    commit below, instead of doubling the depth (5 fetches here, 6 at 5,000)."""
    project = make_project(tmp_path)
    shimmed = GitShim(tmp_path)
    shimmed.calls(project.root, "apply")
    main = long_upstream(project.upstream, 3000)
    up = str(project.upstream)
    calls = shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up)
    onto = [c for c in fetches(calls) if "+main:refs/series/rebase/onto" in c]
    assert len(onto) <= 3, onto
    assert not [c for c in onto if "--deepen=" in c and "--deepen=1 " not in c], onto
    assert "--shallow-exclude=refs/tags/v1.0" in " ".join(onto)
    work = project.work
    # The range since the pin is whole, as git counts it: 3,000 commits, meeting at the pin.
    assert git(work, "merge-base", project.commit, main) == project.commit
    assert git(work, "rev-list", "--count", f"{project.commit}..{main}") == "3000"
    assert git(work, "rev-parse", "refs/series/base") == main
    assert f'commit = "{main}"' in (project.root / "series.toml").read_text()


def test_the_new_pin_is_kept_in_the_cache_without_the_history_the_rebase_fetched(
    tmp_path: Path,
) -> None:
    """The cache keeps the pin a rebase moved to with its tree, as a pin fetched from
    upstream (depth one), not the 200 commits of history the checkout has of it; and
    `series apply` of a new checkout then builds on it without a fetch from upstream."""
    project = make_project(tmp_path)
    shimmed = GitShim(tmp_path)
    shimmed.calls(project.root, "apply")
    main = long_upstream(project.upstream, 200)
    up = str(project.upstream)
    shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up)
    cache = shimmed.cache / "upstream.git"
    assert git(cache, "rev-parse", f"refs/series/git/{main}") == main
    assert git(cache, "rev-list", "--count", main) == "1"
    fresh = tmp_path / "fresh"
    calls = shimmed.calls(project.root, "apply", "--dir", str(fresh))
    assert not [c for c in fetches(calls) if up in c], fetches(calls)
    assert git(fresh, "rev-parse", "refs/series/base") == main


def test_continue_reads_the_resolution_once_and_of_the_snapshot_only_series_toml(
    tmp_path: Path,
) -> None:
    """--continue takes the staged tree with one ``write-tree`` (and the exported patches'
    check its own), and reads series.toml alone of the snapshot, not every saved patch;
    the result is the one resolved by hand."""
    project = moving_project(tmp_path, conflict=True)
    shimmed = GitShim(tmp_path)
    up = str(project.upstream)
    shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up, code=3)
    work = project.work
    saved = git(work, "rev-parse", "refs/series/rebase/saved")
    resolve_p1(work, "return -11")
    staged = git(work, "write-tree")
    calls = shimmed.calls(project.root, "rebase", "--continue")
    assert len([c for c in calls if c == "write-tree"]) == 2, calls
    assert not [c for c in calls if c.startswith("ls-tree") and saved in c], calls
    main = git(project.upstream, "rev-parse", "main")
    first = git(work, "rev-list", "--reverse", f"{main}..series").split()[0]
    assert git(work, "rev-parse", f"{first}^{{tree}}") == staged
    assert "return -11" in git(work, "show", "series:pkg/core.py")
    assert f'commit = "{main}"' in (project.root / "series.toml").read_text()


def test_a_rev_the_checkout_has_is_deepened_to_the_pin_asking_git_where_shallow_is_once(
    tmp_path: Path,
) -> None:
    """REV fetched into the checkout already (at a depth of one), the pin a shallow root
    on a side branch: one deepening fetch meets them, where git keeps the shallow roots
    is asked once, not before and after each fetch, and their merge base once a depth."""
    project, fork, pin = _pinned_off_main(tmp_path)
    up = project.upstream
    shimmed = GitShim(tmp_path)
    shimmed.calls(project.root, "apply")
    git(project.work, "fetch", "-q", "--depth=1", f"file://{up}", "+main:refs/mine/main")
    calls = shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", str(up))
    assert len([c for c in fetches(calls) if "--deepen=" in c]) == 1, fetches(calls)
    assert len([c for c in calls if c == "rev-parse --git-path shallow"]) == 1, calls
    # REV and the pin: asked before the deepening and after it, not again for the range.
    assert len([c for c in calls if c.startswith("merge-base ")]) == 2, calls
    main = git(up, "rev-parse", "main")
    assert git(project.work, "merge-base", pin, main) == fork
    assert git(project.work, "rev-parse", "refs/series/base") == main


def stopped(tmp_path: Path) -> tuple[Project, GitShim]:
    """A project whose rebase onto ``main`` stopped at P1's conflict."""
    project = moving_project(tmp_path, conflict=True)
    shimmed = GitShim(tmp_path)
    up = str(project.upstream)
    shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up, code=3)
    return project, shimmed


def counted(calls: list[str], *argv: str) -> int:
    return len([c for c in calls if c == " ".join(argv)])


HEAD_READS = (
    "rev-parse -q --verify HEAD^{commit}",
    "symbolic-ref -q HEAD",
    "rev-parse HEAD^{commit} --symbolic-full-name HEAD --",  # both in one
)


def head_reads(calls: list[str]) -> int:
    """The git processes that read HEAD (its commit, its branch, or both)."""
    return len([c for c in calls if c in HEAD_READS])


def test_abort_asks_git_once_for_what_it_knows_and_loads_no_driver(tmp_path: Path) -> None:
    """--abort at a stop the user left as it was: the checkout is recognised once, HEAD
    (its commit and branch) read from its file and the refs from their loose files, no
    process for either; the rebase's own commits (HEAD at the stop, the branch) are not walked by
    ``rev-list`` to see that nothing is lost. Everything is back, nothing kept."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    before = git(work, "rev-parse", "series")
    calls = shimmed.calls(project.root, "rebase", "--abort")
    assert counted(calls, *IS_REPO) == 0, calls  # told from its files (ref_files.own_repository)
    assert head_reads(calls) == 0, calls  # 4, then 1 before
    # refs/ listed from its loose files (Refs.under_read: no packed-refs here), no process
    assert not [c for c in calls if c.startswith("for-each-ref")], calls
    assert not [c for c in calls if c.startswith("rev-list")], calls
    # series.toml and patches/ are the snapshot's already: no blob read for them (the
    # one cat-file --batch left is the long-lived reader of the rebase state)
    assert len([c for c in calls if c == "cat-file --batch"]) <= 1, calls
    # 22, 16, then 6 before; 5, and one more since a move asks git which paths it adds
    # (a file git ignores there is not written over: tests/test_trust_ignored.py)
    assert len(calls) <= 6, calls
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "rev-parse", "HEAD") == before
    assert git(work, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(work, "for-each-ref", "refs/series/rebase/", "refs/series/backup/") == ""


def modules_after(root: Path, *args: str) -> set[str]:
    """The modules a fresh interpreter has imported once ``series -C root ARGS`` ran."""
    code, out, err = run_fresh(series_probe(root, *args))
    assert code == 0, err
    return modules_in(out)


def test_abort_imports_neither_the_driver_nor_the_start(tmp_path: Path) -> None:
    project, _ = stopped(tmp_path)
    modules = modules_after(project.root, "rebase", "--abort")
    assert "series.stack.rebase_abort" in modules
    heavy = {"series.stack.rebase", "series.stack.rebase_driver", "series.stack.rebase_finish"}
    assert not heavy & modules
    assert not [m for m in modules if m.startswith(("series.evidence", "series.merge", "rich"))]


def test_skip_asks_git_once_for_the_checkout_and_head_at_the_stop(tmp_path: Path) -> None:
    """--skip keeps what the user changed at the stop (HEAD read once at the stop for
    the check and the backup, not five times), recognises the checkout once, and goes on
    to the end as before."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    (work / "notes.txt").write_text("mine\n")
    calls = shimmed.calls(project.root, "rebase", "--skip")
    assert counted(calls, *IS_REPO) == 0, calls  # told from its files (ref_files.own_repository)
    # HEAD: the check that it stayed reads it from its file, detached at the stop (the
    # backup at the stop uses that reading); so does the end's backup (as it lists refs/)
    assert head_reads(calls) == 0, calls
    refs = git(work, "for-each-ref", "--format=%(refname)", "refs/series/backup/").split()
    kept = [r for r in refs if r.endswith("-rebase-skip")]  # the end keeps the old series too
    assert len(kept) == 1 and "notes.txt" in git(work, "ls-tree", "--name-only", kept[0])
    assert "P1" in (project.root / "series.toml").read_text().split("[[dropped]]", 1)[1]
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"


def test_a_skip_that_stops_again_writes_the_stops_blobs_with_one_hash_object(
    tmp_path: Path,
) -> None:
    """--skip into the next patch's conflict: the stop's marked-up file and its state are
    written by one long-lived ``hash-object`` started at the conflict (series.git.mergetree
    ``start_blobs``), beside the one of the commits: two in all (three before, one per
    write of blobs), and 14 git processes (the ``diff-index`` of the paths the move to the
    next stop adds among them, tests/test_trust_ignored.py; the reset before it told by
    the status read already, 15 before; 14 with a ``merge-base`` of the pin and REV,
    asked where the pin is the base the rebase started from: the range of the report is
    the same whatever it says); the stop is the next patch's, its report names the
    upstream commit that touched the file."""
    project, shimmed = stopped(tmp_path)
    commit_upstream(project.upstream, "pkg/core.py", "return 9\n", "return -9\n", "core: f9")
    shimmed.calls(project.root, "rebase", "--abort")
    up = str(project.upstream)
    shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up, code=3)
    code, _, err, calls = shimmed.said(project.root, "rebase", "--skip")
    assert code == 3, err
    writers = [c for c in calls if c.startswith("hash-object")]
    assert sorted(writers) == [
        "hash-object -w -t blob --no-filters --stdin-paths",
        "hash-object -w -t commit --no-filters --stdin-paths",
    ], calls
    assert not [c for c in calls if c.startswith("merge-base")], calls
    # what the reset to the commit so far adds told by the status --skip reads already (no
    # diff-index); the move to the next stop's conflict asks git
    adds = [c for c in calls if c.startswith("diff-index --cached -z --no-renames --diff-filter=D")]
    assert len(adds) == 1, calls
    assert len(calls) <= 14, (len(calls), calls)  # 13 before each move asked what it adds
    assert git(project.work, "ls-files", "-u", "pkg/core.py") != ""
    assert ">>>>>>> P3" in (project.work / "pkg" / "core.py").read_text()
    touched = git(project.upstream, "log", "-1", "--format=%H %s", "main", "--", "pkg/core.py")
    assert f"  {touched[:12]} core: f9" in err, err


def test_continue_asks_git_once_for_the_checkout_head_and_refs(tmp_path: Path) -> None:
    """--continue after a resolution: the checkout recognised once (not three times),
    conflict stages not listed once write-tree took the index, HEAD not read by git (the
    check and the end's backup read it from its file; four processes once, then one), the
    refs listed once at the end, the paths the end's move adds asked once; the result as
    staged."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    resolve_p1(work, "return -11")
    staged = git(work, "write-tree")
    calls = shimmed.calls(project.root, "rebase", "--continue")
    assert counted(calls, *IS_REPO) == 0, calls  # told from its files (ref_files.own_repository)
    assert not [c for c in calls if c.startswith("ls-files -u")], calls
    assert head_reads(calls) == 0, calls  # the check and the end read it from its file
    # refs/ listed once at the end, from its loose files where they hold every ref
    assert len([c for c in calls if c.startswith("for-each-ref")]) <= 1, calls
    # what the end's move adds read once: its check before anything is written and the one
    # at the move share it, the index being the same file (twice before)
    adds = [c for c in calls if c.startswith("diff-index --cached -z --no-renames --diff-filter=D")]
    assert len(adds) == 1, calls
    main = git(project.upstream, "rev-parse", "main")
    first = git(work, "rev-list", "--reverse", f"{main}..series").split()[0]
    assert git(work, "rev-parse", f"{first}^{{tree}}") == staged
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/series"
    assert git(work, "for-each-ref", "refs/series/rebase/state") == ""


def test_continue_checks_the_resolution_with_no_process_of_its_own_for_its_files(
    tmp_path: Path,
) -> None:
    """--continue reads the conflicted files as staged, and their sides, from the
    long-lived ``cat-file`` (no ``ls-tree`` of the staged tree, no ``cat-file --batch``),
    and checks the clean checkout with one ``diff-files`` (no refresh of the index to
    find nothing); the resolution taken is the one staged."""
    project, shimmed = stopped(tmp_path)
    work = project.work
    resolve_p1(work, "return -11")
    staged = git(work, "write-tree")
    git(work, "update-index", "-q", "--refresh")  # as any `git status` while resolving
    calls = shimmed.calls(project.root, "rebase", "--continue")
    assert not [c for c in calls if c.startswith("ls-tree")], calls
    assert counted(calls, "cat-file", "--batch") == 0, calls
    assert counted(calls, "diff-files", "--quiet") == 1, calls
    assert counted(calls, "update-index", "-q", "--refresh") == 0, calls
    main = git(project.upstream, "rev-parse", "main")
    first = git(work, "rev-list", "--reverse", f"{main}..series").split()[0]
    assert git(work, "rev-parse", f"{first}^{{tree}}") == staged


def test_some_files_of_a_tree_read_through_cat_file_are_ls_trees_answer(tmp_path: Path) -> None:
    """``Objects.tree_files(rev, only=...)`` (the conflicted files --continue checks,
    asked of the long-lived cat-file) is ``ls-tree -r``'s answer for those paths: spaces,
    non-ASCII, a symlink, a gitlink; a path gone or a directory now is left out (there
    ``ls-tree`` answers)."""
    repo_dir = tmp_path / "repo"
    made = {"a b.py": "1\n", "d/é.py": "2\n", "d/e/f": "3\n"}
    commit = files_commit(repo_dir, made, links={"link": "a b.py"}, gitlink="vendored")
    repo = Repo(repo_dir)
    every = repo.objects.tree_files(commit)
    files, directory, gone = ["a b.py", "d/é.py", "link", "vendored"], ["d", "d/e/f"], ["gone"]
    for only in (files, directory, gone + files):
        assert repo.objects.tree_files(commit, only=only) == {
            p: oid for p, oid in every.items() if p in only
        }


def test_abort_puts_back_exactly_the_project_files_that_differ(tmp_path: Path) -> None:
    """Two patch files changed at the stop: --abort writes those two back byte for byte
    (their blobs read from the snapshot) and leaves the others alone."""
    project, shimmed = stopped(tmp_path)
    files = sorted((project.root / "patches").glob("*.patch"))
    before = {p: p.read_bytes() for p in [project.root / "series.toml", *files]}
    untouched = files[2].stat().st_mtime_ns
    files[0].write_bytes(before[files[0]] + b"changed\n")
    files[1].write_bytes(before[files[1]].replace(b"\n", b"\r\n", 1))
    out, _ = shimmed.run(project.root, "rebase", "--abort")
    assert "2 project file(s) restored" in out, out
    assert {p: p.read_bytes() for p in before} == before
    assert files[2].stat().st_mtime_ns == untouched


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("case", ["kept", "dropped", "reordered", "parts", "no sdist"])
def test_the_rebase_writes_series_toml_in_one_parse_as_in_three(case: str) -> None:
    """The end of a rebase parses series.toml once (write_rebased), and writes exactly
    what write_pin, write_patches and write_parts give one after the other."""
    text = (ROOT / "series.toml").read_text(encoding="utf-8")
    if case == "no sdist":
        start = text.index("[upstream.sdist]")
        text = text[:start] + text[text.index("[series]") :]
    path = ROOT / "series.toml"
    loaded = manifest.loads(path, text)
    patches = list(loaded.patches)
    dropped: list[Dropped] = []
    if case in ("dropped", "reordered"):
        gone = patches.pop(2)
        dropped = [
            Dropped(gone.id, gone.title, "upstream", 12, "a" * 40, "b" * 40, gone.file),
            Dropped("PX", "another", "skipped", onto="b" * 40),
        ]
    if case == "reordered":
        patches.reverse()
    updates = [
        PatchUpdate(p.id, p.title + ("!" if k == 1 else ""), p.file, p.branch)
        for k, p in enumerate(patches)
    ]
    updates.append(PatchUpdate("PNEW", "a new one", "patches/new.patch", "new"))
    parts = {}
    if case == "parts":
        parts = {
            patches[0].id: [
                UpstreamPart("c" * 40, ("a.py:1-2", "b.py:3-4|in another form"), "d" * 40)
            ]
        }
    one_by_one = write_parts(
        write_patches(
            loaded,
            updates,
            text=write_pin(text, ref="master", commit="e" * 40, dropped=dropped),
        ),
        parts,
    )
    once = write_rebased(
        loaded, text, ref="master", commit="e" * 40, dropped=dropped, updates=updates, parts=parts
    )
    assert once == one_by_one
    assert 'commit = "' + "e" * 40 + '"' in once


def _pin_moved(text: str) -> str:
    """What the rebase wrote before the line edit: tomlkit's parse, edit and dump."""
    loaded = manifest.loads(ROOT / "series.toml", text)
    updates = [PatchUpdate(p.id, p.title, p.file, p.branch) for p in loaded.patches]
    pinned = write_pin(text, ref="master", commit="e" * 40, dropped=[])
    return write_patches(loaded, updates, text=pinned)


ONLY_PIN = {
    "real": lambda t: t,
    "no sdist": lambda t: t[: t.index("[upstream.sdist]")] + t[t.index("[series]") :],
    "comments, indent, spaces": lambda t: t.replace(
        'ref = "v3.15.1"', '  ref  =  "v3.15.1"   # the release'
    ).replace('source = "auto"', 'source="sdist"#stand-in'),
    "crlf": lambda t: t.replace("\n", "\r\n"),
}


@pytest.mark.parametrize("case", sorted(ONLY_PIN))
def test_a_rebase_that_only_moves_the_pin_edits_its_lines_as_tomlkit_would(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing dropped, no patch moved or renamed, nothing partly upstream: series.toml is
    written without tomlkit (its import and parse are most of the end of a rebase), and
    the bytes are tomlkit's."""
    text = ONLY_PIN[case]((ROOT / "series.toml").read_text(encoding="utf-8"))
    want = _pin_moved(text)
    monkeypatch.setitem(sys.modules, "tomlkit", None)  # importing it fails
    loaded = manifest.loads(ROOT / "series.toml", text)
    updates = [PatchUpdate(p.id, p.title, p.file, p.branch) for p in loaded.patches]
    got = write_rebased(
        loaded, text, ref="master", commit="e" * 40, dropped=[], updates=updates, parts={}
    )
    assert got == want


def test_a_pin_line_the_edit_cannot_prove_is_left_to_tomlkit() -> None:
    """A line that reads as the pin but is inside a multi-line string, a pin in single
    quotes: tomlkit writes them (tomllib would not read the line edit as the pin moved)."""
    real = (ROOT / "series.toml").read_text(encoding="utf-8")
    for text in (
        real.replace('name = "keras"', 'name = """keras\nref = "v0"\n"""'),
        real.replace('ref = "v3.15.1"', "ref = 'v3.15.1'"),
    ):
        loaded = manifest.loads(ROOT / "series.toml", text)
        updates = [PatchUpdate(p.id, p.title, p.file, p.branch) for p in loaded.patches]
        got = write_rebased(
            loaded, text, ref="master", commit="e" * 40, dropped=[], updates=updates, parts={}
        )
        assert got == _pin_moved(text)
        assert tomllib.loads(got)["upstream"]["ref"] == "master"


def test_the_moved_pin_is_proven_by_what_the_start_of_the_rebase_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """keep_pin_moved (the start of a rebase) keeps what tomllib reads of the text the
    end's line edit gives; the end then takes it from the cache: neither tomllib nor
    tomlkit is imported, and the bytes are tomlkit's. A reading kept for that text that
    is not the pin moved (a cache written by anything else) is not taken: tomlkit
    writes series.toml, as where the edit cannot be proven."""
    text = (ROOT / "series.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    loaded = manifest.loads(ROOT / "series.toml", text)
    updates = [PatchUpdate(p.id, p.title, p.file, p.branch) for p in loaded.patches]
    want = _pin_moved(text)
    cache = tmp_path / "cache"

    def written() -> str:
        return write_rebased(
            loaded,
            text,
            ref="master",
            commit="e" * 40,
            dropped=[],
            updates=updates,
            parts={},
            data=data,
            kept=cache,
        )

    keep_pin_moved(loaded, text, ref="master", commit="e" * 40, kept=cache, data=data)
    with monkeypatch.context() as blocked:
        blocked.setitem(sys.modules, "tomllib", None)  # importing either fails
        blocked.setitem(sys.modules, "tomlkit", None)
        assert written() == want
    wrong = tomllib.loads(want)
    wrong["upstream"]["ref"] = "v0"
    manifest_kept.keep(cache, want, wrong, ROOT)
    assert manifest_kept.recall(cache, want) == wrong
    with monkeypatch.context() as blocked:
        blocked.setitem(sys.modules, "tomlkit", None)
        with pytest.raises(ImportError):  # the kept reading refused: tomlkit is asked
            written()
    assert written() == want


def test_onto_and_continue_merge_in_one_long_lived_merge_tree(tmp_path: Path) -> None:
    """--onto and --continue start one ``merge-tree`` for all their merges (no probe of
    what this git takes: the driver names bases by synthetic commits), not a prediction
    batch and a verification batch per chunk (three once); the result is the one resolved
    by hand."""
    project = moving_project(tmp_path, conflict=True)
    shimmed = GitShim(tmp_path)
    up = str(project.upstream)
    onto = shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", up, code=3)
    resolve_p1(project.work, "return -11")
    resumed = shimmed.calls(project.root, "rebase", "--continue")
    for run in (onto, resumed):
        merges = [c for c in run if c.startswith("merge-tree ")]
        assert merges == ["merge-tree --write-tree -z --stdin"], merges
    main = git(project.upstream, "rev-parse", "main")
    first = git(project.work, "rev-list", "--reverse", f"{main}..series").split()[0]
    assert "return -11" in git(project.work, "show", f"{first}:pkg/core.py")
    assert git(project.work, "symbolic-ref", "HEAD") == "refs/heads/series"


def test_continue_that_stops_again_lists_upstream_from_what_onto_kept(tmp_path: Path) -> None:
    """--continue stops again (P2 conflicts too): the upstream commits since the pin that
    its report names are listed as --onto lists them, their files read from the per-user
    cache where --onto kept them (no ``log --name-only`` that diffs every commit), and
    the report is the same: the commit that touched the conflicted file."""
    project = moving_project(tmp_path, conflict=True)
    up = project.upstream
    commit_upstream(up, "pkg/util.py", "VALUE_5 = 5\n", "VALUE_5 = -5\n", "util: VALUE_5 is -5")
    touched = git(up, "rev-parse", "main")
    shimmed = GitShim(tmp_path)
    shimmed.calls(project.root, "rebase", "--onto", "main", "--upstream", str(up), code=3)
    resolve_p1(project.work, "return -11")
    calls = shimmed.calls(project.root, "rebase", "--continue", code=3)
    assert not [c for c in calls if "--name-only" in c], calls
    state = json.loads(git(project.work, "cat-file", "blob", "refs/series/rebase/state"))
    assert state["stop"]["files"] == ["pkg/util.py"]
    since = git(up, "log", "--format=%H %s", f"{project.commit}..main", "--", "pkg/util.py")
    assert state["stop"]["upstream"] == since.splitlines()
    assert state["stop"]["upstream"][0] == f"{touched} util: VALUE_5 is -5"


def test_the_summary_reads_as_patches_only_the_pairs_whose_raw_diffs_differ(
    tmp_path: Path,
) -> None:
    """``raw_commits``: a patch carried past an upstream change to another file has the
    same raw diff (paths, modes, blob ids) before and after, so the same patch bytes; one
    whose file upstream changed has another; an empty commit has none; a commit asked
    twice is answered once."""
    from series.git import Repo

    work = tmp_path / "r"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for name in ("a.py", "b.py"):
        (work / name).write_text("".join(f"line {i}\n" for i in range(30)))
    git(work, "add", ".")
    git(work, "commit", "-qm", "base")
    base = git(work, "rev-parse", "HEAD")
    replace_line(work / "a.py", "line 3\n", "line three\n")
    git(work, "commit", "-qam", "P1: a")
    replace_line(work / "b.py", "line 25\n", "line twenty-five\n")
    git(work, "commit", "-qam", "P2: b")
    git(work, "commit", "-q", "--allow-empty", "-m", "P3: empty")
    old = git(work, "rev-list", "--reverse", f"{base}..HEAD").split()
    git(work, "checkout", "-q", "-b", "up", base)
    replace_line(work / "b.py", "line 1\n", "line one\n")
    git(work, "commit", "-qam", "upstream: b")
    git(work, "cherry-pick", "--allow-empty", *old)
    new = git(work, "rev-list", "--reverse", "up~3..up").split()
    raw = Repo(work).diffs.raw_commits([*old, *new, old[0]])
    assert raw[old[0]] == raw[new[0]] and raw[old[0]].startswith(b":100644 100644 ")
    assert raw[old[1]] != raw[new[1]] and b"\tb.py\n" in raw[new[1]]
    assert raw[old[2]] == raw[new[2]] == b""
    assert raw[old[0]].count(b"\n") == 1


def test_the_summary_takes_the_new_diffs_from_the_exported_patches_as_git_diffs_them(
    tmp_path: Path,
) -> None:
    """``diff_of_patch``: each commit's diff taken from its exported patch is exactly
    ``Diffs.commits``' (``diff-tree -p``), of every file or of some, for files changed,
    added, removed, made executable, without a final newline, a message quoting a
    ``diff --git`` line, an empty commit; None (``diff-tree`` asked) for a rename the
    patch found, a binary file and a quoted path."""
    work = tmp_path / "r"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    lines = "".join(f"line {i}\n" for i in range(40))
    for name in ("a.py", "b.py", "gone.py", "moved.py", "bin.dat", "x.sh"):
        (work / name).write_text(lines + name + "\n")
    git(work, "add", ".")
    git(work, "commit", "-qm", "base")
    base = git(work, "rev-parse", "HEAD")

    def commit(message: str) -> None:
        git(work, "add", "-A")
        git(work, "commit", "-q", "--allow-empty", "-m", message)

    replace_line(work / "a.py", "line 3\n", "line three\n")
    replace_line(work / "b.py", "line 30\n", "line thirty\n")
    (work / "new.py").write_text("new\n")
    (work / "gone.py").unlink()
    (work / "x.sh").chmod(0o755)
    commit("P1: several\n\ndiff --git a/a.py b/a.py\n--- a/a.py\n")
    (work / "b.py").write_text(lines + "no newline at the end")
    commit("P2: no final newline")
    commit("P3: empty")
    (work / "moved.py").rename(work / "renamed.py")
    commit("P4: a rename")
    (work / "bin.dat").write_bytes(b"\0binary\0")
    commit("P5: binary")
    (work / "é.py").write_text("quoted\n")
    commit("P6: a quoted path")
    repo = Repo(work)
    commits = git(work, "rev-list", "--reverse", f"{base}..HEAD").split()
    patches = dict(zip(commits, repo.diffs.format_patches(base, commits[-1]), strict=True))
    raw = repo.diffs.raw_commits(commits)
    for paths in ([], ["b.py", "gone.py", "x.sh"]):
        wanted = repo.diffs.commits(commits, paths)
        taken = {c: diff_of_patch(patches[c], raw[c], paths) for c in commits}
        assert [c for c in commits if taken[c] is None] == commits[3:], paths
        for c in commits[:3]:
            assert taken[c] == wanted.get(c, b""), (c, paths)
    one = repo.diffs.commits([commits[0]], ["new.py"])[commits[0]]
    assert diff_of_patch(patches[commits[0]], raw[commits[0]], ["new.py"]) == one
    assert one.startswith(b"diff --git a/new.py b/new.py\nnew file mode 100644\n")


def test_the_stream_writes_many_objects_in_one_round_trip_each_as_git_hashes_it(
    tmp_path: Path,
) -> None:
    """MergeStream.write_all: the commits of a replayed series handed to the stream's
    hash-object at once (CHUNK paths per round trip, not one each): every id is the one
    git gives the same bytes, in order, across chunks, and each object is written."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    stream = MergeStream(repo, None)
    stream.start()
    try:
        payloads = [
            f"object {k}\n".encode() * (k % 3 + 1) for k in range(MergeStream.CHUNK * 2 + 5)
        ]
        ids = stream.write_all("blob", payloads)
        assert stream.live
    finally:
        stream.close()
    assert ids is not None and len(ids) == len(payloads)
    for payload, oid in zip(payloads, ids, strict=True):
        assert oid == hashlib.sha1(b"blob %d\0" % len(payload) + payload).hexdigest()
    listed = "\n".join(ids) + "\n"
    out = subprocess.run(
        ["git", "cat-file", "--batch-check=%(objectname) %(objecttype)"],
        cwd=repo,
        input=listed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == [x for oid in ids for x in (oid, "blob")]


def _range_beside_its_merge_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fetched: bool
) -> None:
    """A rebase onto ``main`` of moving_project's upstream, REV already in the checkout
    (``fetched``: from ``--upstream``): one ``log`` of the range and one ``merge-base`` of
    REV and the pin (every git process of series', as a shim on PATH logs them), the range
    listed is git's, and the ``log`` is started before the ``merge-base``. The order is
    read in series' own process (the two starts, history's ``start_together``), on a second
    project: the shim logs each process as its shell starts, and two started side by side
    may log in either order (under load, CI's log once had the ``merge-base`` first)."""

    def rebased(where: Path) -> tuple[Project, list[str], str, str]:
        where.mkdir()
        project = moving_project(where)
        up = project.upstream
        main = git(up, "rev-parse", "main")
        if fetched:
            return project, ["--onto", "main", "--upstream", str(up)], main, "main"
        git(project.work, "fetch", "-q", f"file://{up}", "+main:refs/mine/main")
        return project, ["--onto", main], main, main

    project, argv, main, _ = rebased(tmp_path / "logged")
    pin = git(project.work, "rev-parse", "refs/series/base")
    code, _, err, calls = GitShim(tmp_path).said(project.root, "rebase", *argv)
    assert code == 0, err
    log = f"log --format=%x01%H%x00%P%x00%s {main} ^{pin} --"
    base = f"merge-base {pin} {main}"
    assert calls.count(log) == 1 and calls.count(base) == 1, calls
    assert f"upstream since: {pin[:12]}..{main[:12]}, merge base {pin[:12]}, 1 commits" in err

    project, argv, main, _ = rebased(tmp_path / "in-process")
    started: list[str] = []
    real = history.start_together  # type: ignore[attr-defined]

    def spy(
        cwd: Path,
        calls: Sequence[tuple[Sequence[str], Mapping[str, str] | None]],
        inputs: Sequence[bytes | Fed | None] = (),
    ) -> Started:
        started.extend(argv[0] for argv, _ in calls)
        return real(cwd, calls, inputs)

    monkeypatch.setattr(history, "start_together", spy)
    code, _, err = project.run("rebase", *argv)
    assert code == 0, err
    assert started.count("log") == 1 and started.count("merge-base") == 1, started
    assert started.index("log") < started.index("merge-base"), started


def test_the_range_since_the_pin_is_listed_beside_its_merge_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REV in the checkout already (no fetch asked the merge base before): the range's
    ``log`` is started before the ``merge-base`` that says whether REV and the pin share
    history, so that the two walk the range side by side (tens of milliseconds each at
    thousands of upstream commits)."""
    _range_beside_its_merge_base(tmp_path, monkeypatch, fetched=False)


def test_the_fetch_lists_the_range_beside_the_merge_base_that_the_range_asks_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REV fetched from ``--upstream``: the fetch asks whether REV meets the pin (their
    merge base), with the range's ``log`` run beside it; the range since the pin, which
    asks the same merge base and that ``log`` again, takes both from there (one of each)."""
    _range_beside_its_merge_base(tmp_path, monkeypatch, fetched=True)


def test_a_rev_that_shares_no_history_with_the_pin_lists_its_last_commits(
    tmp_path: Path,
) -> None:
    """REV with no history shared with the pin: the ``log`` started beside the merge base
    is not the range (it would walk all of REV's history); the range is REV's last
    commits, as many as ``SCAN_LIMIT``, and says so."""
    project = moving_project(tmp_path)
    work = project.work
    empty = git(work, "hash-object", "-t", "tree", "-w", "/dev/null")
    orphan = git(work, "commit-tree", empty, "-m", "no history shared with the pin")
    pin = git(work, "rev-parse", "refs/series/base")
    code, _, err, calls = GitShim(tmp_path).said(project.root, "rebase", "--onto", orphan)
    assert code == 3, err  # the patches' files are not there: a conflict
    limited = f"log --format=%x01%H%x00%P%x00%s --max-count=2000 {orphan} ^{pin} --"
    assert calls.count(limited) == 1, calls
    assert f"the last 2000 commits of {orphan[:12]}" in err and "none shared with the pin" in err
    git(work, "rev-parse", "refs/series/rebase/state")  # stopped, and --abort puts it back
    code, _, err = project.run("rebase", "--abort")
    assert code == 0, err
