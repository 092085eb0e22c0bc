"""Success claims, each check turned off: the cases no test reached.

A mutation sweep (2026-12-04) turned off, one at a time, the checks behind what a command
says when it succeeds (apply's "up to date" and what it compares before it answers from a
kept record, export's "0 file(s) changed" and its verification, status's report and its
kept record, check-conflicts' verdicts, the end of a rebase, range-diff's classes, the
plan of ``branches --dry-run``, the pass or fail of prove, lint and test), and ran the
tests of its command. The cases here are those where the suite still passed: each is the
situation the check is for, on a real repository, and fails with that check turned off
(docs/hardening.md rows 830-899).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import series
import series.status as series_status
import test_trust_index
from helpers import (
    DEFAULT_SPECS,
    UPSTREAM_FILES,
    GitShim,
    PatchSpec,
    Project,
    git,
    make_project,
)
from rebase_helpers import commit_upstream, moving_project, resolve_p1
from series.errors import Exit
from test_branches import amend_p2, heads, setup
from test_prove import PROVE_SPECS, prove_json
from test_rebase import rebase
from test_speed_rd_branches import TWO, UTIL
from test_trust_cache import _pycache, _series
from tinytests import make_tiny_project

P3_MOVE = (  # a third patch of TWO's series: moves pkg/util.py (test_speed_rd_branches)
    '\n[[patch]]\nid = "P3"\ntitle = "util: move to moved.py"\n'
    'file = "patches/perf-P3.patch"\npr = 1002\nbranch = "perf-P3"\n'
    'state = "open"\nsubset = []\n'
)


@pytest.mark.parametrize("away", ["branch", "detached"])
def test_apply_force_with_head_off_the_branch_at_its_tip_moves_head_there(
    tmp_path: Path, away: str
) -> None:
    """HEAD on another branch, or detached, at the series branch's own tip, then
    ``apply --force``: it says HEAD moves to the branch, and it must, though the stack
    it builds is the branch's tip already (row 830)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    tip = git(project.work, "rev-parse", "series")
    if away == "branch":
        git(project.work, "switch", "-q", "-c", "mine")
    else:
        git(project.work, "switch", "-q", "--detach")
    code, out, err = project.run("apply", "--force")
    assert code == 0, err
    assert git(project.work, "symbolic-ref", "-q", "HEAD") == "refs/heads/series", out + err
    assert git(project.work, "rev-parse", "series") == tip
    assert "up to date" not in out, out
    if away == "branch":
        assert git(project.work, "rev-parse", "mine") == tip  # the user's branch stays
    code, out, err = project.run("apply")  # and a plain re-run is up to date
    assert code == 0 and "up to date" in out, err


def test_export_with_head_off_the_branch_says_so_each_time(tmp_path: Path) -> None:
    """HEAD detached past the branch, a commit of the user's on it, then ``export`` twice:
    each run exports the branch only and says that HEAD's commit is not exported; the
    second is not answered from what the first kept, which says nothing of HEAD (row
    831)."""
    project = make_project(tmp_path)
    for command in ("apply", "export"):
        assert project.run(command)[0] == 0
    git(project.work, "switch", "-q", "--detach")
    git(project.work, "commit", "-q", "--allow-empty", "-m", "mine: not a patch")
    before = project.patch_bytes()
    for _ in range(2):
        code, out, err = project.run("export")
        assert code == 0, err
        assert "1 commit(s) on HEAD are not exported" in err, err
        assert "nothing changed since" not in err, err
        assert "0 file(s) changed" in out, out
    assert project.patch_bytes() == before


def drift(project: Project) -> list[str]:
    code, out, err = project.run("status", "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    assert data["drift"]["known"] is True, data["drift"]
    patches: list[str] = data["drift"]["patches"]
    return patches


def edit_patch(project: Project, pid: str, old: str, new: str) -> None:
    path = project.root / "patches" / f"perf-{pid}.patch"
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))


