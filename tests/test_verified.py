"""apply and export answer a re-run from what the last run verified; never when anything changed.

series.stack.verified keeps, in the checkout's git directory, what a run
that changed nothing read (series.toml, the patch files, the checkout's
refs and index) and said. Each test here changes one thing the answer
depends on and checks that the command does what a full run does: each
would fail if the kept answer were trusted without its check.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Project, git, make_project, replace_line
from series.locks import exclusive
from test_speed import Counted

HIT = "nothing changed since the last"
MEMO = Path(".git") / "series" / "verified.json"
STATUS = "--no-optional-locks status --porcelain=v1 -z --untracked-files=all"


def settled(tmp_path: Path) -> Project:
    """An applied, exported project whose last apply and export each changed nothing."""
    project = make_project(tmp_path)
    for command in ("apply", "export", "apply", "export"):
        code, _, err = project.run(command)
        assert code == 0, err
    assert (project.work / MEMO).is_file()
    for command in ("apply", "export"):  # the kept answers are used
        code, _, err = project.run(command)
        assert code == 0 and HIT in err, err
    return project


def test_a_rerun_with_nothing_changed_starts_one_git_status(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counted = Counted(project, tmp_path)
    counted.run("apply")
    counted.run("export")
    full = {c: counted.run(c, "--json") for c in ("apply", "export")}  # no-ops: kept
    tip = git(project.work, "rev-parse", "series")
    for command in ("apply", "export"):
        out, calls = counted.run(command, "--json")
        assert len(full[command][1]) > 3
        assert [c for c in calls if c != "version"] == [STATUS], calls
        assert len(calls) <= 3
        assert json.loads(out) == json.loads(full[command][0])
    assert git(project.work, "rev-parse", "series") == tip


def _new_commit(project: Project) -> None:
    (project.work / "pkg/extra.py").write_text("EXTRA = 1\n")
    git(project.work, "add", "-A")
    git(project.work, "commit", "-qm", "extra: a new module")


def _amend(project: Project) -> None:
    replace_line(project.work / "pkg/core.py", "return 909\n", "return 9009\n")
    git(project.work, "commit", "-qa", "--amend", "--no-edit")


def _reset(project: Project) -> None:
    git(project.work, "reset", "-q", "--hard", "HEAD~1")


def test_apply_rebuilds_after_a_patch_file_changed(tmp_path: Path) -> None:
    project = settled(tmp_path)
    tip = git(project.work, "rev-parse", "series")
    patch = project.root / "patches/perf-P2.patch"
    patch.write_text(patch.read_text().replace("VALUE_5 = 55", "VALUE_5 = 56"))
    code, _, err = project.run("apply")
    assert code == 0 and HIT not in err, err
    assert git(project.work, "rev-parse", "series") != tip
    assert "VALUE_5 = 56" in (project.work / "pkg/util.py").read_text()


def test_apply_rebuilds_after_series_toml_changed(tmp_path: Path) -> None:
    """P2 and P3 swapped in series.toml: the branch is built in the new order."""
    project = settled(tmp_path)
    toml = project.root / "series.toml"
    head, p1, p2, p3 = toml.read_text().split("\n[[patch]]")
    toml.write_text("\n[[patch]]".join([head, p1, p3, p2]))
    code, _, err = project.run("apply")
    assert code == 0 and HIT not in err, err
    subjects = git(project.work, "log", "--format=%s", "refs/series/base..series").splitlines()
    assert subjects == ["util: VALUE_5 is 55", "core: f9 returns 909", "core: f1 returns 101"]


def test_apply_moves_to_a_new_pin(tmp_path: Path) -> None:
    project = settled(tmp_path)
    (project.upstream / "README").write_text("upstream moved on\n")
    git(project.upstream, "add", "-A")
    git(project.upstream, "commit", "-qm", "upstream: a readme")
    git(project.upstream, "tag", "-f", "v1.0")
    pin = git(project.upstream, "rev-parse", "HEAD")
    toml = project.root / "series.toml"
    toml.write_text(toml.read_text().replace(project.commit, pin))
    code, out, err = project.run("apply", "--json")
    assert code == 0 and HIT not in err, err
    assert json.loads(out)["base"] == pin
    assert git(project.work, "rev-parse", "refs/series/base") == pin


@pytest.mark.parametrize("change", [_new_commit, _amend], ids=["new commit", "amend"])
def test_apply_refuses_over_commits_made_since(
    tmp_path: Path, change: Callable[[Project], None]
) -> None:
    project = settled(tmp_path)
    change(project)
    tip = git(project.work, "rev-parse", "series")
    code, _, err = project.run("apply")
    assert code == 4 and HIT not in err and "never exported" in err, err
    assert git(project.work, "rev-parse", "series") == tip


def test_apply_puts_back_what_a_reset_took_away(tmp_path: Path) -> None:
    project = settled(tmp_path)
    tip = git(project.work, "rev-parse", "series")
    _reset(project)
    code, _, err = project.run("apply")
    assert code == 0 and HIT not in err, err
    assert git(project.work, "rev-parse", "series") == tip


def test_apply_refuses_over_uncommitted_changes(tmp_path: Path) -> None:
    project = settled(tmp_path)
    replace_line(project.work / "pkg/core.py", "return 909\n", "return 9009\n")
    code, _, err = project.run("apply")
    assert code == 4 and HIT not in err and "uncommitted" in err, err
    assert "return 9009" in (project.work / "pkg/core.py").read_text()


def test_export_writes_what_changed_since(tmp_path: Path) -> None:
    """A new commit, an amend, a reset: each is exported, none answered from the memo."""
    project = settled(tmp_path)
    before = project.patch_bytes()
    new = "perf-P4-a-new-module.patch"
    checks: list[tuple[Callable[[Project], None], Callable[[dict[str, bytes]], bool]]] = [
        (_new_commit, lambda now: set(now) - set(before) == {new}),
        (_amend, lambda now: b"9009" in now[new]),
        (_reset, lambda now: new not in now),
    ]
    for change, check in checks:
        change(project)
        code, _, err = project.run("export")
        assert code == 0 and HIT not in err, err
        assert check(project.patch_bytes()), change.__name__


def test_export_puts_back_a_patch_file_and_series_toml_edited_by_hand(tmp_path: Path) -> None:
    project = settled(tmp_path)
    before = project.patch_bytes(), (project.root / "series.toml").read_bytes()
    patch = project.root / "patches/perf-P2.patch"
    patch.write_text(patch.read_text().replace("VALUE_5 = 55", "VALUE_5 = 56"))
    code, _, err = project.run("export")
    assert code == 0 and HIT not in err, err
    toml = project.root / "series.toml"
    toml.write_text(toml.read_text().replace("util: VALUE_5 is 55", "util: edited by hand"))
    code, _, err = project.run("export")
    assert code == 0 and HIT not in err, err
    assert (project.patch_bytes(), toml.read_bytes()) == before


def test_export_still_notes_uncommitted_changes(tmp_path: Path) -> None:
    project = settled(tmp_path)
    (project.work / "pkg/new.py").write_text("NEW = 1\n")
    code, _, err = project.run("export")
    assert code == 0 and HIT not in err, err
    assert "1 uncommitted change(s)" in err


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],
        lambda text: "[]",
        lambda text: text.replace('"format": 1', '"format": 99'),
        lambda text: text.replace('"lines": [', '"lines": [1, '),
        lambda text: json.dumps({**json.loads(text), "apply": {"key": "x"}}),
    ],
    ids=["cut", "not an object", "format", "shape", "missing fields"],
)
def test_a_damaged_record_is_verified_again_and_kept_anew(
    tmp_path: Path, damage: Callable[[str], str]
) -> None:
    project = settled(tmp_path)
    memo = project.work / MEMO
    memo.write_text(damage(memo.read_text()))
    code, out, err = project.run("apply", "--json")
    assert code == 0 and HIT not in err, err
    assert json.loads(out)["up_to_date"] is True
    code, _, err = project.run("apply")
    assert code == 0 and HIT in err, err


def test_a_record_of_another_state_is_not_taken(tmp_path: Path) -> None:
    """The record's key is what is checked: one kept for another state is not the answer."""
    project = settled(tmp_path)
    memo = project.work / MEMO
    record = json.loads(memo.read_text())
    record["apply"]["key"] = "0" * 64
    memo.write_text(json.dumps(record))
    code, _, err = project.run("apply")
    assert code == 0 and HIT not in err, err


