"""The everyday commands start few git processes when nothing changed (issue 23).

Speed is measured by ci/bench_commands.py, never asserted here; what is
asserted is the number of git processes a command starts, counted by a
``git`` shim first on PATH (GitPython's own ``git version`` calls count
too), and that the answers from the cache are the answers git gives.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conflict_helpers import (
    Case,
    RealGit,
    make_case,
    no_stdbuf,
    real_matrix,
    spy_batches,
    upstream_commit,
)
from helpers import GitShim, PatchSpec, Project, git, make_project, replace_line
from rebase_helpers import git_rebase_trees
from series.git import TreeMerge, ref_files
from series.git.mergetree import MergeStream
from series.merge import predict
from series.project import Series
from series.upstream import Base, UpstreamSource

BOUND = 120


class Counted:
    """``series`` in ``project`` as its own process, every git process it starts logged."""

    def __init__(self, project: Project, tmp: Path) -> None:
        self.project = project
        self.shim = GitShim(tmp)
        self.cache = self.shim.cache

    def run(self, *args: str) -> tuple[str, list[str]]:
        """stdout, and the argv of each git process started."""
        return self.shim.run(self.project.root, *args)


def test_list_and_show_start_no_git_when_the_patch_files_did_not_change(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    first_list, calls = counted.run("list", "--json")
    assert any(c.startswith("apply --numstat") for c in calls)
    first_show, _ = counted.run("show", "P2", "--json", "--diff")
    again_list, calls_list = counted.run("list", "--json")
    again_show, calls_show = counted.run("show", "P2", "--json", "--diff")
    assert (calls_list, calls_show) == ([], [])
    assert (again_list, again_show) == (first_list, first_show)


def test_a_changed_patch_file_is_read_again_never_its_old_answer(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("list")
    counted.run("show", "P2")
    patch = project.root / "patches" / "perf-P2.patch"
    replace_line(patch, "Subject: [PATCH] util: VALUE_5 is 55", "Subject: [PATCH] util: renamed")
    shown, calls = counted.run("show", "P2", "--json")
    assert calls, "a changed file is read by git again"
    assert json.loads(shown)["title"] == "util: renamed"


def test_a_damaged_cache_record_is_asked_of_git_again(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    first, _ = counted.run("show", "P1", "--json", "--diff")
    records = sorted((counted.cache / "patchinfo").glob("*.json"))
    assert records
    for record in records:
        record.write_text('{"format": 1, "key": "x", "mail": {"subject": 3}}')
    again, calls = counted.run("show", "P1", "--json", "--diff")
    assert calls and again == first


def fresh_status(counted: Counted) -> dict[str, object]:
    """``series status --json`` worked out from scratch (its kept report removed first)."""
    shutil.rmtree(counted.cache / "status", ignore_errors=True)
    out, calls = counted.run("status", "--json")
    assert len(calls) > 3
    return dict(json.loads(out))


def test_status_starts_at_most_three_git_processes_when_nothing_changed(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    first = fresh_status(counted)
    again, calls = counted.run("status", "--json")
    assert len(calls) <= 3, calls
    assert [c for c in calls if c != "version"] == [
        "--no-optional-locks status --porcelain=v1 -z --untracked-files=all"
    ]
    assert json.loads(again) == first


def test_status_sees_every_change_since_the_report_it_kept(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run("status")

    (project.work / "new.txt").write_text("not committed\n")  # the work tree: asked each time
    out, _ = counted.run("status", "--json")
    assert json.loads(out)["uncommitted"] == ["new.txt"]
    assert json.loads(out) == fresh_status(counted)

    git(project.work, "add", "new.txt")  # a commit: refs and index move
    git(project.work, "commit", "-qm", "work: a new file")
    out, calls = counted.run("status", "--json")
    assert len(calls) > 3
    assert [u.split(" ", 1)[1] for u in json.loads(out)["unexported"]] == ["work: a new file"]
    assert json.loads(out)["uncommitted"] == []
    counted.run("status")

    replace_line(project.root / "patches" / "perf-P1.patch", "+    return 101", "+    return 111")
    out, calls = counted.run("status", "--json")  # a patch file: drift
    assert len(calls) > 3
    assert json.loads(out)["drift"]["patches"][0] == "P1"
    assert json.loads(out) == fresh_status(counted)

    git(project.work, "update-ref", "refs/series/backup/by-hand", "HEAD")  # any ref
    out, calls = counted.run("status", "--json")
    assert [b["ref"] for b in json.loads(out)["backups"]] == ["refs/series/backup/by-hand"]


def test_a_kept_status_says_what_a_full_one_says_however_git_would_abbreviate(
    tmp_path: Path,
) -> None:
    """The unexported commits' lines were ``git log --oneline``'s: their ids as long as
    the user's core.abbrev (or git's own guess, which grows with the objects) said when
    the report was kept, which no key of the kept report covers."""
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    (project.work / "new.txt").write_text("committed, not exported\n")
    git(project.work, "add", "new.txt")
    git(project.work, "commit", "-qm", "work: a new file")
    counted.run("status")
    git(project.work, "config", "--global", "core.abbrev", "16")
    out, calls = counted.run("status", "--json")
    assert len(calls) <= 3, calls  # the kept report
    assert json.loads(out) == fresh_status(counted)
    head = git(project.work, "rev-parse", "HEAD")
    assert json.loads(out)["unexported"] == [f"{head[:12]} work: a new file"]


def test_a_kept_status_sees_the_files_that_change_which_commits_git_walks(
    tmp_path: Path,
) -> None:
    """grafts, shallow, alternates (which commits are reached: what is unexported) and a
    series 0.1 checkout's state file were read by a full status but not keyed."""
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    synced = git(project.work, "rev-parse", "refs/series/synced")
    (project.work / "new.txt").write_text("committed, not exported\n")
    git(project.work, "add", "new.txt")
    git(project.work, "commit", "-qm", "work: a new file")
    mine = git(project.work, "rev-parse", "HEAD")
    counted.run("status")
    out, _ = counted.run("status", "--json")
    assert len(json.loads(out)["unexported"]) == 1
    grafts = project.work / ".git" / "info" / "grafts"
    grafts.parent.mkdir(exist_ok=True)
    grafts.write_text(f"{synced} {mine}\n")  # in git's eyes the synced tip reaches it
    out, _ = counted.run("status", "--json")
    assert json.loads(out) == fresh_status(counted)
    # series reads the commits themselves (test_trust_replace.py), and names the graft
    assert len(json.loads(out)["unexported"]) == 1
    assert json.loads(out)["grafted"] == [synced]
    key = ref_files.files_key(str(project.work))
    for name in ("shallow", "objects/info/alternates", "series/state.json"):
        path = project.work / ".git" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
        assert ref_files.files_key(str(project.work)) != key, name
        key = ref_files.files_key(str(project.work))