def test_status_drift_names_a_patch_whose_message_alone_was_edited(tmp_path: Path) -> None:
    """P1's change edited in patches/ and P2's message only (its diff as it was): status
    lists both as drift; P2's commit differs in its message, which apply then writes (row
    832)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    edit_patch(project, "P1", "+    return 101", "+    return 111")
    edit_patch(project, "P2", "Why: test.", "Why: a better reason.")
    assert drift(project) == ["P1", "P2"]
    assert project.run("apply")[0] == 0
    assert "a better reason" in git(project.work, "log", "-1", "--format=%B", "series~1")
    assert drift(project) == []


def test_status_drift_names_a_patch_whose_author_or_date_alone_was_edited(
    tmp_path: Path,
) -> None:
    """P2's Date header edited in patches/, the rest as it was: status lists P2 as drift,
    the first patch that differs, though its diff and message are the same; apply writes
    the new date (row 833)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    edit_patch(project, "P2", "Date: Mon, 2 Feb 2026 10:00:00", "Date: Tue, 3 Mar 2026 11:00:00")
    assert drift(project) == ["P2"]
    assert project.run("apply")[0] == 0
    assert "2026-03-03" in git(project.work, "log", "-1", "--format=%ai", "series~1")
    assert drift(project) == []


def test_export_of_a_dropped_patch_whose_file_is_gone_counts_only_what_it_writes(
    tmp_path: Path,
) -> None:
    """P3's commit dropped from the branch and its patch file already deleted by hand, then
    ``export``: series.toml is the one file it changes, and it says so; it claims no
    removal of a file that was not there (row 834)."""
    project = make_project(tmp_path)
    for command in ("apply", "export"):
        assert project.run(command)[0] == 0
    git(project.work, "reset", "-q", "--hard", "series~1")
    (project.root / "patches" / "perf-P3.patch").unlink()
    code, out, err = project.run("export")
    assert code == 0, err
    assert "1 file(s) changed" in out, out + err
    assert "perf-P3" not in err, err
    assert "wrote series.toml" in err, err
    assert "P3" not in (project.root / "series.toml").read_text()


def test_the_end_of_a_rebase_says_which_patches_changed_their_context(tmp_path: Path) -> None:
    """Upstream's ``main`` edits a line P2's hunk shows as context (``VALUE_7``), then
    ``rebase --onto main``: the summary says P2's context changed and P1 and P3 are
    unchanged; range-diff, asked after, says the same (row 835)."""
    project = moving_project(tmp_path)
    commit_upstream(project.upstream, "pkg/util.py", "VALUE_7 = 7\n", "VALUE_7 = 77\n", "util: 7")
    code, out, err = rebase(project)
    assert code == 0, err
    rows = {line.split()[1]: line for line in out.splitlines() if re.match(r"\s*\d+\s+P\d", line)}
    assert "context only" in rows["P2"], out
    assert "unchanged" in rows["P1"] and "unchanged" in rows["P3"], out
    code, out, err = project.run("range-diff")
    assert code == 0, err
    said = {line.split()[0]: line for line in out.splitlines() if re.match(r"P\d", line)}
    assert "context only" in said["P2"], out
    assert "unchanged" in said["P1"] and "unchanged" in said["P3"], out


def test_a_patch_changed_in_a_file_git_quotes_is_not_said_unchanged(tmp_path: Path) -> None:
    """P1 changes ``pkg/core.py`` and ``pkg/é.py`` (a name git quotes in its raw diff),
    upstream changes the line P1 changes in ``pkg/é.py``; the rebase stops there and the
    conflict is resolved with another line: range-diff says P1's content changed; the
    file git names quoted is left out of no comparison (row 836)."""
    files = {**UPSTREAM_FILES, "pkg/é.py": "".join(f"x{i} = {i}\n" for i in range(9))}
    specs = [
        PatchSpec(
            "P1",
            "two files",
            {"pkg/core.py": ("return 1\n", "return 101\n"), "pkg/é.py": ("x4 = 4\n", "x4 = 44\n")},
        ),
        *DEFAULT_SPECS[1:],
    ]
    project = make_project(tmp_path, specs, files)
    assert project.run("apply")[0] == 0
    commit_upstream(project.upstream, "pkg/é.py", "x4 = 4\n", "x4 = -4\n", "é: x4")
    code, _, err = rebase(project)
    assert code == 3, err
    resolved = project.work / "pkg" / "é.py"
    resolved.write_text("".join(f"x{i} = {444 if i == 4 else i}\n" for i in range(9)))
    git(project.work, "add", "pkg/é.py")
    code, out, err = project.run("rebase", "--continue")
    assert code == 0, err
    rows = {line.split()[1]: line for line in out.splitlines() if re.match(r"\s*\d+\s+P\d", line)}
    assert "resolved (recorded)" in rows["P1"], out
    code, out, err = project.run("range-diff")
    assert code == 0, err
    said = {line.split()[0]: line for line in out.splitlines() if re.match(r"P\d", line)}
    assert "content changed" in said["P1"], out


