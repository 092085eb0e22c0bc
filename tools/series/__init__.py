"""keras-series: carry an ordered series of patches on a pinned upstream."""

from __future__ import annotations

__version__ = "0.1.0"
