"""The import rules of docs/architecture.md, checked on the source.

Every import in a module counts, ``TYPE_CHECKING`` ones included, so a
rule cannot be dodged by importing lazily.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tools" / "series"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        if "harness" in rel.parts:
            continue  # pytest plugins loaded into the tree under test, not the package
        name = ".".join(rel.parts).removesuffix(".__init__")
        found[name] = path
    return found


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def raw_git_calls(path: Path) -> list[int]:
    """Lines calling ``<something>.git(...)``, the runner that takes raw argv."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("git", "git_bytes", "git_status", "git_input")
        ):
            lines.append(node.lineno)
    return lines


MODULES = modules()


def _uses(names: set[str], prefix: str) -> list[str]:
    return sorted(n for n in names if n == prefix or n.startswith(prefix + "."))


def test_the_rules_see_the_package() -> None:
    assert "series.git.repo" in MODULES and "series.commands.apply" in MODULES
    assert "series.git" in imports(MODULES["series.stack.build"])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_git_package_runs_git(name: str) -> None:
    found = imports(MODULES[name])
    if name.startswith("series.git"):
        outside = [
            n for n in _uses(found, "series") if not n.startswith(("series.git", "series.errors"))
        ]
        assert not outside, f"{name} (the git layer) imports {outside}"
        return
    assert not _uses(found, "git"), f"{name} imports GitPython; only series.git may"
    assert not raw_git_calls(MODULES[name]), f"{name} passes git argv on lines " + str(
        raw_git_calls(MODULES[name])
    )


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("series.commands")))
def test_commands_never_import_the_git_layer(name: str) -> None:
    assert not _uses(imports(MODULES[name]), "series.git"), name


@pytest.mark.parametrize("name", ["series.stack.build", "series.stack.memo"])
def test_building_the_stack_needs_no_series_object(name: str) -> None:
    assert not _uses(imports(MODULES[name]), "series.project"), name


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_cli_imports_commands(name: str) -> None:
    if name.startswith(("series.commands", "series.cli")):
        return
    assert not _uses(imports(MODULES[name]), "series.commands"), name