def test_a_status_whose_inputs_changed_while_it_ran_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch file saved while status works (after it took the digest of what it reads,
    before it reads the file: here, as its work begins), then saved back: the next status
    reports the file as it is, no drift, not the report of the edit kept under the digest
    of the bytes before it (row 837)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    path = project.root / "patches" / "perf-P1.patch"
    was = path.read_bytes()
    real = series_status._work_out

    def saved_meanwhile(*args: Any) -> dict[str, Any]:
        path.write_bytes(was.replace(b"+    return 101", b"+    return 111"))
        return real(*args)

    monkeypatch.setattr(series_status, "_work_out", saved_meanwhile)
    assert drift(project) == ["P1"]  # what it read
    monkeypatch.setattr(series_status, "_work_out", real)
    path.write_bytes(was)
    assert drift(project) == []


def test_status_after_the_pin_was_moved_in_series_toml_says_so(tmp_path: Path) -> None:
    """A quiet status kept, then series.toml's pin moved by hand to a later upstream commit
    (its patch files as they were): status names the new pin and says the checkout is not
    on it, not the report kept for the pin before (row 838)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    assert drift(project) == []  # kept
    later = commit_upstream(project.upstream, "README.md", "tiny upstream\n", "tiny\n", "docs")
    toml = project.root / "series.toml"
    toml.write_text(toml.read_text().replace(project.commit, later))
    code, out, err = project.run("status", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["pin"]["commit"] == later
    assert data["drift"]["pin"] is True, data["drift"]
    assert "nothing to do" not in data["next"], data["next"]


def test_status_drift_names_a_patch_that_no_longer_applies(tmp_path: Path) -> None:
    """P3's patch file edited so that it no longer applies (the line it removes is not
    the checkout's): status lists P3 as drift, not "nothing to do"; apply then says P3
    does not apply (row 839)."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    assert drift(project) == []
    edit_patch(project, "P3", "-    return 9\n", "-    return 99999\n")
    assert drift(project) == ["P3"]
    code, _, err = project.run("apply")
    assert code == 3 and "patch P3" in err, err


def test_a_status_kept_by_other_code_of_series_is_worked_out_again(tmp_path: Path) -> None:
    """A quiet status kept, then series upgraded (a copy of its code whose report names the
    checkout's source otherwise): the next status is the new code's report, not the one
    the old code kept (its key holds series.code.code_digest, as the other records' do)
    (row 840)."""
    project = make_project(tmp_path)
    code = tmp_path / "code"
    shutil.copytree(Path(series.__file__).parent, code / "series", ignore=_pycache)
    env = {**GitShim(tmp_path).env, "PYTHONPATH": str(code)}

    def source() -> str:
        said = _series(project, env, "status", "--json")
        assert said.returncode == 0, said.stderr
        found: str = json.loads(said.stdout)["checkout"]["source"]
        return found

    assert _series(project, env, "apply").returncode == 0
    assert source() == "git" and source() == "git"  # worked out, then kept
    status = code / "series" / "status.py"  # the upgrade: another report
    text = status.read_text()
    assert text.count('"source": state.source,') == 1
    status.write_text(text.replace('"source": state.source,', '"source": "upgraded",'))
    assert source() == "upgraded"


