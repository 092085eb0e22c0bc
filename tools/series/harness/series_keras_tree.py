"""pytest plugin: make ``import keras`` resolve to the tree under test.

Loaded by ``series test`` with ``-p series_keras_tree``. The directory that
holds this file is put on PYTHONPATH by the runner; it is not part of the
``series`` package's import surface.

Why it exists: the PyPI sdist that stands in for upstream has no
``keras/__init__.py`` (setuptools maps the ``keras`` package onto
``keras/api``). If a ``keras`` wheel is installed in the same environment,
Python's path finder prefers that *regular* package over the tree's
namespace directory, even when the tree comes first on ``sys.path``, and the
tests silently run against the unpatched install. This plugin builds the
``keras`` package from the tree itself before anything imports it, then
checks where ``keras.src`` came from and aborts the run if it is not the
tree. The location is written to ``$SERIES_PROOF_FILE`` (when set) so the
runner can check it independently of pytest's output.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

TREE_ENV = "SERIES_TREE"
PROOF_ENV = "SERIES_PROOF_FILE"


def _tree() -> Path:
    return Path(os.environ.get(TREE_ENV) or os.getcwd()).resolve()


def _load_keras(tree: Path) -> None:
    if "keras" in sys.modules:
        # Something imported keras before this plugin: it may be the wrong one.
        return
    sys.path.insert(0, str(tree))
    if (tree / "keras" / "__init__.py").is_file():
        # A git checkout of upstream: its own keras/__init__.py sets up api/.
        importlib.import_module("keras")
        return
    api_init = tree / "keras" / "api" / "__init__.py"
    if not api_init.is_file():
        raise pytest.UsageError(f"series: {tree} does not look like a Keras tree")
    # Mirror the sdist's install mapping: keras -> keras/api, keras.src ->
    # keras/src. api/ first so keras.layers etc. resolve to the public API.
    spec = importlib.util.spec_from_file_location(
        "keras",
        api_init,
        submodule_search_locations=[str(tree / "keras" / "api"), str(tree / "keras")],
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["keras"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["keras"]
        raise


def imported_from() -> Path:
    import keras.src

    return Path(keras.src.__file__ or "").resolve().parent


def _check(tree: Path) -> Path:
    where = imported_from()
    if not where.is_relative_to(tree):
        raise pytest.UsageError(
            f"series: keras.src was imported from {where}, not from the tree "
            f"under test {tree}; the results would describe the wrong code.\n"
            "  Run the tests through `series test`, or uninstall the other keras."
        )
    return where


_TREE = _tree()
_load_keras(_TREE)
_WHERE = _check(_TREE)
if os.environ.get(PROOF_ENV):
    Path(os.environ[PROOF_ENV]).write_text(f"{_WHERE}\n", encoding="utf-8")


def pytest_report_header(config: pytest.Config) -> str:
    return f"series: keras.src imported from {_WHERE}"
