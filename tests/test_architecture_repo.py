"""The shape of ``git.Repo`` (docs/architecture.md, "The repository"), checked on the source.

``Repo`` is composed of narrow parts, not a flat surface of mixins; the
parts do not know ``Repo``; and commits go from one repository of series'
to another in one way only.
"""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

from series.git import Repo
from series.git.run import Part, Runner
from test_architecture import MODULES, imports

# What a part may offer: a part that outgrows this is two concepts.
MAX_PART_MEMBERS = 16
# Creating and recognising a repository: init, clone_local, is_repo, git_dir.
MAX_REPO_OWN_MEMBERS = 4


def _public(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_"))


def _parts() -> dict[str, Part]:
    repo = Repo(Path("unused"))  # builds refs and objects; runs no git
    for name in _public(Repo):  # the other parts are made on first use
        if isinstance(inspect.getattr_static(Repo, name), functools.cached_property):
            getattr(repo, name)
    return {name: value for name, value in vars(repo).items() if isinstance(value, Part)}


def test_repo_is_composed_of_parts_not_mixins() -> None:
    assert Repo.__bases__ == (object,), f"Repo inherits {Repo.__bases__}: compose parts instead"
    assert not issubclass(Repo, Runner)
    parts = _parts()
    assert {"refs", "objects", "index", "merge", "remote", "worktree"} <= set(parts)
    own = [n for n in _public(Repo) if n not in parts]
    assert len(own) <= MAX_REPO_OWN_MEMBERS, f"Repo's own members: {own}"


def test_each_part_is_narrow_and_stands_alone() -> None:
    parts = _parts()
    assert len(parts) >= 6, f"Repo has parts {sorted(parts)}"
    for name, part in parts.items():
        cls = type(part)
        assert cls.__mro__ == (cls, Part, object), f"repo.{name} ({cls.__name__}) mixes in"
        members = [n for n in _public(cls) if n != "path"]
        assert len(members) <= MAX_PART_MEMBERS, f"repo.{name}: {len(members)} {members}"
        assert not any(n.startswith("git") for n in members), f"repo.{name} runs raw argv"


def test_no_part_imports_the_repo() -> None:
    """Repo knows its parts; no part (remote included) knows Repo. (series.git.names is
    not a part: it is the package's names, Repo among them, loaded on first use.)"""
    found = {
        name: sorted(n for n in imports(path) if n.startswith("series.git.repo"))
        for name, path in MODULES.items()
        if name.startswith("series.git.") and name not in ("series.git.repo", "series.git.names")
    }
    assert not {k: v for k, v in found.items() if v}
    assert "series.git.remote" in imports(MODULES["series.git.repo"])  # the test sees it


def _copies_between_repositories(func: ast.FunctionDef) -> bool:
    """Whether ``func`` fetches with another repository's path as the source."""
    fetches = any(
        (isinstance(n, ast.Constant) and n.value == "fetch")
        or (isinstance(n, ast.Attribute) and n.attr == "fetch")
        for n in ast.walk(func)
    )
    other_path = any(
        isinstance(n, ast.Attribute)
        and n.attr == "path"
        and not (isinstance(n.value, ast.Name) and n.value.id == "self")
        and any(
            isinstance(c, ast.Call)
            and isinstance(c.func, ast.Name)
            and c.func.id == "str"
            and n in c.args
            for c in ast.walk(func)
        )
        for n in ast.walk(func)
    )
    return fetches and other_path


def test_one_function_copies_commits_between_repositories() -> None:
    found = []
    for name, path in MODULES.items():
        if not name.startswith("series.git"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for func in node.body:
                    if isinstance(func, ast.FunctionDef) and _copies_between_repositories(func):
                        found.append(f"{name}.{node.name}.{func.name}")
    assert found == ["series.git.remote.Remote.copy_from"]


def test_callers_copy_commits_only_through_copy_from() -> None:
    """Outside git/, no module builds its own copy (the old fetch_from, fetch_commits)."""
    for name, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        assert "fetch_from" not in source and "fetch_commits" not in source, name
    assert "def copy_from" in inspect.getsource(type(Repo(Path("unused")).remote))
