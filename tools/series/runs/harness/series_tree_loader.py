"""Import a package from a tree, the way ``series_keras_tree`` does, without pytest.

Shared by the pytest plugin ``series_keras_tree`` (``series test``) and the
benchmark workers (``series.runs.bench``), which must import the tree under
measurement and never an installed copy. It lives next to the plugin so the
plugin can import it from PYTHONPATH; it imports nothing but the standard
library. See docs/harness.md for why the sdist's Keras tree needs this.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path


class NotATreeError(Exception):
    """The directory does not hold the package in a shape we can import."""


def load(tree: Path, package: str) -> None:
    """Import ``package`` from ``tree`` (for an sdist Keras: keras -> keras/api)."""
    if package in sys.modules:
        # Something imported the package before us (a .pth file,
        # sitecustomize, another plugin): it may be the wrong copy, and the
        # caller's check of imported_from() decides.
        return
    sys.path.insert(0, str(tree))
    if package != "keras" or (tree / "keras" / "__init__.py").is_file():
        # Any other package, or a git checkout of Keras whose own
        # keras/__init__.py sets up api/: a plain import from the tree.
        importlib.import_module(package)
        return
    api_init = tree / "keras" / "api" / "__init__.py"
    if not api_init.is_file():
        raise NotATreeError(f"series: {tree} does not look like a Keras tree")
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


def imported_from(package: str = "keras") -> Path:
    """The directory the package's code was imported from (``keras.src`` for Keras)."""
    name = "keras.src" if package == "keras" else package
    module = importlib.import_module(name)
    if getattr(module, "__file__", None):
        return Path(module.__file__ or "").resolve().parent
    return Path(next(iter(module.__path__))).resolve()
