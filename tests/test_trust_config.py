"""A repository's own git configuration never changes what series writes or answers.

The commands that produce content switch off the user's and the system's
git configuration (``HERMETIC``), and pin what a repository's own
configuration could change (``series.git.run.PINNED``, flags in
series.git.diffs): the checkout's ``.git/config`` and the per-user cache
repository's, which a user can edit too. Each key below changed the bytes
of patch files, the commits built, or ended in an internal error on main.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import DEFAULT_SPECS, UPSTREAM_FILES, PatchSpec, git, make_project, replace_line
from rebase_helpers import moving_project
from series.git import Repo

# key=value as a user would write it with `git config`. Each alone changed what series
# wrote or answered on main, in the checkout's configuration (i18n.commitEncoding in the
# cache repository's too); the other keys of series.git.run.PINNED changed nothing here
# (they would with other content: renames, binary files, conflicts). In groups, so that
# each costs one run of the commands.
GROUPS = {
    "diff": [
        "diff.context=1",  # every patch file with one line of context
        "diff.noprefix=true",
        "diff.suppressBlankEmpty=true",
        "core.bigFileThreshold=10",  # every file a binary patch
        "core.attributesFile=ATTRIBUTES",  # "* -diff": likewise
        "core.quotePath=false",
    ],
    "format": [
        "format.useAutoBase=true",  # an internal error (exit 70)
        "format.headers=X-Extra: yes",
        "format.thread=true",
        "format.coverLetter=true",
        "format.signOff=true",
        "format.to=someone@example.com",
        "format.cc=someone@example.com",
        "format.attach=true",
        "format.subjectPrefix=RFC",
        "format.from=Someone Else <else@example.com>",
    ],
    "encoding": [
        "i18n.commitEncoding=ISO-8859-1",  # other commits built
        "i18n.logOutputEncoding=ISO-8859-1",  # an internal error (exit 70)
    ],
}


# A file and a subject beyond ASCII (core.quotePath, i18n.logOutputEncoding).
FILES = {**UPSTREAM_FILES, "pkg/données.py": "".join(f"N_{i} = {i}\n" for i in range(20))}
SPECS = [
    *DEFAULT_SPECS,
    PatchSpec(
        "P4",
        "données: N_3 et N_10 changent",
        {
            "pkg/données.py": (
                "N_3 = 3\nN_4 = 4\nN_5 = 5\nN_6 = 6\nN_7 = 7\nN_8 = 8\nN_9 = 9\nN_10 = 10\n",
                "N_3 = 33\nN_4 = 4\nN_5 = 5\nN_6 = 6\nN_7 = 7\nN_8 = 8\nN_9 = 9\nN_10 = 100\n",
            )
        },
    ),
]


def _cache_repositories() -> list[Path]:
    """Every git repository in the per-user cache (a bare one: its ``config`` at the top)."""
    cache = Path(os.environ["SERIES_CACHE_DIR"])
    return [c.parent for c in cache.rglob("config") if (c.parent / "objects").is_dir()]


def _configure(repo: Path, key: str, tmp: Path) -> None:
    name, _, value = key.partition("=")
    attributes = tmp / "attributes"
    attributes.write_text("* -diff\n")
    value = value.replace("ATTRIBUTES", str(attributes))
    git(repo, "config", name, value)


def _run(tmp: Path, monkeypatch: pytest.MonkeyPatch, keys: list[str], where: str) -> object:
    """apply, export, a patch changed, apply and export again, check-conflicts: what they
    wrote and answered (this machine's paths left out), with ``keys`` set in the checkout's
    or the cache's configuration after the first apply."""
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp / "cache"))
    project = make_project(tmp, SPECS, FILES)
    for command in ("apply", "export"):
        code, _, err = project.run(command)
        assert code == 0, err
    repos = [project.work] if where == "checkout" else _cache_repositories()
    assert repos
    for repo in repos:
        for key in keys:
            _configure(repo, key, tmp)
    patch = project.root / "patches" / "perf-P2.patch"
    replace_line(patch, "+VALUE_5 = 55\n", "+VALUE_5 = 56\n")
    answers: list[object] = []
    for command in ("apply", "export", "check-conflicts"):
        code, out, err = project.run(command)
        assert code == 0, f"{command}: {err}"
        answers.append(out.replace(str(tmp), "TMP"))
    # export again, not answered from its record: patch files written afresh
    (project.work / ".git" / "series" / "verified.json").unlink(missing_ok=True)
    code, _, err = project.run("export")
    assert code == 0, err
    tree = git(project.work, "rev-parse", "HEAD^{tree}", "HEAD")
    return answers, project.patch_bytes(), tree


