"""pytest plugin: make the package under test import from the tree under test.

Loaded by ``series test`` with ``-p series_keras_tree``. The directory that
holds this file is put on PYTHONPATH by the runner; it is not part of the
``series`` package's import surface. Environment it reads:

* ``SERIES_TREE``: the tree root (default: the current directory);
* ``SERIES_PACKAGE``: the top-level package the tests import (the manifest's
  ``upstream.name``; default ``keras``);
* ``SERIES_PROOF_FILE``: where to write the directory the package was
  imported from, so the runner can check it independently of pytest's
  output (written before the check, so a failed check leaves the evidence);
* ``SERIES_SELECT``: optional JSON list of node ids; collected items outside
  them are deselected (an id missing from the tree is simply absent, where
  naming it on the command line would abort the whole run). An id ending
  in ``*`` selects every test whose id starts with the rest (the cases
  absl's ``parameterized`` generates from one method: ``...::test_x*``).

Every collected test carries its node id as the JUnit property
``series_nodeid``, which is how the runner names results.

Why it exists: the PyPI sdist that stands in for upstream Keras has no
``keras/__init__.py`` (setuptools maps the ``keras`` package onto
``keras/api``). If a ``keras`` wheel is installed in the same environment,
Python's path finder prefers that *regular* package over the tree's
namespace directory, even when the tree comes first on ``sys.path``, and the
tests silently run against the unpatched install. For ``keras`` this plugin
builds the package from the tree itself (the sdist's install mapping) before
anything imports it; for any other package it puts the tree first on
``sys.path``. Either way it then checks where the package (for Keras,
``keras.src``) came from and aborts the run if it is not the tree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from series_tree_loader import NotATreeError, imported_from, load

TREE_ENV = "SERIES_TREE"
PACKAGE_ENV = "SERIES_PACKAGE"
PROOF_ENV = "SERIES_PROOF_FILE"
SELECT_ENV = "SERIES_SELECT"
NODEID_PROPERTY = "series_nodeid"


def _tree() -> Path:
    return Path(os.environ.get(TREE_ENV) or os.getcwd()).resolve()


def _package() -> str:
    return os.environ.get(PACKAGE_ENV) or "keras"


def _load(tree: Path, package: str) -> None:
    try:
        load(tree, package)
    except NotATreeError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check(tree: Path, package: str, where: Path) -> None:
    if not where.is_relative_to(tree):
        name = "keras.src" if package == "keras" else package
        raise pytest.UsageError(
            f"series: {name} was imported from {where}, not from the tree "
            f"under test {tree}; the results would describe the wrong code.\n"
            f"  Run the tests through `series test`, or uninstall the other {package}."
        )


_TREE = _tree()
_PACKAGE = _package()
_load(_TREE, _PACKAGE)
_WHERE = imported_from(_PACKAGE)
if os.environ.get(PROOF_ENV):
    Path(os.environ[PROOF_ENV]).write_text(f"{_WHERE}\n", encoding="utf-8")
_check(_TREE, _PACKAGE, _WHERE)


def pytest_report_header(config: pytest.Config) -> str:
    return f"series: {_PACKAGE} imported from {_WHERE}"


def _selected(nodeid: str, wanted: list[str]) -> bool:
    for want in wanted:
        if want.endswith("*") and nodeid.startswith(want[:-1]):
            return True
        if nodeid == want or nodeid.startswith((f"{want}::", f"{want}[", f"{want}/")):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    raw = os.environ.get(SELECT_ENV)
    if raw:
        wanted = [str(w) for w in json.loads(raw)]
        keep = [item for item in items if _selected(item.nodeid, wanted)]
        dropped = [item for item in items if not _selected(item.nodeid, wanted)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    for item in items:
        # JUnit XML names a test by dotted class path and the file that
        # *defines* it (another module for inherited tests); the node id
        # itself travels as a property so the runner reads it back exactly.
        item.user_properties.append((NODEID_PROPERTY, item.nodeid))
