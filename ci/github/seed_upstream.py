"""Shallow-fetch the pinned upstream (and optionally a newer revision) for CI.

``series`` fetches the pin, and ``check-conflicts --onto REV --upstream URL``
fetches REV, with plain ``git fetch``: the whole history, about 350 MB for
Keras, in every CI job. This script fetches the same commits shallowly into
the cache repository that ``series`` uses (``$SERIES_CACHE_DIR/upstream.git``,
docs/testing.md), so the fetches ``series`` makes afterwards find every
object already there and transfer nothing:

* the pin (``upstream.ref`` of series.toml) at depth 1;
* with ``--onto REV``: REV's history back to where it leaves the pin's
  (``--shallow-exclude`` of the pin's tag), which is exactly the range that
  ``check-conflicts --onto`` reads for upstream commits since the pin.

The refs it writes are under ``refs/ci/``; ``series`` names its own.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )


def fetch(repo: Path, url: str, refspec: str, *depth: str) -> None:
    proc = git(repo, "fetch", "--quiet", "--no-tags", *depth, url, refspec)
    if proc.returncode != 0:
        raise SystemExit(
            f"seed: cannot fetch {refspec.split(':')[0]} from {url}\n"
            f"  why: {proc.stderr.strip()}\n"
            "  hint: check the URL; series fetches it itself (whole history) without this step"
        )


def seed(root: Path, cache: Path, url: str | None, onto: str | None) -> Path:
    upstream = tomllib.loads((root / "series.toml").read_text(encoding="utf-8"))["upstream"]
    url = url or upstream["repository"]
    ref = upstream["ref"]
    tag = ref if ref.startswith("refs/") else f"refs/tags/{ref}"
    repo = cache / "upstream.git"
    if not (repo / "HEAD").is_file():
        repo.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "--quiet", "--bare", str(repo)], check=True)
    fetch(repo, url, f"+{tag}:refs/ci/pin", "--depth=1")
    if onto:
        target = f"+{onto}:refs/ci/onto"
        excluded = git(
            repo, "fetch", "--quiet", "--no-tags", f"--shallow-exclude={tag}", url, target
        )
        if excluded.returncode != 0:  # a server without deepen-not: a bounded depth instead
            print(f"seed: --shallow-exclude refused ({excluded.stderr.strip()}); using --depth=500")
            fetch(repo, url, target, "--depth=500")
    return repo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the project root")
    parser.add_argument("--upstream", metavar="URL", help="default: upstream.repository")
    parser.add_argument("--onto", metavar="REV", help="also fetch REV since the pin")
    args = parser.parse_args(argv)
    cache = os.environ.get("SERIES_CACHE_DIR")
    if not cache:
        print("seed: SERIES_CACHE_DIR is not set\n  hint: set it as for series", file=sys.stderr)
        return 2
    repo = seed(args.root, Path(cache), args.upstream, args.onto)
    count = git(repo, "rev-list", "--count", "--all").stdout.strip()
    print(f"seed: {repo} holds {count} upstream commits (shallow)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
