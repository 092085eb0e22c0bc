"""The answers kept in the per-user cache, as files on a disk that may fail them.

An entry is written to a temporary file and renamed into place, without
fsync (series.files.write_atomic, ``durable=False``): a kill leaves the old
entry or the new one, but a crash of the machine may leave one cut short or
with blocks that never reached the disk. Such an entry must never be read
as an answer (main printed a re-run of apply's last line cut short, exit 0:
docs/hardening.md row 196); and a disk that fills, or a file size limit,
while an entry is written costs the answer nothing (row 197).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Project, make_project
from series.stack import branches_kept, verified_kept

HIT = "nothing changed since the last apply verified"


def _series(root: Path, *args: str, limit: int | None = None) -> tuple[int, str, str]:
    preexec = None
    if limit is not None:
        import resource

        def preexec() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-m", "series", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=os.environ,
        preexec_fn=preexec,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _settled(tmp_path: Path) -> tuple[Project, str, tuple[str, str]]:
    """Applied, exported, a re-run answered before the CLI: the entry's path, the answer."""
    project = make_project(tmp_path)
    for args in (("apply",), ("export",), ("apply",), ("apply",)):
        code, out, err = _series(project.root, *args)
        assert code == 0, (args, err)
    assert HIT in err
    root = str(project.root.resolve())
    entry = verified_kept.entry_path(root, os.environ["SERIES_CACHE_DIR"], "apply")
    assert verified_kept._load(entry) is not None
    return project, entry, (out, err)


def _torn(data: bytes) -> dict[str, bytes]:
    """The entry as a crash may leave it: cut short in its last fields, a block of zeros,
    a byte changed."""
    stdout_at = data.rindex(b"up to date")
    zeros = bytearray(data)
    zeros[stdout_at : stdout_at + 8] = b"\0" * 8
    flipped = bytearray(data)
    flipped[stdout_at + 3] ^= 0x01
    return {
        "cut in the answer": data[: stdout_at + 20],
        "cut at the seal": data[: len(data) - 5],
        "no seal": data[: data.rindex(b"\0")],
        "zeros": bytes(zeros),
        "a byte changed": bytes(flipped),
    }


def test_an_entry_cut_short_or_damaged_is_never_read_as_an_answer(tmp_path: Path) -> None:
    project, entry, said = _settled(tmp_path)
    data = Path(entry).read_bytes()
    for name, torn in _torn(data).items():
        Path(entry).write_bytes(torn)
        assert verified_kept._load(entry) is None, name
        code, out, err = _series(project.root, "apply")
        assert code == 0 and (out, err) == said, (name, out, err)  # the full run's answer
        assert verified_kept._load(entry) is not None, name  # and it was kept again
    Path(entry).write_bytes(data)
    assert _series(project.root, "apply") == (0, *said)


def test_a_branches_entry_cut_short_or_damaged_is_never_read_as_an_answer(tmp_path: Path) -> None:
    project, _, _ = _settled(tmp_path)
    code, said, _ = _series(project.root, "branches", "--dry-run")
    assert code == 0 and "perf-P1" in said
    cache = os.environ["SERIES_CACHE_DIR"]
    opts = branches_kept.options(branches_kept.words(["branches", "--dry-run"])[1])  # type: ignore[index]
    entry = branches_kept.record_path(str(project.root.resolve()), cache, opts)
    data = Path(entry).read_bytes()
    assert branches_kept._load(entry) is not None
    at = data.rindex(b"perf-P3")
    torn = {"cut": data[:at], "a byte changed": data[:at] + b"perf-Q3" + data[at + 7 :]}
    for name, bad in torn.items():
        Path(entry).write_bytes(bad)
        assert branches_kept._load(entry) is None, name
        code, out, _ = _series(project.root, "branches", "--dry-run")
        assert code == 0 and out == said, name


@pytest.mark.parametrize("limit", [0, 300, 1000])
def test_a_file_size_limit_while_an_entry_is_written_costs_the_answer_nothing(
    tmp_path: Path, limit: int
) -> None:
    project, entry, said = _settled(tmp_path)
    os.unlink(entry)
    code, out, err = _series(project.root, "apply", limit=limit)
    assert (code, out, err) == (0, *said)
    assert not os.path.exists(entry) or verified_kept._load(entry) is not None
    leftovers = [n for n in os.listdir(os.path.dirname(entry)) if n != os.path.basename(entry)]
    assert leftovers == []
    assert _series(project.root, "apply") == (0, *said)


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "another user's"])
def test_an_entry_another_user_could_have_written_is_never_read(tmp_path: Path, how: str) -> None:
    """The cache directory shared by mistake (SERIES_CACHE_DIR naming a directory others
    write): an entry they wrote, or could have, is not taken, whatever its key and seal."""
    project, entry, said = _settled(tmp_path)
    if how == "another user's":
        if os.getuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(entry, 12345, -1)
    else:
        os.chmod(entry, 0o620 if how == "group-writable" else 0o602)
    assert verified_kept._load(entry) is None
    data = Path(entry).read_bytes()
    Path(entry).unlink()
    Path(entry).write_bytes(data)  # this user's again, not writable by others
    os.chmod(entry, 0o600)
    assert verified_kept._load(entry) is not None
    assert _series(project.root, "apply") == (0, *said)


def test_runs_at_once_that_keep_the_same_entry_leave_it_whole(tmp_path: Path) -> None:
    """Four dry runs of branches at once (they take no exclusive lock) and four re-runs of
    apply, each keeping the same entry: every one says the same, and the entry left is
    whole (written to a temporary file of its own and renamed), with no temporary file."""
    project, entry, said = _settled(tmp_path)
    code, dry, _ = _series(project.root, "branches", "--dry-run")
    assert code == 0
    cache = os.environ["SERIES_CACHE_DIR"]
    opts = branches_kept.options(branches_kept.words(["branches", "--dry-run"])[1])  # type: ignore[index]
    dry_entry = branches_kept.record_path(str(project.root.resolve()), cache, opts)
    for path, args, expected in (
        (dry_entry, ("branches", "--dry-run"), dry),
        (entry, ("apply",), said[0]),
    ):
        for _ in range(2):
            os.unlink(path)
            procs = [
                subprocess.Popen(
                    [sys.executable, "-m", "series", "-C", str(project.root), *args],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=os.environ,
                )
                for _ in range(4)
            ]
            for proc in procs:
                out, err = proc.communicate(timeout=120)
                assert proc.returncode == 0 and out == expected, (args, out, err)
            assert _loaded(path) is not None, args
            leftovers = [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".")]
            assert leftovers == [], leftovers


def _loaded(path: str) -> object:
    kept = branches_kept if os.sep + "branches" + os.sep in path else verified_kept
    return kept._load(path)