def test_a_git_command_in_progress_takes_the_full_run(tmp_path: Path) -> None:
    """A git rebase stopped in the checkout: export refuses as it always did."""
    project = settled(tmp_path)
    subprocess.run(
        ["git", "rebase", "-q", "-i", "refs/series/base"],
        cwd=project.work,
        env={**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i 's/^pick/edit/'"},
        check=True,
        capture_output=True,
    )
    code, _, err = project.run("export")
    assert code == 4 and "a git rebase is in progress" in err, err


def test_a_patch_file_made_a_link_takes_the_full_run(tmp_path: Path) -> None:
    """The same bytes behind a link: what series does with a link is the full run's to say."""
    project = settled(tmp_path)
    patch = project.root / "patches/perf-P2.patch"
    copy = project.root / "P2-copy.patch"
    copy.write_bytes(patch.read_bytes())
    patch.unlink()
    patch.symlink_to(copy)
    for command in ("apply", "export"):
        _, _, err = project.run(command)
        assert HIT not in err, err


# -- the re-run that does not parse series.toml (series.known) ---------------------------


def _same_size_and_time(path: Path, old: str, new: str) -> None:
    """Edit ``path`` in place, ``old`` to ``new`` (as long), and give it back its times."""
    assert len(old) == len(new)
    held = path.stat()
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(held.st_atime_ns, held.st_mtime_ns))
    assert path.stat().st_size == held.st_size and path.stat().st_mtime_ns == held.st_mtime_ns


