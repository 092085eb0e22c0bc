"""series check-conflicts, checked against what git itself does on the same repositories."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from conflict_helpers import RealGit, make_case, real_matrix, upstream_commit
from helpers import DEFAULT_SPECS, PatchSpec, git
from series import upstream
from series.builder import memo
from series.cli import main
from series.commands import check_conflicts
from series.errors import SeriesError
from series.git import Repo
from series.manifest import Sdist, Upstream
from series.merge import Job, Merger, Node
from series.project import Series
from series.ui import Ui

CORE, UTIL = "pkg/core.py", "pkg/util.py"
KERAS_GIT = "https://github.com/keras-team/keras.git"
KERAS_COMMIT = "250b42181ce9f37df68319d8f4753ec89a349a43"

# A series whose replay onto upstream "next" hits every verdict.
REPLAY_SPECS = [
    PatchSpec("P1", "core: f1 returns 101", {CORE: ("return 1\n", "return 101\n")}),
    PatchSpec("P2", "core: tune f1", {CORE: ("def f1():\n", "def f1():  # tuned\n")}),
    PatchSpec("P3", "util: VALUE_5 is 55", {UTIL: ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}),
    PatchSpec("P4", "core: f9 returns 909", {CORE: ("return 9\n", "return 909\n")}),
    PatchSpec("P5", "docs: nothing to change", {}),
    PatchSpec("P6", "util: VALUE_20 is 2020", {UTIL: ("VALUE_20 = 20\n", "VALUE_20 = 2020\n")}),
    PatchSpec("P7", "core: f5 returns 505", {CORE: ("return 5\n", "return 505\n")}),
]


def _next_branch(upstream: Path) -> dict[str, str]:
    """Upstream commits after the pin on branch "next", one per verdict."""
    return {
        "U1": upstream_commit(
            upstream, "next", "core: f1 returns 1001", {CORE: ("return 1\n", "return 1001\n")}
        ),
        # the same change as P3, under another subject: same patch-id
        "U2": upstream_commit(
            upstream, "next", "util: five is 55", {UTIL: ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}
        ),
        # P4's PR (#1003: manifest_text numbers PRs 1000 + index) merged in another form
        "U3": upstream_commit(
            upstream,
            "next",
            "core: f9 spelled out (#1003)",
            {CORE: ("return 9\n", "return 9  # nine\n")},
        ),
        "U4": upstream_commit(
            upstream, "next", "core: f5 returns 5005", {CORE: ("return 5\n", "return 5005\n")}
        ),
    }


def _by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in rows}


def test_replay_verdicts_match_git_rebase(tmp_path: Path) -> None:
    case = make_case(tmp_path, REPLAY_SPECS)
    up = _next_branch(case.project.upstream)
    code, report, err = case.run_json("--onto", "next")
    assert code == 3, err
    rows = _by_id(report["onto"]["patches"])
    got = {pid: (r["status"], r["replay"], r["cause"]) for pid, r in rows.items()}
    assert got == {
        "P1": ("conflict", "conflict", "self"),
        "P2": ("conflict", "conflict", "earlier"),
        "P3": ("already-upstream", "skipped", None),
        "P4": ("already-upstream", "conflict", "self"),
        "P5": ("empty", "empty", None),
        "P6": ("clean", "clean", None),
        "P7": ("conflict", "conflict", "self"),
    }
    assert rows["P1"]["files"] == [CORE]
    assert up["U1"] in [c["commit"] for c in rows["P1"]["upstream_commits"]]
    assert rows["P2"]["blocked_by"] == ["P1"]
    assert [(e["kind"], e["commit"]) for e in rows["P3"]["evidence"]] == [("patch-id", up["U2"])]
    assert [(e["kind"], e["commit"]) for e in rows["P4"]["evidence"]] == [("pr", up["U3"])]
    assert any(c["kind"] == "CONFLICT (contents)" for c in rows["P7"]["conflicts"])
    assert any(n.startswith("P3 is already upstream") for n in report["notes"])
    assert any(p.startswith("P4 is upstream in another form") for p in report["problems"])

    # git rebase (skipping each stop) stops exactly where we report a conflict,
    # drops P3 as already applied, and ends on the same tree.
    oracle = RealGit(case, tmp_path, fetch="next")
    stopped, tree = oracle.rebase("refs/oracle/onto", case.commits[-1])
    assert stopped == [pid for pid, r in rows.items() if r["replay"] == "conflict"]
    assert tree == rows["P7"]["tree"]

    # "earlier" vs "self": with every earlier conflict resolved for the patch
    # (-X theirs), P2 applies and P7 still conflicts.
    c = dict(zip(case.ids, case.commits, strict=True))
    earlier = [c["P1"]]
    assert not oracle.cherry_pick("refs/oracle/onto", [c["P2"]]).clean  # P1 skipped
    favoured = oracle.cherry_pick("refs/oracle/onto", earlier, theirs=True)
    assert favoured.commit is not None
    assert oracle.cherry_pick(favoured.commit, [c["P2"]]).clean
    before_p7 = oracle.cherry_pick(
        "refs/oracle/onto", [c["P1"], c["P2"], c["P4"], c["P5"], c["P6"]], theirs=True
    )
    assert before_p7.commit is not None
    assert not oracle.cherry_pick(before_p7.commit, [c["P7"]]).clean


def test_clean_replay_and_table(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    upstream_commit(case.project.upstream, "next", "docs", {"README.md": ("tiny", "small")})
    code, report, err = case.run_json("--onto", "next")
    assert code == 0, err
    assert report["ok"] and report["problems"] == []
    assert {r["status"] for r in report["onto"]["patches"]} == {"clean"}
    oracle = RealGit(case, tmp_path, fetch="next")
    stopped, tree = oracle.rebase("refs/oracle/onto", case.commits[-1])
    assert stopped == [] and tree == report["onto"]["patches"][-1]["tree"]
    code, out, _ = case.project.run("check-conflicts", "--onto", "next")
    assert code == 0 and "ok: the series fits" in out and "P3" in out


# The matrix case: P2 reverts P1, P3 changes P1's line another way (so P1 and
# P3 both apply alone but do not commute), P5 edits the line next to P3's
# (so it applies only on top of P3).
MATRIX_SPECS = [
    PatchSpec("P1", "core: f1 returns 101", {CORE: ("return 1\n", "return 101\n")}),
    PatchSpec("P2", "core: undo P1", {CORE: ("return 101\n", "return 1\n")}),
    PatchSpec("P3", "core: f1 returns 303", {CORE: ("return 1\n", "return 303\n")}),
    PatchSpec("P4", "util: VALUE_5 is 55", {UTIL: ("VALUE_5 = 5\n", "VALUE_5 = 55\n")}),
    PatchSpec("P5", "core: tune f1", {CORE: ("def f1():\n", "def f1():  # tuned\n")}),
]


def test_matrix_matches_cherry_pick_and_merge(tmp_path: Path) -> None:
    case = make_case(tmp_path, MATRIX_SPECS, applies_alone={"P4": False, "P5": True})
    code, report, err = case.run_json()
    assert code == 3, err
    matrix = report["matrix"]
    alone = _by_id(matrix["alone"])
    pairs = {(p["a"], p["b"]): p["result"] for p in matrix["pairs"]}
    assert [a for a, row in alone.items() if not row["applies"]] == ["P5"]
    assert pairs[("P1", "P3")] == "conflict"
    assert pairs[("P3", "P5")] == "needs"
    assert pairs[("P1", "P4")] == "commute"
    assert any("P5 does not apply alone" in p for p in report["problems"])
    assert any("P4 applies alone" in n for n in report["notes"])

    oracle = RealGit(case, tmp_path)
    real = real_matrix(oracle, case.project.commit, case.commits, case.ids)
    for pid, picked in real["alone"].items():
        # the synthetic-commit cherry-pick gives git's own tree, byte for byte
        assert (alone[pid]["applies"], alone[pid]["tree"]) == (picked.clean, picked.tree), pid
    assert pairs == real["pairs"]


def test_pin_failure_is_reported(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    upstream_commit(case.project.upstream, "next", "docs", {"README.md": ("tiny", "small")})
    patch = case.project.root / "patches" / "perf-P2.patch"
    patch.write_text(patch.read_text().replace("-VALUE_5 = 5", "-VALUE_5 = 6"))
    code, report, err = case.run_json("--no-matrix", "--onto", "next")
    assert code == 3, err
    got = [(r["id"], r["status"]) for r in report["stack"]]
    assert got == [("P1", "clean"), ("P2", "conflict"), ("P3", "not-checked")]
    assert report["stack"][1]["files"]  # the hunk that failed, or the conflicted file
    # patches that were not replayed have every key the others have
    rows = report["onto"]["patches"]
    assert [(r["id"], r["status"]) for r in rows] == [
        ("P1", "clean"),
        ("P2", "not-checked"),
        ("P3", "not-checked"),
    ]
    assert all(row.keys() == rows[0].keys() for row in rows)
    assert rows[2]["position"] == 3 and rows[2]["evidence"] == []


def test_corrupt_patch_file_is_bad_input(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    patch = case.project.root / "patches" / "perf-P2.patch"
    patch.write_text(patch.read_text().replace("@@ -", "@@ -x", 1))
    code, out, err = case.project.run("check-conflicts")
    assert code == 2, err
    assert "perf-P2.patch is corrupt" in err and "hint:" in err and out == ""


def test_patch_file_without_a_diff_is_a_note(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    patch = case.project.root / "patches" / "perf-P2.patch"
    patch.write_text(patch.read_text().split("\ndiff --git ")[0].replace("\n---\n", "\n"))
    code, report, err = case.run_json("--no-matrix")
    assert code == 0, err
    assert [r["status"] for r in report["stack"]] == ["clean", "empty", "clean"]
    assert report["notes"] == ["P2 changes nothing: its patch file has no diff"]
    code, out, _ = case.project.run("check-conflicts", "--no-matrix")
    assert code == 0 and "(P2 changes nothing)" in out


def test_stack_works_when_the_memo_cannot_be_written(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    _, first, _ = case.run_json("--no-matrix")
    cache = Repo(tmp_path / "home" / ".cache" / "keras-series" / "upstream.git")
    # a ref where the memo directory should be: no memo ref can be created
    # (as when a concurrent run holds the locks, or pruned the refs)
    cache.refs.update(
        "series test: empty", [f"delete {name}" for name in cache.refs.under(memo.MEMO)]
    )
    cache.refs.update(
        "series test: block", [f"update {memo.MEMO.rstrip('/')} {case.project.commit}"]
    )
    code, again, err = case.run_json()
    assert code == 0, err
    assert again["stats"]["memoised"] == 0 and cache.refs.under(memo.MEMO) == {}
    assert [r["commit"] for r in again["stack"]] == [r["commit"] for r in first["stack"]]


def test_stack_is_memoised_and_rebuilt_from_an_edit(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    _, first, _ = case.run_json()
    _, again, _ = case.run_json()
    assert (first["stats"]["memoised"], again["stats"]["memoised"]) == (0, 3)
    assert [r["commit"] for r in again["stack"]] == [r["commit"] for r in first["stack"]]
    patch = case.project.root / "patches" / "perf-P2.patch"
    patch.write_text(patch.read_text().replace("Why: test.", "Why: a reworded test."))
    _, edited, _ = case.run_json()
    assert edited["stats"]["memoised"] == 1
    assert edited["stack"][0]["commit"] == first["stack"][0]["commit"]
    assert edited["stack"][1]["commit"] != first["stack"][1]["commit"]


def test_favour_theirs_equals_cherry_pick_x_theirs(tmp_path: Path) -> None:
    case = make_case(tmp_path, REPLAY_SPECS[:2])
    onto = upstream_commit(
        case.project.upstream, "next", "up", {CORE: ("return 1\n", "return 1001\n")}
    )
    oracle = RealGit(case, tmp_path, fetch="next")
    repo = Repo(oracle.path)
    p1 = case.commits[0]
    with repo.merge.scratch_objects() as env:
        merger = Merger(repo, env, "synthetic")
        node = Node(repo.objects.tree_of(p1), p1, case.project.commit)
        out = merger.run(
            [
                Job(
                    Node(repo.objects.tree_of(case.project.commit), case.project.commit),
                    Node(repo.objects.tree_of(onto), onto),
                    node,
                )
            ]
        )[0]
        assert not out.clean and out.files == (CORE,)
        ours = merger.favour_theirs(out)
    assert ours == oracle.cherry_pick(onto, [p1], theirs=True).tree


def test_onto_sdist_archive(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    archive = tmp_path / "tiny-1.1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("pkg/__init__.py", CORE, UTIL, "README.md"):
            text = (case.project.upstream / name).read_text()
            if name == CORE:
                text = text.replace("return 9\n", "return 99\n")
            info = tarfile.TarInfo(f"tiny-1.1/{name}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    code, report, err = case.run_json("--onto", "sdist:1.1", "--upstream", str(archive))
    assert code == 3, err
    rows = _by_id(report["onto"]["patches"])
    assert (rows["P1"]["status"], rows["P3"]["status"]) == ("clean", "conflict")
    assert rows["P3"]["upstream_commits"][0]["subject"].startswith("Import tiny-1.1")


def test_nothing_of_the_users_is_touched(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    code, _, err = case.project.run("apply")
    assert code == 0, err
    work = case.project.work
    before = (
        git(work, "for-each-ref"),
        git(work, "status", "--porcelain"),
        (work / ".git" / "index").read_bytes(),
    )
    upstream_commit(case.project.upstream, "next", "up", {CORE: ("return 1\n", "return 11\n")})
    code, _, err = case.run_json("--onto", "next", "--upstream", str(case.project.upstream))
    assert code == 3, err
    after = (
        git(work, "for-each-ref"),
        git(work, "status", "--porcelain"),
        (work / ".git" / "index").read_bytes(),
    )
    assert after == before
    cache = Repo(tmp_path / "home" / ".cache" / "keras-series" / "upstream.git")
    assert cache.refs.under("refs/series/scratch/") == {}
    # a run that fails after the fetch cleans up too, on every git
    series = Series.load(case.project.root)
    with pytest.raises(SeriesError, match="failed after the fetch"):
        check_conflicts.run(
            series,
            _FailingUi(io.StringIO(), io.StringIO()),
            onto="next",
            upstream_url=str(case.project.upstream),
        )
    assert cache.refs.under("refs/series/scratch/") == {}
    assert (
        git(work, "for-each-ref"),
        git(work, "status", "--porcelain"),
        (work / ".git" / "index").read_bytes(),
    ) == before


class _FailingUi(Ui):
    """A failure right after REV was fetched into the scratch refs."""

    def status(self, text: str) -> None:
        super().status(text)
        if text.startswith("onto:"):
            raise SeriesError("failed after the fetch")


class _InterruptedUi(Ui):
    """Ctrl-C right after REV was fetched into the scratch refs."""

    def status(self, text: str) -> None:
        super().status(text)
        if text.startswith("onto:"):
            raise KeyboardInterrupt


def test_ctrl_c_after_the_fetch_leaves_no_scratch_refs(tmp_path: Path) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    upstream_commit(case.project.upstream, "next", "up", {CORE: ("return 1\n", "return 11\n")})
    series = Series.load(case.project.root)
    ui = _InterruptedUi(io.StringIO(), io.StringIO())
    with pytest.raises(KeyboardInterrupt):
        check_conflicts.run(series, ui, onto="next", upstream_url=str(case.project.upstream))
    cache = Repo(series.cache_dir / "upstream.git")
    assert cache.refs.under("refs/series/scratch/") == {}
    assert cache.objects.rev("refs/heads/next") is None  # nothing fetched outside the scratch refs


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--upstream", "/nowhere"], "--upstream names where"),
        (["--onto", "no-such-branch"], "cannot find no-such-branch"),
        (["--onto", "sdist:"], "needs a version"),
        (["--onto", "sdist:1.1", "--upstream", "/some/dir"], "must name the sdist archive"),
        (["--onto", "main", "--upstream", "x.tar.gz"], "is an sdist archive"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, args: list[str], needle: str) -> None:
    case = make_case(tmp_path, DEFAULT_SPECS)
    code, out, err = case.project.run("check-conflicts", *args)
    assert code == 2, err
    assert needle in err and out == ""


@pytest.mark.parametrize(
    ("upstream_arg", "code", "needle", "early"),
    [
        ("{tmp}/nowhere", 2, "--upstream {tmp}/nowhere does not exist", True),
        ("{tmp}/project", 2, "{tmp}/project is not a git repository", False),
        ("{upstream}", 2, "cannot find no-such-branch in {upstream}", False),
        ("file://{tmp}/nowhere.git", 1, "cannot reach file://{tmp}/nowhere.git", False),
    ],
)
def test_where_the_onto_revision_lives(
    tmp_path: Path, upstream_arg: str, code: int, needle: str, early: bool
) -> None:
    """A missing path is refused before any work; a source that cannot be read is
    bad input when it is a local path or has no such REV, a failure (1) when unreachable."""
    case = make_case(tmp_path, DEFAULT_SPECS)
    names = {"tmp": str(tmp_path), "upstream": str(case.project.upstream)}
    args = ["--onto", "no-such-branch", "--upstream", upstream_arg.format(**names)]
    got, out, err = case.project.run("check-conflicts", *args)
    assert got == code, err
    assert needle.format(**names) in err and "hint:" in err and out == ""
    assert ("stack:" not in err) == early
    cache = Repo(tmp_path / "home" / ".cache" / "keras-series" / "upstream.git")
    assert not cache.path.exists() or cache.refs.under("refs/series/scratch/") == {}


def test_modes_agree(tmp_path: Path) -> None:
    """Every merge mode this git offers gives porcelain git's verdicts; the others are refused."""
    case = make_case(tmp_path, MATRIX_SPECS)
    real = real_matrix(RealGit(case, tmp_path), case.project.commit, case.commits, case.ids)
    supported = Repo(case.author).merge.base_on_stdin(case.commits[0])
    for mode in ("synthetic", "auto", "merge-base"):
        code, report, err = case.run_json("--merge-mode", mode)
        if mode == "merge-base" and not supported:
            assert code == 2 and "cannot take a merge base" in err
            continue
        assert code == 0, err
        chosen = "merge-base" if mode == "auto" and supported else mode.replace("auto", "synthetic")
        assert report["stats"]["merge_mode"] == chosen
        alone = _by_id(report["matrix"]["alone"])
        assert {p: row["applies"] for p, row in alone.items()} == {
            p: picked.clean for p, picked in real["alone"].items()
        }
        pairs = {(p["a"], p["b"]): p["result"] for p in report["matrix"]["pairs"]}
        assert pairs == real["pairs"], mode


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-conflicts", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0 the series fits; 3 a patch does not apply" in text
    assert "2 bad input" in text


