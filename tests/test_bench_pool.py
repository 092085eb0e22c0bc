"""The bench's workers on fake trees: waves, memory stated up front, death with the parent.

The trees here are tiny stand-ins (a ``keras`` and a ``torch`` package of a
few lines each, found first on the worker's path), so a worker starts in a
fraction of a second and its import can be made to record or to block. The
arms and plan of a real series are checked on a small real project.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import make_project
from series.errors import SeriesError
from series.project import Series
from series.runs.bench import pool
from series.runs.bench.arms import PIN, plan
from series.runs.bench.cache import by_tree
from series.runs.bench.spec import Arm
from series.ui import Ui

ROOT = Path(__file__).resolve().parent.parent
FAKE_TORCH = (
    "__version__ = 'fake'\n_n = 1\n\n\n"
    "def set_num_threads(n):\n    global _n\n    _n = n\n\n\n"
    "def get_num_threads():\n    return _n\n"
)
FAKE_KERAS_TAIL = "\nfrom keras import backend  # noqa\n\n\ndef version():\n    return '0'\n"


def fake_tree(root: Path, keras_init: str) -> Path:
    """A tree the worker imports: ``keras`` (running ``keras_init``) and ``torch``."""
    (root / "keras" / "src").mkdir(parents=True)
    (root / "keras" / "src" / "__init__.py").write_text("")
    (root / "keras" / "backend.py").write_text("def backend():\n    return 'torch'\n")
    (root / "keras" / "__init__.py").write_text(keras_init + FAKE_KERAS_TAIL)
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text(FAKE_TORCH)
    return root


def recording_import(marks: Path, name: str) -> str:
    """Keras import code that counts the imports running beside it, then takes a while."""
    return (
        "import os, time, pathlib\n"
        f"_marks = pathlib.Path({str(marks)!r})\n"
        "_busy = _marks / f'busy-{os.getpid()}'\n"
        "_busy.touch()\n"
        "_seen = [len(list(_marks.glob('busy-*')))]\n"
        "time.sleep(1.5)\n"
        "_seen.append(len(list(_marks.glob('busy-*'))))\n"
        f"(_marks / f'seen-{name}').write_text(str(max(_seen)))\n"
        "_busy.unlink()\n"
    )


def blocking_import(marks: Path) -> str:
    """Keras import code that says its pid and never finishes."""
    return (
        "import os, time, pathlib\n"
        f"(pathlib.Path({str(marks)!r}) / f'worker-{{os.getpid()}}').touch()\n"
        "time.sleep(600)\n"
    )


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_until(check: object, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(0.05)
    return bool(callable(check) and check())


def test_workers_start_in_waves_no_more_busy_than_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one core allowed, the imports of three workers never overlap."""
    monkeypatch.setattr(pool, "busy_limit", lambda: 1)
    marks = tmp_path / "marks"
    marks.mkdir()
    arms = [
        Arm(name, fake_tree(tmp_path / name, recording_import(marks, name)))
        for name in ("a", "b", "c")
    ]
    said: list[str] = []
    with pool.workers(arms, tmp_path / "logs", tmp_path / "home", "cpu", said.append) as handles:
        assert [h.arm.name for h in handles] == ["a", "b", "c"]
        procs = [h.proc for h in handles]
    assert {name: int((marks / f"seen-{name}").read_text()) for name in "abc"} == {
        "a": 1,
        "b": 1,
        "c": 1,
    }
    assert said[0].startswith("3 workers need about 1.5 GB (500 MB each)")
    assert said[1:] == [f"started workers {k}/3" for k in (1, 2, 3)]
    assert all(proc.poll() is not None for proc in procs)


def test_workers_that_would_not_fit_in_memory_are_refused_before_any_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "available_mb", lambda: 1000.0)
    arms = [Arm(name, fake_tree(tmp_path / name, "")) for name in ("a", "b", "c")]
    with pytest.raises(SeriesError) as info, pool.workers(arms, tmp_path / "logs", tmp_path, "cpu"):
        pass
    error = info.value
    assert error.message.startswith("not measuring 3 arms at once: 3 workers need about 1.5 GB")
    assert "1.0 GB available" in error.message
    assert "at most about 2 trees" in error.hint and "--quick" in error.hint
    assert not (tmp_path / "logs").exists()  # no worker was started


PARENT = """
import sys
from pathlib import Path
from series.runs.bench import run_bench
from series.runs.bench.spec import Arm

cache, *trees = sys.argv[1:]
run_bench([Arm(f"a{i}", Path(t)) for i, t in enumerate(trees)], ["dense"],
          cache_dir=Path(cache), quick=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_every_worker_dies_with_its_parent(tmp_path: Path, sig: signal.Signals) -> None:
    """A bench whose workers are busy importing, its parent stopped: no worker stays."""
    marks = tmp_path / "marks"
    marks.mkdir()
    trees = [
        fake_tree(tmp_path / name, f"# {name}\n" + blocking_import(marks)) for name in ("a", "b")
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path / "cache"), *map(str, trees)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        first_wave = min(len(trees), pool.busy_limit())
        started = wait_until(lambda: len(list(marks.glob("worker-*"))) >= first_wave, 120)
        assert started, "the workers did not start"
        pids = [int(p.name.split("-")[1]) for p in marks.glob("worker-*")]
        assert all(running(pid) for pid in pids)
        parent.send_signal(sig)
        # Bounded from the signal, not from the parent's exit: a parent that
        # waits for its workers one by one before it exits is the bug.
        assert wait_until(lambda: not any(running(pid) for pid in pids), 8), (
            f"workers {[p for p in pids if running(p)]} outlived the signal to their parent"
        )
        parent.wait(timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for mark in marks.glob("worker-*"):
            pid = int(mark.name.split("-")[1])
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        if parent.stderr is not None:
            parent.stderr.close()


def test_quick_plans_the_pin_and_the_stack_only(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    series = Series.load(project.root)
    ui = Ui(io.StringIO(), io.StringIO())
    full = plan(series, ui, None)
    quick = plan(series, ui, None, quick=True)
    assert [a.name for a in full.arms] == [
        PIN, "1..P1", "P1 alone", "1..P2", "P2 alone", "1..P3", "P3 alone"
    ]  # fmt: skip
    assert [a.name for a in quick.arms] == [PIN, "1..P3"]
    assert [(p.baseline, p.candidate, p.title) for p in quick.pairs] == [
        (PIN, "1..P3", "stack vs pin")
    ]
    assert quick.arms[1].tree == full.states[-1].tree
    assert (quick.arms[1].tree / "pkg" / "core.py").read_text().count("return 909")
    one = plan(series, ui, ["P2"], quick=True)  # ids name the arms, quick or not
    assert [a.name for a in one.arms] == [PIN, "1..P1", "1..P2", "P2 alone"]
    assert [p.title for p in one.pairs] == ["+P2 on 1..P1", "P2 alone vs pin"]


def test_arms_with_the_same_tree_share_one_lead(tmp_path: Path) -> None:
    """Results belong to trees: a copy of a tree elsewhere stands for the same results."""
    first = fake_tree(tmp_path / "first", "# one\n")
    copy = fake_tree(tmp_path / "copy", "# one\n")
    other = fake_tree(tmp_path / "other", "# two\n")
    arms = [Arm("first", first), Arm("copy", copy), Arm("other", other)]
    ids, leads = by_tree(arms)
    assert ids["first"] == ids["copy"] != ids["other"]
    assert [arm.name for arm in leads.values()] == ["first", "other"]
