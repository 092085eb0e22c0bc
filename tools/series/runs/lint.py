"""Linting the patches: ruff check and ruff format --check on what each patch touches.

Each patch is linted as it stands in the stack (the pin plus patches 1..k,
built in memory by series.stack), and only on the Python files it adds or
changes, under the upstream tree's own ruff configuration (its
``pyproject.toml`` / ``ruff.toml`` at the pin, also those of parent
directories), so a patch is held to upstream's rules (line length, import
style), not to this project's.

No work tree is needed: the files and the configuration are copied out of
git into a scratch directory that keeps their relative paths, which is all
ruff's per-file settings look at. Files that a patch deletes are skipped,
and so are paths that upstream's configuration excludes.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from series import json_text
from series.errors import Exit, SeriesError
from series.git import Repo
from series.git.run import scratch_dir
from series.manifest import Patch
from series.runs.messages import MessageIssue, check_message
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series

CONFIGS = ("pyproject.toml", "ruff.toml", ".ruff.toml")
CLEAN, DIRTY, NO_APPLY, NOTHING = "clean", "not clean", "does not apply", "no python files"


@dataclass
class LintReport:
    patch: Patch
    position: int
    status: str = CLEAN
    detail: str = ""
    files: list[str] = field(default_factory=list)
    issues: list[dict[str, Any]] = field(default_factory=list)
    reformat: list[str] = field(default_factory=list)
    preexisting: list[dict[str, Any]] = field(default_factory=list)
    preexisting_reformat: list[str] = field(default_factory=list)
    message: list[MessageIssue] = field(default_factory=list)


def lint(series: Series, ui: Ui, patches: list[Patch]) -> list[LintReport]:
    """Each of ``patches`` linted as it stands in the stack."""
    ruff = ruff_command()
    base = series.pin(ui)
    repo = series.cache
    built = series.stack(base.commit, series.upto(patches[-1].id))
    commits, parents = built.commits, built.parents
    reports = []
    for patch in patches:
        report = LintReport(patch, series.manifest.index(patch.id) + 1)
        commit = commits.get(patch.id)
        # a spinner on a terminal only: each result is printed once, in emit's report
        with ui.progress(f"lint: {patch.id}"):
            if commit is None:
                report.status, report.detail = NO_APPLY, built.why_not(patch.id)
            else:
                _lint(ruff, repo, base.commit, parents[patch.id], commit, report)
        mail = series.mail(patch)
        report.message = check_message(patch, mail.subject, mail.body)
        if report.message and report.status in (CLEAN, NOTHING):
            report.status = DIRTY
        reports.append(report)
    return reports


def emit(ui: Ui, reports: list[LintReport], *, as_json: bool) -> Exit:
    """Print the reports (table or JSON); the exit status."""
    failed = any(r.status in (DIRTY, NO_APPLY) for r in reports)
    version = _version(ruff_command())
    if as_json:
        ui.json({"ok": not failed, "ruff": version, "patches": [_json(r) for r in reports]})
    else:
        _show(ui, reports, version)
    return Exit.FAILED if failed else Exit.OK


def ruff_command() -> list[str]:
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    found = shutil.which("ruff")
    if found:
        return [found]
    raise SeriesError(
        "series lint needs ruff, and it is not installed",
        why=f"neither `{sys.executable} -m ruff` nor a `ruff` on PATH was found",
        hint="pip install ruff (or install this project with its [test] extra), then run again",
    )


def _version(ruff: list[str]) -> str:
    proc = subprocess.run([*ruff, "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip()


def _lint(
    ruff: list[str], repo: Repo, pin: str, parent: str, commit: str, report: LintReport
) -> None:
    """Lint the patch's files as it leaves them and as its parent had them.

    What ruff also finds in the parent's version of a file is not this
    patch's doing (upstream's own drift, or an earlier patch, linted on its
    own): it is reported as pre-existing and does not fail the patch.
    """
    changed = [p for p in repo.diffs.changed_paths(parent, commit) if p.endswith((".py", ".pyi"))]
    report.files = sorted(repo.objects.existing_paths(commit, changed))
    if not report.files:
        report.status = NOTHING
        return
    issues, reformat = _ruff_tree(ruff, repo, pin, commit, report.files)
    before = sorted(repo.objects.existing_paths(parent, report.files))
    old_issues, old_reformat = _ruff_tree(ruff, repo, pin, parent, before)
    seen = Counter(_issue_id(i) for i in old_issues)
    for issue in issues:
        if seen[_issue_id(issue)] > 0:
            seen[_issue_id(issue)] -= 1
            report.preexisting.append(issue)
        else:
            report.issues.append(issue)
    report.reformat = [f for f in reformat if f not in old_reformat]
    report.preexisting_reformat = [f for f in reformat if f in old_reformat]
    if report.issues or report.reformat:
        report.status = DIRTY


def _issue_id(issue: dict[str, Any]) -> tuple[Any, ...]:
    return issue["file"], issue["code"], issue["message"]


def _ruff_tree(
    ruff: list[str], repo: Repo, pin: str, rev: str, files: list[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    if not files:
        return [], []
    with scratch_dir("series-lint-", ram=False) as tmp:
        root = Path(tmp)
        for path in files:
            _put(root, path, repo.objects.blob_read(rev, path))
        for path in sorted(repo.objects.existing_paths(pin, _config_candidates(files))):
            _put(root, path, repo.objects.blob_read(pin, path))
        _first_party_stubs(repo, pin, root)
        return _check(ruff, root, files), _format(ruff, root, files)


def _config_candidates(files: list[str]) -> list[str]:
    dirs = {str(parent) for f in files for parent in PurePosixPath(f).parents}
    return sorted(f"{d}/{c}" if d != "." else c for d in dirs for c in CONFIGS)


def _first_party_stubs(repo: Repo, pin: str, root: Path) -> None:
    """Empty stand-ins for the tree's top-level packages and modules.

    ruff's isort tells first-party imports by what exists beside the
    configuration; without these, an import of a package the patch does not
    touch would be sorted as third-party.
    """
    for kind, name in repo.objects.top_level(pin):
        if kind == "tree":
            (root / name).mkdir(exist_ok=True)
        elif name.endswith(".py") and not (root / name).exists():
            (root / name).touch()


def _put(root: Path, rel: str, data: bytes) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _ruff(ruff: list[str], root: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [*ruff, argv[0], "--no-cache", "--force-exclude", *argv[1:]],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise SeriesError(
            f"ruff {argv[0]} failed (exit {proc.returncode})",
            why=(proc.stderr or proc.stdout).strip()[-2000:],
            hint="check upstream's ruff configuration against this ruff version (ruff --version)",
        )
    return proc


def _check(ruff: list[str], root: Path, files: list[str]) -> list[dict[str, Any]]:
    proc = _ruff(ruff, root, ["check", "--output-format=json", "--", *files])
    issues = []
    for item in json_text.loads(proc.stdout or "[]"):
        location = item.get("location") or {}
        issues.append(
            {
                "file": Path(item["filename"]).resolve().relative_to(root.resolve()).as_posix(),
                "line": location.get("row"),
                "column": location.get("column"),
                "code": item.get("code"),
                "message": item.get("message"),
            }
        )
    return issues


def _format(ruff: list[str], root: Path, files: list[str]) -> list[str]:
    # --diff rather than --check: its "--- path" lines read the same in every ruff version.
    proc = _ruff(ruff, root, ["format", "--diff", "--", *files])
    return sorted(
        {line[4:].strip() for line in proc.stdout.splitlines() if line.startswith("--- ")}
    )


def _json(report: LintReport) -> dict[str, Any]:
    return {
        "id": report.patch.id,
        "position": report.position,
        "status": report.status,
        "detail": report.detail,
        "files": report.files,
        "check": report.issues,
        "format": report.reformat,
        "preexisting": {"check": report.preexisting, "format": report.preexisting_reformat},
        "message": [issue.to_json() for issue in report.message],
    }


def _show(ui: Ui, reports: list[LintReport], version: str) -> None:
    for report in reports:
        for issue in report.issues:
            where = f"{issue['file']}:{issue['line']}:{issue['column']}"
            ui.result(f"{report.patch.id}: {where}: {issue['code']} {issue['message']}")
        for path in report.reformat:
            ui.result(f"{report.patch.id}: {path}: would be reformatted (ruff format)")
        for m in report.message:
            where = f"message line {m.line}" if m.line else "message"
            ui.result(f"{report.patch.id}: {where}: {m.rule}: {m.message}")
    out = Table(title=f"series lint ({version}, upstream's configuration)", box=box.SIMPLE_HEAD)
    columns = ("#", "patch", "files", "check issues", "would reformat", "pre-existing", "message")
    for column in columns:
        out.add_column(column, justify="right" if column != "patch" else "left")
    out.add_column("status")
    for r in reports:
        out.add_row(
            str(r.position),
            r.patch.id,
            str(len(r.files)),
            str(len(r.issues)),
            str(len(r.reformat)),
            str(len(r.preexisting) + len(r.preexisting_reformat)),
            str(len(r.message)),
            r.status + (f": {r.detail}" if r.detail else ""),
        )
    ui.table(out)