def test_check_conflicts_says_a_patch_that_changes_nothing_changes_nothing(
    tmp_path: Path,
) -> None:
    """P2 an empty patch (a commit that changes no file), then ``check-conflicts --onto``
    an upstream that moved: P2 is "empty" because it changes nothing, not because "its
    changes are already in the revision", which would say upstream holds them (row 841)."""
    specs = [DEFAULT_SPECS[0], PatchSpec("P2", "empty: a note", {}), DEFAULT_SPECS[2]]
    project = make_project(tmp_path, specs)
    assert project.run("apply")[0] == 0
    commit_upstream(project.upstream, "pkg/util.py", "VALUE_20 = 20\n", "VALUE_20 = 2\n", "u")
    code, out, err = project.run(
        "check-conflicts", "--onto", "main", "--upstream", str(project.upstream), "--json"
    )
    assert code == 0, err
    rows = {r["id"]: r for r in json.loads(out)["onto"]["patches"]}
    assert (rows["P2"]["status"], rows["P2"]["replay"]) == ("empty", "empty"), rows["P2"]
    assert rows["P2"]["note"] == "the patch changes nothing", rows["P2"]


def test_check_conflicts_does_not_say_all_apply_when_one_does_not(tmp_path: Path) -> None:
    """P3's patch file edited so that it does not apply on the pin, then
    ``check-conflicts --no-matrix``: exit 3, and the pin's table names P3; it does not
    say that all patches apply in order (row 842)."""
    project = make_project(tmp_path)
    edit_patch(project, "P3", "-    return 9\n", "-    return 99999\n")
    code, out, err = project.run("check-conflicts", "--no-matrix")
    assert code == 3, err
    assert "apply in order" not in out, out
    assert re.search(r"^\s*3\s+P3\s", out, re.MULTILINE), out
    assert "ok: the series fits" not in out, out


@pytest.mark.parametrize("what", ["moved", "remote only", "deleted"])
def test_branches_dry_run_says_what_would_change(tmp_path: Path, what: str) -> None:
    """Branches made, then P2 amended in patches/ (P2's and P3's branches move), or
    (pushed) P2's branch deleted on the remote only, or P3 taken out of series.toml (its
    branch to delete, which only ``--prune`` does): ``branches --dry-run`` says how many
    would change, and "nothing to change" only when nothing would; the run then does what
    it said (rows 843-845)."""
    project, remote = setup(tmp_path)
    push = ["--push", remote] if what == "remote only" else []
    assert project.run("branches", *push)[0] == 0
    prune = []
    if what == "moved":
        amend_p2(project)
        said = "dry run: 2 branch(es) would change; nothing was changed"
    elif what == "remote only":
        git(Path(remote), "branch", "-q", "-D", "perf-P2")
        said = f"dry run: 1 branch(es) would change (and on {remote})"
    else:
        toml = project.root / "series.toml"
        text = toml.read_text()
        toml.write_text(text[: text.rindex("[[patch]]")])
        code, out, err = project.run("branches", "--dry-run")
        assert code == 0 and "nothing to change: every branch is up to date" in out, out + err
        prune = ["--prune"]
        said = "dry run: 1 branch(es) would change; nothing was changed"
    before = heads(project.work), heads(remote)
    code, out, err = project.run("branches", *push, *prune, "--dry-run")
    assert code == 0, err
    assert said in out, out
    assert (heads(project.work), heads(remote)) == before
    code, out, err = project.run("branches", *push, *prune)
    assert code == 0, err
    assert f"changed {2 if what == 'moved' else 1} branch(es)" in out, out
    assert (heads(project.work), heads(remote)) != before


def test_prove_fails_a_patch_whose_tests_break_with_it(tmp_path: Path) -> None:
    """``prove P3`` alone, P3 a patch with which one of its tests fails (test_prove.py's
    project): exit 1, P3 "broken tests" and failed, "FAILED: 1 of 1"; a broken test is not
    a pass (row 846)."""
    project = make_tiny_project(tmp_path, PROVE_SPECS)
    code, patches, err = prove_json(project, "P3")
    assert code == 1, err
    assert patches["P3"]["status"] == "broken tests" and patches["P3"]["failed"] is True
    code, out, err = project.run("prove", "P3")
    assert code == 1 and "FAILED: 1 of 1 patch(es) flagged" in out, out + err


