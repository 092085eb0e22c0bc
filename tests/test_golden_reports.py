"""Golden text for every report series prints, for people and with --json.

Each case builds one small project (helpers.make_project: identities and
dates pinned by the hermetic fixture, so commit ids are the same on every
machine), brings it to a state (applied, unexported commits, a rebase
stopped on a conflict, ...), runs one command in-process and compares the
transcript (command, exit status, stdout, stderr) with
tests/golden/reports/<case>.txt. `normalise` is the only place that hides
what truly varies between runs.

To accept a deliberate change of output: `SERIES_REGEN_GOLDEN=1 pytest
tests/test_golden_reports.py`, then review `git diff tests/golden` before
committing (docs/testing.md, "Golden files").
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import Project, git, make_project, replace_line
from rebase_helpers import moving_project, resolve_p1
from test_rebase import rebase

GOLDEN = Path(__file__).parent / "golden" / "reports"
REGENERATE = bool(os.environ.get("SERIES_REGEN_GOLDEN"))


@dataclass
class Scene:
    project: Project
    remote: Path | None = None  # the fork `branches --push` pushes to


def fresh(tmp: Path) -> Scene:
    """patches/ and series.toml only: no checkout, no cache yet."""
    return Scene(make_project(tmp))


def applied(tmp: Path) -> Scene:
    project = make_project(tmp)
    code, _, err = project.run("apply")
    assert code == 0, err
    return Scene(project)


def exported(tmp: Path) -> Scene:
    """Applied and exported once: patches/ are as series writes them."""
    scene = applied(tmp)
    code, _, err = scene.project.run("export")
    assert code == 0, err
    return scene


def unexported(tmp: Path) -> Scene:
    """Exported, then a commit on the series branch that patches/ does not have."""
    scene = exported(tmp)
    work = scene.project.work
    replace_line(work / "pkg" / "util.py", "VALUE_7 = 7\n", "VALUE_7 = 77\n")
    git(work, "commit", "-qam", "util: VALUE_7 is 77")
    return scene


def moved(tmp: Path) -> Scene:
    """Applied; upstream `main` moved past the pin without touching the series."""
    return Scene(moving_project(tmp))


def moved_into_p1(tmp: Path) -> Scene:
    """Applied; upstream `main` changed the line P1 changes."""
    return Scene(moving_project(tmp, conflict=True))


def rebase_stopped(tmp: Path) -> Scene:
    scene = moved_into_p1(tmp)
    assert rebase(scene.project)[0] == 3
    return scene


def rebase_resolved(tmp: Path) -> Scene:
    scene = rebase_stopped(tmp)
    resolve_p1(scene.project.work)
    return scene


def rebased(tmp: Path) -> Scene:
    """A rebase that stopped on P1, resolved and finished: P1's content changed."""
    scene = rebase_resolved(tmp)
    code, _, err = scene.project.run("rebase", "--continue")
    assert code == 0, err
    return scene


def with_fork(tmp: Path) -> Scene:
    scene = applied(tmp)
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    git(scene.project.upstream, "push", "-q", str(remote), "HEAD:refs/heads/main")
    return Scene(scene.project, remote)


UPSTREAM = "{upstream}"  # stands for the project's upstream repository in an argv
REMOTE = "{remote}"  # stands for the fork in an argv
ONTO_MAIN = ("--onto", "main", "--upstream", UPSTREAM)

