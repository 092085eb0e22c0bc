"""The import rules of docs/architecture.md, checked on the source.

Every import in a module counts, ``TYPE_CHECKING`` ones included, so a
rule cannot be dodged by importing lazily.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from series.cli.table import COMMANDS
from series.commands.options import Exclusive, Option, flat

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
    assert "series.git" in imports(MODULES["series.builder.build"])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_git_package_runs_git(name: str) -> None:
    found = imports(MODULES[name])
    if name.startswith("series.git"):
        outside = [
            n
            for n in _uses(found, "series")
            if not n.startswith(
                (
                    "series.git",
                    "series.digests",
                    "series.errors",
                    "series.faults",
                    "series.json_text",
                    "series.logs",
                    "series.pids",
                    "series.plain",
                    "series.records",
                    "series.refnames",
                )
            )
        ]
        assert not outside, f"{name} (the git layer) imports {outside}"
        return
    assert not _uses(found, "git"), f"{name} imports GitPython; only series.git may"
    assert not raw_git_calls(MODULES[name]), f"{name} passes git argv on lines " + str(
        raw_git_calls(MODULES[name])
    )


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_json_text_imports_json(name: str) -> None:
    """series reads and writes JSON through series.json_text, which leaves the json package
    (and the ``re`` it imports) to the inputs and errors only json answers (its docstring)."""
    if name != "series.json_text":
        assert not _uses(imports(MODULES[name]), "json"), f"{name}: use series.json_text"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("series.commands")))
def test_commands_never_import_the_git_layer(name: str) -> None:
    assert not _uses(imports(MODULES[name]), "series.git"), name


BUILDER_MAY_IMPORT = (
    "series.builder",
    "series.git",
    "series.errors",
    "series.logs",
    "series.refnames",
    "series.records",  # typing's NamedTuple without typing: leaves, no workflow
)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("series.builder")))
def test_the_builder_needs_nothing_above_git(name: str) -> None:
    """Patch files -> commits takes patch entries with their paths: no Series, no manifest,
    no workflow (stack, conflicts, runs, upstream, cli, commands)."""
    found = [
        n
        for n in _uses(imports(MODULES[name]), "series")
        if n != "series" and not n.startswith(BUILDER_MAY_IMPORT)
    ]
    assert not found, f"{name} (the stack builder) imports {found}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_cli_imports_commands(name: str) -> None:
    if name.startswith(("series.commands", "series.cli")):
        return
    assert not _uses(imports(MODULES[name]), "series.commands"), name


ROWS = {command.name: command for command in COMMANDS}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_row_names_a_module_that_declares_its_options_and_run(name: str) -> None:
    """A command is its module and one row: the module declares ``OPTIONS`` and a
    ``run(series, ui, *, ...)`` whose keywords are exactly the options' keys."""
    command = ROWS[name]
    assert command.module in MODULES, f"the row of {name} names {command.module}, not a module"
    module = importlib.import_module(command.module)
    declared = getattr(module, "OPTIONS", None)
    assert isinstance(declared, tuple), f"{command.module} declares no OPTIONS tuple"
    assert all(isinstance(item, Option | Exclusive) for item in declared), command.module
    assert isinstance(getattr(module, "EPILOG", ""), str | None), command.module
    params = list(inspect.signature(module.run).parameters.values())
    assert [p.name for p in params[:2]] == ["series", "ui"], command.module
    keywords = {p.name for p in params[2:] if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert len(params) - 2 == len(keywords), f"{command.module}.run: options are keyword-only"
    assert keywords == {o.keyword for o in flat(declared)}, command.module


def test_every_command_module_has_a_row() -> None:
    found = {n for n in MODULES if n.startswith("series.commands.")} - {"series.commands.options"}
    assert found == {c.module for c in COMMANDS}


@pytest.mark.parametrize("name", sorted(c.module for c in COMMANDS))
def test_a_command_module_imports_its_work_inside_run(name: str) -> None:
    """Its top level imports only the standard library, series.errors and the declarations,
    so that reading a command's options costs nothing of what running it needs."""
    light = ("series.errors", "series.commands.options")
    for node in ast.parse(MODULES[name].read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        else:
            continue  # `if TYPE_CHECKING:` blocks and function bodies are not run at import
        for imported in names:
            top = imported.split(".")[0]
            assert imported in light or top in sys.stdlib_module_names or top == "__future__", (
                f"{name} imports {imported} at its top; import it inside run"
            )


def test_parsing_imports_only_the_command_that_runs() -> None:
    code = (
        "import sys; from series import cli; cli.parser().parse_args(['list', '--json']); "
        "print(' '.join(m for m in sys.modules if m.startswith('series.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    commands = {m for m in out if m.startswith("series.commands.")}
    assert commands == {"series.commands.list", "series.commands.options"}
    assert not [m for m in out if m.startswith(("series.runs", "series.conflicts"))], out


# -- the upstream package (docs/architecture.md, rule 6) ---------------------------

UPSTREAM = "series.upstream"
# The repository methods that reach an upstream (a URL or another repository's refs):
# ``repo.remote.fetch``, ``.rev`` and ``.reachable`` (any ``fetch`` counts).
UPSTREAM_CALLS = ("fetch", "rev", "reachable")


def _reaches_upstream(func: ast.Attribute) -> bool:
    if func.attr == "fetch":
        return True
    on_remote = isinstance(func.value, ast.Attribute) and func.value.attr == "remote"
    return func.attr in UPSTREAM_CALLS and on_remote


def _in_upstream(name: str) -> bool:
    return name == UPSTREAM or name.startswith(UPSTREAM + ".")


def _strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


@pytest.mark.parametrize("name", sorted(n for n in MODULES if not _in_upstream(n)))
def test_only_the_upstream_package_names_the_pin_refs(name: str) -> None:
    lines = [line for line, text in _strings(MODULES[name]) if "refs/series/git/" in text]
    assert not lines, f"{name} spells refs/series/git/ on lines {lines}: use series.upstream"


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if n.startswith(("series.conflicts", "series.stack")))
)
def test_workflows_fetch_upstream_only_through_the_upstream_package(name: str) -> None:
    path = MODULES[name]
    calls = [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and _reaches_upstream(node.func)
    ]
    assert not calls, f"{name} fetches on lines {calls}: ask series.upstream's UpstreamSource"
    inner = [
        n for n in _uses(imports(path), UPSTREAM) if n != UPSTREAM and n in MODULES
    ]  # a module of the package, not a name of its API
    assert not inner, f"{name} imports {inner}: use what series.upstream exports"
    assert not _uses(imports(path), "series.git.remote"), name


# -- the registry of refs/series/* names (docs/architecture.md, rule 9) ------------

REGISTRY = ("series.refnames",)


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module but its docstrings (which may name refs to explain)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n not in REGISTRY))
def test_only_the_registry_spells_series_refs(name: str) -> None:
    lines = [line for line, text in _code_strings(MODULES[name]) if "refs/series/" in text]
    assert not lines, f"{name} spells refs/series/ on lines {lines}: use series.refnames"