def test_series_test_fails_a_patch_with_no_subset_and_no_reason(tmp_path: Path) -> None:
    """P1 (whose tests pass) given no subset in series.toml and no ``no_tests`` reason,
    then ``test P1``: exit 1, P1 "no subset", "FAILED"; an untested patch is
    not green (row 847)."""
    project = make_tiny_project(tmp_path)
    toml = project.root / "series.toml"
    text = toml.read_text()
    toml.write_text(re.sub(r"subset = \[[^\]]*\]", "subset = []", text, count=1))
    code, out, err = project.run("test", "--json", "P1")
    assert code == 1, err
    (p1,) = json.loads(out)["patches"]
    assert (p1["id"], p1["status"]) == ("P1", "no subset"), p1
    code, out, err = project.run("test", "P1")
    assert code == 1 and "FAILED" in out, out + err


def test_apply_force_back_to_the_tip_it_builds_records_it(tmp_path: Path) -> None:
    """P3's commit reworded and exported, then its patch file and the branch put back as
    they were before (the file's old bytes, ``reset --hard`` to the old tip): apply
    refuses (the old P3 commit is not exported), ``apply --force`` builds the branch's
    own tip and records it as synced, so that a plain apply then is up to date and
    status counts nothing unexported (row 848)."""
    project = make_project(tmp_path)
    for command in ("apply", "export"):
        assert project.run(command)[0] == 0
    old_tip = git(project.work, "rev-parse", "series")
    old_bytes = project.patch_bytes()
    message = git(project.work, "log", "-1", "--format=%B").replace("Why: test.", "Why: new.")
    git(project.work, "commit", "-q", "--amend", "-m", message)
    assert project.run("export")[0] == 0
    assert project.patch_bytes() != old_bytes
    for name, data in old_bytes.items():
        (project.root / "patches" / name).write_bytes(data)
    git(project.work, "reset", "-q", "--hard", old_tip)
    code, _, err = project.run("apply")
    assert code == 4 and "never exported" in err, err
    code, _, err = project.run("apply", "--force")
    assert code == 0, err
    assert git(project.work, "rev-parse", "series") == old_tip
    code, out, err = project.run("apply")
    assert code == 0 and "up to date" in out, err
    code, out, err = project.run("status", "--json")
    assert code == 0 and json.loads(out)["unexported"] == [], out


def test_a_checkout_made_a_link_out_of_the_project_is_not_answered_as_kept(
    tmp_path: Path,
) -> None:
    """A re-run of apply answered before the CLI, then the checkout moved out of the
    project and a link to it left in its place: ``series apply`` refuses the link, as the
    full run does, and does not say "nothing changed" from the entry kept for the
    checkout's path (row 849)."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    for _ in range(3):
        code, _, err, _ = shim.said(project.root, "apply")
        assert code == 0, err
    assert "nothing changed since" in err and "not rebuilt" in err, err  # kept, taken
    project.work.rename(tmp_path / "elsewhere")
    project.work.symlink_to(tmp_path / "elsewhere")
    code, out, err, _ = shim.said(project.root, "apply")
    assert code == 2 and "outside the project" in err, out + err


STATUS_CALL = "--no-optional-locks status --porcelain=v1 -z --untracked-files=all"


def test_a_git_status_that_fails_is_no_clean_answer(tmp_path: Path) -> None:
    """A re-run of apply answered before the CLI, then the checkout's index damaged so
    that only git sees it (its checksum right, an extension git does not know and may not
    skip: series.git.index_file finds it sound): the kept answer's ``git status`` fails,
    printing nothing on stdout; ``series apply`` does not say "nothing changed" from it,
    and exits non-zero (row 850), naming the damaged index in git's words (row 871)."""
    project = make_project(tmp_path)
    shim = GitShim(tmp_path)
    for _ in range(3):
        code, _, err, _ = shim.said(project.root, "apply")
        assert code == 0, err
    assert "nothing changed since" in err, err  # kept, taken
    index = project.work / ".git" / "index"
    index.write_bytes(test_trust_index.DAMAGES["unknown extension"][0](index.read_bytes()))
    code, out, err, calls = shim.said(project.root, "apply")
    assert code != 0 and "nothing changed since" not in err, out + err
    assert calls[0] == STATUS_CALL, calls  # the kept answer's git status ran, and failed
    assert "index uses zzzz extension, which we do not understand" in err, err  # git's words
    assert code == Exit.FAILED and f"the index of {project.work.resolve()} is damaged" in err


