"""Stand-in for upstream Keras's repository-root ``conftest.py``.

The PyPI sdist used as the offline upstream does not ship the root
``conftest.py``, yet upstream tests need what it provides: the
``requires_trainable_backend`` and ``multi_device`` markers, and a
``skip_if_backend`` helper that test modules import with
``from conftest import skip_if_backend``. ``series test`` loads this module
as a plugin (``-p conftest``) only for a Keras tree that has no
``conftest.py`` of its own; a git checkout of upstream uses the real one.
"""

from __future__ import annotations

from typing import Any

import pytest

_NOT_TRAINABLE = ("numpy", "openvino")


def _backend() -> str:
    from keras.src.backend import backend

    return str(backend())


def skip_if_backend(given_backend: str, reason: str) -> Any:
    return pytest.mark.skipif(_backend() == given_backend, reason=reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_trainable_backend: needs a backend that can train",
    )
    config.addinivalue_line("markers", "multi_device: needs more than one accelerator device")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    backend = _backend()
    not_trainable = pytest.mark.skipif(
        backend in _NOT_TRAINABLE,
        reason=f"training is not implemented for the {backend} backend",
    )
    for item in items:
        if "requires_trainable_backend" in item.keywords:
            item.add_marker(not_trainable)