def test_a_patch_file_edited_with_its_size_and_time_kept_is_applied(tmp_path: Path) -> None:
    """What was kept is compared with the bytes of every file, never with their size and
    time alone: an edit that keeps both (a tool restoring times, a checkout) is seen."""
    project = settled(tmp_path)
    _same_size_and_time(project.root / "patches/perf-P2.patch", "VALUE_5 = 55", "VALUE_5 = 56")
    code, _, err = project.run("apply")
    assert code == 0 and HIT not in err, err
    assert "VALUE_5 = 56" in (project.work / "pkg/util.py").read_text()


def test_series_toml_edited_with_its_size_and_time_kept_is_read_again(tmp_path: Path) -> None:
    """The checkout's place changed in series.toml, size and time as they were: apply makes
    the new checkout, not an answer about the old one (what was known of series.toml is
    kept by its bytes)."""
    project = settled(tmp_path)
    toml = project.root / "series.toml"
    assert 'checkout = "work"' in toml.read_text()
    _same_size_and_time(toml, 'checkout = "work"', 'checkout = "wark"')
    code, _, err = project.run("apply")
    assert code == 0 and HIT not in err, err
    assert git(project.root / "wark", "rev-parse", "series") == git(
        project.work, "rev-parse", "series"
    )


def test_a_patch_directory_linked_out_of_the_project_is_refused_again(tmp_path: Path) -> None:
    """The same bytes, but patches/ is now a link out of the project: the parse of
    series.toml refuses it, as it does for any run; nothing kept stands in for it."""
    project = settled(tmp_path)
    outside = tmp_path / "elsewhere"
    (project.root / "patches").rename(outside)
    (project.root / "patches").symlink_to(outside)
    for command in ("apply", "export"):
        code, _, err = project.run(command)
        assert code != 0 and HIT not in err and "outside the project" in err, err


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],
        lambda text: text.replace('"checkout": "work"', '"checkout": "wark"'),
        lambda text: text.replace('"patches": [', '"patches": [["P9", "patches/x.patch"], '),
        lambda text: json.dumps({**json.loads(text), "branch": 7}),
    ],
    ids=["cut", "another checkout", "another patch", "shape"],
)
def test_what_is_known_of_series_toml_is_taken_only_as_written(
    tmp_path: Path, damage: Callable[[str], str]
) -> None:
    """What apply and export keep of series.toml (series.known) damaged, or altered
    without its key: it is not taken, the manifest is parsed (and kept anew), and the
    re-run is answered as before."""
    project = settled(tmp_path)
    (known,) = (Path(os.environ["SERIES_CACHE_DIR"]) / "known").glob("*.json")
    kept = known.read_text()
    known.write_text(damage(kept))
    for command in ("apply", "export"):
        code, _, err = project.run(command)
        assert code == 0 and HIT in err, err
    assert not (project.root / "wark").exists()
    assert json.loads(known.read_text()) == json.loads(kept)


def test_a_rerun_waits_for_the_project_lock_like_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another command holds the project lock: the re-run does not answer past it."""
    project = settled(tmp_path)
    monkeypatch.setenv("SERIES_LOCK_TIMEOUT", "0")
    with exclusive(project.root / ".series" / "lock", command="series apply (another)"):
        for command in ("apply", "export"):
            code, _, err = project.run(command)
            assert code == 1 and HIT not in err and "gave up waiting" in err, err
    code, _, err = project.run("apply")
    assert code == 0 and HIT in err, err