def test_a_move_written_without_renames_is_not_said_unchanged(tmp_path: Path) -> None:
    """P3 moves ``pkg/util.py`` to ``pkg/moved.py``, its patch file written without renames
    (``format-patch --no-renames``: the file deleted, the other added, every line); the
    project committed, then the pin moved to an upstream commit that changed a line of
    ``util.py`` and P3's file written again the same way on it. git's range-diff, which
    finds the rename in both commits, marks P3 ``=``; the lines P3 removes and adds are
    not the same (``VALUE_20``): range-diff says "content changed", not "unchanged" (row
    885)."""
    project = make_project(tmp_path, TWO)
    root, up = project.root, project.upstream
    mover = tmp_path / "mover"
    git(tmp_path, "clone", "-q", str(up), str(mover))
    git(mover, "mv", UTIL, "pkg/moved.py")
    message = "util: move to moved.py\n\nWhy: test.\n\nSeries-Id: P3"
    git(mover, "commit", "-qm", message, date="2026-02-03T10:00:00+00:00")
    patch = root / "patches" / "perf-P3.patch"

    def written() -> None:
        patch.write_text(git(mover, "format-patch", "-1", "--no-renames", "--stdout") + "\n")
        assert "deleted file mode" in patch.read_text() and "rename" not in patch.read_text()

    written()
    toml = root / "series.toml"
    toml.write_text(toml.read_text() + P3_MOVE)
    git(root, "init", "-q")
    (root / ".gitignore").write_text("work/\n.series/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the series")
    later = commit_upstream(up, UTIL, "VALUE_20 = 20\n", "VALUE_20 = 2000\n", "util: 20")
    git(mover, "pull", "-q", "--rebase")  # P3 on the new pin: moved.py has VALUE_20 = 2000
    written()
    toml.write_text(toml.read_text().replace(project.commit, later).replace('"v1.0"', '"main"'))
    code, out, err = project.run("range-diff", "--json")
    assert code == 0, err
    said = {p["id"]: p for p in json.loads(out)["patches"]}
    assert " = " in said["P3"]["range_diff"].splitlines()[0], said["P3"]
    assert said["P3"]["kind"] == "content changed", said["P3"]
    assert (said["P1"]["kind"], said["P2"]["kind"]) == ("unchanged", "unchanged")


def test_a_fifo_at_git_s_configuration_is_refused_where_a_wrapper_git_answers_kept(
    tmp_path: Path,
) -> None:
    """git a wrapper script on PATH (a version manager's shim: series asks it ``git
    version`` before each kept answer), apply, ``branches --dry-run`` and range-diff each
    answered from what they kept; then git's global configuration a FIFO: each is refused,
    naming it, as the full run refuses it; none waits for ever in that ``git version``
    (row 886)."""
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    shim = GitShim(tmp_path)
    shim.env["SERIES_CACHE_DIR"] = os.environ["SERIES_CACHE_DIR"]  # the one that built them
    commands = [("apply",), ("branches", "--dry-run"), ("range-diff",)]
    for args in commands:
        for _ in range(2):
            code, _, err, calls = shim.said(project.root, *args)
            assert code == 0, (args, err)
        assert all(" status " in f" {c} " for c in calls), (args, calls)  # kept, taken
    config = Path(shim.env["GIT_CONFIG_GLOBAL"])
    kept = config.read_bytes()
    config.unlink()
    os.mkfifo(config)
    for args in commands:
        code, _, err, _ = shim.said(project.root, *args)  # ends: within GitShim.BOUND
        assert code == Exit.REFUSED, (args, err)
        assert f"refusing to run git: {config} is not a plain file" in err, (args, err)
    config.unlink()
    config.write_bytes(kept)
    for args in commands:
        assert shim.said(project.root, *args)[0] == 0, args
