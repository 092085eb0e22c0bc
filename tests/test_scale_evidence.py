"""The upstream range is diffed once: later runs over it diff only new commits (issue 23).

check-conflicts and rebase read, of every upstream commit since the pin,
the files it changes and (where it touches the series' files) its
patch-id. Both are kept in the per-user cache by commit id
(series.bycommit): a second run over the same range diffs no commit, a
run over a longer range diffs only the new ones, and the answers are the
ones a cold cache gives. A cache file that does not validate (damaged,
of another kind, of an older version) is not trusted: the run says so,
asks git again and rewrites it. Counted with a ``git`` shim that keeps
what each diffing ``log --stdin`` was given.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conflict_helpers import Case, make_case, upstream_commit
from helpers import GitShim, git
from rebase_helpers import moving_project
from series.bycommit import Store
from series.evidence import patchids
from series.upstream import rangelog
from test_check_partial import CORE, SPECS, UTIL  # the partly-upstream case


class Shim(GitShim):
    """GitShim, and what each ``log --no-walk --stdin`` (the diffs of chosen commits) read."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.files = tmp / "files-stdin.log"  # commits whose files were read
        self.ids = tmp / "ids-stdin.log"  # commits whose patch-ids were read
        real = shutil.which("git")
        (tmp / "shim" / "git").write_text(
            "#!/bin/sh\n"
            f'echo "$*" >> "{self.log}"\n'
            'case "$*" in\n'
            f'  *"--stdin --no-renames --name-only"*) tee -a "{self.files}" | "{real}" "$@";;\n'
            f'  "log -p --no-walk=unsorted --stdin"*) tee -a "{self.ids}" | "{real}" "$@";;\n'
            f'  *) exec "{real}" "$@";;\n'
            "esac\n"
        )

    def counted(
        self, root: Path, *args: str, code: int = 0
    ) -> tuple[str, list[str], dict[str, int]]:
        for path in (self.files, self.ids):
            path.unlink(missing_ok=True)
        out, calls = self.run(root, *args, code=code)
        read = {
            "files": len(self.files.read_text().split()) if self.files.exists() else 0,
            "ids": len(self.ids.read_text().split()) if self.ids.exists() else 0,
        }
        return out, calls, read


def _upstream(case: Case, extra: int) -> None:
    """next: P1's core half in its own lines (#1000), P2's written otherwise (#1001), P3
    exactly (the same patch-id), P4 inside a larger change; and ``extra`` commits on a
    file no patch touches."""
    up = case.project.upstream
    upstream_commit(up, "next", "core: f3 (#1000)", {CORE: ("return 3\n", "return 303\n")})
    upstream_commit(
        up, "next", "core: f8 otherwise (#1001)", {CORE: ("return 8\n", "return 8 * 101\n")}
    )
    upstream_commit(up, "next", "util: VALUE_25", {UTIL: ("VALUE_25 = 25\n", "VALUE_25 = 2525\n")})
    upstream_commit(
        up,
        "next",
        "core: f10 and README",
        {CORE: ("return 10\n", "return 1010\n"), "README.md": ("tiny", "small")},
    )
    _notes(up, extra)


def _notes(up: Path, extra: int) -> None:
    git(up, "checkout", "-q", "next")
    for i in range(extra):
        (up / "NOTES").write_text(f"{i}\n")
        git(up, "add", "NOTES")
        git(up, "commit", "-qm", f"notes: {i}")
    git(up, "checkout", "-q", "main")


def _onto(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report["onto"].items() if k not in ("seconds",)}


def test_a_second_check_conflicts_over_the_same_range_diffs_no_commit(tmp_path: Path) -> None:
    """First run: every range commit's files read once, the patch-ids of those that change
    exactly a patch's files (no other can share a patch's patch-id: "core: f10 and README"
    touches P4's file, and is not diffed). Second: none. Three new upstream commits: those
    three alone."""
    case = make_case(tmp_path, SPECS)
    _upstream(case, extra=6)
    shim = Shim(tmp_path)
    argv = ("check-conflicts", "--onto", "next", "--no-matrix", "--json")
    first, _, read = shim.counted(case.project.root, *argv, code=3)
    assert read == {"files": 10, "ids": 3 + 4}, read  # ids: 3 upstream commits, 4 patches
    second, calls, read = shim.counted(case.project.root, *argv, code=3)
    # ids: P3 and the upstream commit that carries it, alone: a kept patch-id that another
    # commit shares drops a patch, and is asked of git again first (evidence.patchids)
    assert read == {"files": 0, "ids": 2}, read
    next_ = git(case.project.upstream, "rev-parse", "next")
    assert not [c for c in calls if next_ in c and "--name-only" in c]
    assert _onto(json.loads(second)) == _onto(json.loads(first))
    upstream_commit(
        case.project.upstream,
        "next",
        "util: VALUE_12",
        {UTIL: ("VALUE_12 = 12\n", "VALUE_12 = 0\n")},
    )
    _notes(case.project.upstream, 2)
    third, _, read = shim.counted(case.project.root, *argv, code=3)
    assert read == {"files": 3, "ids": 1 + 2}, read  # the new commit, and the match again
    shim.cache = tmp_path / "cold"  # the same question with nothing kept
    shim.env["SERIES_CACHE_DIR"] = str(shim.cache)
    cold, _, _ = shim.counted(case.project.root, *argv, code=3)
    assert _onto(json.loads(third)) == _onto(json.loads(cold))
    rows = {r["id"]: r for r in json.loads(third)["onto"]["patches"]}
    assert rows["P3"]["replay"] == "skipped"  # dropped on its patch-id, as git rebase drops it


