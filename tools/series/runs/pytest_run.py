"""One pytest run: a test selection on one tree, in a slot, and what it found.

The run imports the tree in the slot, never an installed copy of the
package: pytest loads the harness plugin ``series_keras_tree`` (see
tools/series/runs/harness/), which builds the package from the tree and writes
the directory it was really imported from to a proof file. After every run
this module reads that file and refuses the result (``ProofError``, which
stops the whole command) unless the directory is inside the slot.

Per-test outcomes come from pytest's JUnit XML, not from its console
output: each test's node id travels there as a property the plugin adds.
A run that produced no XML (pytest could not start, the package would not
import) is a crash, and so is one that pytest did not finish (interrupted
by Ctrl-C, an internal error): its XML, if any, holds only the tests that
ran before the stop. A crash becomes one ``error`` entry carrying the log's
tail, and is never cached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from series import json_text
from series.errors import SeriesError
from series.git.run import scratch_dir
from series.runs.cache import BACKEND, FORMAT

HARNESS = Path(__file__).parent / "harness"
NODEID_PROPERTY = "series_nodeid"
CRASH_ID = "(pytest run)"
_SEVERITY = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_TAGS = {"failure": "failed", "error": "error", "skipped": "skipped"}
_MESSAGE_MAX = 600
# pytest's exit codes for a session that ran to its end: all passed, some
# failed, nothing collected. INTERRUPTED (2), INTERNAL_ERROR (3) and
# USAGE_ERROR (4) still write JUnit XML, but only of what ran before the stop.
COMPLETE_EXITS = (0, 1, 5)


class ProofError(SeriesError):
    """The tests imported the package from somewhere other than the tree."""


@dataclass(frozen=True)
class Outcome:
    outcome: str  # passed, failed, error, skipped
    message: str = ""
    seconds: float = 0.0  # pytest's own time for the test (setup + call + teardown)


@dataclass
class RunResult:
    key: str
    tree: str
    selection: tuple[str, ...]
    duration: float
    exit_code: int
    imported_from: str
    tests: dict[str, Outcome] = field(default_factory=dict)
    log: str = ""
    crashed: bool = False
    workers: int = 1
    test_seconds: float = 0.0  # inside tests, as JUnit counts it (no start-up, no imports)
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "key": self.key,
            "tree": self.tree,
            "selection": list(self.selection),
            "duration": round(self.duration, 3),
            "exit_code": self.exit_code,
            "imported_from": self.imported_from,
            "log": self.log,
            "workers": self.workers,
            "test_seconds": round(self.test_seconds, 3),
            "tests": {
                k: [v.outcome, v.message, round(v.seconds, 4)] for k, v in self.tests.items()
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        return cls(
            key=data["key"],
            tree=data["tree"],
            selection=tuple(data["selection"]),
            duration=float(data["duration"]),
            exit_code=int(data["exit_code"]),
            imported_from=data["imported_from"],
            tests={
                k: Outcome(v[0], v[1], float(v[2]) if len(v) > 2 else 0.0)
                for k, v in data["tests"].items()
            },
            log=data.get("log", ""),
            workers=int(data.get("workers", 1)),
            test_seconds=float(data.get("test_seconds", 0.0)),
            cached=True,
        )


def files_of(selection: tuple[str, ...]) -> list[str]:
    """The paths pytest is given: each item's file or directory, once, in order."""
    seen: dict[str, None] = {}
    for item in selection:
        seen.setdefault(item.split("::", 1)[0].rstrip("/"), None)
    return list(seen)


def pytest_argv(
    tree: Path, package: str, selection: tuple[str, ...], scratch: Path, workers: int
) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "-p", "series_keras_tree"]
    if package == "keras" and not (tree / "conftest.py").is_file():
        argv += ["-p", "conftest"]  # the stand-in for upstream's root conftest.py
    argv += [
        "-p", "no:cacheprovider",
        "--rootdir", str(tree),
        "--junitxml", str(scratch / "junit.xml"),
        "-o", "junit_family=xunit1",
        "-o", "junit_logging=no",
        # The sdist tree has no keras/__init__.py: without this, pytest names
        # test modules "src.layers..." and tests that look classes up by
        # module name (e.g. wrapper_test's registered objects) fail.
        "-o", "consider_namespace_packages=true",
        "--continue-on-collection-errors",
        "-q",
    ]  # fmt: skip
    if workers > 1:
        argv += ["-n", str(workers)]
    return argv + files_of(selection)


def pytest_env(tree: Path, package: str, selection: tuple[str, ...], proof: Path) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(HARNESS), *filter(None, [env.get("PYTHONPATH")])]
    env.update(
        {
            "KERAS_BACKEND": BACKEND,
            "PYTHONPATH": os.pathsep.join(path),
            "SERIES_TREE": str(tree),
            "SERIES_PACKAGE": package,
            "SERIES_PROOF_FILE": str(proof),
        }
    )
    env.pop("SERIES_SELECT", None)
    if any("::" in item for item in selection):
        env["SERIES_SELECT"] = json_text.dumps(list(selection))
    return env