# (golden file name, how to reach the state, the command's arguments)
CASES: list[tuple[str, Callable[[Path], Scene], tuple[str, ...]]] = [
    ("apply", fresh, ("apply",)),
    ("apply.json", fresh, ("apply", "--json")),
    ("export-nothing", exported, ("export",)),
    ("export-nothing.json", exported, ("export", "--json")),
    ("export-unexported", unexported, ("export",)),
    ("export-unexported.json", unexported, ("export", "--json")),
    ("list", applied, ("list",)),
    ("list.json", applied, ("list", "--json")),
    ("show", applied, ("show", "P2")),
    ("show.json", applied, ("show", "P2", "--json")),
    ("show-diff", applied, ("show", "P2", "--diff", "--no-pager")),
    ("show-diff.json", applied, ("show", "P2", "--diff", "--json")),
    ("status-clean", applied, ("status",)),
    ("status-clean.json", applied, ("status", "--json")),
    ("status-unexported", unexported, ("status",)),
    ("status-unexported.json", unexported, ("status", "--json")),
    ("status-rebase-stop", rebase_stopped, ("status",)),
    ("status-rebase-stop.json", rebase_stopped, ("status", "--json")),
    ("check-conflicts-clean", applied, ("check-conflicts",)),
    ("check-conflicts-clean.json", applied, ("check-conflicts", "--json")),
    ("check-conflicts-conflict", moved_into_p1, ("check-conflicts", *ONTO_MAIN)),
    ("check-conflicts-conflict.json", moved_into_p1, ("check-conflicts", "--json", *ONTO_MAIN)),
    ("rebase-summary", moved, ("rebase", *ONTO_MAIN)),
    ("rebase-stop", moved_into_p1, ("rebase", *ONTO_MAIN)),
    ("rebase-continue", rebase_resolved, ("rebase", "--continue")),
    ("rebase-skip", rebase_stopped, ("rebase", "--skip")),
    ("rebase-abort", rebase_stopped, ("rebase", "--abort")),
    ("range-diff", rebased, ("range-diff",)),
    ("range-diff.json", rebased, ("range-diff", "--json")),
    ("branches-local-dry-run", applied, ("branches", "--dry-run")),
    ("branches-local-dry-run.json", applied, ("branches", "--dry-run", "--json")),
    ("branches-dry-run", with_fork, ("branches", "--push", REMOTE, "--dry-run")),
    ("branches-dry-run.json", with_fork, ("branches", "--push", REMOTE, "--dry-run", "--json")),
]

# What varies between runs and machines besides the tmp directory, each
# with its stand-in:
VARIES = (
    # a run's duration, for people ("6 merges in 2 batches, 0.08 s") and in
    # --json ("seconds": 0.033); whole seconds ("gives up after 30 s") are
    # settings, not durations, and stay
    (re.compile(r"\b\d+\.\d+ s\b"), "<secs> s"),
    (re.compile(r'"seconds": \d+(?:\.\d+)?'), '"seconds": "<secs>"'),
    # the UTC time in the name of a backup (.series/backups/export-<time>),
    # with the -N that a second backup within the same second gets
    (re.compile(r"\b\d{8}T\d{6}Z(?:-\d+)?"), "<utc time>"),
    # the signature `git format-patch` ends a patch with (`show --diff`): the
    # machine's git version, as text and escaped in a JSON string
    (re.compile(r"^-- \n\d+(?:\.\d+)+[\w.+-]*$", re.MULTILINE), "-- \n<git version>"),
    (re.compile(r"\\n-- \\n\d+(?:\.\d+)+[\w.+-]*\\n"), r"\\n-- \\n<git version>\\n"),
)


def normalise(text: str, tmp: Path) -> str:
    """Hide what varies between runs, and only that: tmp paths, times, git's version."""
    for root in sorted({str(tmp.resolve()), str(tmp)}, key=len, reverse=True):
        text = text.replace(root, "<tmp>")
    for pattern, stand_in in VARIES:
        text = pattern.sub(stand_in, text)
    return text


def transcript(argv: tuple[str, ...], code: int, out: str, err: str) -> str:
    """The command, its exit status and both streams, as one reviewable text."""
    text = f"$ series {' '.join(argv)}\nexit {code}\n"
    for stream, content in (("stdout", out), ("stderr", err)):
        text += f"--- {stream}\n{content}"
        if content and not content.endswith("\n"):
            text += "\n(no newline at the end)\n"
    return text


@pytest.fixture(autouse=True)
def fixed_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables are laid out for 100 columns, without colour, wherever the tests run."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "50")
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "PAGER"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("name", "reach", "args"), CASES, ids=[c[0] for c in CASES])
def test_report_matches_its_golden_file(
    tmp_path: Path, name: str, reach: Callable[[Path], Scene], args: tuple[str, ...]
) -> None:
    scene = reach(tmp_path)
    places = {UPSTREAM: str(scene.project.upstream), REMOTE: str(scene.remote)}
    argv = tuple(places.get(a, a) for a in args)
    code, out, err = scene.project.run(*argv)
    got = normalise(transcript(argv, code, out, err), tmp_path)
    path = GOLDEN / f"{name}.txt"
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert path.is_file(), f"no golden file {path.name}: run with SERIES_REGEN_GOLDEN=1"
    assert got == path.read_text(), (
        f"{name}: the report changed. If that is meant, regenerate with "
        "SERIES_REGEN_GOLDEN=1 and review `git diff tests/golden`"
    )


def test_every_golden_report_has_a_case() -> None:
    """A golden file whose case was removed would silently stop being checked."""
    names = {c[0] for c in CASES}
    assert len(names) == len(CASES)
    assert {p.stem for p in GOLDEN.glob("*.txt")} == names
