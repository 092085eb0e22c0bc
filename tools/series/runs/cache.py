"""The result cache of ``series test``: what a test run is keyed by, and where it is kept.

A run's result depends on these things and nothing else, so they make its key:

* the git tree id of the code the tests ran on (not the commit: a reworded
  message changes the commit, never the result);
* the test selection (the node ids or paths handed to pytest);
* the package the harness builds and checks (the manifest's upstream.name);
* an environment fingerprint: Python, the keras backend, the versions of
  the installed packages that change what the tests do, and the content of
  the code that makes a result: the harness series loads into pytest and
  the runner (series.runs.pytest_run: pytest's options, how JUnit XML is read).

Each result is one JSON file under ``<cache>/tests/results/``, named by its
key and written to a temporary file first and then ``os.replace``-d into
place, so two runs at once never see half a file (the later writer wins,
with an equally valid result). Logs of each run sit beside them. The time each
selection last spent inside its tests is kept too, so the scheduler knows
which subsets are long enough to be worth pytest-xdist.
"""

from __future__ import annotations

import hashlib
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from series import json_text
from series.files import write_atomic
from series.plain import read_plain

FORMAT = 1
BACKEND = "torch"
# Distributions whose versions change what the Keras tests do: Keras's own
# dependencies, the backend, and the optional ones whose presence makes tests
# run instead of skip (tf.data adapters, jax/scipy/pandas interop).
PACKAGES = (
    "numpy", "torch", "optree", "ml_dtypes", "absl-py", "h5py", "rich", "namex", "packaging",
    "pytest", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "scipy", "pandas",
)  # fmt: skip
HERE = Path(__file__).parent
# Everything that turns a tree into a cached result, besides pytest and the tests.
RESULT_CODE = (*sorted((HERE / "harness").glob("*.py")), HERE / "pytest_run.py")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def fingerprint() -> dict[str, Any]:
    """What about this environment can change a test's outcome."""
    harness = hashlib.sha256()
    for path in RESULT_CODE:
        harness.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "keras_backend": BACKEND,
        "packages": {dist: _version(dist) for dist in PACKAGES},
        "harness": harness.hexdigest()[:16],
    }


def digest(data: Any) -> str:
    text = json_text.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def run_key(tree: str, selection: tuple[str, ...], package: str, fingerprint_id: str) -> str:
    return digest(
        {
            "format": FORMAT,
            "tree": tree,
            "selection": list(selection),
            "package": package,
            "env": fingerprint_id,
        }
    )


class ResultCache:
    """One directory of results; safe to share between concurrent runs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.results = root / "results"
        self.logs = root / "logs"
        self.durations = root / "durations"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.results / f"{key}.json"
        try:
            data = json_text.loads(read_plain(path))
        except (OSError, ValueError):  # none, not a plain file (a FIFO, a link), damaged
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            return None  # another version's or a damaged entry: run again
        return data

    def put(self, key: str, data: dict[str, Any]) -> None:
        text = json_text.dumps(data, indent=1) + "\n"
        write_atomic(self.results / f"{key}.json", text, within=None, durable=False)

    def path(self, key: str) -> Path:
        return self.results / f"{key}.json"

    def log_path(self, key: str) -> Path:
        self.logs.mkdir(parents=True, exist_ok=True)
        return self.logs / f"{key}.log"

    def last_duration(self, selection: tuple[str, ...], fingerprint_id: str) -> float | None:
        path = self.durations / f"{digest([list(selection), fingerprint_id])[:32]}.json"
        try:
            return float(json_text.loads(read_plain(path))["seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def note_duration(
        self, selection: tuple[str, ...], fingerprint_id: str, seconds: float
    ) -> None:
        path = self.durations / f"{digest([list(selection), fingerprint_id])[:32]}.json"
        text = json_text.dumps({"seconds": round(seconds, 3)}) + "\n"
        write_atomic(path, text, within=None, durable=False)