def test_a_damaged_status_record_is_worked_out_again(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    first = fresh_status(counted)
    (record,) = (counted.cache / "status").glob("*.json")
    kept = json.loads(record.read_text())
    kept["report"]["rebase"] = {"onto": "x"}
    record.write_text(json.dumps(kept))
    out, calls = counted.run("status", "--json")
    assert len(calls) > 3 and json.loads(out) == first


def imported_after(*argv: str) -> set[str]:
    """The modules a fresh interpreter has imported after ``series argv``."""
    probe = (
        "import sys\n"
        f"sys.argv = ['series', *{list(argv)!r}]\n"
        "from series.entry import main\n"
        "code = main()\n"
        "print(' '.join(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=BOUND, check=True
    )
    return set(proc.stdout.split("\n")[-2].split())


def test_version_imports_neither_the_cli_nor_gitpython() -> None:
    modules = imported_after("--version")
    assert not {"git", "rich", "series.cli"} & modules


def test_a_command_line_without_help_loads_no_kept_help(tmp_path: Path) -> None:
    """series.help_kept (with series.stack.branches_kept's reading of kept answers) is
    for a command line with --help or -h in it: a command runs without loading it."""
    from series import cli, help_kept

    assert cli.HELP == help_kept.HELP
    probe = (
        "import sys\n"
        f"sys.argv = ['series', '-C', {str(tmp_path)!r}, 'rebase', '--abort']\n"
        "from series.entry import main\n"
        "code = main()\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=BOUND, check=False
    )
    modules = set(proc.stdout.split("\n")[-2].split())
    assert "series.cli.run" in modules  # the command ran (and refused: no project there)
    assert not {"series.help_kept", "series.stack.branches_kept"} & modules


# What parsing needs: the entry point, the CLI's parser and table, the declarations.
PARSING = {
    "series",
    "series.entry",
    "series.cli",
    "series.cli.parse",
    "series.cli.table",
    "series.commands",
    "series.commands.options",
    "series.errors",
    "series.untrusted",
    # the help kept for series.entry (series.help_kept), and what it reads the cache with
    "series.help_kept",
    "series.code",
    "series.stack",
    "series.stack.branches_kept",
    "series.plain",  # branches_kept.read_entry's one reader (os only)
    "series.terminal",
    # which git PATH leads to (series.git.itself), without how git is started (loaded
    # only to ask a wrapper script's git), the git layer's runner or GitPython
    "series.git",
    "series.git.itself",
}


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["-C", "x", "--help"], ["list", "--help"], ["rebase", "--help"], ["apply", "-h"]],
)
def test_help_imports_no_engine(argv: list[str]) -> None:
    """``series --help`` and ``series CMD --help`` import the parser and the declarations:
    no project, no git layer, no engine, no GitPython, no rich (series.cli.run is not run)."""
    modules = imported_after(*argv)
    command = [f"series.commands.{a}" for a in argv if a in ("list", "rebase", "apply")]
    assert {m for m in modules if m.startswith("series")} == PARSING | set(command)
    assert not {"git", "rich"} & modules


