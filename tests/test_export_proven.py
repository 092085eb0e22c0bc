"""Export re-applies only the files the cache's memo does not prove (issue 23).

After one patch changed, the files before it are the bytes that ``apply``
built, on the same base, with the same series code, into the same commits:
series.builder.memo keeps a proof of that (``refs/series/proven/<key>/<commit>``)
and export applies only from the first file it does not prove. A proof is
trusted only when it names the key of those bytes and that commit: a memo
ref moved to another commit, a memo of other bytes or of other series code
must make export apply everything again, and refuse what does not rebuild.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import GitShim, PatchSpec, Project, git, make_project
from series.builder import memo
from series.builder.build import Built, PatchFile
from series.git import Repo
from series.manifest import Patch

BOUND = 120
CORE = "pkg/core.py"
SIX = [
    PatchSpec(f"P{i}", f"core: f{i} returns {i}00", {CORE: (f"return {i}\n", f"return {i}00\n")})
    for i in range(1, 7)
]


def verbs(calls: list[str]) -> list[str]:
    return [c.split()[0] for c in calls]


def exported(tmp_path: Path) -> tuple[Project, GitShim]:
    """Six patches applied and exported once: export rewrote every file (the canonical
    form), and recorded in the cache what it proved of them."""
    project = make_project(tmp_path, SIX)
    shim = GitShim(tmp_path)
    shim.run(project.root, "apply")
    shim.run(project.root, "export")
    return project, shim


def amend(work: Path, line: str = "# changed\n") -> None:
    with (work / CORE).open("a") as fh:
        fh.write(line)
    git(work, "commit", "-qa", "--amend", "--no-edit")


def test_export_after_the_last_patch_changed_applies_that_patch_alone(tmp_path: Path) -> None:
    project, shim = exported(tmp_path)
    amend(project.work)
    _, calls = shim.run(project.root, "export")
    assert verbs(calls).count("mailinfo") == 1
    amend(project.work, "# again\n")  # what this export proved is known to the next
    _, calls = shim.run(project.root, "export")
    assert verbs(calls).count("mailinfo") == 1


def test_what_is_skipped_gives_what_applying_everything_gives(tmp_path: Path) -> None:
    """The same amend exported with the proofs and, in a copy, with an empty cache (every
    file applied in the checkout, the long way): the same files, the same branch."""
    project, shim = exported(tmp_path)
    amend(project.work)
    (tmp_path / "copy").mkdir()
    copy = Project(tmp_path / "copy" / "project", project.upstream, project.commit)
    shutil.copytree(project.root, copy.root, symlinks=True)
    _, calls = shim.run(project.root, "export")
    assert verbs(calls).count("mailinfo") == 1
    _, calls = GitShim(tmp_path / "copy").run(copy.root, "export")
    assert verbs(calls).count("mailinfo") == len(SIX)
    assert project.patch_bytes() == copy.patch_bytes()
    toml = "series.toml"
    assert (project.root / toml).read_bytes() == (copy.root / toml).read_bytes()
    tips = [git(p.work, "rev-parse", "series") for p in (project, copy)]
    assert tips[0] == tips[1]


# -- a proof is trusted only when it names these bytes and this commit ---------------


class Asked:
    """What export asks the memo: the base, the (id, bytes) it writes, the commits."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, list[tuple[str, bytes]], list[str]]] = []
        real = memo.check

        def spy(
            repo: Repo, base: str, files: list[PatchFile[Patch]], commits: list[str]
        ) -> Built[Patch] | None:
            self.calls.append((base, [(f.patch.id, f.path.read_bytes()) for f in files], commits))
            return real(repo, base, files, commits)

        monkeypatch.setattr(memo, "check", spy)


def cache_repo(home: Path) -> Path:
    return home / ".cache" / "keras-series" / "upstream.git"


def unrebuildable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Project, Asked]:
    """Six applied patches, the last amended with a message whose body holds a "---"
    line: its exported file, applied again, cuts the message there (git mailinfo), so
    export refuses it. What export asked the memo is recorded."""
    project = make_project(tmp_path, SIX)
    assert project.run("apply")[0] == 0
    assert project.run("export")[0] == 0
    message = git(project.work, "log", "-1", "--format=%B")
    subject, _, rest = message.partition("\n")
    amend(project.work)
    git(project.work, "commit", "-q", "--amend", "-m", f"{subject}\n\nabove\n---\nbelow\n{rest}")
    asked = Asked(monkeypatch)
    code, _, err = project.run("export")
    assert code == 1 and "P6 would not reproduce its commit" in err, err
    assert len(asked.calls) == 1
    return project, asked


def forge(cache: Path, work: Path, lines: list[str]) -> None:
    """``lines`` written to the cache's refs by hand; the checkout's objects (export's
    normalised commits) made visible to it first."""
    (cache / "objects" / "info" / "alternates").write_text(f"{work / '.git' / 'objects'}\n")
    data = "".join(f"{line}\n" for line in lines)
    subprocess.run(["git", "update-ref", "--stdin"], cwd=cache, input=data, text=True, check=True)


def refuses_again(project: Project) -> None:
    before = project.patch_bytes(), (project.root / "series.toml").read_bytes()
    tip = git(project.work, "rev-parse", "series")
    code, _, err = project.run("export")
    assert code == 1 and "P6 would not reproduce its commit" in err, err
    assert (project.patch_bytes(), (project.root / "series.toml").read_bytes()) == before
    assert git(project.work, "rev-parse", "series") == tip


@pytest.mark.parametrize("how", ["memo moved", "proof moved", "other bytes", "other code"])
def test_a_wrong_memo_never_stands_for_applying_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermetic: Path, how: str
) -> None:
    project, asked = unrebuildable(tmp_path, monkeypatch)
    base, patches, commits = asked.calls[0]
    keys = memo.keys_of(base, patches)
    cache = cache_repo(hermetic)
    want, other = commits[-1], commits[-2]  # what P6's file does not give; another commit
    if how == "memo moved":  # the memo's ref of these very bytes, moved to that commit
        lines = [f"update {memo.MEMO}{keys[-1]} {want}"]
    elif how == "proof moved":  # a proof of these bytes, for another commit, moved to it
        lines = [
            f"update {memo.PROVEN}{keys[-1]}/{other} {want}",
            f"update {memo.PROVEN}{keys[-1]}/{want} {other}",
        ]
    elif how == "other bytes":  # a true-looking proof of the same patch's other bytes
        changed = [*patches[:-1], (patches[-1][0], patches[-1][1] + b"\n")]
        key = memo.keys_of(base, changed)[-1]
        lines = [f"update {memo.MEMO}{key} {want}", f"update {memo.PROVEN}{key}/{want} {want}"]
    else:  # a proof made by other series code (its memo keys hash other sources)
        salt = memo._salt
        monkeypatch.setattr(memo, "_salt", lambda: b"other series code")
        key = memo.keys_of(base, patches)[-1]
        monkeypatch.setattr(memo, "_salt", salt)
        lines = [f"update {memo.MEMO}{key} {want}", f"update {memo.PROVEN}{key}/{want} {want}"]
    forge(cache, project.work, lines)
    refuses_again(project)
    # and the same ref, named for these bytes and this commit, is what export would
    # believe: the cases above are ones a shortcut that trusted them would get wrong
    forge(cache, project.work, [f"update {memo.PROVEN}{keys[-1]}/{want} {want}"])
    assert project.run("export")[0] == 0