@pytest.mark.parametrize("where", ["checkout", "cache"])
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_a_repositorys_own_git_config_changes_nothing_series_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: str, where: str
) -> None:
    """With the keys of ``group`` in the checkout's ``.git/config`` (or the cache
    repository's), apply, export and check-conflicts write the same patch files, build the
    same commits and answer the same as without them; never an internal error. On main
    ``diff.context=1`` rewrote every patch file with one line of context,
    ``format.useAutoBase=true`` ended export in an internal error (exit 70)."""
    plain = _run(tmp_path / "plain", monkeypatch, [], where)
    assert _run(tmp_path / "configured", monkeypatch, GROUPS[group], where) == plain


@pytest.mark.parametrize("key", ["core.autocrlf=true", "core.attributesFile=ATTRIBUTES"])
def test_objects_series_writes_hold_the_bytes_given_whatever_the_repositorys_config(
    tmp_path: Path, key: str
) -> None:
    """The objects series writes (a snapshot of the work tree restored by ``rebase --abort``,
    a merge result, a record) hold the bytes given: on main, ``core.autocrlf true`` in the
    checkout's configuration (or an attribute ``* text eol=lf``) stored a file's CRLF lines
    as LF, so a snapshot restored lost them."""
    repo_path = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo_path))
    attributes = tmp_path / "attributes"
    attributes.write_text("* text eol=lf\n")
    name, _, value = key.partition("=")
    git(repo_path, "config", name, value.replace("ATTRIBUTES", str(attributes)))
    payload = b"first\r\nsecond\r\n"
    [blob] = Repo(repo_path).objects.write("blob", [payload])
    stored = subprocess.run(
        ["git", "cat-file", "blob", blob], cwd=repo_path, check=True, capture_output=True
    ).stdout
    assert stored == payload


def _rebased(tmp: Path, monkeypatch: pytest.MonkeyPatch, keys: list[str], where: str) -> object:
    """``rebase --onto main`` of a project whose upstream carries P3, with ``keys`` set in
    the checkout's or the cache's configuration: what it said and wrote (paths left out)."""
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp / "cache"))
    project = moving_project(tmp, carries_p3=True)
    repos = [project.work] if where == "checkout" else _cache_repositories()
    assert repos
    for repo in repos:
        for key in keys:
            _configure(repo, key, tmp)
    code, out, err = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == 0, err
    manifest = (project.root / "series.toml").read_text()
    tree = git(project.work, "rev-parse", "HEAD^{tree}", "HEAD")
    return (
        out.replace(str(tmp), "TMP"),
        manifest.replace(str(tmp), "TMP"),
        project.patch_bytes(),
        tree,
    )


@pytest.mark.parametrize("where", ["checkout", "cache"])
def test_a_repositorys_own_git_config_changes_nothing_a_rebase_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Every key above at once, then ``rebase --onto`` (merges, patch-ids of upstream
    commits, the patch files rewritten): what it says and writes is what it says and writes
    without them."""
    keys = [key for group in GROUPS.values() for key in group]
    plain = _rebased(tmp_path / "plain", monkeypatch, [], where)
    assert _rebased(tmp_path / "configured", monkeypatch, keys, where) == plain


def test_the_users_own_git_config_from_the_environment_reaches_no_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's ``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n`` (and ``git -c``'s
    ``GIT_CONFIG_PARAMETERS``), above the pins' numbers too, change nothing export writes:
    they are dropped before git starts and the pins are series' own. (Right on main, which
    dropped them already; guards the pins' merging.)"""
    project = make_project(tmp_path, SPECS, FILES)
    for command in ("apply", "export"):
        assert project.run(command)[0] == 0
    before = project.patch_bytes()
    (project.work / ".git" / "series" / "verified.json").unlink(missing_ok=True)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "200")
    for n in range(200):
        monkeypatch.setenv(f"GIT_CONFIG_KEY_{n}", "diff.context" if n % 2 else "format.signOff")
        monkeypatch.setenv(f"GIT_CONFIG_VALUE_{n}", "1" if n % 2 else "true")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'diff.noprefix'='true'")
    code, _, err = project.run("export")
    assert code == 0, err
    assert project.patch_bytes() == before