def test_top_level_help_imports_neither_dataclasses_nor_typing() -> None:
    """A third of a ``--help``'s time was dataclasses (and inspect), typing and pathlib."""
    assert not {"dataclasses", "inspect", "typing", "pathlib"} & imported_after("--help")


def _help(env: dict[str, str], *before: str) -> tuple[str, set[str]]:
    """stdout of ``series [BEFORE] --help`` in a fresh interpreter, and the modules it
    imported."""
    probe = (
        "import sys\n"
        f"sys.argv = ['series', *{list(before)!r}, '--help']\n"
        "from series.entry import main\n"
        "code = main()\n"
        "sys.stdout.write('\\0' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=True,
        env=env,
    )
    text, _, modules = proc.stdout.rpartition("\0")
    return text, set(modules.split())


def test_a_help_printed_once_is_written_again_without_the_parser(tmp_path: Path) -> None:
    """series.help_kept: the text argparse printed, under a digest of what it depends on."""
    env = {**os.environ, "SERIES_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100"}
    first, modules = _help(env)
    assert "argparse" in modules and first.startswith("usage: series")
    again, modules = _help(env)
    assert again == first
    assert not {"argparse", "series.cli", "re", "pathlib"} & modules, sorted(modules)
    named, modules = _help(env, "-C", str(tmp_path))  # -C changes nothing in the help
    assert named == first and "argparse" not in modules
    narrow, modules = _help({**env, "COLUMNS": "50"})  # another width: argparse's own
    assert "argparse" in modules and narrow != first
    assert max(len(line) for line in narrow.splitlines()) <= 50


def test_parsing_makes_only_the_parser_of_the_command_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The top-level help needs each command's name and one-line help, not its parser."""
    from series import cli
    from series.cli.parse import CommandParser

    made: list[str] = []
    make = CommandParser.__init__

    def spy(self: CommandParser, *args: Any, command: cli.Command, **kwargs: Any) -> None:
        made.append(command.name)
        make(self, *args, command=command, **kwargs)

    monkeypatch.setattr(CommandParser, "__init__", spy)
    assert cli.parser().parse_args(["-v", "list", "--json"]).command == "list"
    assert made == ["list"]
    made.clear()
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["--help"])
    assert made == [] and "status" in capsys.readouterr().out


def test_a_command_that_starts_no_git_does_not_import_gitpython(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("list")  # the patch files read once
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), "list")
    assert "git" not in modules and "series.git" in modules


# What a command that only reads does not import (issue 23): rich (its tables and spinner
# are for a terminal), the upstream's fetch and sdist machinery, the stack builder; the
# parts of the git layer it does not use (series.git's names load every part: the fetches
# with dataclasses, the merges with subprocess and tempfile); typing.
NOT_TO_READ = (
    "rich",
    "series.upstream.fetch",
    "series.upstream.sdist_download",
    "series.builder",
    "series.git.names",
    "series.git.remote",
    "series.git.mergetree",
    "series.git.history",
    "dataclasses",
    "typing",
)


