"""A damaged index in the checkout: every command that reads it refuses, naming it.

The checkout's ``.git/index`` truncated, of no bytes, a byte of an entry
flipped, its checksum wrong, of a version git cannot read, or holding an
extension git does not know. git 2.39 reads an index without checking its
checksum (only ``git fsck`` does): a flipped byte or a cut end is read as it is,
and git status then finds changes nobody made, or none. main: apply and status
an internal error (exit 70, git's "index file smaller than expected"), or "up to
date" and "uncommitted: 0" over an index git read wrong, and a re-run of apply
answered "its files clean" from what it had kept.

Now each command that reads the index (apply, ``apply --force``, status, export,
``rebase --onto``, ``edit``, a rebase's and an edit's ``--continue``, ``--skip``,
``--abort``, a re-run of apply answered before the CLI) ends with exit 1: "the index of
WORK is damaged", what is wrong in git's words, that series changed nothing, and the
way on, which works: the damaged file kept aside, ``git reset`` makes the index again
from HEAD, the files as they were. Nothing is written before the refusal: every file
of the project and of the checkout (its git directory too), byte for byte.
``check-conflicts`` and ``branches`` do not read the checkout's index: they run, and
leave it as it was. Each test is a row of docs/hardening.md ("Faults outside series").
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import Project, git, make_project, series_process
from rebase_helpers import moving_project, resolve_p1
from series.digests import sha1
from series.errors import Exit
from test_edit import edit_project
from test_edit_kill import amend_p2

HIT = "nothing changed since the last apply verified"


def _resealed(data: bytes) -> bytes:
    """``data`` (an index's bytes less its checksum) with the SHA-1 git would end it with."""
    return data + sha1(data).digest()


def _extension(data: bytes) -> bytes:
    """An index whose checksum is right, holding an extension git does not know and may
    not skip (its name begins with a small letter): as a newer git could write one."""
    return _resealed(data[:-20] + b"zzzz" + (0).to_bytes(4, "big"))


def _flip(at: int) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        out = bytearray(data)
        out[at] ^= 0xFF
        return bytes(out)

    return damage


# how the index is damaged, and what series says is wrong (or git, for the extension)
DAMAGES: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "truncated": (lambda data: data[: len(data) // 2], "checksum does not match"),
    "empty": (lambda data: b"", "index file smaller than expected"),
    "flipped": (_flip(12 + 40 + 3), "checksum does not match"),  # in the first entry's id
    "checksum": (_flip(-1), "checksum does not match"),
    "signature": (lambda data: b"XXXX" + data[4:], "bad signature 0x58585858"),
    "newer version": (
        lambda data: _resealed(data[:4] + (5).to_bytes(4, "big") + data[8:-20]),
        "bad index version 5",
    ),
    "unknown extension": (_extension, "extension, which we do not understand"),
    "garbage, no checksum": (  # zeros where the checksum is: index.skipHash's, not checked
        lambda data: data[:60] + b"\xff" * 20 + data[80:-20] + bytes(20),
        "unknown index entry format 0xffff0000",
    ),
}


# The commands that read the checkout's index (at an applied checkout), and some that do not.
READERS: list[tuple[str, ...]] = [
    ("apply",),
    ("apply", "--force"),
    ("status",),
    ("export",),
    ("rebase", "--onto", "v1.1"),
    ("edit", "P2"),
    ("edit", "--drop", "P3"),
]
NOT_READERS: list[tuple[str, ...]] = [("check-conflicts",), ("branches", "--dry-run"), ("list",)]


def everything(project: Project) -> dict[str, bytes]:
    """Every file of the project and of its checkout, the checkout's git directory too
    (its index, HEAD, refs, logs, config): what a refusal must leave as it was. Left out:
    the project's lock file (a run writes its own record there and clears it) and the
    object store (a ``--skip`` hashes the stop's files beside its ``git status``: objects
    no ref reaches, which change nothing and which git prunes)."""
    objects = project.work / ".git" / "objects"
    return {
        str(p.relative_to(project.root)): p.read_bytes()
        for p in sorted(project.root.rglob("*"))
        if p.is_file() and p.name != "lock" and not p.is_relative_to(objects)
    }


def damage(project: Project, how: str) -> bytes:
    """The checkout's index damaged as ``how`` says; its sound bytes."""
    index = project.work / ".git" / "index"
    sound = index.read_bytes()
    index.write_bytes(DAMAGES[how][0](sound))
    return sound


def refused(project: Project, how: str, *args: str, run: bool = True) -> str:
    """``series ARGS`` ends with exit 1 naming the damaged index and the way on, having
    written nothing; its stdout. ``run``: in this process (else as its own process, for
    a re-run of apply answered before the CLI)."""
    before = everything(project)
    if run:
        code, out, err = project.run(*args)
    else:
        code, out, err = series_process(project.root, *args)
    work = project.work.resolve()
    assert code == Exit.FAILED, (args, err)
    assert f"series: the index of {work} is damaged" in err, (args, err)
    assert DAMAGES[how][1] in err, (args, err)
    assert "series changed nothing" in err, (args, err)
    index = work / ".git" / "index"
    assert f"mv '{index}' '{index}.damaged' && git -C '{work}' reset -q" in err, (args, err)
    for word in ("internal error", "Traceback", "a bug in series", HIT):
        assert word not in err, (args, err)
    assert everything(project) == before, args
    return out


def recover(project: Project) -> None:
    """The hint's way on: the damaged index kept aside, git makes it again from HEAD."""
    index = project.work / ".git" / "index"
    index.rename(index.with_name("index.damaged"))
    git(project.work, "reset", "-q")


@pytest.mark.parametrize("how", list(DAMAGES))
def test_every_command_that_reads_a_damaged_index_refuses_naming_it(
    tmp_path: Path, how: str
) -> None:
    project = make_project(tmp_path)
    for command in ("apply", "export", "apply", "apply"):  # a re-run kept
        code, _, err = series_process(project.root, command)
        assert code == 0, (command, err)
    assert HIT in err
    (project.upstream / "pkg/new.py").write_text("NEW = 1\n")
    git(project.upstream, "add", "-A")
    git(project.upstream, "commit", "-qm", "upstream: new module")
    git(project.upstream, "tag", "v1.1")
    files = {p: (project.work / p).read_bytes() for p in ("pkg/core.py", "pkg/util.py")}
    damage(project, how)
    refused(project, how, "apply", run=False)  # the re-run answered before the CLI
    for args in READERS:
        refused(project, how, *args)
    assert '"ok": false' in refused(project, how, "status", "--json")
    # These read no index of the checkout: they run, and leave it as it was.
    before = everything(project)
    for args in NOT_READERS:
        code, _, err = project.run(*args)
        assert code == 0, (args, err)
    assert everything(project) == before
    recover(project)
    assert {p: (project.work / p).read_bytes() for p in files} == files
    code, out, err = series_process(project.root, "apply")
    assert code == 0 and "up to date" in out, err
    code, out, err = project.run("status")
    assert code == 0 and "uncommitted: 0" in out, out + err


@pytest.mark.parametrize("how", ["truncated", "empty", "unknown extension"])
def test_a_damaged_index_at_a_rebase_stop_refuses_continue_skip_and_abort(
    tmp_path: Path, how: str
) -> None:
    project = moving_project(tmp_path, conflict=True)
    code, _, err = project.run("rebase", "--onto", "main", "--upstream", str(project.upstream))
    assert code == Exit.CONFLICT, err
    resolve_p1(project.work)
    damage(project, how)
    for action in ("--continue", "--skip", "--abort"):
        refused(project, how, "rebase", action)
    refused(project, how, "status")
    recover(project)  # the resolution staged is in the file: staged again, it goes on
    git(project.work, "add", "pkg/core.py")
    code, _, err = project.run("rebase", "--continue")
    assert code == 0, err
    assert "return 1001" in (project.work / "pkg/core.py").read_text()
    assert git(project.work, "status", "--porcelain") == ""


@pytest.mark.parametrize("how", ["checksum", "empty"])
def test_a_damaged_index_at_an_edit_stop_refuses_continue_and_abort(
    tmp_path: Path, how: str
) -> None:
    project = edit_project(tmp_path)
    code, _, err = project.run("edit", "P2")
    assert code == 0, err
    amend_p2(project)
    damage(project, how)
    for args in (("edit", "--continue"), ("edit", "--abort"), ("status",)):
        refused(project, how, *args)
    recover(project)
    code, _, err = project.run("edit", "--continue")
    assert code == 0, err
    assert "VALUE_9 = 99" in (project.root / "patches/perf-P2.patch").read_text()
    assert git(project.work, "status", "--porcelain") == ""


def test_the_way_on_keeps_the_files_and_what_was_staged_as_changes(tmp_path: Path) -> None:
    """The hint's ``reset`` at a checkout holding the user's work: a file staged, one
    changed, one new and staged, one untracked; the index then damaged. Every file is as
    it was after the way on, and each change is still a change git shows."""
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    work = project.work
    (work / "pkg/core.py").write_text((work / "pkg/core.py").read_text() + "# staged\n")
    (work / "pkg/util.py").write_text((work / "pkg/util.py").read_text() + "# changed\n")
    (work / "pkg/added.py").write_text("ADDED = 1\n")
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "pkg/core.py", "pkg/added.py")
    files = {p: (work / p).read_bytes() for p in ("pkg/core.py", "pkg/util.py", "pkg/added.py")}
    files["notes.txt"] = (work / "notes.txt").read_bytes()
    damage(project, "checksum")
    for args in (("apply", "--force"), ("apply",), ("status",)):
        refused(project, "checksum", *args)
    recover(project)
    assert {p: (work / p).read_bytes() for p in files} == files
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=work, capture_output=True, text=True, check=True
    ).stdout
    assert " M pkg/core.py" in status and " M pkg/util.py" in status, status
    assert "?? pkg/added.py" in status and "?? notes.txt" in status, status
    code, _, err = project.run("apply")
    assert code == Exit.REFUSED and "uncommitted changes" in err, err  # still the user's
