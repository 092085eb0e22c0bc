"""Which files are test code, which tests a diff touches, and which names a patch introduces.

``series prove`` (series.runs.prove) splits each patch into its test
changes and its production change by path alone, with one rule, here:
**a test file** is a file named ``test_*.py`` or ``*_test.py``, a
``conftest.py``, or any file under a directory named ``tests`` (fixtures,
data, helpers). Everything else is production code.

The tests a patch "adds or changes" are found from its diff against the
AST of each changed test module as the patch leaves it: every changed
line that is not blank or a comment belongs to the ``test*`` function or
method around it (decorators included); or to a **helper**, a definition
that runs only when something names it (an undecorated helper method or
module-level function, a module-level import, a module-level assignment
to plain names, a module-level class with no tests): the tests that name
it, directly or through other helpers, are touched (a use of it anywhere
else selects that place's class or file); or else to the class around it
(a class attribute, ``setUp``, a decorated method: the whole class), or
to the module (a fixture, an ``if`` block: the whole file). A hunk that
only deletes lines touches what its neighbouring lines belong to. A
touched class also touches its subclasses in the same file, which is
where a mixin's tests run.

Tests whose names absl's ``parameterized`` decorators rewrite
(``test_x`` runs as ``test_x_case`` or ``test_x0``) cannot be selected by
their node id: they are selected by prefix (``...::test_x*``, which the
harness reads as "every test whose id starts so"), and the results are
mapped back to the method whose name is the longest prefix of the test's
name.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

TEST_DIRS = ("tests",)
_IMPORT_LIKE = (ast.Import, ast.ImportFrom)
# Methods and functions unittest or pytest call without naming them: never helpers.
_IMPLICIT = frozenset(
    {
        "setUp", "tearDown", "setUpClass", "tearDownClass", "setUpModule", "tearDownModule",
        "setup_method", "teardown_method", "setup_class", "teardown_class",
        "setup_module", "teardown_module", "setup_function", "teardown_function",
        "setup", "teardown", "run", "debug", "load_tests", "pytestmark",
    }
)  # fmt: skip
# Decorators that leave a helper run only where it is named.
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "cached_property"})


def is_test_file(path: str) -> bool:
    """The one rule: is ``path`` test code (kept when prove reverts a patch)?"""
    parts = PurePosixPath(path).parts
    name = parts[-1]
    if name == "conftest.py" or is_test_module(path):
        return True
    return any(part in TEST_DIRS for part in parts[:-1])


def is_test_module(path: str) -> bool:
    """A file pytest collects tests from (its default ``python_files``)."""
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


@dataclass(frozen=True)
class Scope:
    """Tests a diff touches: a whole file, a whole class, or one function or method."""

    file: str
    cls: str | None = None
    func: str | None = None
    renamed: bool = False  # parameterized: run the class, map the results back

    @property
    def selection(self) -> str:
        func = f"{self.func}*" if self.renamed and self.func else self.func
        return "::".join(p for p in (self.file, self.cls, func) if p)


@dataclass(frozen=True)
class _Span:
    first: int
    last: int
    scope: Scope
    binds: frozenset[str] = frozenset()  # a helper's names: a change touches their users


@dataclass(frozen=True)
class _Use:
    """A place that names things: a test, a helper (``binds``), or a class's or file's own code."""

    scope: Scope
    refs: frozenset[str]
    binds: frozenset[str] = frozenset()


@dataclass
class TestModule:
    """One test module as the patch leaves it: its classes, tests and spans."""

    path: str
    spans: list[_Span]
    names: dict[str | None, set[str]]  # class (None: module) -> its test names
    bases: dict[str, set[str]]  # class -> the classes of this file it derives from
    lines: list[str]
    parsed: bool = True
    uses: list[_Use] = field(default_factory=list)


def read_module(path: str, source: str) -> TestModule:
    lines = source.splitlines()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return TestModule(path, [], {}, {}, lines, parsed=False)
    module = TestModule(path, [], {None: set()}, {}, lines)
    for node in tree.body:
        first = min([d.lineno for d in _decorators(node)] + [node.lineno])
        last = node.end_lineno or node.lineno
        binds = _module_helper(node, set(module.bases))
        if isinstance(node, ast.ClassDef) and not binds:
            _read_class(module, node, first, last)
        elif _is_test(node):
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            module.names[None].add(node.name)
            scope = Scope(path, None, node.name, _renamed(node))
            module.spans.append(_Span(first, last, scope))
            module.uses.append(_Use(scope, _refs(node)))
        else:
            module.spans.append(_Span(first, last, Scope(path), binds))
            module.uses.append(_Use(Scope(path), _refs(node), binds))
    return module


def _read_class(module: TestModule, node: ast.ClassDef, first: int, last: int) -> None:
    names = module.names.setdefault(node.name, set())
    module.bases[node.name] = {b.id for b in node.bases if isinstance(b, ast.Name)}
    whole = Scope(module.path, node.name)
    inner = []
    own = [*node.bases, *node.keywords, *node.decorator_list]  # what the class itself names
    for item in node.body:
        if _is_test(item):
            assert isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            names.add(item.name)
            start = min([d.lineno for d in item.decorator_list] + [item.lineno])
            scope = Scope(module.path, node.name, item.name, _renamed(item))
            inner.append(_Span(start, item.end_lineno or item.lineno, scope))
            module.uses.append(_Use(scope, _refs(item)))
        elif _is_helper(item):
            assert isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            start = min([d.lineno for d in item.decorator_list] + [item.lineno])
            binds = frozenset({item.name})
            inner.append(_Span(start, item.end_lineno or item.lineno, whole, binds))
            module.uses.append(_Use(whole, _refs(item), binds))
        else:
            own.append(item)
    module.uses.append(_Use(whole, frozenset().union(*map(_refs, own))))
    # Methods first: the class span is the fallback for lines outside them.
    module.spans += [*inner, _Span(first, last, whole)]


def _is_helper(node: ast.stmt) -> bool:
    """A function or method that runs only where it is named (not a test, hook or fixture)."""
    return (
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not _is_test(node)
        and node.name not in _IMPLICIT
        and not (node.name.startswith("__") and node.name.endswith("__"))
        and all(ast.unparse(d).split(".")[-1] in _PLAIN_DECORATORS for d in node.decorator_list)
    )


def _module_helper(node: ast.stmt, classes: set[str]) -> frozenset[str]:
    """The names a module-level helper binds; empty when the statement is not one.

    ``classes``: the test classes read so far (a class deriving from one is one).
    """
    if _is_helper(node):
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        return frozenset({node.name})
    if isinstance(node, _IMPORT_LIKE):
        names = [a.asname or a.name.split(".")[0] for a in node.names]
        return frozenset() if "*" in names else frozenset(names)
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if all(isinstance(t, ast.Name) for t in targets):
            found = {t.id for t in targets if isinstance(t, ast.Name)}
            if not found & _IMPLICIT and not any(n.startswith("__") for n in found):
                return frozenset(found)
    if isinstance(node, ast.ClassDef):  # decorated too: what it registers needs the class
        return frozenset() if _has_tests(node, classes) else frozenset({node.name})
    return frozenset()


def _has_tests(node: ast.ClassDef, classes: set[str]) -> bool:
    """Whether pytest could collect tests from the class (a test class, not a helper)."""
    if node.name.startswith("Test") or any(_is_test(item) for item in node.body):
        return True
    bases = [ast.unparse(b) for b in node.bases]
    return any(b in classes or b.endswith(("TestCase", "Test")) for b in bases)


def _refs(node: ast.AST) -> frozenset[str]:
    """Every name a piece of code may refer to: names, attributes, parameters (fixtures)."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif isinstance(sub, ast.arg):
            found.add(sub.arg)
    return frozenset(found)


