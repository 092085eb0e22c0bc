"""Command-line rows for the checkout and the stack: apply, export, list, show, status,
rebase, range-diff, branches. Each ``add_*`` adds a command's arguments, each ``run_*``
calls its command module (imported there, so a command pays only for its own imports).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from series.errors import Exit
from series.project import Series
from series.ui import Ui
from series.untrusted import path_hint, revision_problem, url_problem


def dir_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="the checkout (default: [series].checkout in series.toml, 'work')",
    )


def _checked(problem: Callable[[str], str | None], hint: bool) -> Callable[[str], str]:
    """An argparse type: the value as is, or a usage error (exit 2) naming the option."""

    def check(value: str) -> str:
        found = problem(value)
        if found:
            more = path_hint(value) if hint else "name a branch, tag or commit"
            raise argparse.ArgumentTypeError(f"{found}; {more}")
        return value

    return check


# --upstream URL|PATH, --push REMOTE, --onto REV, --since REV (series.untrusted).
URL = _checked(url_problem, hint=True)
REV = _checked(revision_problem, hint=False)


def add_apply(p: argparse.ArgumentParser) -> None:
    dir_option(p)
    p.add_argument("--to", metavar="ID", help="apply the stack up to and including this patch")
    p.add_argument(
        "--source",
        choices=("git", "sdist"),
        help="where the upstream base comes from (default: the manifest's "
        "upstream.source; 'auto' tries git, then the sdist)",
    )
    p.add_argument(
        "--upstream",
        type=URL,
        metavar="URL|PATH",
        help="fetch upstream from this URL, mirror or clone (or use this sdist .tar.gz)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="go on over uncommitted changes, unexported commits or another HEAD, "
        "after stashing them / keeping a backup ref (both printed)",
    )
    json_option(p)


def run_apply(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import apply

    return apply.run(
        series,
        ui,
        directory=a.dir,
        to=a.to,
        source=a.source,
        upstream_url=a.upstream,
        force=a.force,
        as_json=a.json,
    )


def run_export(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import export

    return export.run(series, ui, directory=a.dir, as_json=a.json)


def add_export(p: argparse.ArgumentParser) -> None:
    dir_option(p)
    json_option(p)


def json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--json", action="store_true", help="print one JSON envelope for machines (docs/json.md)"
    )


def add_list(p: argparse.ArgumentParser) -> None:
    json_option(p)


def run_list(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import list as list_cmd

    return list_cmd.run(series, ui, as_json=a.json)


def add_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="the patch id, e.g. P1")
    p.add_argument("--diff", action="store_true", help="include the diff")
    p.add_argument(
        "--no-pager",
        action="store_true",
        help="do not page --diff on a terminal (default: $GIT_PAGER, $PAGER or less)",
    )
    json_option(p)


def run_show(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import show

    return show.run(series, ui, patch_id=a.id, diff=a.diff, as_json=a.json, pager=not a.no_pager)


def add_branches(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "exit status: 0 done (or nothing to change); 2 bad input; 3 a patch does not apply "
        "(the branches before it were made); 4 refused: a branch series did not leave as it "
        "is, locally or on REMOTE (nothing changed; --force replaces it after a backup); "
        "1 REMOTE unreachable. Manual: docs/branches.md."
    )
    dir_option(p)
    p.add_argument("--prefix", default="", metavar="P", help="put P before every branch name")
    p.add_argument("--alone", action="store_true", help="each branch: the pin plus its patch only")
    p.add_argument("--dry-run", action="store_true", help="list what would change; change nothing")
    p.add_argument(
        "--push",
        type=URL,
        metavar="REMOTE",
        help="push the branches too, each leased against what REMOTE had",
    )
    p.add_argument(
        "--prune",
        action="store_true",
        help="delete the branches series made for patches no longer in series.toml",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace branches someone else moved (the old commits are kept as backup refs)",
    )
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def run_branches(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import branches
    from series.stack.branch_plan import Options

    options = Options(a.prefix, a.alone, a.dry_run, a.push, a.prune, a.force)
    return branches.run(series, ui, directory=a.dir, options=options, as_json=a.json)


def add_rebase(p: argparse.ArgumentParser) -> None:
    p.epilog = (
        "exit status: 0 rebased; 3 stopped at a conflict; 2 bad options or REV; "
        "4 refused (work would be lost, or the checkout or target moved). Manual: docs/rebase.md."
    )
    dir_option(p)
    p.add_argument(
        "--onto", type=REV, metavar="REV", help="the upstream branch, tag or commit to move to"
    )
    p.add_argument(
        "--upstream",
        type=URL,
        metavar="URL|PATH",
        help="where REV lives (a clone, a mirror or a URL)",
    )
    p.add_argument(
        "--drop-merged",
        action="store_true",
        help="remove patches already upstream (same patch-id, or their PR in a subject)",
    )
    how = p.add_mutually_exclusive_group()
    for verb, text in (
        ("continue", "go on after resolving and staging the conflict"),
        (
            "skip",
            "drop the conflicting patch (series.toml records why) and go on; what "
            "you committed or changed at the stop is kept under a backup ref",
        ),
        (
            "abort",
            "put refs, checkout, series.toml and patches/ back as they were; what "
            "you committed or changed at the stop is kept under a backup ref",
        ),
    ):
        how.add_argument(f"--{verb}", dest="action", action="store_const", const=verb, help=text)


def run_rebase(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import rebase

    return rebase.run(
        series,
        ui,
        onto=a.onto,
        upstream_url=a.upstream,
        drop_merged=a.drop_merged,
        action=a.action,
        directory=a.dir,
    )


def add_status(p: argparse.ArgumentParser) -> None:
    dir_option(p)
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def run_status(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import status

    return status.run(series, ui, directory=a.dir, as_json=a.json)


def add_range_diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", metavar="ID", help="only this patch (default: all)")
    p.add_argument(
        "--since",
        type=REV,
        metavar="REV",
        help="the old version: this commit of the project repository (default: docs/range-diff.md)",
    )
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def run_range_diff(series: Series, ui: Ui, a: argparse.Namespace) -> Exit:
    from series.commands import range_diff

    return range_diff.run(series, ui, patch_id=a.id, since=a.since, as_json=a.json)