@pytest.mark.parametrize("argv", [["list"], ["show", "P2"], ["status"], ["status", "--json"]])
def test_a_command_that_reads_imports_no_engine_it_does_not_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run(*argv)  # the patch files read once, the status worked out once
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), *argv)
    assert "series.cli.run" in modules
    found = sorted(m for m in modules if m.startswith(NOT_TO_READ))
    assert not found, found
    if argv in (["list"], ["status"]):  # parsed without argparse (series.cli.plain)
        assert "argparse" not in modules


@pytest.mark.parametrize("command", ["status", "apply", "export"])
def test_a_rerun_with_nothing_changed_starts_one_git_and_no_gitpython(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """What was kept answers, after one ``git status``: started without GitPython, whose
    import costs more than the rest of the command and starts two ``git version``."""
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run(command)  # export: the first writes patches/ in its own form
    first, _ = counted.run(command, "--json")
    again, calls = counted.run(command, "--json")
    assert calls == ["--no-optional-locks status --porcelain=v1 -z --untracked-files=all"]
    assert json.loads(again) == json.loads(first)
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), command)
    assert "git" not in modules and "series.git.worktree" in modules
    assert not sorted(m for m in modules if m.startswith(NOT_TO_READ))


# What a re-run of apply or export answered from what was kept does not load (issue 23):
# the manifest's parser (series.toml is known unchanged by its bytes: series.known), the
# git layer's Repo and its other parts, the checkout, the work itself.
NOT_TO_RERUN = (
    "tomllib",
    "series.manifest",
    "series.git.repo",
    "series.git.history",
    "series.git.mergetree",
    "series.git.remote",
    "series.git.index",
    "series.checkout",
    "series.backup",
    "series.patchinfo",
    "series.stack.apply",
    "series.stack.export",
)


@pytest.mark.parametrize("command", ["apply", "export"])
def test_a_rerun_loads_neither_the_manifest_parser_nor_the_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run("export")
    counted.run(command)
    monkeypatch.setenv("SERIES_CACHE_DIR", str(counted.cache))
    modules = imported_after("-C", str(project.root), command)
    found = sorted(set(NOT_TO_RERUN) & modules)
    assert not found, found
    assert "series.stack.verified" in modules
    # ... and, when it goes further than the answer kept, it loads them all
    (project.root / "patches/perf-P2.patch").write_text(
        (project.root / "patches/perf-P2.patch").read_text().replace("VALUE_5 = 55", "VALUE_5 = 56")
    )
    modules = imported_after("-C", str(project.root), command)
    # (tomllib may stay out: series.toml's text was read before, series.manifest_kept)
    assert {"series.manifest", "series.git.repo", f"series.stack.{command}"} <= modules


