"""Properties, with hypothesis: generated series round-trip; generated manifests never crash.

* A generated series of small patches (line edits, new files) on a
  small upstream: ``apply`` then ``export`` gives canonical patch files, and
  applying those into a new checkout and exporting again gives the same
  bytes and changes nothing; the checkout holds the author's final tree.
* A generated manifest (a valid one with keys replaced by values of any
  TOML type, removed, or added, and raw text) either loads or fails with
  ``ManifestError``: never another exception.
"""

from __future__ import annotations

import copy
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import PatchSpec, Project, git, make_project
from series.errors import ManifestError
from series.manifest import load, parse

SMALL = {
    "pkg/__init__.py": "",
    "pkg/a.py": "".join(f"A{i} = {i}\n" for i in range(8)),
    "pkg/b.py": "".join(f"B{i} = {i}\n" for i in range(8)),
    "README.md": "small upstream\n",
}

_edit = st.tuples(st.sampled_from(["pkg/a.py", "pkg/b.py"]), st.integers(0, 7), st.integers(10, 99))
_new = st.tuples(
    st.sampled_from(["pkg/c.py", "docs/x.md", "pkg/sub/d.py"]), st.text("xyz \n", max_size=20)
)
_patch = st.tuples(st.lists(_edit, max_size=3), st.lists(_new, max_size=1), st.booleans())


def _specs(raw: list[tuple[list[Any], list[Any], bool]]) -> list[PatchSpec]:
    """Specs whose edits always find their line: values are tracked as patches stack."""
    current = {name: text for name, text in SMALL.items()}
    specs = []
    for i, (edits, news, flag) in enumerate(raw, 1):
        changes: dict[str, tuple[str, str]] = {}
        for name, line, value in edits:
            lines = current[name].splitlines(keepends=True)
            old = lines[line]
            new = f"{old.split(' = ')[0]} = {value}{i}\n"
            if old == new or name in changes:
                continue
            changes[name] = (old, new)
            lines[line] = new
            current[name] = "".join(lines)
        files = {name: f"# {i}\n{text}" for name, text in news}
        if not changes and not files:
            # Never empty: an empty patch made by plain format-patch carries its
            # signature into the message (there is no '---' to stop at).
            files = {f"new/{i}.txt" if flag else f"pkg/n{i}.py": f"N = {i}\n"}
        current.update(files)
        specs.append(PatchSpec(f"P{i}", f"change {i}: values", changes, files))
    return specs


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_patch, min_size=1, max_size=4))
def test_generated_series_round_trip_byte_identically(raw: list[Any]) -> None:
    specs = _specs(raw)
    with tempfile.TemporaryDirectory(prefix="series-prop-") as tmp:
        project = _project(Path(tmp), specs)
        code, _, err = project.run("apply")
        assert code == 0, err
        author_tree = git(Path(tmp) / "author", "rev-parse", "HEAD^{tree}")
        assert git(project.work, "rev-parse", "series^{tree}") == author_tree
        assert project.run("export")[0] == 0
        canonical = project.patch_bytes()
        manifest = (project.root / "series.toml").read_bytes()
        other = Path(tmp) / "other"
        assert project.run("apply", "--dir", str(other))[0] == 0
        code, out, err = project.run("export", "--dir", str(other))
        assert code == 0, err
        assert "0 file(s) changed" in out
        assert project.patch_bytes() == canonical
        assert (project.root / "series.toml").read_bytes() == manifest
        assert git(other, "rev-parse", "series") == git(project.work, "rev-parse", "series")


def _project(tmp: Path, specs: list[PatchSpec]) -> Project:
    return make_project(tmp, specs, SMALL)


# -- manifests ----------------------------------------------------------------------

_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["../x.patch", "/etc/passwd", "patches/perf-P1.patch", "P1", "open", ""]),
)
_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _paths(value, (*prefix, i))
    return out


@pytest.fixture
def valid(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    return path, tomllib.loads(path.read_text())


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_generated_manifests_load_or_fail_with_a_manifest_error(
    valid: tuple[Path, dict[str, Any]], data: st.DataObject
) -> None:
    path, good = valid
    doc = copy.deepcopy(good)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(doc)
        if not paths:
            break
        where = data.draw(st.sampled_from(paths))
        parent: Any = doc
        for key in where[:-1]:
            parent = parent[key]
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[where[-1]] = data.draw(_value)
        elif action == "delete" and isinstance(parent, dict):
            del parent[where[-1]]
        elif isinstance(parent, dict):
            parent[data.draw(st.text(max_size=8))] = data.draw(_value)
    try:
        parse(path, doc)
    except ManifestError as exc:
        assert str(path) in exc.message or "series.toml" in exc.message


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=200))
def test_generated_manifest_text_loads_or_fails_with_a_manifest_error(
    valid: tuple[Path, dict[str, Any]], text: str
) -> None:
    path, _ = valid
    target = path.with_name("fuzz.toml")
    target.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load(target)
    except ManifestError as exc:  # the one allowed failure; anything else fails the test
        assert exc.exit_code == 2
