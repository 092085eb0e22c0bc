"""A plain ``series range-diff`` said again from what the last one kept.

A range-diff that nothing it reads changed since the last one writes again
what that one wrote, starting no git process and importing neither the CLI
nor the git layer. Each input of the answer is changed in turn: the run
after it must be the full run (git asked), and say what the full run says
with nothing kept (issue 23; tests/test_trust_cache.py is the style).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import GitShim, Project, git, modules_in, series_probe
from rebase_helpers import moving_project, resolve_p1
from series.builder.memo import MEMO
from series.errors import Exit
from series.refnames import REBASE_LAST
from series.stack import rangediff_kept
from test_kept_wrapper_git import named_git
from test_rebase import rebase

RD = ("range-diff",)


class Runs(GitShim):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.cache = Path(os.environ["SERIES_CACHE_DIR"])  # the one the project was built in
        self.env["SERIES_CACHE_DIR"] = str(self.cache)

    def full(self, root: Path, *args: str) -> tuple[int, str, str]:
        """What the full run says: with nothing kept (it keeps its answer again)."""
        shutil.rmtree(self.cache / rangediff_kept.DIR, ignore_errors=True)
        return self.said(root, *args)[:3]


def _ready(tmp_path: Path, repo: bool = False) -> tuple[Project, Runs]:
    """A project rebased onto a moved upstream (P1 resolved by hand), with its files
    committed in a repository of its own when ``repo``, and its range-diff run once (it
    keeps its answer)."""
    project = moving_project(tmp_path, conflict=True)
    assert rebase(project)[0] == 3
    resolve_p1(project.work)
    assert project.run("rebase", "--continue")[0] == 0
    if repo:
        git(project.root, "init", "-q")
        (project.root / ".gitignore").write_text("work/\n.series/\n")
        git(project.root, "add", "-A")
        git(project.root, "commit", "-qm", "the series")
    runs = Runs(tmp_path)
    first = runs.said(project.root, *RD)
    assert first[0] == 0 and first[3], first  # the full run (it may build): git asked
    runs.said(project.root, *RD)
    return project, runs


def test_a_range_diff_nothing_changed_since_is_said_again_without_git(tmp_path: Path) -> None:
    project, runs = _ready(tmp_path)
    full = runs.full(project.root, *RD)
    assert full[0] == 0 and "P1   content changed" in full[1], full
    again = runs.said(project.root, *RD)
    assert again[:3] == full
    assert again[3] == []  # no git process
    probe = series_probe(project.root, *RD)
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=runs.env, check=False
    )
    code, out = proc.returncode, proc.stdout
    assert code == 0, proc.stderr
    modules = modules_in(out)
    assert "series.stack.rangediff_kept" in modules
    assert not {"series.cli", "series.git.run", "series.git.repo", "series.manifest"} & modules
    assert not {"argparse", "json", "git", "subprocess", "tomllib"} & modules


def _toml(p: Project, r: Runs) -> None:
    toml = p.root / "series.toml"
    toml.write_text(toml.read_text().replace("core: f9 returns 909", "core: f9 is 909"))


def _patch(p: Project, r: Runs) -> None:
    patch = p.root / "patches" / "perf-P3.patch"
    patch.write_text(patch.read_text().replace("+    return 909", "+    return 919"))


def _listed(p: Project, r: Runs) -> None:
    (p.root / "patches" / "perf-P9.patch").write_text("not named by series.toml\n")


def _snapshot(p: Project, r: Runs) -> None:
    git(p.work, "update-ref", "-d", REBASE_LAST)  # the series before the rebase: forgotten


def _project_repo(p: Project, r: Runs) -> None:
    # committed with P3 otherwise than it is now: the version to compare with
    patch = p.root / "patches" / "perf-P3.patch"
    now = patch.read_text()
    patch.write_text(now.replace("+    return 909", "+    return 919"))
    git(p.root, "init", "-q")
    (p.root / ".gitignore").write_text("work/\n.series/\n")
    git(p.root, "add", "-A")
    git(p.root, "commit", "-qm", "the series")
    patch.write_text(now)


def _project_commit(p: Project, r: Runs) -> None:
    # a commit with P3 otherwise than it is now: the version to compare with
    patch = p.root / "patches" / "perf-P3.patch"
    now = patch.read_text()
    patch.write_text(now.replace("+    return 909", "+    return 919"))
    git(p.root, "commit", "-qam", "P3 otherwise")
    patch.write_text(now)


def _memo(p: Project, r: Runs) -> None:
    repo = r.cache / "upstream.git"
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", MEMO).splitlines()
    name, _ = refs[0].split()
    git(repo, "update-ref", "-d", name)  # a memo ref gone: the full run builds again


def _object(p: Project, r: Runs) -> None:
    # one more object in the cache: git's abbreviations are unique among more ids
    blob = p.root.parent / "blob.txt"
    blob.write_text("another blob\n")
    git(r.cache / "upstream.git", "hash-object", "-w", str(blob))


def _global_config(p: Project, r: Runs) -> None:
    Path(r.env["GIT_CONFIG_GLOBAL"]).write_text("[core]\n\tabbrev = 12\n")


def _cache_config(p: Project, r: Runs) -> None:
    git(r.cache / "upstream.git", "config", "core.abbrev", "10")


def _environment(p: Project, r: Runs) -> None:
    r.env |= {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.abbrev"}
    r.env["GIT_CONFIG_VALUE_0"] = "11"


def _git(p: Project, r: Runs) -> None:
    shim = Path(r.env["PATH"].split(os.pathsep)[0]) / "git"
    shim.write_text(shim.read_text() + "# another git\n")


CHANGES: dict[str, Callable[[Project, Runs], None]] = {
    "series.toml": _toml,
    "a patch file": _patch,
    "a file in patches/": _listed,
    "the checkout's snapshot of the series before the rebase": _snapshot,
    "the project's own repository": _project_repo,
    "a commit in the project's repository": _project_commit,
    "a memo ref in the cache": _memo,
    "an object in the cache": _object,
    "the global git config": _global_config,
    "the cache's git config": _cache_config,
    "the environment": _environment,
    "the git on PATH": _git,
}
# Whose answer is the same here: only the key changed (the run must still be the full
# one). series runs git without the user's configuration and with the repositories' own
# pinned (series.git.run.HERMETIC, PINNED): the digest holds more than the answer reads.
SAME = {
    "a file in patches/",
    "a memo ref in the cache",
    "an object in the cache",
    "the global git config",
    "the cache's git config",
    "the environment",
    "the git on PATH",
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_what_the_answer_depends_on_changed_the_full_run_answers(
    tmp_path: Path, change: str
) -> None:
    project, runs = _ready(tmp_path, repo=change == "a commit in the project's repository")
    before = runs.said(project.root, *RD)
    assert before[3] == []  # kept
    CHANGES[change](project, runs)
    *now, calls = runs.said(project.root, *RD)
    assert calls, change  # the full run, not the answer kept
    assert tuple(now) == runs.full(project.root, *RD), change
    if change not in SAME:
        assert tuple(now) != before[:3], change  # the change matters to the answer


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
@pytest.mark.parametrize("whose", ["the checkout", "the project"])
def test_a_work_tree_given_to_another_user_takes_the_full_run(tmp_path: Path, whose: str) -> None:
    """git refuses a repository whose work tree's top directory is another user's, as one
    whose git directory is ("dubious ownership"): the checkout (read for the snapshot of
    the series before the rebase, the project having no repository) or the project's
    own repository (its last commit that changed patches/ differs from them). The kept
    answer said what git said before; the full run is the one to answer."""
    project, runs = _ready(tmp_path)
    if whose == "the project":
        _project_repo(project, runs)
        runs.said(project.root, *RD)  # it builds the committed version: keeps nothing
        runs.said(project.root, *RD)
    before = runs.said(project.root, *RD)
    assert before[0] == 0 and before[3] == []  # kept
    top = project.work if whose == "the checkout" else project.root
    os.chown(top, 65534, -1)
    try:
        *now, calls = runs.said(project.root, *RD)
        full = runs.full(project.root, *RD)
    finally:
        os.chown(top, os.getuid(), -1)
    assert calls  # the full run, not the answer kept
    assert tuple(now) == full
    assert full[0] == 4 and "dubious ownership" in full[2], full


@pytest.mark.parametrize(
    "env", [{"TTY_COMPATIBLE": "1"}, {"FORCE_COLOR": "1"}, {"SERIES_DEBUG": "1"}]
)
def test_a_terminal_or_a_log_takes_the_full_run(tmp_path: Path, env: dict[str, str]) -> None:
    project, runs = _ready(tmp_path)
    runs.env |= env
    assert runs.said(project.root, *RD)[3]


def test_only_the_plain_command_line_is_answered() -> None:
    assert rangediff_kept.words(["range-diff"]) == (None,)
    assert rangediff_kept.words(["-C", "x", "range-diff"]) == ("x",)
    for words in (
        ["range-diff", "--json"],
        ["range-diff", "P1"],
        ["range-diff", "--since", "HEAD"],
        ["-v", "range-diff"],
        ["-C", "-x", "range-diff"],
        ["-C", "x", "range-diff", "P1"],
        ["-C", "x", "status"],
    ):
        assert rangediff_kept.words(words) is None, words


def test_the_digest_holds_series_code_and_the_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, runs = _ready(tmp_path)
    root, cache = str(project.root.resolve()), str(runs.cache.resolve())
    monkeypatch.setenv("PATH", runs.env["PATH"])
    key = rangediff_kept.digest(root, cache, "work")
    assert key is not None and key == rangediff_kept.digest(root, cache, "work")
    monkeypatch.setattr(rangediff_kept, "code_digest", lambda: b"another series")
    assert rangediff_kept.digest(root, cache, "work") != key
    monkeypatch.undo()
    monkeypatch.setenv("PATH", runs.env["PATH"])
    monkeypatch.setattr(sys, "version", "another python")
    assert rangediff_kept.digest(root, cache, "work") != key


def test_a_config_that_names_other_files_keeps_nothing(tmp_path: Path) -> None:
    project, runs = _ready(tmp_path)
    other = tmp_path / "other.config"
    other.write_text("[core]\n\tabbrev = 12\n")
    Path(runs.env["GIT_CONFIG_GLOBAL"]).write_text(f"[include]\n\tpath = {other}\n")
    runs.said(project.root, *RD)
    assert runs.said(project.root, *RD)[3]  # never kept: the digest cannot hold other.config


@pytest.mark.parametrize("entry", [True, False])
def test_a_series_toml_saved_while_a_range_diff_parsed_the_one_before_keeps_no_answer(
    tmp_path: Path, entry: bool
) -> None:
    """A save of series.toml between the run's parse and its digest (which reads the file
    again): the digest holds the new bytes, the answer was computed from the old parse;
    kept so, it would be said again for the manifest as it is now. With series.entry
    imported first (as ``python -m series`` does: the file's change time is compared with
    its start) and without (in-process: the file is parsed again)."""
    project, runs = _ready(tmp_path)
    shutil.rmtree(runs.cache / rangediff_kept.DIR)
    toml = project.root / "series.toml"
    before = toml.read_text()
    saved = before.replace("core: f9 returns 909", "core: f9 is 909")
    assert saved != before
    probe = (
        "import sys\n" + ("import series.entry\n" if entry else "") + "from pathlib import Path\n"
        "from series.stack import rangediff_kept\n"
        f"toml, saved = Path({str(toml)!r}), {saved!r}\n"
        "real = rangediff_kept.digest\n"
        "def saving(*args):\n"
        "    toml.write_text(saved)  # the user's save lands after the parse\n"
        "    return real(*args)\n"
        "rangediff_kept.digest = saving\n"
        "from series.cli import main\n"
        f"sys.exit(main(['-C', {str(project.root)!r}, 'range-diff']))\n"
    )
    _keeps_nothing(project, runs, probe)
    assert toml.read_text() == saved


def _keeps_nothing(project: Project, runs: Runs, probe: str) -> None:
    """``probe`` (a range-diff run in its own interpreter) succeeds and keeps no answer:
    the next run is the full one."""
    proc = subprocess.run(
        [sys.executable, "-c", probe], env=runs.env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert not (runs.cache / rangediff_kept.DIR).exists() or not any(
        (runs.cache / rangediff_kept.DIR).iterdir()
    )
    said = runs.said(project.root, *RD)[:3]
    assert said == runs.full(project.root, *RD)


def test_a_patch_written_between_the_two_digests_of_a_run_keeps_no_answer(
    tmp_path: Path,
) -> None:
    """The digest after a run takes a patch file's bytes from the one before it when the
    file's identity is the same: a write in between, of the same size with the
    modification time put back, changes the change time, so the file is read again and
    nothing is kept. Every file is taken as settled here (RACY_NS 0), so that the digest
    before keeps each one's identity."""
    project, runs = _ready(tmp_path)
    patch = project.root / "patches" / "perf-P3.patch"
    old = patch.read_bytes()
    new = old.replace(b"+    return 909", b"+    return 919")
    assert new != old and len(new) == len(old)
    patch.write_bytes(new)  # its stack built once: the run after the write builds nothing
    assert runs.said(project.root, *RD)[0] == 0
    patch.write_bytes(old)
    shutil.rmtree(runs.cache / rangediff_kept.DIR)
    probe = (
        "import os, sys, time\n"
        "import series.entry\n"
        "from series.stack import rangediff_kept\n"
        "rangediff_kept.RACY_NS = 0\n"
        "real, wrote = rangediff_kept.digest, []\n"
        "def writing(*args):\n"
        "    key = real(*args)\n"
        "    if len(args) == 4 and not wrote:  # the run's digest before its work\n"
        "        wrote.append(True)\n"
        f"        path = {str(patch)!r}\n"
        "        st = os.stat(path)\n"
        "        time.sleep(0.01)  # a change time the file system tells from the last\n"
        f"        open(path, 'r+b').write({new!r})\n"
        "        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))\n"
        "    return key\n"
        "rangediff_kept.digest = writing\n"
        "from series.cli import main\n"
        f"sys.exit(main(['-C', {str(project.root)!r}, 'range-diff']))\n"
    )
    _keeps_nothing(project, runs, probe)
    assert patch.read_bytes() == new