def _decorators(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.decorator_list
    return []


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")


def _renamed(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("parameterized" in ast.unparse(d) for d in node.decorator_list)


def touched(module: TestModule, hunks: list[tuple[int, int]]) -> list[Scope]:
    """The scopes the hunks (new-side ``(first, count)``) touch, widest first, deduplicated."""
    if not module.parsed:
        return [Scope(module.path)]
    found: dict[Scope, None] = {}
    helpers: set[str] = set()
    for first, count in hunks:
        lines = range(first, first + count) if count else (first, first + 1)
        for line in lines:
            span = _span_at(module, line)
            if span is not None and span.binds:
                helpers |= span.binds
            elif span is not None:
                found.setdefault(span.scope, None)
    found.update(dict.fromkeys(_users(module, helpers)))
    scopes = _with_subclasses(module, list(found))
    if any(s.cls is None and s.func is None for s in scopes):
        return [Scope(module.path)]
    whole = {s.cls for s in scopes if s.func is None}
    return sorted(
        (s for s in scopes if s.func is None or s.cls not in whole),
        key=lambda s: (s.cls or "", s.func or ""),
    )


def _span_at(module: TestModule, line: int) -> _Span | None:
    if not 1 <= line <= len(module.lines):
        return None
    text = module.lines[line - 1].strip()
    if not text or text.startswith("#"):
        return None
    for span in module.spans:
        if span.first <= line <= span.last:
            return span
    return _Span(line, line, Scope(module.path))  # between statements: module level


def _users(module: TestModule, names: set[str]) -> list[Scope]:
    """What runs the changed helpers ``names``: the tests (or class, or file) naming them."""
    found: dict[Scope, None] = {}
    pending, seen = set(names), set(names)
    while pending:
        name = pending.pop()
        for use in module.uses:
            if name not in use.refs:
                continue
            if use.binds:  # another helper: its users in turn
                pending |= use.binds - seen
                seen |= use.binds
            else:
                found.setdefault(use.scope, None)
    return list(found)


def _with_subclasses(module: TestModule, scopes: list[Scope]) -> list[Scope]:
    out = dict.fromkeys(scopes)
    changed = True
    while changed:
        changed = False
        for scope in list(out):
            if scope.cls is None:
                continue
            for sub, bases in module.bases.items():
                extra = Scope(scope.file, sub, scope.func, scope.renamed)
                if scope.cls in bases and extra not in out:
                    out[extra] = None
                    changed = True
    return list(out)


def covers(scopes: list[Scope], modules: dict[str, TestModule], nodeid: str) -> bool:
    """Whether a test the runs reported (a node id) is one the scopes touch."""
    parts = nodeid.split("::")
    file = parts[0]
    for scope in scopes:
        if scope.file != file:
            continue
        if (scope.cls is None and scope.func is None) or len(parts) == 1:
            return True  # the whole file, or the file's own collection error
        module = modules.get(file)
        cls, name = (parts[1], parts[-1]) if len(parts) > 2 else (None, parts[1])
        if scope.cls != cls:
            continue
        if scope.func is None:
            return True
        names = module.names.get(cls, set()) if module is not None else set()
        if _owner(name.split("[", 1)[0], names) == scope.func:
            return True
    return False


def _owner(name: str, names: set[str]) -> str:
    """The defined test whose generated tests include ``name``: the longest prefix."""
    if name in names:
        return name
    prefixes = [n for n in names if name.startswith(n)]
    return max(prefixes, key=len) if prefixes else name


# -- names a patch introduces --------------------------------------------------------

_MISSING_NAME = (
    re.compile(r"cannot import name '([^']+)'"),
    re.compile(r"has no attribute '([^']+)'"),
    re.compile(r"does not have the attribute '([^']+)'"),
    re.compile(r"name '([^']+)' is not defined"),
)
_MISSING_MODULE = re.compile(r"No module named '([^']+)'")


def defined_names(source: str) -> set[str]:
    """Every name a Python file defines: defs, classes, assignments, attributes, imports."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, _IMPORT_LIKE):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def module_names(path: str) -> set[str]:
    """The names a new file adds: its module and package path components."""
    parts = PurePosixPath(path).with_suffix("").parts
    return {p for p in parts if p != "__init__"}


def missing_name(message: str) -> tuple[str, ...]:
    """The names an ImportError / AttributeError / NameError message says are missing."""
    found: list[str] = []
    for pattern in _MISSING_NAME:
        found += pattern.findall(message)
    for module in _MISSING_MODULE.findall(message):
        found += module.split(".")
    return tuple(found)


def unchanged_tests(before: str, after: str) -> tuple[set[str], set[str]]:
    """(every test function of ``after``, those whose source is as in ``before``).

    Names are ``name`` or ``Class::name``. A test that fails without a
    patch's production change and is unchanged was failing before the
    patch too: the patch did not break it. See :func:`is_unchanged` for the
    tests a decorator generates.
    """

    def tests(source: str) -> dict[str, str]:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return {}
        found: dict[str, str] = {}
        for node in tree.body:
            items = (
                [(f"{node.name}::", n) for n in node.body]
                if isinstance(node, ast.ClassDef)
                else [("", node)]
            )
            for prefix, item in items:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _is_test(item):
                    found[prefix + item.name] = ast.get_source_segment(source, item) or ""
        return found

    old, new = tests(before), tests(after)
    return set(new), {name for name, text in new.items() if old.get(name) == text}


def is_unchanged(test: str, defined: set[str], unchanged: set[str]) -> bool:
    """Whether ``Class::name`` (maybe generated, e.g. by absl's parameterized) is unchanged."""
    cls, _, name = test.rpartition("::")
    prefix = f"{cls}::" if cls else ""
    names = {d.removeprefix(prefix) for d in defined if d.rpartition("::")[0] == cls}
    return f"{prefix}{_owner(name, names)}" in unchanged
