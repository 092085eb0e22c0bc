"""The test matrix of the GitHub workflow: one job per patch of series.toml.

Prints the plan as JSON and, under GitHub Actions, writes two step outputs to
``$GITHUB_OUTPUT``: ``matrix`` (a ``strategy.matrix`` value,
``{"include": [{"id": "P1", "title": "..."}, ...]}``) and ``ids`` (the JSON list
of ids, which the final job checks every result against).

The plan comes from ``series test --list --json`` when the installed ``series``
has that option (the contract in docs/ci.md), otherwise from series.toml
itself, in manifest order. Either way the matrix is made from the manifest of
the commit under test, so a patch added or dropped in a pull request gets, or
loses, its job in that same pull request.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # safe in artifact and file names


class PlanError(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def from_manifest(manifest: Path) -> list[dict[str, str]]:
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PlanError(f"cannot read {manifest}: {exc}", "run from the project root") from None
    patches = data.get("patch")
    if not isinstance(patches, list) or not patches:
        raise PlanError(f"{manifest} has no [[patch]] entries", "add the patches to test")
    return [{"id": str(p.get("id", "")), "title": str(p.get("title", ""))} for p in patches]


def series_has_list(series: str, root: Path) -> bool:
    proc = subprocess.run(
        [series, "test", "--help"], cwd=root, capture_output=True, text=True, check=False
    )
    return proc.returncode == 0 and "--list" in proc.stdout


def from_series(series: str, root: Path) -> list[dict[str, str]]:
    proc = subprocess.run(
        [series, "test", "--list", "--json"], cwd=root, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise PlanError(
            f"`series test --list --json` failed (exit {proc.returncode}): {proc.stderr.strip()}",
            "run it by hand to see why, or pass --from manifest",
        )
    plan: dict[str, Any] = json.loads(proc.stdout)
    return [{"id": str(p["id"]), "title": str(p.get("title", ""))} for p in plan["patches"]]


def check(patches: list[dict[str, str]]) -> None:
    seen: set[str] = set()
    for patch in patches:
        if not ID.match(patch["id"]):
            raise PlanError(
                f"patch id {patch['id']!r} cannot name a CI job",
                "use letters, digits, '_', '.' and '-' in patch ids",
            )
        if patch["id"] in seen:
            raise PlanError(f"patch id {patch['id']} appears twice", "give every patch its own id")
        seen.add(patch["id"])


def plan(root: Path, source: str) -> list[dict[str, str]]:
    series = shutil.which("series")
    if source == "series" or (source == "auto" and series and series_has_list(series, root)):
        if series is None:
            raise PlanError("`series` is not installed", "pip install -e . first")
        patches = from_series(series, root)
    else:
        patches = from_manifest(root / "series.toml")
    check(patches)
    return patches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the project root")
    parser.add_argument(
        "--from",
        dest="source",
        choices=("auto", "series", "manifest"),
        default="auto",
        help="where the plan comes from (default: series test --list when available)",
    )
    args = parser.parse_args(argv)
    try:
        patches = plan(args.root, args.source)
    except PlanError as exc:
        print(f"plan: {exc}\n  hint: {exc.hint}", file=sys.stderr)
        return 2
    matrix = json.dumps({"include": patches})
    ids = json.dumps([p["id"] for p in patches])
    print(json.dumps({"include": patches}, indent=2))
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as out:
            out.write(f"matrix={matrix}\nids={ids}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
