"""series branches builds on upstream's real history, and its dry run predicts the push.

The upstream here has history below the pin, as a real one does, so the
pin that series fetches (depth 1) leaves the checkout shallow. A "fork" is
a bare clone of that upstream: it has upstream's history. Each pushed
branch must share that history (its merge base with the pin is the pin),
and each pull request's diff (previous branch..branch) must be exactly its
patch.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from helpers import DEFAULT_SPECS, UPSTREAM_FILES, Project, git, make_patches, manifest_text, write
from series.errors import Exit
from test_upstream import PACKAGE, make_sdist, use_sdist_manifest

BASE = "upstream-v1.0"


def deep_project(tmp: Path) -> Project:
    """make_project's series, on an upstream with two commits of history below the pin."""
    up = tmp / "upstream"
    up.mkdir(parents=True)
    git(up, "init", "-q")
    for n, text in enumerate(("one\n", "two\n"), 1):
        write(up, {"HISTORY.md": text})
        git(up, "add", "-A")
        git(up, "commit", "-qm", f"upstream: history {n}", date=f"2026-01-0{n}T10:00:00+00:00")
    write(up, UPSTREAM_FILES)
    git(up, "add", "-A")
    git(up, "commit", "-qm", "upstream: release", date="2026-01-03T10:00:00+00:00")
    git(up, "tag", "v1.0")
    commit = git(up, "rev-parse", "HEAD")
    root = tmp / "project"
    make_patches(up, tmp / "author", DEFAULT_SPECS, root / "patches")
    (root / "series.toml").write_text(manifest_text(str(up), commit, DEFAULT_SPECS))
    return Project(root, up, commit)


def fork_of(project: Project, name: str = "fork.git") -> Path:
    """A fork: a bare clone of upstream, with its history (and no branch at the pin's name)."""
    fork = project.upstream.parent / name
    git(project.upstream.parent, "clone", "-q", "--bare", str(project.upstream), str(fork))
    return fork


