"""``series check-conflicts``: does the series still fit? Merge-tree dry runs, no checkout.

It answers three questions (series.conflicts does the work): does the stack
apply on its pin; which patches apply alone and which pairs commute; and,
with ``--onto REV``, how each patch fares when the series is replayed onto
another upstream revision. All of it happens in the per-user cache
repository: the user's checkout, index and refs are never touched. A REV
fetched from ``--upstream`` lands under a scratch ref
(``refs/series/scratch/<run>/``) that is deleted in a ``finally`` block.

Exit status: 0 when everything fits; 3 (Exit.CONFLICT) when a patch does
not apply on the pin, conflicts on the replay, or does not apply alone
although series.toml says ``applies_alone = true``; 2 (Exit.BAD_INPUT) for
a REV, URL or option that cannot be used; 1 when the place REV should be
fetched from cannot be reached. Options are checked before any work is
done, so a typo costs nothing. docs/check-conflicts.md has the report
format.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import ENVELOPE, REV, URL, Option
from series.errors import Exit, UsageError

if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

EPILOG = (
    "exit status: 0 the series fits; 3 a patch does not apply on the pin, conflicts on "
    "the --onto replay, or does not apply alone although series.toml says "
    "applies_alone = true; 2 bad input (unknown REV, unusable --upstream, a corrupt patch "
    "file, bad option); 1 the --onto source could not be reached. "
    "Manual: docs/check-conflicts.md."
)
OPTIONS = (
    Option(
        "--onto",
        "also replay the series onto this upstream revision (a ref or commit; "
        "'sdist:VERSION' for a PyPI sdist)",
        type=REV,
        metavar="REV",
    ),
    Option(
        "--upstream",
        "where --onto REV lives (default: the cache, then upstream.repository); "
        "an sdist .tar.gz with --onto sdist:VERSION",
        key="upstream_url",
        type=URL,
        metavar="URL|PATH",
    ),
    Option(
        "--source",
        "where the pinned base comes from (default: the manifest's upstream.source)",
        choices=("git", "sdist"),
    ),
    Option(
        "--no-matrix", "skip the pairwise matrix on the pin", key="matrix", action="store_false"
    ),
    Option(
        "--merge-mode",
        "how merge bases are given to git merge-tree (default: auto, probed)",
        default="auto",
        choices=("auto", "synthetic", "merge-base"),
    ),
    ENVELOPE,
)

_ARCHIVES = (".tar.gz", ".tgz")
_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[^/:]+:)")  # scheme://..., or scp-style host:path


def run(
    series: Series,
    ui: Ui,
    *,
    onto: str | None = None,
    upstream_url: str | None = None,
    source: str | None = None,
    matrix: bool = True,
    as_json: bool = False,
    merge_mode: str = "auto",
) -> Exit:
    from series.checkout import warn_unexported
    from series.conflicts.check import check
    from series.conflicts.report import render

    _check_options(onto, upstream_url)
    warn_unexported(series.checkout(), ui)
    data = check(
        series, ui, onto=onto, url=upstream_url, source=source, matrix=matrix, merge_mode=merge_mode
    )
    if as_json:
        ui.json(data)
    else:
        render(ui, data)
    return Exit(int(data["exit_code"]))


def _check_options(onto: str | None, url: str | None) -> None:
    """Refuse option combinations that cannot work, before the pin is even resolved."""
    if url and not onto:
        raise UsageError(
            "--upstream names where the --onto revision lives, and no --onto was given",
            hint="add --onto REV (the pin itself comes from series.toml; see --source)",
        )
    if not onto:
        return
    if onto == "sdist:":
        raise UsageError(
            "--onto sdist: needs a version",
            why="sdist:VERSION names a release of the package on the package index",
            hint="e.g. --onto sdist:3.15.2",
        )
    if url is None:
        return
    archive = url.endswith(_ARCHIVES)
    if onto.startswith("sdist:") and not archive:
        raise UsageError(
            f"with --onto {onto}, --upstream must name the sdist archive",
            why=f"{url} is not a .tar.gz",
            hint="pass the keras-VERSION.tar.gz file, or drop --upstream to download it",
        )
    if archive and not onto.startswith("sdist:"):
        raise UsageError(
            f"--upstream {url} is an sdist archive, but --onto {onto} is a git revision",
            hint="use --onto sdist:VERSION with an archive",
        )
    if not _URL.match(url) and not Path(url).exists():
        raise UsageError(
            f"--upstream {url} does not exist",
            why="it is neither an existing file or directory nor a URL",
            hint="pass the path of a clone (or archive), or a URL such as https://host/repo.git",
        )