def test_pre_push_hook_definition(project_copy: Path) -> None:
    from pre_commit.clientlib import load_manifest

    hooks = load_manifest(project_copy / ".pre-commit-hooks.yaml")
    hook = next(h for h in hooks if h["id"] == "series-check-conflicts")
    assert hook["entry"].startswith("series check-conflicts")
    assert hook["stages"] == ["pre-push"]
    assert hook["pass_filenames"] is False


@pytest.mark.keras
def test_real_keras_tree(
    tmp_path: Path, keras_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch to the real tree, and an upstream commit editing the same line."""
    monkeypatch.setenv("SERIES_CACHE_DIR", str(keras_cache))
    root = tmp_path / "project"
    (root / "patches").mkdir(parents=True)
    (root / "series.toml").write_text(_keras_manifest())
    pinned = Upstream(
        "keras", KERAS_GIT, "v3.15.1", KERAS_COMMIT, "sdist", Sdist("keras", "3.15.1", None)
    )
    pin = upstream.resolve(pinned, keras_cache, source=None, override=None).commit
    # the author's clone and upstream's clone both start at the imported sdist
    clones = {}
    for name in ("author", "keras-upstream"):
        clone = tmp_path / name
        git(tmp_path, "init", "-q", str(clone))
        git(clone, "fetch", "-q", str(keras_cache / "upstream.git"), "refs/series/*:refs/cache/*")
        git(clone, "checkout", "-q", "-b", "main", pin)
        clones[name] = clone
    target = "keras/src/backend/common/variables.py"
    line = "    if dtype not in dtypes.ALLOWED_DTYPES:\n"
    author, up = clones["author"], clones["keras-upstream"]
    _replace(author / target, line, line.replace("ALLOWED_DTYPES", "_ALLOWED_SET"))
    git(author, "commit", "-qam", "P1: fast dtype path\n\nSeries-Id: P1")
    patch = git(author, "format-patch", "-1", "--stdout") + "\n"
    (root / "patches" / "perf-P1.patch").write_text(patch)
    code, report, err = _run_json(root)
    assert code == 0, err
    assert report["pin"]["commit"] == pin
    _replace(up / target, line, line.replace("dtype not", "str(dtype) not"))
    git(up, "commit", "-qam", "Speed up standardize_dtype (#99999)")
    edit = git(up, "rev-parse", "HEAD")
    code, report, err = _run_json(root, "--onto", "main", "--upstream", str(up))
    assert code == 3, err
    row = report["onto"]["patches"][0]
    got = (row["id"], row["status"], row["cause"], row["files"])
    assert got == ("P1", "conflict", "self", [target])
    assert [c["commit"] for c in row["upstream_commits"]] == [edit]


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _keras_manifest() -> str:
    return "\n".join(
        [
            "format = 1",
            "[upstream]",
            'name = "keras"',
            f'repository = "{KERAS_GIT}"',
            'ref = "v3.15.1"',
            f'commit = "{KERAS_COMMIT}"',
            'source = "sdist"',
            "[upstream.sdist]",
            'package = "keras"',
            'version = "3.15.1"',
            "[[patch]]",
            'id = "P1"',
            'title = "fast dtype path"',
            'file = "patches/perf-P1.patch"',
            "pr = 23182",
            'branch = "perf-P1-dtype-fastpath"',
            'state = "open"',
            "",
        ]
    )


def _run_json(root: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["-C", str(root), "check-conflicts", "--json", *args], out=out, err=err)
    return code, json.loads(out.getvalue()) if out.getvalue().strip() else {}, err.getvalue()


@pytest.mark.keras
def test_the_check_conflicts_benchmark_runs_and_agrees_with_the_checks_by_hand(
    keras_cache: Path, project_copy: Path
) -> None:
    """ci/bench_check_conflicts.py runs (once each) on the real pin: its floor replays the
    tool's recorded merges with the same answers (the script exits otherwise), and the
    tool's verdicts are those of the checks by hand. It stopped running once before,
    silently: its recording wrapped a way of running git series had left."""
    import sys

    script = project_copy / "ci" / "bench_check_conflicts.py"  # it reads the series beside it
    env = {**os.environ, "SERIES_CACHE_DIR": str(keras_cache)}
    argv = [sys.executable, str(script), "--repeat", "1"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdicts agree" in proc.stdout
    assert "merge-tree --stdin processes fed to git" in proc.stdout
