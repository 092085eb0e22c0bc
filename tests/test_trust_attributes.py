"""A repository's own attributes never change what series writes or answers.

git reads attributes from ``.gitattributes`` files of a work tree (upstream's
or a patch's), from ``$GIT_DIR/info/attributes`` (which no configuration
switches off in git 2.39), from ``core.attributesFile`` and from
``/etc/gitattributes``. ``diff=DRIVER`` (with ``diff.DRIVER.xfuncname`` in
``.git/config``) changes hunk headers; ``-diff`` or ``binary`` makes every
patch file a binary patch, and ``-merge`` every merge a conflict; a
``merge=`` driver or ``conflict-marker-size`` changes merges. Diffs, patch
files, patch-ids and merges now read the repository's objects through an
empty bare repository (``series.git.run.Runner.no_attributes``). Each group
below changed the patch files or an answer on main (docs/hardening.md, "A
repository's own attributes").
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers import UPSTREAM_FILES, git, make_project, replace_line
from rebase_helpers import moving_project
from test_trust_config import FILES, SPECS, _cache_repositories

# attributes (as a user would write them), and the configuration they name
GROUPS = {
    "binary": ("*.py binary conflict-marker-size=3\n", []),  # binary patches; -merge
    "driver": (
        "*.py diff=custom merge=union whitespace=-trailing-space\n",
        ["diff.custom.xfuncname=^N_3.*$"],  # hunk headers
    ),
    "nodiff": ("* -diff\n", []),
    # A clean filter in the checkout makes git itself see its files as changed (git
    # status): series says so as git does ("uncommitted changes"); not here.
    "text": ("* text eol=crlf ident\n", []),
}


def _attributes(repo: Path, group: str) -> None:
    """The group's attributes in ``repo``'s ``info/attributes``, its keys in its config."""
    text, keys = GROUPS[group]
    gitdir = repo / ".git" if (repo / ".git").is_dir() else repo
    (gitdir / "info").mkdir(exist_ok=True)
    (gitdir / "info" / "attributes").write_text(text)
    for key in keys:
        name, _, value = key.partition("=")
        git(repo, "config", name, value)


def _ids(text: str) -> str:
    return re.sub(r"\b[0-9a-f]{12}\b", "ID", text)


def _run(tmp: Path, monkeypatch: pytest.MonkeyPatch, group: str | None, where: str) -> object:
    """apply, export, a patch changed, apply, export, check-conflicts, export again (not
    from its record): what they wrote and answered, with the group's attributes in the
    checkout's or the cache repositories' ``info/attributes`` (after the first apply), or
    in upstream's own ``.gitattributes`` (commit ids left out: upstream is another)."""
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp / "cache"))
    files = dict(FILES)
    if where == "upstream":
        files[".gitattributes"] = GROUPS[group][0] if group else "# none\n"
    project = make_project(tmp, SPECS, files)
    for command in ("apply", "export"):
        code, _, err = project.run(command)
        assert code == 0, err
    if group is not None:
        repos = {"checkout": [project.work], "cache": _cache_repositories()}.get(where)
        for repo in repos or [project.work]:
            if where == "upstream":  # the configuration the attributes name
                for key in GROUPS[group][1]:
                    git(repo, "config", *key.split("=", 1))
            else:
                _attributes(repo, group)
    patch = project.root / "patches" / "perf-P2.patch"
    replace_line(patch, "+VALUE_5 = 55\n", "+VALUE_5 = 56\n")
    answers: list[object] = []
    for command in ("apply", "export", "check-conflicts"):
        code, out, err = project.run(command)
        assert code == 0, f"{command}: {err}"
        answers.append(_ids(out.replace(str(tmp), "TMP")))
    (project.work / ".git" / "series" / "verified.json").unlink(missing_ok=True)
    code, _, err = project.run("export")
    assert code == 0, err
    tree = git(project.work, "rev-parse", "HEAD^{tree}", "HEAD")
    return answers, project.patch_bytes(), tree if where != "upstream" else None