def test_an_export_that_writes_imports_no_gitpython(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export with a commit changed in the checkout starts its git processes without
    GitPython (series.git.run.light_processes, as rebase: the same processes; the import
    cost a third of such an export of the real series). It writes the change."""
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    work = project.work
    message = git(work, "log", "-1", "--format=%B").rstrip("\n")
    git(work, "commit", "-q", "--amend", "-m", message + "\n\nAmended: in the checkout.")
    modules = imported_after("-C", str(project.root), "export")
    assert "series.stack.export" in modules
    assert not [m for m in modules if m == "git" or m.startswith("git.")]
    last = sorted((project.root / "patches").glob("*.patch"))[-1]
    assert "Amended: in the checkout." in last.read_text()
    code, out, err = project.run("export")
    assert code == 0 and "0 file(s) changed" in out, err


# -- the replay's predictions grow linearly with the number of patches ------------------

UTIL = "pkg/util.py"
MANY = [
    PatchSpec(
        f"P{i}",
        f"util: VALUE_{i} is {i}{i}",
        {UTIL: (f"VALUE_{i} = {i}\n", f"VALUE_{i} = {i}{i}\n")},
    )
    for i in range(1, 13)
]


def replay(tmp_path: Path, conflict: bool) -> Case:
    case = make_case(tmp_path, MANY)
    upstream_commit(
        case.project.upstream,
        "next",
        "util: VALUE_25",
        {UTIL: ("VALUE_25 = 25\n", "VALUE_25 = 0\n")},
    )
    if conflict:  # P8 conflicts: the replay goes on step by step from there
        upstream_commit(
            case.project.upstream,
            "next",
            "util: VALUE_8",
            {UTIL: ("VALUE_8 = 8\n", "VALUE_8 = -8\n")},
        )
    return case


def test_a_replay_in_chunks_is_the_replay_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the merge stream cannot answer (no ``stdbuf``), the replay is predicted in
    batches: in chunks of 3 it is the replay of chunks of 16."""
    no_stdbuf(tmp_path, monkeypatch, "none")
    for conflict in (False, True):
        case = replay(tmp_path / str(conflict), conflict)
        code, whole, err = case.run_json("--onto", "next", "--no-matrix")
        assert code == (3 if conflict else 0), err
        monkeypatch.setattr(predict, "CHUNK", 3)
        code, chunked, err = case.run_json("--onto", "next", "--no-matrix")
        monkeypatch.setattr(predict, "CHUNK", 16)
        assert chunked["onto"] == whole["onto"]
        assert ("conflict" in [p["status"] for p in whole["onto"]["patches"]]) == conflict


def test_no_prediction_merges_more_than_a_chunk_of_patches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = replay(tmp_path, conflict=False)
    case.run_json("--no-matrix")  # the stack built and memoised
    no_stdbuf(tmp_path, monkeypatch, "none")  # the batches the stream's absence falls back to
    monkeypatch.setattr(predict, "CHUNK", 3)
    batched = spy_batches(monkeypatch)
    code, report, err = case.run_json("--onto", "next", "--no-matrix")
    assert code == 0, err
    assert {p["status"] for p in report["onto"]["patches"]} == {"clean"}
    cache = tmp_path / "home" / ".cache" / "keras-series" / "upstream.git"
    spans = [
        int(git(cache, "rev-list", "--count", f"{j.base.commit}..{j.theirs.commit}"))
        for batch in batched
        for j in batch
        if j.theirs.commit is not None and j.base.commit is not None
    ]
    assert len(spans) >= len(MANY) and max(spans) <= 3


def _oracle_replay(case: Case, onto: str) -> list[tuple[str, str]]:
    """Each patch's status and the tree after it, as git's cherry-picks give them one
    after the other onto ``onto``: a patch that conflicts is left out (``--skip``)."""
    clone = case.project.root.parent / "oracle"
    git(clone.parent, "clone", "-q", str(case.author), str(clone))
    git(clone, "fetch", "-q", str(case.project.upstream), f"+{onto}:refs/oracle/onto")
    git(clone, "checkout", "-q", "--detach", "refs/oracle/onto")
    out = []
    for commit in case.commits:
        picked = subprocess.run(
            ["git", "cherry-pick", "--allow-empty", commit], cwd=clone, capture_output=True
        )
        if picked.returncode:
            git(clone, "cherry-pick", "--abort")
        status = "conflict" if picked.returncode else "clean"
        out.append((status, git(clone, "rev-parse", "HEAD^{tree}")))
    return out


@pytest.mark.parametrize("how", ["stream", "none", "buffering"])
def test_check_conflicts_replays_each_patch_once_in_one_stream_or_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """check-conflicts --onto cherry-picks each patch once per chain, as the walk asks for
    it, in one long-lived merge-tree (``stream``): no prediction, one merge per step up
    to the first conflict (P7: upstream changed the line beside it), then one for each
    of the two chains (skip, favoured) per step. Without ``stdbuf`` (``none``), or with
    one that leaves git buffered (``buffering``), the replay is predicted and verified
    in batches. Either way the report is git's own replay: each patch's replay and tree
    are those of ``git cherry-pick`` one after the other, a conflicting patch left out."""
    case = replay(tmp_path / "case", conflict=True)
    case.run_json("--no-matrix")  # the stack built and memoised
    oracle = _oracle_replay(case, "next")
    from series.conflicts import analysis

    predicted: list[int] = []
    original_predict = predict.predict_jobs  # what analysis imported

    def predict_jobs(*args: Any) -> Any:
        predicted.append(1)
        return original_predict(*args)

    monkeypatch.setattr(analysis, "predict_jobs", predict_jobs)
    answers: list[MergeStream] = []
    original_answer = MergeStream.answer

    def answer(self: MergeStream) -> TreeMerge | None:
        answers.append(self)
        return original_answer(self)

    monkeypatch.setattr(MergeStream, "answer", answer)
    with monkeypatch.context() as path:
        no_stdbuf(tmp_path, path, how)
        code, report, err = case.run_json("--onto", "next", "--no-matrix")
    assert code == 3, err
    assert [p["replay"] for p in report["onto"]["patches"]] == [s for s, _ in oracle]
    assert [p["tree"] for p in report["onto"]["patches"]] == [t for _, t in oracle]
    first = [s for s, _ in oracle].index("conflict") + 1  # P7, and every step after it
    assert 1 < first < len(oracle)
    if how == "stream":  # one chain up to the first conflict, two after it: one stream
        assert predicted == []
        assert len(answers) == first + 2 * (len(oracle) - first)
        assert len(set(map(id, answers))) == 1
    else:
        assert predicted, "the replay is predicted in batches"
        assert len(answers) == (1 if how == "buffering" else 0)


SPREAD_OUT = [
    PatchSpec(
        f"P{i + 1}",
        f"core: f{i} returns {i}01",
        {"pkg/core.py": (f"return {i}\n", f"return {i}01\n")},
    )
    for i in range(12)
] + [
    PatchSpec(f"P{i}", f"extra: module {i}", {}, new_files={f"pkg/extra{i}.py": f"X = {i}\n"})
    for i in range(13, 19)
]


def test_a_long_batch_of_merges_goes_to_both_cores_when_one_is_idle_and_gives_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of ``SPLIT`` merges or more (18 patches each cherry-picked alone onto the
    pin; their 153 pairs) runs as two ``merge-tree --stdin`` at once, its halves, when a
    core is idle; as one when none is, or while steps are counted (series.faults). The
    report is the same either way, and each patch's tree alone and each pair's verdict
    is porcelain git's own."""
    from series.git import mergetree
    from series.git.run import start_together as original

    case = make_case(tmp_path / "case", SPREAD_OUT)
    case.run_json("--no-matrix")  # the stack built and memoised
    together: list[int] = []

    def start_together(cwd: Path, calls: Any, inputs: Any = ()) -> Any:
        if any("merge-tree" in argv for argv, _ in calls):
            together.append(len(calls))
        return original(cwd, calls, inputs)

    monkeypatch.setattr(mergetree, "start_together", start_together)
    reports = {}
    for idle in (True, False):
        monkeypatch.setattr(mergetree, "core_idle", lambda idle=idle: idle)
        batched = spy_batches(monkeypatch)
        code, report, err = case.run_json()
        assert code == 0, err
        report.pop("stats")
        reports[idle] = report
        assert [len(b) for b in batched] == [18, 153]
        assert together == ([2, 2] if idle else []), together
        together.clear()
    assert reports[True] == reports[False]
    # while steps are counted (a kill test numbers them), an idle core splits nothing
    monkeypatch.setattr(mergetree, "core_idle", lambda: True)
    monkeypatch.setenv("SERIES_FAULT_KILL_AT", str(10**9))
    code, report, err = case.run_json()
    assert code == 0 and together == [], (err, together)
    report.pop("stats")
    assert report == reports[True]
    real = real_matrix(RealGit(case, tmp_path), case.project.commit, case.commits, case.ids)
    alone = {row["id"]: (row["applies"], row["tree"]) for row in reports[True]["matrix"]["alone"]}
    assert alone == {pid: (p.clean, p.tree) for pid, p in real["alone"].items()}
    pairs = {(p["a"], p["b"]): p["result"] for p in reports[True]["matrix"]["pairs"]}
    assert pairs == real["pairs"]


def test_a_rebase_predicts_no_more_than_a_chunk_of_patches_per_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = [
        PatchSpec(
            f"P{i}",
            f"util: VALUE_{i} is {i}{i}",
            {UTIL: (f"VALUE_{i} = {i}\n", f"VALUE_{i} = {i}{i}\n")},
        )
        for i in range(1, predict.CHUNK + 5)
    ]
    case = make_case(tmp_path, specs)
    project = case.project
    upstream_commit(
        project.upstream, "next", "util: VALUE_25", {UTIL: ("VALUE_25 = 25\n", "VALUE_25 = 0\n")}
    )
    code, _, err = project.run("apply")
    assert code == 0, err
    oracle = git_rebase_trees(project, "next")
    batched = spy_batches(monkeypatch)
    # Without stdbuf on PATH the rebase speculates in batches (with it, it merges each
    # patch once in one long-lived merge-tree: tests/test_speed_rebase.py)
    with monkeypatch.context() as path:
        no_stdbuf(tmp_path, path, "none")
        code, _, err = project.run("rebase", "--onto", "next", "--upstream", str(project.upstream))
    assert code == 0, err
    work = project.work
    spans = [
        int(git(work, "rev-list", "--count", f"{j.base.commit}..{j.theirs.commit}"))
        for batch in batched
        for j in batch
        if j.theirs.commit is not None and j.base.commit is not None
    ]
    assert len(spans) >= len(specs) and max(spans) <= predict.CHUNK
    next_ = git(project.upstream, "rev-parse", "next")
    assert git(work, "log", "--reverse", "--format=%T", f"{next_}..series").split() == oracle


def test_check_conflicts_enters_upstream_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = replay(tmp_path, conflict=True)
    entries: list[str] = []
    upstream, pin = Series.upstream, Series.pin

    def entering(self: Series, *args: Any, **kwargs: Any) -> UpstreamSource:
        entries.append("upstream")
        return upstream(self, *args, **kwargs)

    def pinning(self: Series, *args: Any, **kwargs: Any) -> Base:
        entries.append("pin")
        return pin(self, *args, **kwargs)

    monkeypatch.setattr(Series, "upstream", entering)
    monkeypatch.setattr(Series, "pin", pinning)
    code, report, err = case.run_json("--onto", "next", "--upstream", str(case.project.upstream))
    assert code == 3, err
    assert entries == ["upstream"]
    assert report["onto"]["patches"][7]["status"] == "conflict"


def test_export_reads_normalises_and_formats_every_patch_in_one_process(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run("export")  # the first export writes the canonical form
    before = project.patch_bytes(), (project.root / "series.toml").read_bytes()
    tip = git(project.work, "rev-parse", "series")
    _, calls = counted.run("export")
    verbs = [c.split()[0] for c in calls]
    assert verbs.count("format-patch") == 1  # every patch in one process
    assert verbs.count("log") == 1  # every message and author read at once
    # normalised in one process; the files the first export wrote and proved (in the
    # cache's memo, tests/test_export_proven.py) are not applied again
    assert verbs.count("commit-tree") == 0
    assert (project.patch_bytes(), (project.root / "series.toml").read_bytes()) == before
    assert git(project.work, "rev-parse", "series") == tip


# -- range-diff and branches ask git once for the whole series --------------------------

CORE = "pkg/core.py"
ELEVEN = [
    PatchSpec(f"P{i}", f"core: f{i} returns {i}00", {CORE: (f"return {i}\n", f"return {i}00\n")})
    for i in range(1, 12)
]


def committed_project(tmp_path: Path) -> tuple[Project, Counted]:
    """Eleven patches (range-diff numbers them in two columns), committed in a project repo."""
    project = make_project(tmp_path, ELEVEN)
    root = project.root
    git(root, "init", "-q")
    (root / ".gitignore").write_text("work/\n.series/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the series")
    return project, Counted(project, tmp_path)


def drop(project: Project, pid: str) -> None:
    toml = project.root / "series.toml"
    text = toml.read_text()
    start = text.index(f'[[patch]]\nid = "{pid}"\n')
    end = text.find("[[patch]]", start + 1)
    toml.write_text(text[:start] + (text[end:] if end != -1 else ""))
    (project.root / "patches" / f"perf-{pid}.patch").unlink()


def one_by_one(counted: Counted, report: dict[str, Any]) -> dict[str, str]:
    """Each paired patch's ``git range-diff OLD^! NEW^!``, asked of git alone (the oracle)."""
    cache = counted.cache / "upstream.git"
    argv = ["git", "range-diff", "--no-color", "--creation-factor=100"]
    return {
        p["id"]: subprocess.run(
            [*argv, f"{p['old']}^!", f"{p['new']}^!"],
            cwd=cache,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for p in report["patches"]
        if p["old"] and p["new"]
    }


# How many range-diffs one of a whole series is: from 8 pairs, two halves at once where
# this process may run on two cores (series.stack.rangediff._spare_core), else one.
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
HALVES = 2 if CORES > 1 else 1


def test_range_diff_asks_git_once_for_the_whole_series(tmp_path: Path) -> None:
    project, counted = committed_project(tmp_path)
    replace_line(project.root / "patches" / "perf-P2.patch", "+    return 200", "+    return 201")
    drop(project, "P5")
    out, calls = counted.run("range-diff", "--json")
    verbs = [c.split()[0] for c in calls]
    assert verbs.count("range-diff") == HALVES and verbs.count("diff-tree") == 1, calls
    report = json.loads(out)
    kinds = {p["id"]: p["kind"] for p in report["patches"]}
    assert kinds == {
        **{s.id: "unchanged" for s in ELEVEN},
        "P2": "content changed",
        "P5": "dropped",
    }
    texts = {p["id"]: p["range_diff"] for p in report["patches"] if p["old"] and p["new"]}
    assert texts == one_by_one(counted, report)
    assert texts["P2"].startswith("1:  ") and " ! 1:  " in texts["P2"].splitlines()[0]
    assert "return 201" in texts["P2"] and " = 1:  " in texts["P3"]


def test_a_patch_git_pairs_otherwise_is_asked_alone(tmp_path: Path) -> None:
    """P3 and P4 swap their diffs: in the whole series git pairs each with the other's old
    commit (they read alike), so each is asked alone, as before."""
    project, counted = committed_project(tmp_path)
    patches = project.root / "patches"
    three, four = (patches / f"perf-P{i}.patch" for i in (3, 4))
    head3, diff3 = three.read_text().split("diff --git", 1)
    head4, diff4 = four.read_text().split("diff --git", 1)
    three.write_text(head3 + "diff --git" + diff4)
    four.write_text(head4 + "diff --git" + diff3)
    out, calls = counted.run("range-diff", "--json")
    report = json.loads(out)
    verbs = [c.split()[0] for c in calls]
    assert verbs.count("range-diff") == HALVES + 2, calls  # the series, then P3 and P4 alone
    texts = {p["id"]: p["range_diff"] for p in report["patches"] if p["old"] and p["new"]}
    assert texts == one_by_one(counted, report)
    assert {p["id"]: p["kind"] for p in report["patches"]}["P3"] == "content changed"


def test_branches_dry_run_starts_no_git_process_per_patch(tmp_path: Path) -> None:
    project = make_project(tmp_path, ELEVEN)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run("branches")
    out, calls = counted.run("branches", "--dry-run")
    assert "nothing to change" in out, out
    assert not any(c.startswith("check-ref-format") for c in calls), calls
    assert len(calls) < len(ELEVEN), calls
    # A name outside the plain kind is git's to judge, name by name (and valid here).
    out, calls = counted.run("branches", "--dry-run", "--prefix", "über/")
    assert "create" in out
    assert sum(c.startswith("check-ref-format") for c in calls) == len(ELEVEN) + 1


def test_the_replay_goes_on_in_chunks_after_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P2 conflicts with the revision; P3..P11 are checked in a few batches, not one each,
    and the report is the step-by-step one (a chunk of 1 is a replay step by step)."""
    case = make_case(tmp_path, ELEVEN)
    edit = {CORE: ("return 2\n", "return -2\n")}
    upstream_commit(case.project.upstream, "next", "core: f2", edit)
    batched = spy_batches(monkeypatch)
    code, chunked, err = case.run_json("--onto", "next", "--no-matrix")
    assert code == 3, err
    assert [p["status"] for p in chunked["onto"]["patches"]][:3] == ["clean", "conflict", "clean"]
    assert 0 < len(batched) <= 5, [len(b) for b in batched]  # step by step after P2: 11
    monkeypatch.setattr(predict, "CHUNK", 1)
    code, stepwise, err = case.run_json("--onto", "next", "--no-matrix")
    assert code == 3, err
    assert chunked["onto"]["patches"] == stepwise["onto"]["patches"]
