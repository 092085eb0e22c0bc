"""Where measurements are kept between runs, and what makes two of them the same.

A result is reused when all of these match (docs/bench.md, "The cache key"):

* tree: a digest of every ``.py`` file under ``<tree>/<package>`` except
  tests (``*_test.py``, ``conftest.py``), by relative path and content. It
  is computed from the files, not from git, so any directory works, and a
  patch that changes only tests does not invalidate its arms;
* workload: its name;
* environment: Python version and implementation, the torch and numpy
  versions, one thread, the torch backend, the device, and the settings that
  change a number (rounds, sample length);
* machine: OS, architecture, CPU model and core count;
* method: a digest of the code that produces the numbers (the worker, the
  workloads, how samples are taken, the workers' environment, the inputs
  and weights, the tree loader), so changing how we measure never reuses
  old numbers.

Layout: ``<cache_dir>/bench/<environment+machine+method digest>/<tree id>/
<workload>.json`` with the outputs beside it as ``<workload>.npz``; the
scorecard uses ``<cache_dir>/scorecard/...`` the same way. Entries are
written atomically; deleting the directory is always safe.
"""

from __future__ import annotations

import hashlib
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from series import json_text
from series.plain import read_plain
from series.runs.bench.spec import HARNESS, Arm, Settings

HERE = Path(__file__).resolve().parent
METHOD_CODE = (
    HERE / "spec.py",
    HERE / "workloads.py",
    HERE / "worker.py",
    HERE / "measure.py",
    HERE / "pool.py",
    HERE / "data.py",
    HERE / "explain.py",
    HARNESS / "series_tree_loader.py",
)


def tree_id(tree: Path, package: str) -> str:
    root = tree / package
    digest = hashlib.sha256(package.encode() + b"\0")
    for path in sorted(root.rglob("*.py")):
        if path.name.endswith("_test.py") or path.name == "conftest.py":
            continue
        rel = path.relative_to(root).as_posix()
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def by_tree(arms: list[Arm]) -> tuple[dict[str, str], dict[str, Arm]]:
    """Each arm's tree id, and the arm that stands for each tree id.

    Arms with the same tree share results: this is the one place that says
    so. The bench and the scorecard measure, cache and look results up by
    tree id; an arm only names the tree it stands for.
    """
    ids = {arm.name: tree_id(arm.tree, arm.package) for arm in arms}
    leads: dict[str, Arm] = {}
    for arm in arms:
        leads.setdefault(ids[arm.name], arm)
    return ids, leads


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment(settings: Settings | None) -> dict[str, Any]:
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "threads": 1,
        "backend": "torch",
        **(settings.cache_part() if settings else {}),
    }


def machine() -> dict[str, Any]:
    return {
        "system": platform.system(),
        "arch": platform.machine(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
    }


def method_digest() -> str:
    digest = hashlib.sha256()
    for path in METHOD_CODE:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def key(settings: Settings | None) -> dict[str, Any]:
    """The environment, machine and method half of the cache key (None: no settings)."""
    return {"environment": environment(settings), "machine": machine(), "method": method_digest()}


class Store:
    """JSON entries keyed by (kind, environment digest, tree id, name)."""

    def __init__(self, cache_dir: Path, kind: str, env_key: dict[str, Any]) -> None:
        blob = json_text.dumps(env_key, sort_keys=True).encode()
        self.root = cache_dir / kind / hashlib.sha256(blob).hexdigest()[:16]
        self.env_key = env_key

    def path(self, tree: str, name: str, suffix: str = ".json") -> Path:
        return self.root / tree / f"{name}{suffix}"

    def get(self, tree: str, name: str) -> dict[str, Any] | None:
        path = self.path(tree, name)
        try:
            entry: dict[str, Any] = json_text.loads(read_plain(path))
        except (OSError, ValueError):
            return None  # absent or torn: measure again
        return entry

    def put(self, tree: str, name: str, entry: dict[str, Any]) -> None:
        path = self.path(tree, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (self.root / "key.json").exists():
            (self.root / "key.json").write_text(json_text.dumps(self.env_key, indent=2) + "\n")
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json_text.dumps(entry) + "\n", encoding="utf-8")
        tmp.replace(path)