def test_a_link_among_the_refs_takes_the_full_run(tmp_path: Path) -> None:
    """A link among the cache's refs: where it leads, and what git makes of it, the
    digest does not read: the full run answers."""
    project, runs = _ready(tmp_path)
    assert runs.said(project.root, *RD)[3] == []  # kept
    (runs.cache / "upstream.git" / "refs" / "series" / "elsewhere").symlink_to(tmp_path)
    *now, calls = runs.said(project.root, *RD)
    assert calls
    assert tuple(now) == runs.full(project.root, *RD)


def test_another_git_behind_a_wrapper_takes_the_full_run(tmp_path: Path) -> None:
    """A wrapper script on PATH (a version manager's shim) does not name the git it runs:
    what that git says of its version is in the digest, asked each run."""
    said = tmp_path / "version-said"
    shim = tmp_path / "shim" / "git"
    project, runs = _ready(tmp_path)
    lines = shim.read_text().splitlines()
    answer = f'if [ "$1" = version ] && [ -f "{said}" ]; then cat "{said}"; exit 0; fi'
    shim.write_text("\n".join([lines[0], lines[1], answer, *lines[2:]]) + "\n")
    runs.said(project.root, *RD)  # the shim's file changed: the full run, kept again
    before = runs.said(project.root, *RD)
    assert before[3] == []  # kept (only the version asked, which said() leaves out)
    said.write_text("git version 2.99.0\n")  # the wrapper now runs another git
    *now, calls = runs.said(project.root, *RD)
    assert calls, "another git behind the wrapper: the full run"
    assert tuple(now) == tuple(before[:3])


