"""Collect the JUnit files of the per-patch test jobs into one verdict.

``series test ID --junit FILE`` writes one ``<testsuite>`` per patch, with new
failures as ``<failure>`` and errors as ``<error>`` (pre-existing failures
and skips are ``<skipped>``). This prints a Markdown table, one row per
expected patch, for ``$GITHUB_STEP_SUMMARY``, and exits 1 when any patch has
a failure or an error, when an expected patch has no result (its job crashed
or was cancelled before it wrote one) or a file cannot be parsed.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Row:
    id: str
    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not (self.failures or self.errors or self.problem)


def read(path: Path, rows: dict[str, Row]) -> str:
    """Add the suites of one JUnit file to ``rows``; return a problem or ''."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        return f"{path.name}: cannot parse ({exc})"
    for suite in root.iter("testsuite"):
        patch = suite.get("name", "").split(" ", 1)[0]
        row = rows.setdefault(patch, Row(patch, problem="not in the plan"))
        for case in suite.iter("testcase"):
            row.tests += 1
            row.failures += len(case.findall("failure"))
            row.errors += len(case.findall("error"))
            row.skipped += len(case.findall("skipped"))
        if row.problem == "no result":
            row.problem = ""
    return ""


def summarise(directory: Path, expected: list[str]) -> tuple[list[Row], list[str]]:
    rows = {i: Row(i, problem="no result") for i in expected}
    problems = [p for f in sorted(directory.rglob("*.xml")) if (p := read(f, rows))]
    return list(rows.values()), problems


def markdown(rows: list[Row], problems: list[str]) -> str:
    lines = [
        "| patch | result | tests | new failures | errors | skipped or pre-existing |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        verdict = "ok" if r.ok else (r.problem or "failed")
        lines.append(
            f"| {r.id} | {verdict} | {r.tests} | {r.failures} | {r.errors} | {r.skipped} |"
        )
    bad = [r.id for r in rows if not r.ok]
    lines.append("")
    lines += [f"- {p}" for p in problems]
    lines.append(
        f"**{len(rows) - len(bad)} of {len(rows)} patches pass**"
        + (f"; failing: {', '.join(bad)}" if bad else "")
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="where the JUnit files were downloaded")
    parser.add_argument("--expect", required=True, help="JSON list of patch ids (plan's ids)")
    args = parser.parse_args(argv)
    try:
        expected = [str(i) for i in json.loads(args.expect)]
    except (json.JSONDecodeError, TypeError):
        print(f"summary: --expect is not a JSON list: {args.expect!r}", file=sys.stderr)
        return 2
    if not expected:
        print("summary: --expect names no patch (did the plan job fail?)", file=sys.stderr)
        return 1
    rows, problems = summarise(args.directory, expected)
    print(markdown(rows, problems), end="")
    return 0 if all(r.ok for r in rows) and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