@pytest.mark.parametrize("where", ["checkout", "cache", "upstream"])
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_a_repositorys_own_attributes_change_nothing_series_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: str, where: str
) -> None:
    """On main, ``-diff``/``binary`` in the checkout's ``info/attributes`` or upstream's
    ``.gitattributes`` wrote every patch file as a GIT binary patch, ``diff=custom`` other
    hunk headers, and ``binary`` in the cache repository's said that P3 does not apply
    alone (check-conflicts). Now: the same patch files, commits and answers."""
    plain = _run(tmp_path / "plain", monkeypatch, None, where)
    assert _run(tmp_path / "attributes", monkeypatch, group, where) == plain


def _rebased(tmp: Path, monkeypatch: pytest.MonkeyPatch, group: str | None, where: str) -> object:
    monkeypatch.setenv("SERIES_CACHE_DIR", str(tmp / "cache"))
    project = moving_project(tmp, carries_p3=True)
    if group is not None:
        for repo in [project.work] if where == "checkout" else _cache_repositories():
            _attributes(repo, group)
    code, out, _ = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    manifest = (project.root / "series.toml").read_text()
    tree = git(project.work, "rev-parse", "HEAD^{tree}", "HEAD")
    return (
        code,
        out.replace(str(tmp), "TMP"),
        manifest.replace(str(tmp), "TMP"),
        tree,
        (project.patch_bytes()),
    )


@pytest.mark.parametrize("where", ["checkout", "cache"])
@pytest.mark.parametrize("group", ["binary", "driver"])
def test_a_repositorys_own_attributes_change_nothing_a_rebase_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: str, where: str
) -> None:
    """``rebase --onto`` (merges, patch-ids of upstream commits, patch files rewritten)
    with attributes that make every merge a conflict (``binary``: ``-merge``) or a union
    (``merge=union``): what it says and writes is what it does without them."""
    plain = _rebased(tmp_path / "plain", monkeypatch, None, where)
    assert _rebased(tmp_path / "attributes", monkeypatch, group, where) == plain


def test_an_sdist_is_imported_byte_for_byte_whatever_the_attributes_say(
    tmp_path: Path,
) -> None:
    """The sdist's files went into the cache with ``git add``: the conversions its own
    ``.gitattributes`` and the cache repository's ``info/attributes`` name applied (a
    ``text`` file's CRLF stored as LF: another tree than upstream's), and a ``filter=``
    the sdist named ran its clean command when a configuration git reads there defined
    it (here the cache repository's own and the user's). Now every file's bytes are
    stored exactly and no filter runs."""
    from test_upstream import PACKAGE, make_sdist, use_sdist_manifest

    project = make_project(tmp_path)
    use_sdist_manifest(project.root)
    mark = tmp_path / "filter-ran"
    files = {
        **UPSTREAM_FILES,
        ".gitattributes": "*.dat filter=evil\n",
        "notes.txt": "one\r\ntwo\r\n",
        "data.dat": "the sdist's own bytes\n",
    }
    archive = make_sdist(tmp_path / f"{PACKAGE}-1.0.tar.gz", files=files)
    cache = Path(os.environ["SERIES_CACHE_DIR"]) / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(cache))
    (cache / "info").mkdir(exist_ok=True)
    (cache / "info" / "attributes").write_text("*.txt text\n")
    clean = f"touch {mark}; sed s/own/filtered/"
    git(cache, "config", "filter.evil.clean", clean)
    (tmp_path / "home").mkdir(exist_ok=True)
    git(
        tmp_path,
        "config",
        "--file",
        str(tmp_path / "home" / ".gitconfig"),
        "filter.evil.clean",
        clean,
    )

    code, _, err = project.run("apply", "--upstream", str(archive))
    assert code == 0, err
    base = git(project.work, "rev-parse", "refs/series/base")
    for name, text in files.items():
        shown = subprocess.run(
            ["git", "cat-file", "blob", f"{base}:{name}"],
            cwd=project.work,
            capture_output=True,
            check=True,
        ).stdout
        assert shown == text.encode(), name
    assert not mark.exists()