def run(
    tree_path: Path,
    *,
    key: str,
    tree: str,
    selection: tuple[str, ...],
    package: str,
    workers: int,
    log: Path,
) -> RunResult:
    """Run ``selection`` in the work tree at ``tree_path`` (which holds ``tree``)."""
    root = tree_path.resolve()
    with scratch_dir("series-run-", ram=False) as tmp:
        scratch = Path(tmp)
        proof = scratch / "proof"
        argv = pytest_argv(root, package, selection, scratch, workers)
        started = time.monotonic()
        # Written aside and renamed, as results are: a concurrent run of the
        # same key must not interleave its output into this log.
        partial = log.with_name(f".{log.name}.{os.getpid()}.{threading.get_ident()}")
        with partial.open("w", encoding="utf-8") as out:
            out.write("$ " + " ".join(argv) + "\n")
            out.flush()
            proc = subprocess.run(
                argv,
                cwd=root,
                env=pytest_env(root, package, selection, proof),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        duration = time.monotonic() - started
        os.replace(partial, log)
        where = proof.read_text(encoding="utf-8").strip() if proof.is_file() else ""
        _prove(root, package, where, log)
        result = RunResult(key, tree, selection, duration, proc.returncode, where, log=str(log))
        result.workers = workers
        junit = scratch / "junit.xml"
        if where and junit.is_file() and proc.returncode in COMPLETE_EXITS:
            result.tests = parse_junit(junit)
            result.test_seconds = junit_seconds(junit)
        else:
            result.crashed = True
            result.tests = {CRASH_ID: Outcome("error", _crash_message(proc.returncode, log))}
    return result


def _prove(root: Path, package: str, where: str, log: Path) -> None:
    if where and not Path(where).resolve().is_relative_to(root):
        name = "keras.src" if package == "keras" else package
        raise ProofError(
            f"the tests imported {name} from {where}, not from the tree under test",
            why=f"tree under test: {root}\nan installed {package} shadows the tree; "
            f"every result would describe the wrong code\nlog: {log}",
            hint=f"uninstall the other {package} (pip uninstall {package}) or remove what "
            "imports it at startup (a .pth file, sitecustomize), then run again",
        )


def _crash_message(code: int, log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    tail = "\n".join(lines[-12:])
    return f"pytest exited {code} without complete results (see {log}):\n{tail}"[
        -_MESSAGE_MAX * 2 :
    ]


def parse_junit(path: Path) -> dict[str, Outcome]:
    """Node id -> outcome; a test reported twice (call and teardown) keeps the worse."""
    tests: dict[str, Outcome] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        nodeid = _nodeid(case)
        outcome, message = "passed", ""
        for child in case:
            kind = _TAGS.get(child.tag)
            if kind is not None and _SEVERITY[kind] >= _SEVERITY[outcome]:
                outcome = kind
                message = _message(child)
        found = tests.get(nodeid)
        seconds = _seconds(case) + (found.seconds if found else 0.0)
        if found is None or _SEVERITY[outcome] > _SEVERITY[found.outcome]:
            tests[nodeid] = Outcome(outcome, message[:_MESSAGE_MAX], seconds)
        else:
            tests[nodeid] = Outcome(found.outcome, found.message, seconds)
    return tests


def _message(child: ET.Element) -> str:
    """The failure's one-line message; a collection error's says what was raised.

    pytest gives a module that fails to import only the message "collection
    failure"; the exception (``E   ImportError: cannot import name ...``) is
    in the traceback text, and series prove needs it.
    """
    message = child.get("message") or ""
    text = (child.text or "").strip()
    if not message:
        return text
    if message == "collection failure":
        raised = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
        return f"{message}: {' '.join(raised)}" if raised else message
    return message


def _seconds(case: ET.Element) -> float:
    try:
        return float(case.get("time") or 0.0)
    except ValueError:
        return 0.0


def junit_seconds(path: Path) -> float:
    total = 0.0
    for case in ET.parse(path).getroot().iter("testcase"):
        try:
            total += float(case.get("time") or 0.0)
        except ValueError:
            continue
    return total


def _nodeid(case: ET.Element) -> str:
    for prop in case.iter("property"):
        if prop.get("name") == NODEID_PROPERTY and prop.get("value"):
            return str(prop.get("value"))
    # A collection error (no test item, so no property): name is the dotted module.
    file = case.get("file") or ""
    classname, name = case.get("classname") or "", case.get("name") or ""
    if file and not classname:
        return file
    return "::".join(part for part in (file or classname, name) if part)
