"""series branches: stacked pull-request branches, pushed with leases to a real bare remote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import PatchSpec, Project, git, make_project, replace_line
from series.errors import Exit
from series.git import PushUpdate, Repo

RECORD = "refs/series/branches"


def setup(tmp_path: Path, specs: list[PatchSpec] | None = None) -> tuple[Project, str]:
    project = make_project(tmp_path, specs)
    code, _, err = project.run("apply")
    assert code == 0, err
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    # a fork: it has upstream's history (series fetches the pin shallow)
    git(project.upstream, "push", "-q", str(remote), "HEAD:refs/heads/main")
    return project, str(remote)


def branches(project: Project, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = project.run("branches", "--json", *args)
    return code, json.loads(out) if out.strip() else {}, err


def heads(repo: str | Path) -> dict[str, str]:
    out = git(Path(repo), "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
    found = dict(line.split(" ") for line in out.splitlines() if line)
    found.pop("main", None)  # the fork's upstream branch (setup), not series'
    return found


def actions(data: dict[str, Any], key: str = "action") -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for b in data["branches"]:
        found[b["branch"]] = b[key] if key == "action" else (b.get("remote") or {}).get("action")
    return found


def amend_p2(project: Project) -> None:
    """A new version of P2: another value, another message (P1's bytes stay as they are)."""
    patch = project.root / "patches/perf-P2.patch"
    replace_line(patch, "+VALUE_5 = 55\n", "+VALUE_5 = 56\n")
    replace_line(patch, "Why: test.", "Why: amended.")


def test_first_push_makes_stacked_branches_with_their_pr_bases(tmp_path: Path) -> None:
    project, remote = setup(tmp_path)
    code, data, err = branches(project, "--push", remote)
    assert code == 0, err
    work = project.work
    local = heads(work)
    assert heads(remote) == {k: v for k, v in local.items() if k.startswith("perf-")}
    # branch k is the pin plus patches 1..k: the commits apply put on the series branch
    assert local["perf-P3"] == local["series"]
    assert git(work, "rev-parse", "perf-P3^") == local["perf-P2"]
    assert git(work, "rev-parse", "perf-P2^") == local["perf-P1"]
    assert git(work, "rev-parse", "perf-P1^") == project.commit
    assert [b["base"] for b in data["branches"]] == ["v1.0", "perf-P1", "perf-P2"]
    assert set(actions(data).values()) == {"create"}
    assert set(actions(data, "remote").values()) == {"create"}
    reflog = git(work, "reflog", "show", "--format=%gs", "refs/heads/perf-P1")
    assert reflog.startswith("series branches: 3 create")
    assert data["changed"] is True


def test_rerun_with_nothing_changed_changes_nothing_and_says_so(tmp_path: Path) -> None:
    project, remote = setup(tmp_path)
    assert branches(project, "--push", remote)[0] == 0
    before = (heads(project.work), heads(remote), git(project.work, "rev-parse", RECORD))
    reflog = git(project.work, "reflog", "show", RECORD)
    code, out, err = project.run("branches", "--push", remote)
    assert code == 0, err
    assert "nothing to change" in out
    after = (heads(project.work), heads(remote), git(project.work, "rev-parse", RECORD))
    assert after == before
    assert git(project.work, "reflog", "show", RECORD) == reflog


def test_an_amended_patch_moves_only_its_branch_and_later_ones(tmp_path: Path) -> None:
    project, remote = setup(tmp_path)
    assert branches(project, "--push", remote)[0] == 0
    before = heads(remote)
    amend_p2(project)
    code, data, err = branches(project, "--push", remote)
    assert code == 0, err
    after = heads(remote)
    assert actions(data) == {"perf-P1": "unchanged", "perf-P2": "move", "perf-P3": "move"}
    assert actions(data, "remote") == actions(data)
    assert after["perf-P1"] == before["perf-P1"]
    assert after["perf-P2"] != before["perf-P2"] and after["perf-P3"] != before["perf-P3"]
    assert after == {k: v for k, v in heads(project.work).items() if k.startswith("perf-")}
    assert "VALUE_5 = 56" in git(project.work, "show", "perf-P3:pkg/util.py")


def colleague_pushes(tmp_path: Path, remote: str, branch: str) -> str:
    clone = tmp_path / "colleague"
    git(tmp_path, "clone", "-q", "-b", branch, remote, str(clone))
    (clone / "NOTES").write_text("a colleague's work\n")
    git(clone, "add", "NOTES")
    git(clone, "commit", "-qm", "colleague: notes")
    git(clone, "push", "-q", "origin", branch)
    return git(clone, "rev-parse", "HEAD")


def test_a_remote_branch_someone_else_moved_is_refused_with_the_way_out(tmp_path: Path) -> None:
    project, remote = setup(tmp_path)
    assert branches(project, "--push", remote)[0] == 0
    theirs = colleague_pushes(tmp_path, remote, "perf-P2")
    amend_p2(project)
    local_before = heads(project.work)
    code, _, err = project.run("branches", "--push", remote)
    assert code == Exit.REFUSED
    assert heads(remote)["perf-P2"] == theirs  # their push is still there
    assert heads(project.work) == local_before  # and nothing changed here either
    assert "perf-P2 on" in err and "someone else pushed" in err
    assert "fetch" in err and "--force" in err
    # the way out, after looking: --force, which keeps their commit first
    code, data, err = branches(project, "--push", remote, "--force")
    assert code == 0, err
    assert heads(remote)["perf-P2"] == heads(project.work)["perf-P2"] != theirs
    assert git(project.work, "rev-parse", "refs/series/backup/remote/perf-P2") == theirs
    assert "refs/series/backup/remote/perf-P2" in data["backups"]


def test_a_dropped_patch_is_listed_for_deletion_and_deleted_only_with_prune(
    tmp_path: Path,
) -> None:
    project, remote = setup(tmp_path)
    assert branches(project, "--push", remote)[0] == 0
    manifest = project.root / "series.toml"
    text = manifest.read_text()
    manifest.write_text(text[: text.index('[[patch]]\nid = "P3"')])
    code, data, err = branches(project, "--push", remote)
    assert code == 0, err
    dropped = next(b for b in data["branches"] if b["branch"] == "perf-P3")
    assert (dropped["action"], dropped["done"], dropped["patch"]) == ("delete", False, None)
    assert "perf-P3" in heads(project.work) and "perf-P3" in heads(remote)
    code, data, err = branches(project, "--push", remote, "--prune")
    assert code == 0, err
    assert "perf-P3" not in heads(project.work) and "perf-P3" not in heads(remote)
    assert set(heads(remote)) == {"perf-P1", "perf-P2"}
    assert branches(project, "--push", remote, "--prune")[1]["changed"] is False


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    project, remote = setup(tmp_path)
    before = heads(project.work)
    code, data, err = branches(project, "--push", remote, "--dry-run")
    assert code == 0, err
    assert set(actions(data).values()) == {"create"} and data["dry_run"] is True
    assert heads(project.work) == before and heads(remote) == {}
    assert git(project.work, "for-each-ref", "refs/series/branches") == ""
    assert branches(project, "--push", remote)[0] == 0
    amend_p2(project)
    both = (heads(project.work), heads(remote))
    code, data, _ = branches(project, "--push", remote, "--dry-run")
    assert actions(data)["perf-P2"] == "move" and not data["changed"]
    assert (heads(project.work), heads(remote)) == both


def test_a_local_branch_series_did_not_make_is_refused(tmp_path: Path) -> None:
    project, _ = setup(tmp_path)
    git(project.work, "branch", "perf-P2", project.commit)
    code, _, err = project.run("branches")
    assert code == Exit.REFUSED
    assert "perf-P2 is at" in err and "did not make" in err
    assert "perf-P1" not in heads(project.work)  # all or nothing
    code, _, err = branches(project, "--force")
    assert code == 0, err
    assert git(project.work, "rev-parse", "refs/series/backup/branches/perf-P2") == project.commit


def test_alone_branches_skip_patches_that_need_earlier_ones(tmp_path: Path) -> None:
    specs = [
        PatchSpec("P1", "core: f1 returns 101", {"pkg/core.py": ("return 1\n", "return 101\n")}),
        PatchSpec("P2", "core: f1 returns 111", {"pkg/core.py": ("return 101\n", "return 111\n")}),
        PatchSpec(
            "P3", "util: VALUE_5 is 55", {"pkg/util.py": ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}
        ),
    ]
    project, _ = setup(tmp_path, specs)
    assert branches(project)[0] == 0
    stacked = heads(project.work)
    code, data, err = branches(project, "--alone", "--prefix", "alone/")
    assert code == 0, err
    assert actions(data) == {
        "alone/perf-P1": "create",
        "alone/perf-P2": "skip",
        "alone/perf-P3": "create",
    }
    assert "does not apply alone" in data["branches"][1]["why"]
    local = heads(project.work)
    for branch in ("alone/perf-P1", "alone/perf-P3"):
        assert git(project.work, "rev-parse", f"{branch}^") == project.commit
    assert {b["base"] for b in data["branches"] if b["action"] == "create"} == {"v1.0"}
    # another naming is another set: pruning one never deletes the other's branches
    code, data, _ = branches(project, "--prune")
    assert code == 0 and not data["changed"]
    assert {k: v for k, v in local.items() if not k.startswith("alone/")} == stacked
    assert set(local) - set(stacked) == {"alone/perf-P1", "alone/perf-P3"}


def test_bad_prefix_and_unreachable_remote(tmp_path: Path) -> None:
    project, _ = setup(tmp_path)
    code, _, err = project.run("branches", "--prefix", "a..b/")
    assert code == Exit.BAD_INPUT and "not a valid branch name" in err
    code, _, err = project.run("branches", "--push", str(tmp_path / "nowhere"))
    assert code == Exit.FAILED and "cannot read the branches of remote" in err
    assert "perf-P1" not in heads(project.work)


def test_needs_a_checkout(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, _, err = project.run("branches")
    assert code == Exit.FAILED and "series apply" in err


def test_the_push_is_leased_and_atomic(tmp_path: Path) -> None:
    """A remote ref that moved after series read it fails the whole push, changing nothing."""
    project, remote = setup(tmp_path)
    assert branches(project, "--push", remote)[0] == 0
    old = heads(remote)
    repo = Repo(project.work)
    stale = old["perf-P1"]
    colleague_pushes(tmp_path, remote, "perf-P2")
    moved = heads(remote)
    result = repo.remote.push_leased(
        remote,
        [
            PushUpdate("refs/heads/perf-P1", project.commit, stale),  # lease still holds
            PushUpdate("refs/heads/perf-P2", project.commit, old["perf-P2"]),  # lease broken
        ],
    )
    assert not result.ok
    assert "refs/heads/perf-P2" in [ref for ref, _ in result.rejected]
    assert heads(remote) == moved  # all or nothing: perf-P1 did not move either


def test_a_checked_out_branch_is_not_moved(tmp_path: Path) -> None:
    project, _ = setup(tmp_path)
    assert branches(project)[0] == 0
    git(project.work, "switch", "-q", "perf-P2")
    amend_p2(project)
    before = heads(project.work)
    code, _, err = project.run("branches", "--force")
    assert code == Exit.REFUSED
    assert "perf-P2 is checked out" in err and "switch series" in err
    assert heads(project.work) == before


def test_a_patch_that_does_not_apply_gets_no_branch_nor_do_later_ones(tmp_path: Path) -> None:
    project, _ = setup(tmp_path)
    patch = project.root / "patches/perf-P2.patch"
    replace_line(patch, "-VALUE_5 = 5\n", "-VALUE_5 = 6\n")
    code, out, err = project.run("branches", "--json")
    assert code == Exit.CONFLICT
    assert "patch P2 does not apply" in err
    data = json.loads(out)
    assert actions(data) == {"perf-P1": "create", "perf-P2": "skip", "perf-P3": "skip"}
    assert set(heads(project.work)) == {"series", "perf-P1"}


def test_a_remote_without_the_upstream_history_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    project, _ = setup(tmp_path)
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    code, _, err = project.run("branches", "--push", str(empty))
    assert code == 4, err
    assert "does not have the history below the pin" in err and "--unshallow" in err
    assert heads(empty) == {}