def test_the_registry_imports_nothing_of_series() -> None:
    assert not _uses(imports(MODULES["series.refnames"]), "series")


# -- engines below workflows, no cycles between packages (rules 10 and 11) ---------

ENGINES = ("git", "builder", "merge", "evidence", "upstream")
WORKFLOWS = ("stack", "conflicts", "runs", "commands", "cli")


def _unit(module: str) -> str:
    """The package of ``series.<pkg>.x`` (``<pkg>``), or the top-level module itself."""
    return module.split(".")[1] if module.count(".") >= 1 else module


def _owner(name: str) -> str | None:
    """The module an imported name belongs to (``series.merge.Node`` -> ``series.merge``)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES and name != "series" else None


def package_graph() -> dict[str, dict[str, set[str]]]:
    """package -> imported package -> the modules (``a -> b``) that make the edge."""
    graph: dict[str, dict[str, set[str]]] = {}
    for name, path in MODULES.items():
        for imported in _uses(imports(path), "series"):
            owner = _owner(imported)
            if owner is None or _unit(owner) == _unit(name):
                continue
            graph.setdefault(_unit(name), {}).setdefault(_unit(owner), set()).add(
                f"{name} -> {owner}"
            )
    return graph


def _cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_packages() -> None:
    graph = package_graph()
    assert "merge" in graph and "stack" in graph  # the graph sees the packages
    shown = [
        f"{sorted(c)}: " + "; ".join(sorted(e for a in c for b in c for e in graph[a].get(b, ())))
        for c in _cycles(graph)
    ]
    assert not shown, "import cycles between packages: " + " | ".join(shown)


@pytest.mark.parametrize("engine", ENGINES)
def test_engines_never_import_workflows(engine: str) -> None:
    edges = package_graph().get(engine, {})
    found = sorted(e for w in WORKFLOWS for e in edges.get(w, ()))
    assert not found, f"the engine {engine}/ imports workflows: {found}"


@pytest.mark.parametrize("a, b", [("stack", "conflicts"), ("conflicts", "stack")])
def test_neither_workflow_imports_the_other(a: str, b: str) -> None:
    """check-conflicts and rebase share engines (merge, evidence), not each other."""
    assert not sorted(package_graph().get(a, {}).get(b, ())), f"{a}/ imports {b}/"


# Function-local imports of series modules hide cycles and layering. Four kinds are
# the design, not a hiding place: a command imports its work inside run (rule 6, so
# reading its options costs nothing), the entry point sets its signal handlers
# before it imports the CLI, the CLI imports its runner (the session, the
# project, the engines) only once the words parsed into a command, so that --help
# and a usage error import no engine, and the prologue (the project, status) imports
# the engines a method needs when it is called, so that a command that only reads
# (list, show, a status answered from its record) does not load them. (The entry point
# also answers a kept dry run of branches before the CLI: series.stack.branches_kept;
# and a kept plain range-diff: series.stack.rangediff_kept.)
# The git layer's Repo makes each part (merges, fetches, history) when first used, so
# that rebase --abort loads only the parts it runs. git.itself starts git (series.git.child)
# only for a wrapper script, so a kept dry run of branches loads no way to start git. The merge
# engine's names load their module when first used, so that a rebase's resume loads neither the
# series as merge inputs nor the target of --onto. The rebase driver imports the end of a
# rebase (its export), the trailers of a patch upstream took part of and the batched speculation
# only where it uses them, so that a --skip or --continue that stops again loads none of them.
# git.run imports git.inprogress when it first starts git, so that list and show (which
# load the runner and start none) do not load it; git.version and git.itself import it only
# before they ask git its version (whether git would wait on a configuration file).
# The memo and range-diff import the builder only to build, so that a range-diff that
# finds both stacks in the memo loads none of it (nor the mail parts of the git layer).
# The rebase's resume imports the check of a resolution only where --continue checks one,
# and --abort the snapshot's restore once its files are moving, so that --skip loads
# neither (the check's parser alone was 5% of a --skip's own instructions).
# Those are edges of the module graph all the same (LAZY, below). Third-party imports inside
# functions stay allowed (a lazy import of a heavy library is not a cycle).
LAZY = (
    "series.cli.run",
    "series.project",
    "series.status",
    "series.git",
    "series.git.repo",
    "series.upstream",
    "series.upstream.pin",
    "series.git.itself",
    "series.git.run",
    "series.git.version",
    "series.merge",
    "series.stack.rebase_driver",
    "series.stack.rebase_resume",
    "series.stack.rebase_abort",
    "series.builder.memo",
    "series.stack.rangediff",
)


def _may_import_locally(name: str) -> bool:
    return name in ("series.entry", "series.cli", *LAZY) or name.startswith("series.commands.")


def local_series_imports(path: Path) -> list[str]:
    """``function: module`` for each import of a series module inside a function."""
    found = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = ["series.<relative>" if node.level else str(node.module)]
            else:
                continue
            found += [f"{fn.name}: {n}" for n in _uses(set(names), "series")]
    return found


@pytest.mark.parametrize(
    "name",
    sorted(n for n in MODULES if not _may_import_locally(n)),
)
def test_no_function_local_import_of_a_series_module(name: str) -> None:
    found = local_series_imports(MODULES[name])
    assert not found, f"{name} imports series modules inside functions: {found}"


def test_the_local_import_rule_sees_them() -> None:
    assert local_series_imports(MODULES["series.commands.rebase"])
    assert set(local_series_imports(MODULES["series.entry"])) == {
        "_kept: series.stack.branches_kept",
        "_kept: series.stack.rangediff_kept",
        "_kept: series.help_kept",
        "_verified: series.stack.verified_kept",
        "main: series.cli",
    }
    # the CLI's own, exactly: its main imports its runner and (but for a plain re-run of
    # apply or export, parsed without argparse) the argparse parser, and the kept help
    # only for a command line asking for help (or, in main, for the way a help or a
    # version whose reader went away ends), nothing else
    assert set(local_series_imports(MODULES["series.cli"])) == {
        "main: series.cli.run",
        "main: series.cli.parse",
        "parser: series.cli.parse",
        "_help: series.help_kept",
        "_asks_help: series.help_kept",
        "main: series.help_kept",
    }


def _module_cycles(package: str) -> list[list[str]]:
    graph: dict[str, dict[str, set[str]]] = {}
    for name, path in MODULES.items():
        if not name.startswith(package + "."):
            continue
        for imported in _uses(imports(path), package):
            owner = _owner(imported)
            if owner is not None and owner != name:
                graph.setdefault(name, {}).setdefault(owner, set()).add(f"{name} -> {owner}")
    return _cycles(graph)


def test_no_import_cycle_between_the_modules_of_stack() -> None:
    """The rebase sequencer's modules import downwards only (docs/architecture.md)."""
    assert not _module_cycles("series.stack")


