"""What keeps the user's work, each keeping turned off: the cases no test reached.

A mutation sweep (2026-12-04) turned off, one at a time, each place where series keeps
something of the user's before it destroys or moves it (a backup ref, a snapshot of the
files, a copy under ``.series/backups/``, the export journal, a stash, a refusal to
write over what no backup holds), and ran the tests of its command. The cases here are
those where the suite still passed: each is the situation the keeping is for, on a real
repository, and fails with that keeping turned off (docs/hardening.md rows 700-719).
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers import DEFAULT_SPECS, PatchSpec, git, make_project
from rebase_helpers import moving_project, resolve_p1
from test_edit import edit_project
from test_edit_kill import amend_p2
from test_rebase import rebase
from test_rebase_kill import start_args
from test_trust_lock import run
from test_trust_recover import big_move_project, kill_in_the_move

KEPT_IN = re.compile(r"kept in (\.series/backups/\S+?)(?:[;:,)\s]|$)")


def test_series_files_edited_by_hand_at_a_rebase_stop_are_kept_by_its_end(
    tmp_path: Path,
) -> None:
    """series.toml (a note of the user's) and a patch file edited by hand at a rebase
    stop, then ``--continue``, and the same with ``--skip``: the end wrote both from the
    rebase's snapshot and the edits were gone, with no copy and no word of it, where
    ``--abort`` keeps them (row 253) (row 700)."""
    for action in ("--continue", "--skip"):
        project = moving_project(tmp_path / action.strip("-"), conflict=True)
        code, _, err = rebase(project)
        assert code == 3, err
        root = project.root
        patch = sorted((root / "patches").glob("*.patch"))[-1]  # P3: the end rewrites it
        with (root / "series.toml").open("a") as toml:
            toml.write("# a note kept by hand\n")
        with patch.open("a") as text:
            text.write("# edited by hand\n")
        if action == "--continue":
            resolve_p1(project.work)
        code, out, err = project.run("rebase", action)
        assert code == 0, err
        assert "# a note kept by hand" not in (root / "series.toml").read_text()  # the end's
        found = KEPT_IN.search(out + err)
        assert found, out + err
        copies = root / found.group(1)
        assert (copies / "series.toml").read_text().endswith("# a note kept by hand\n")
        assert (copies / patch.relative_to(root)).read_text().endswith("# edited by hand\n")
        assert git(project.work, "status", "--porcelain") == ""


def test_a_patch_file_added_by_hand_at_a_rebase_stop_is_kept_by_abort(tmp_path: Path) -> None:
    """At a rebase stop, a new patch written by hand and named in series.toml: ``--abort``
    puts series.toml back and removes the file (the snapshot has no such file); with
    only the files it replaces kept, the new one was deleted, no copy of it (row 701)."""
    project = moving_project(tmp_path, conflict=True)
    code, _, err = rebase(project)
    assert code == 3, err
    root = project.root
    mine = root / "patches" / "perf-P4.patch"
    text = "From: me\nSubject: [PATCH] my own patch, written by hand\n\n---\n"
    mine.write_text(text)
    with (root / "series.toml").open("a") as toml:
        toml.write(
            '\n[[patch]]\nid = "P4"\ntitle = "mine"\nfile = "patches/perf-P4.patch"\n'
            'branch = "perf-P4"\nstate = "open"\nsubset = []\n'
        )
    code, out, err = project.run("rebase", "--abort")
    assert code == 0, err
    assert not mine.exists()  # the series as it was before the rebase
    found = KEPT_IN.search(out + err)
    assert found, out + err
    copies = root / found.group(1)
    assert (copies / "patches" / "perf-P4.patch").read_text() == text


def test_a_commit_on_the_detached_head_after_an_edit_end_killed_stays_on_head(
    tmp_path: Path,
) -> None:
    """``edit --continue`` killed after its transaction (the branch moved, the edit's state
    gone, HEAD still detached at the stop), then a commit on that HEAD: the next
    ``--continue`` finishes the end only when HEAD's commits are kept (on the branch or
    under a backup ref); without that check it moved HEAD to the branch and the commit
    was left to the reflog, no ref reaching it (row 702)."""
    project = edit_project(tmp_path)
    work = project.work
    assert project.run("edit", "P2")[0] == 0
    amend_p2(project)
    for n in range(1, 200):  # the first step after the end's transaction, before HEAD moves
        killed = run(project, "edit", "--continue", SERIES_FAULT_KILL_AT=str(n))
        assert killed.returncode == -9, (n, killed.stderr)
        ended = git(work, "for-each-ref", "refs/series/rebase/state") == ""
        if ended and git(work, "rev-parse", "--symbolic-full-name", "HEAD") == "HEAD":
            break
    else:
        raise AssertionError("no kill left the end half done")
    (work / "later.txt").write_text("made after the kill\n")
    git(work, "add", "later.txt")
    git(work, "commit", "-qm", "work on the detached HEAD")
    mine = git(work, "rev-parse", "HEAD")
    project.run("edit", "--continue")
    holders = git(work, "for-each-ref", "--contains", mine, "--format=%(refname)")
    assert git(work, "rev-parse", "HEAD") == mine or holders, holders


CONF = "pkg/conf"  # a file of the user's, ignored, where P3 makes a directory
P3_IN_A_DIRECTORY = [
    *DEFAULT_SPECS[:2],
    PatchSpec("P3", "conf: a package", {}, new_files={f"{CONF}/settings.py": "from P3\n"}),
]


def test_apply_refuses_to_replace_an_ignored_file_where_a_patch_makes_a_directory(
    tmp_path: Path,
) -> None:
    """An ignored file of the user's (``pkg/conf``, in ``.git/info/exclude``) where P3
    adds ``pkg/conf/settings.py``: git's move replaces the file by the directory, silently.
    The check looked at each leading directory of a path the move adds; with only the
    full path looked at, ``series apply`` took P3 in and the file was gone (row 703)."""
    project = make_project(tmp_path, P3_IN_A_DIRECTORY)
    assert project.run("apply", "--to", "P2")[0] == 0
    exclude = project.work / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text(f"/{CONF}\n")
    mine = project.work / CONF
    mine.write_text("my own settings, in no commit\n")
    assert git(project.work, "status", "--porcelain") == ""  # git shows nothing of it
    code, _, err = project.run("apply")
    assert code == 4, err
    assert CONF in err and "ignore" in err, err
    assert mine.read_text() == "my own settings, in no commit\n"


def test_a_move_cut_short_is_not_finished_over_an_ignored_file_put_there_since(
    tmp_path: Path,
) -> None:
    """A rebase killed with its git inside its final move (pkg/gen/ half written), then an
    ignored file of the user's at a path the move has not written yet: the next ``apply``
    finishes the move first (series.git.worktree ``finish_move``), and refuses, exit 4,
    naming it; with that check off, git's move wrote over the file (row 704)."""
    project = big_move_project(tmp_path / "p")
    kill_in_the_move(project, start_args(project))
    last = "pkg/gen/m119.py"  # git writes pkg/gen/ in order and stalled half way
    mine = project.work / last
    assert not mine.exists()
    exclude = project.work / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text(f"/{last}\n")
    mine.write_text("my own, in no commit\n")
    code, _, err = project.run("apply")
    assert code == 4, err
    assert last in err and "ignore" in err, err
    assert mine.read_text() == "my own, in no commit\n"
