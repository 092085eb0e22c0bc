"""What ``series test`` found, per patch: statuses, the table, JSON and JUnit XML.

A test's status compares its outcome on the patch's tree with its outcome
on the pin (the baseline, the same selection on the upstream tree):

* ``pass`` and ``skip``: as pytest said;
* ``new failure``: fails with the patch, did not fail at the pin (passed,
  skipped, or was not there);
* ``pre-existing failure``: fails (or errors) at the pin too;
* ``error``: errors with the patch (setup, teardown, collection, a pytest
  run that crashed) and did not fail at the pin; a selected path missing
  from the tree is an error too.

Only new failures and errors fail the command, and the report names them
before anything else.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from series.errors import Exit, UsageError
from series.manifest import Patch
from series.runs.pytest_run import CRASH_ID, Outcome, RunResult
from series.ui import Ui

PASS, NEW, PRE, SKIP, ERROR = "pass", "new failure", "pre-existing failure", "skip", "error"
_FAILED = ("failed", "error")

# A patch's overall status.
OK = "ok"
FAILED = "failed"
NO_APPLY = "does not apply"
NO_APPLY_ALONE = "cannot apply alone"
NO_SUBSET = "no subset"  # and no reason for it: a failure, an untested patch is not green
NO_TESTS = "no tests"  # the manifest says why (no_tests = "...")


@dataclass(frozen=True)
class TestStatus:
    id: str
    status: str
    pin: str | None  # outcome at the pin; None when the test is not there
    message: str = ""


@dataclass
class PatchReport:
    patch: Patch
    position: int
    mode: str
    status: str = OK
    detail: str = ""
    commit: str | None = None
    tree: str | None = None
    tests: list[TestStatus] = field(default_factory=list)
    run: RunResult | None = None
    baseline: RunResult | None = None

    def count(self, status: str) -> int:
        return sum(1 for t in self.tests if t.status == status)

    @property
    def problems(self) -> list[TestStatus]:
        return [t for t in self.tests if t.status in (NEW, ERROR)]

    @property
    def failed(self) -> bool:
        return self.status in (NO_APPLY, NO_SUBSET) or bool(self.problems)


def classify(
    patch: Patch,
    run: RunResult,
    baseline: RunResult | None,
    missing: tuple[str, ...],
) -> list[TestStatus]:
    """Each test of the patch's run, compared with the pin."""
    pin_tests: dict[str, Outcome] = {} if baseline is None else baseline.tests
    out: list[TestStatus] = []
    for nodeid, result in run.tests.items():
        pin = None if nodeid == CRASH_ID else pin_tests.get(nodeid)
        pin_outcome = pin.outcome if pin is not None else None
        if result.outcome == "passed":
            status = PASS
        elif result.outcome == "skipped":
            status = SKIP
        elif pin_outcome in _FAILED:
            status = PRE
        else:
            status = ERROR if result.outcome == "error" else NEW
        message = result.message
        if status == PRE:
            reason = known_reason(patch, nodeid)
            message = f"{reason} | {message}" if reason else message
        out.append(TestStatus(nodeid, status, pin_outcome, message))
    if baseline is not None and baseline.crashed:
        detail = baseline.tests[CRASH_ID].message
        out.append(TestStatus(f"pin: {CRASH_ID}", ERROR, "error", detail))
    for item in missing:
        out.append(TestStatus(item, ERROR, None, "selected in the manifest, not in the tree"))
    return out


def known_reason(patch: Patch, nodeid: str) -> str:
    for known in patch.pin_failures:
        if nodeid == known.tests or nodeid.startswith((f"{known.tests}::", f"{known.tests}[")):
            return known.reason
    return ""


def to_json(report: PatchReport) -> dict[str, Any]:
    run, baseline = report.run, report.baseline
    return {
        "id": report.patch.id,
        "position": report.position,
        "mode": report.mode,
        "status": report.status,
        "detail": report.detail,
        "commit": report.commit,
        "tree": report.tree,
        "subset": list(report.patch.subset),
        "counts": {
            "tests": len(report.tests),
            "passed": report.count(PASS),
            "new_failures": report.count(NEW),
            "preexisting": report.count(PRE),
            "skipped": report.count(SKIP),
            "errors": report.count(ERROR),
        },
        "duration": None if run is None else round(run.duration, 3),
        "cached": None if run is None else run.cached,
        "baseline_cached": None if baseline is None else baseline.cached,
        "imported_from": None if run is None else run.imported_from,
        "log": None if run is None else run.log,
        "baseline_log": None if baseline is None else baseline.log,
        "tests": [
            {"id": t.id, "status": t.status, "pin": t.pin, "message": t.message}
            for t in report.tests
        ],
    }


def problem_lines(reports: list[PatchReport]) -> list[str]:
    lines = []
    for report in reports:
        if report.status == NO_APPLY:
            lines.append(f"{report.patch.id}: does not apply: {report.detail}")
        if report.status == NO_SUBSET:
            lines.append(f"{report.patch.id}: no test subset: {report.detail}")
        for test in report.problems:
            first = test.message.strip().splitlines()[0] if test.message.strip() else ""
            lines.append(
                f"{report.patch.id}: {test.status}: {test.id}" + (f"\n    {first}" if first else "")
            )
    return lines