def branches(project: Project, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = project.run("branches", "--json", *args)
    return code, json.loads(out) if out.strip() else {}, err


def heads(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
    return dict(line.split(" ") for line in out.splitlines() if line)


def patch_id(cwd: Path, diff: str) -> str:
    proc = subprocess.run(
        ["git", "patch-id", "--stable"], cwd=cwd, input=diff, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return proc.stdout.split()[0]


def plan(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a run does or would do: every branch, locally and on the remote."""
    return [
        (b["branch"], b["patch"], b["action"], b["old"], b["new"], b["base"], b.get("remote"))
        for b in data["branches"]
    ]


def assert_pull_requests(project: Project, fork: Path, data: dict[str, Any]) -> None:
    """Each branch shares upstream's history; each PR diff is exactly its patch."""
    pushed = heads(fork)
    first = data["branches"][0]
    assert (first["branch"], first["position"], first["new"]) == (BASE, 0, project.commit)
    assert pushed[BASE] == project.commit  # the first PR's base is a branch at the pin
    for b in data["branches"][1:]:
        branch, base = b["branch"], b["base"]
        assert base in pushed, f"the PR base {base} of {branch} is not a branch of the fork"
        assert git(fork, "merge-base", branch, "v1.0") == project.commit
        assert git(fork, "rev-list", "--max-parents=0", branch) == git(
            fork, "rev-list", "--max-parents=0", "v1.0"
        )  # the same root: upstream's
        assert git(fork, "log", "--format=%s", f"{base}..{branch}").splitlines() == [
            next(s.subject for s in DEFAULT_SPECS if s.id == b["patch"])
        ]
        diff = git(fork, "diff", base, branch) + "\n"
        patch = (project.root / "patches" / f"perf-{b['patch']}.patch").read_text()
        assert patch_id(fork, diff) == patch_id(fork, patch), branch


def test_a_git_checkout_pushes_to_a_fork_as_its_dry_run_said(tmp_path: Path) -> None:
    project = deep_project(tmp_path)
    assert project.run("apply")[0] == 0
    assert git(project.work, "rev-parse", "--is-shallow-repository") == "true"
    fork = fork_of(project)
    before = heads(fork)
    code, dry, err = branches(project, "--push", str(fork), "--dry-run")
    assert code == 0, err
    assert heads(fork) == before  # nothing pushed
    code, data, err = branches(project, "--push", str(fork))
    assert code == 0, err
    assert plan(dry) == plan(data)
    assert [b["done"] for b in data["branches"]] == [True] * 4
    assert_pull_requests(project, fork, data)
    assert data["branches"][1]["base"] == BASE
    assert [b["base"] for b in data["branches"][2:]] == ["perf-P1", "perf-P2"]
    # Pinned under another name: a new base branch; the old one is series' to prune.
    manifest = project.root / "series.toml"
    manifest.write_text(manifest.read_text().replace('ref = "v1.0"', 'ref = "release-1.0"'))
    code, data, err = branches(project, "--push", str(fork), "--prune")
    assert code == 0, err
    old = next(b for b in data["branches"] if b["branch"] == BASE)
    assert old["action"] == "delete" and "former pin" in old["why"]
    assert BASE not in heads(fork) and heads(fork)["upstream-release-1.0"] == project.commit


def test_a_fork_whose_history_is_under_another_branch_is_asked(tmp_path: Path) -> None:
    """No branch of the fork is at the pin: series asks it for the commit by id."""
    project = deep_project(tmp_path)
    assert project.run("apply")[0] == 0
    write(project.upstream, {"NEWS.md": "later\n"})
    git(project.upstream, "add", "-A")
    git(project.upstream, "commit", "-qm", "upstream: later")
    fork = fork_of(project)
    git(fork, "tag", "-d", "v1.0")
    code, dry, err = branches(project, "--push", str(fork), "--dry-run")
    assert code == 0, err
    assert "asking" in err and "whether it has" in err
    code, data, err = branches(project, "--push", str(fork))
    assert code == 0, err
    assert plan(dry) == plan(data)
    git(fork, "tag", "v1.0", project.commit)
    assert_pull_requests(project, fork, data)


def test_a_fork_without_upstream_history_is_refused_by_the_dry_run_too(tmp_path: Path) -> None:
    project = deep_project(tmp_path)
    assert project.run("apply")[0] == 0
    stranger = tmp_path / "stranger.git"  # a repository of something else
    git(tmp_path, "init", "-q", "--bare", str(stranger))
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    write(other, {"x": "x\n"})
    git(other, "add", "-A")
    git(other, "commit", "-qm", "other")
    git(other, "push", "-q", str(stranger), "HEAD:refs/heads/main")
    before = heads(stranger)
    local = heads(project.work)
    for dry in (["--dry-run"], []):
        code, _, err = project.run("branches", "--push", str(stranger), *dry)
        assert code == Exit.REFUSED, err
        assert "does not have the history below the pin" in err
        assert "shallow" in err and "--unshallow" in err and "fork" in err
        assert heads(stranger) == before and heads(project.work) == local  # nothing changed


def test_an_sdist_checkout_gets_branches_on_upstreams_commit(tmp_path: Path) -> None:
    project = deep_project(tmp_path)
    use_sdist_manifest(project.root)
    archive = make_sdist(tmp_path / f"{PACKAGE}-1.0.tar.gz")
    code, _, err = project.run("apply", "--upstream", str(archive))
    assert code == 0, err
    sdist = git(project.work, "rev-parse", "refs/series/base")
    assert sdist != project.commit  # the synthetic import commit
    series = git(project.work, "rev-parse", "series")
    fork = fork_of(project)
    code, dry, err = branches(project, "--push", str(fork), "--dry-run")
    assert code == 0, err
    code, data, err = branches(project, "--push", str(fork))
    assert code == 0, err
    assert plan(dry) == plan(data)
    assert data["pin"] == project.commit
    assert_pull_requests(project, fork, data)
    for b in data["branches"]:
        ancestor = subprocess.run(
            ["git", "merge-base", "--is-ancestor", sdist, b["new"]], cwd=project.work, check=False
        )
        assert ancestor.returncode == 1, f"{b['branch']} is on the sdist import"
    assert git(project.work, "rev-parse", "series") == series  # the checkout is left alone


def test_an_sdist_checkout_without_upstream_is_refused_and_takes_upstream(
    tmp_path: Path,
) -> None:
    project = deep_project(tmp_path)
    use_sdist_manifest(project.root)
    archive = make_sdist(tmp_path / f"{PACKAGE}-1.0.tar.gz")
    assert project.run("apply", "--upstream", str(archive))[0] == 0
    fork = fork_of(project)
    before = heads(fork)
    clone = tmp_path / "elsewhere"
    project.upstream.rename(clone)  # upstream.repository no longer answers
    local = heads(project.work)
    for dry in (["--dry-run"], []):
        code, _, err = project.run("branches", "--push", str(fork), *dry)
        assert code == Exit.FAILED, err
        assert "cannot make pull-request branches" in err
        assert "made from the sdist" in err and "shares no history" in err
        assert "--upstream" in err
        assert heads(project.work) == local and heads(fork) == before
    code, data, err = branches(project, "--push", str(fork), "--upstream", str(clone))
    assert code == 0, err
    assert_pull_requests(project, fork, data)


def test_the_real_series_on_a_fork_of_the_shared_excerpt(
    tmp_path: Path, shared_upstream: Path, project_copy: Path
) -> None:
    """The real series on v3.15.1, pushed to a fork of (shallow) real keras."""
    from test_shallow import PIN, real_project

    project = real_project(tmp_path, project_copy)
    code, _, err = project.run("apply", "--source", "git", "--upstream", str(shared_upstream))
    assert code == 0, err
    fork = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", "--no-local", str(shared_upstream), str(fork))
    code, dry, err = branches(project, "--push", str(fork), "--dry-run")
    assert code == 0, err
    code, data, err = branches(project, "--push", str(fork))
    assert code == 0, err
    assert plan(dry) == plan(data)
    pushed = heads(fork)
    assert pushed["upstream-v3.15.1"] == PIN
    assert data["branches"][1]["base"] == "upstream-v3.15.1"
    for b in data["branches"][1:]:
        branch, base = b["branch"], b["base"]
        assert pushed[branch] == b["new"] and base in pushed
        assert git(fork, "merge-base", branch, "v3.15.1") == PIN
        assert len(git(fork, "rev-list", f"{base}..{branch}").split()) == 1
        patch = (
            project.root
            / "patches"
            / next(Path(p.file).name for p in _patches(project) if p.id == b["patch"])
        )
        diff = git(fork, "diff", base, branch) + "\n"
        assert patch_id(fork, diff) == patch_id(fork, patch.read_text()), branch


def _patches(project: Project) -> list[Any]:
    from series.manifest import load

    return list(load(project.root / "series.toml").patches)
