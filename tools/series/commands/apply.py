"""``series apply``: materialise the pinned upstream with the stack as commits.

The work is in series.stack.apply; docs/workflow.md is the manual.
"""

from __future__ import annotations

from pathlib import Path

from series.commands.options import DIR, ENVELOPE, URL, Option
from series.errors import Exit

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from series.project import Series
    from series.ui import Ui

OPTIONS = (
    DIR,
    Option("--to", "apply the stack up to and including this patch", metavar="ID"),
    Option(
        "--source",
        "where the upstream base comes from (default: the manifest's "
        "upstream.source; 'auto' tries git, then the sdist)",
        choices=("git", "sdist"),
    ),
    Option(
        "--upstream",
        "fetch upstream from this URL, mirror or clone (or use this sdist .tar.gz)",
        key="upstream_url",
        type=URL,
        metavar="URL|PATH",
    ),
    Option(
        "--force",
        "go on over uncommitted changes, unexported commits or another HEAD, "
        "after stashing them / keeping a backup ref (both printed)",
        action="store_true",
    ),
    ENVELOPE,
)


def run(
    series: Series,
    ui: Ui,
    *,
    directory: Path | None = None,
    to: str | None = None,
    source: str | None = None,
    upstream_url: str | None = None,
    force: bool = False,
    as_json: bool = False,
) -> Exit:
    from series.stack import verified

    # Only a plain re-run may be answered by what the last one verified (series.stack.verified),
    # which is asked before the apply (and all it imports) is loaded, and before the manifest
    # is parsed when what the re-run needs of it is known (series.known).
    plain = (source, upstream_url, force) == (None, None, False) and (
        to is None or series.upto(to) == list(series.manifest.patches)
    )
    digest, done = verified.rerun(series, ui, directory, "apply") if plain else (None, None)
    if done is None:
        from series.stack.apply import apply

        done = apply(
            series,
            ui,
            series.checkout(directory),
            series.upto(to),
            source=source,
            upstream_url=upstream_url,
            force=force,
            digest=digest,
        )
    if as_json:
        ui.json(done)
    return Exit.OK