COLUMNS = (
    "patch", "tests", "passed", "skipped", "new failures", "errors", "pre-existing", "time",
)  # fmt: skip


def table(reports: list[PatchReport], title: str) -> Table:
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in (*COLUMNS, "cached", "status"):
        out.add_column(column, justify="left" if column in ("patch", "status") else "right")
    for r in reports:
        run = r.run
        counts = (
            len(r.tests), r.count(PASS), r.count(SKIP), r.count(NEW), r.count(ERROR), r.count(PRE),
        )  # fmt: skip
        out.add_row(
            r.patch.id,
            *(str(n) if run is not None else "-" for n in counts),
            "-" if run is None else f"{run.duration:.1f}s",
            _cached(r),
            r.status,
        )
    return out


def _cached(report: PatchReport) -> str:
    run, baseline = report.run, report.baseline
    if run is None:
        return "-"
    if baseline is None or baseline.cached == run.cached:
        return "cached" if run.cached else "ran"
    return "cached" if run.cached else "ran; pin cached"


def cached_runs(reports: list[PatchReport]) -> tuple[int, int]:
    """(cached, all) distinct pytest runs behind the reports."""
    runs = {
        r.key: r.cached
        for report in reports
        for r in (report.run, report.baseline)
        if r is not None and r.key
    }
    return sum(runs.values()), len(runs)


def check_junit_path(path: Path) -> None:
    """Refuse an output file that cannot be written now, not after the tests have run."""
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if path.is_dir():
        why = "it is a directory"
    elif parent is not None and not parent.is_dir():
        why = f"{parent} is a file, not a directory"
    elif parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        why = f"{parent} is not writable"
    else:
        return
    raise UsageError(
        f"cannot write the JUnit XML to {path}",
        why=why,
        hint="pass --junit a file path in a writable directory (missing directories are made)",
    )


def write_junit(path: Path, reports: list[PatchReport]) -> None:
    """JUnit XML for CI: one suite per patch; pre-existing failures are skips."""
    suites = ET.Element("testsuites", name="series test")
    for report in reports:
        suite = ET.SubElement(suites, "testsuite", name=f"{report.patch.id} ({report.mode})")
        cases = 0
        if report.status in (NO_APPLY, NO_APPLY_ALONE, NO_SUBSET, NO_TESTS):
            name = "subset" if report.status in (NO_SUBSET, NO_TESTS) else "apply"
            case = ET.SubElement(
                suite, "testcase", classname=report.patch.id, name=name, time="0.000"
            )
            tag = "failure" if report.status in (NO_APPLY, NO_SUBSET) else "skipped"
            ET.SubElement(case, tag, message=report.status).text = report.detail
            cases += 1
        run_tests = report.run.tests if report.run is not None else {}
        for test in report.tests:
            seconds = run_tests[test.id].seconds if test.id in run_tests else 0.0
            case = ET.SubElement(
                suite, "testcase", classname=report.patch.id, name=test.id, time=f"{seconds:.3f}"
            )
            cases += 1
            if test.status == NEW:
                ET.SubElement(case, "failure", message="new failure").text = test.message
            elif test.status == ERROR:
                ET.SubElement(case, "error", message="error").text = test.message
            elif test.status in (PRE, SKIP):
                ET.SubElement(case, "skipped", message=test.status).text = test.message
        suite.set("tests", str(cases))
        suite.set("failures", str(report.count(NEW) + (report.status in (NO_APPLY, NO_SUBSET))))
        suite.set("time", f"{report.run.duration if report.run is not None else 0.0:.3f}")
        suite.set("errors", str(report.count(ERROR)))
        suite.set("skipped", str(report.count(PRE) + report.count(SKIP)))
    total = sum(r.run.duration for r in reports if r.run is not None)
    suites.set("time", f"{total:.3f}")
    ET.indent(suites)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def emit(
    ui: Ui,
    reports: list[PatchReport],
    mode: str,
    pin: tuple[str, str, str],
    *,
    as_json: bool,
    junit: Path | None,
) -> Exit:
    """Print the reports (table or JSON), write JUnit; the exit status."""
    pin_commit, pin_tree, env_id = pin
    failed = any(r.failed for r in reports)
    if junit is not None:
        write_junit(junit, reports)
        ui.status(f"wrote JUnit XML to {junit}")
    if as_json:
        ui.json(
            {
                "mode": mode,
                "ok": not failed,
                "pin": {"commit": pin_commit, "tree": pin_tree},
                "environment": env_id,
                "patches": [to_json(r) for r in reports],
            }
        )
        return Exit.FAILED if failed else Exit.OK
    show_problems(ui, problem_lines(reports))
    ui.table(table(reports, f"series test --mode {mode} (pin {pin_commit[:12]})"))
    alone = [r.patch.id for r in reports if r.status == NO_APPLY_ALONE]
    if alone:
        ui.result(f"cannot apply alone (needs earlier patches): {', '.join(alone)}")
    cached, runs = cached_runs(reports)
    ui.result(f"{'FAILED' if failed else 'ok'}: {cached} of {runs} test runs cached")
    return Exit.FAILED if failed else Exit.OK


def show_problems(ui: Ui, problems: list[str]) -> None:
    """The problems first, before any table: what failed, by name."""
    if problems:
        ui.result(f"{len(problems)} problem(s):")
        for line in problems:
            ui.result(f"  {line}")