REBASE_PURE = ("series.stack.rebase_plan", "series.stack.rebase_step")


@pytest.mark.parametrize("name", REBASE_PURE)
def test_the_rebase_step_is_pure(name: str) -> None:
    """The plan and the step function import no git and no effectful module: only each
    other, and series.records for their records."""
    found = imports(MODULES[name])
    series_imports = {o for n in _uses(found, "series") if (o := _owner(n)) is not None}
    allowed = {*REBASE_PURE, "series.records"}  # the records' class (NamedTuple), no effect
    assert series_imports <= allowed, f"{name} imports {sorted(series_imports)}"
    assert not _uses(found, "git"), f"{name} imports GitPython"
    top = {n.split(".")[0] for n in found} - {"series", "__future__"}
    assert top <= set(sys.stdlib_module_names), f"{name} imports {sorted(top)}"


def module_imports(path: Path, *, local: bool = False) -> set[str]:
    """The series modules ``path`` imports at module level (``from pkg import mod`` is mod);
    ``local``: inside its functions too."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)] if local else []
    nodes = [*tree.body, *(n for f in functions for n in ast.walk(f))]
    for node in nodes:
        if isinstance(node, ast.If):  # TYPE_CHECKING blocks import nothing at run time
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return {n for n in found if n == "series" or n.startswith("series.")}


def test_no_import_cycle_between_any_modules() -> None:
    """No module imports, through any chain, a module that imports it: at module level,
    where function-local imports of series modules are refused (above); a package's
    ``__init__`` counts as a module like any other."""
    graph: dict[str, dict[str, set[str]]] = {}
    for name, path in MODULES.items():
        for imported in module_imports(path, local=name in LAZY):
            owner = imported if imported in MODULES else _owner(imported)
            if owner is not None and owner != name:
                graph.setdefault(name, {}).setdefault(owner, set()).add(f"{name} -> {owner}")
    assert len(graph) > 100  # the graph sees the modules
    assert graph["series.stack.rebase_driver"].get("series.stack.rebase_state")
    assert graph["series.project"].get("series.upstream")  # its lazy imports count
    shown = [
        "; ".join(sorted(e for a in c for b in c for e in graph[a].get(b, ())))
        for c in _cycles(graph)
    ]
    assert not shown, "import cycles between modules: " + " | ".join(shown)