def test_a_second_rebase_over_the_same_range_diffs_no_commit(tmp_path: Path) -> None:
    project = moving_project(tmp_path / "one", carries_p3=True)
    _notes_on_main(project.upstream, 5)
    shim = Shim(tmp_path)
    shim.calls(project.root, "apply")
    copies = []
    for n in range(2):
        copy = tmp_path / f"copy{n}"
        shutil.copytree(project.root, copy, symlinks=True)
        copies.append(copy)
    up = str(project.upstream)
    reads, runs = [], []
    for copy in copies:
        _, calls, read = shim.counted(copy, "rebase", "--onto", "main", "--upstream", up)
        reads.append(read)
        runs.append(calls)
    # ids: P3 and the upstream commit that carries it, asked again before P3 is dropped
    assert reads[0]["files"] == 7 and reads[1] == {"files": 0, "ids": 2}, reads
    main = git(project.upstream, "rev-parse", "main")
    assert not [c for c in runs[1] if main in c and "--name-only" in c]
    texts = [(c / "series.toml").read_text() for c in copies]
    assert texts[0] == texts[1]
    carrier = git(project.upstream, "rev-parse", "main~5")
    assert carrier in texts[0].split("[[dropped]]", 1)[1]


def _notes_on_main(up: Path, extra: int) -> None:
    for i in range(extra):
        (up / "NOTES").write_text(f"{i}\n")
        git(up, "add", "NOTES")
        git(up, "commit", "-qm", f"notes: {i}")


# -- cache files that do not validate are not trusted -----------------------------------

DAMAGE: dict[str, Callable[[str, str, str], str]] = {
    "not JSON": lambda kind, shard, text: text[: len(text) // 2],
    "an older format": lambda kind, shard, text: json.dumps(
        {"format": 1, "ids": json.loads(text)["commits"]}
    ),
    "another kind": lambda kind, shard, text: json.dumps(
        {**json.loads(text), "kind": "patchids" if kind == "commitfiles" else "commitfiles"}
    ),
    "another shard's commits": lambda kind, shard, text: json.dumps(
        {**json.loads(text), "shard": "zz" if shard != "zz" else "yy"}
    ),
    "a value of the wrong kind": lambda kind, shard, text: json.dumps(
        {
            **json.loads(text),
            "commits": {c: 7 for c in json.loads(text)["commits"]},
        }
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_cache_file_that_does_not_validate_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """Every file of both stores damaged: the run says so, gives the cold answer, and
    rewrites the files; the next run trusts them again and says nothing."""
    case = make_case(tmp_path, SPECS)
    _upstream(case, extra=3)
    argv = ("check-conflicts", "--onto", "next", "--no-matrix", "--json")
    code, cold, err = _run(case, argv)
    assert code == 3, err
    assert "warning: ignored" not in err
    cache = Path(str(tmp_path / "home" / ".cache" / "keras-series"))
    files = sorted((cache / patchids.KIND).glob("*.json")) + sorted(
        (cache / rangelog.KIND).glob("*.json")
    )
    assert len(files) > 2
    for path in files:
        path.write_text(DAMAGE[damage](path.parent.name, path.stem, path.read_text()))
    code, damaged, err = _run(case, argv)
    assert code == 3, err
    warned = [
        line for line in err.splitlines() if line.startswith("warning: ignored the cache file")
    ]
    assert len(warned) == 2, err  # one line per store
    assert all(str(cache) in line and "not trusted" in line for line in warned)
    assert _onto(damaged) == _onto(cold)
    for store in (patchids.store(cache), rangelog.store(cache)):
        kept = store.recall(c for c in _commits(case))
        assert kept and store.ignored is None  # rewritten, valid
    code, again, err = _run(case, argv)
    assert "warning: ignored" not in err and _onto(again) == _onto(cold)


def _run(case: Case, argv: tuple[str, ...]) -> tuple[int, dict[str, Any], str]:
    code, out, err = case.project.run(*argv)
    return code, json.loads(out) if out.strip() else {}, err


def _commits(case: Case) -> list[str]:
    up = case.project.upstream
    return git(up, "rev-list", "next", f"^{case.project.commit}").split() + case.commits


def test_a_store_keeps_nothing_it_cannot_check(tmp_path: Path) -> None:
    store = Store(tmp_path, "patchids", 2, lambda v: isinstance(v, str) and len(v) == 40)
    good, other = "a" * 40, "b" * 40
    store.keep({good: "c" * 40, "not a commit": "c" * 40, other: 5})
    fresh = Store(tmp_path, "patchids", 2, lambda v: isinstance(v, str) and len(v) == 40)
    assert fresh.recall([good, other, "not a commit"]) == {good: "c" * 40}
    assert sorted(p.name for p in (tmp_path / "patchids").iterdir()) == ["aa.json"]
    newer = Store(tmp_path, "patchids", 3, lambda v: True)
    assert newer.recall([good]) == {} and newer.ignored is not None
    assert "format 2, not 3" in newer.ignored