def test_git_python_s_git_grown_old_is_refused_not_answered(tmp_path: Path) -> None:
    """The digest holds ``GIT_PYTHON_GIT_EXECUTABLE``'s value, not the git it names, which
    the full run checks up front (series.git.version). main: that git grown old behind
    the same name, the answer kept was said, exit 0, where the full run refuses it. Now
    a range-diff with the variable set is the full run."""
    project, runs = _ready(tmp_path)
    named = tmp_path / "named-git"
    named_git(named, "git version 2.39.5")
    runs.env["GIT_PYTHON_GIT_EXECUTABLE"] = str(named)
    first = runs.said(project.root, *RD)
    assert first[0] == 0, first[2]
    again = runs.said(project.root, *RD)
    assert again[:3] == first[:3] and again[3]  # the full run: git asked
    named_git(named, "git version 2.20.0")
    code, out, err, _ = runs.said(project.root, *RD)
    assert code == Exit.FAILED, (code, out, err)
    assert f"{named} (the git GIT_PYTHON_GIT_EXECUTABLE names) says" in err, err
    assert out == ""


def test_the_memo_keys_take_a_patch_file_digest_only_for_the_bytes_it_was_taken_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain range-diff hashes each patch file once: the digest before the run keeps
    each settled file's blake2b, and the memo's keys take it (series.builder.memo's
    content_digest is the same hash) only where the file's identity before and after
    the run's read is the one kept; a file written since, or not kept, is hashed anew."""
    from series.builder import memo

    settled, written, racy = (tmp_path / name for name in ("settled", "written", "racy"))
    for path in (settled, written, racy):
        path.write_bytes(f"patch {path.name}\n".encode() * 100)
    seen: rangediff_kept.Seen = {}
    assert rangediff_kept._content(str(racy), seen) == memo.content_digest(racy.read_bytes())
    assert str(racy) not in seen  # written within RACY_NS of the read: never taken
    assert rangediff_kept.read_known(str(racy), seen) == (racy.read_bytes(), None)
    monkeypatch.setattr(rangediff_kept, "RACY_NS", 0)  # as if written long before
    for path in (settled, written):
        assert rangediff_kept._content(str(path), seen) == memo.content_digest(path.read_bytes())
    assert {str(settled), str(written)} <= set(seen)
    written.write_bytes(b"other bytes\n")
    data, taken = rangediff_kept.read_known(str(settled), seen)
    assert data == settled.read_bytes() and taken == memo.content_digest(data)
    assert rangediff_kept.read_known(str(written), seen) == (b"other bytes\n", None)
