"""What ``series rebase --abort`` starts early: its ``update-ref`` fed once the files moved,
its questions to the long-lived ``cat-file`` asked at once, the ``cat-file`` ended early.

Speed is measured by ci/bench_commands.py, never asserted here; what is asserted is
that each early start gives the answer, and the all-or-nothing, of the way it replaces:
a transaction started before its changes are known applies them all or none, also when
its input is cut short; questions asked at once get the answers asked one by one.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers import git, run_fresh
from series.git import Repo
from series.git.run import Runner, light_processes


def _repo(tmp_path: Path) -> tuple[Repo, str, str]:
    """A repository with two commits, and refs under refs/series/rebase/ at the first."""
    where = tmp_path / "repo"
    where.mkdir()
    git(where, "init", "-q", "-b", "main")
    git(where, "commit", "-qm", "one", "--allow-empty")
    first = git(where, "rev-parse", "HEAD")
    git(where, "commit", "-qm", "two", "--allow-empty")
    second = git(where, "rev-parse", "HEAD")
    for name in ("state", "onto", "saved", "current"):
        git(where, "update-ref", f"refs/series/rebase/{name}", first)
    return Repo(where), first, second


def _rebase_refs(repo: Repo) -> dict[str, str]:
    return repo.refs.under("refs/series/rebase/")


_PROBE = """
import sys
from pathlib import Path
from series.git import RefMoved, Repo
from series.git import run as git_run
from series.git.run import light_processes
repo = Repo(Path({where!r}))
first, second = {first!r}, {second!r}
said = []
with light_processes():
{body}
print(" ".join(said), "subprocess" in sys.modules)
"""


def _fresh(repo: Repo, first: str, second: str, body: str) -> list[str]:
    """``body`` run by a fresh interpreter within light_processes (subprocess not imported:
    git started by series.git.child, its stdin a pipe), what it said."""
    indented = "".join(f"    {line}\n" for line in body.strip().splitlines())
    probe = _PROBE.format(where=str(repo.path), first=first, second=second, body=indented)
    code, out, err = run_fresh(probe)
    assert code == 0, err
    *said, imported = out.split()
    assert imported == "False"  # the way --abort starts git
    return said


_DELETES = """
for name in ("state", "onto", "saved", "current"):
    txn.delete(f"refs/series/rebase/{name}", first)
"""


def test_a_transaction_started_early_applies_all_its_changes_at_commit(tmp_path: Path) -> None:
    """``Transaction.start``: git waits for the changes on a pipe and applies them all at
    ``commit``, with the reflog message; nothing before. A transaction with no change ends
    its git, unchanged."""
    repo, first, second = _repo(tmp_path)
    body = f"""
txn = repo.refs.begin("series rebase: abort")
txn.start()
said.append(str(bool(txn._started.sinks)))
{_DELETES}
txn.update("refs/heads/main", first, second)
said.append(str(len(repo.refs.under("refs/series/rebase/"))))
txn.commit()
empty = repo.refs.begin("series rebase: nothing")
empty.start()
empty.commit()
"""
    assert _fresh(repo, first, second, body) == ["True", "4"]  # piped; nothing applied before
    assert _rebase_refs(repo) == {}
    assert git(repo.path, "rev-parse", "main") == first
    assert "series rebase: abort" in git(repo.path, "reflog", "-1", "main")


def test_a_transaction_started_early_runs_its_git_at_commit_elsewhere(tmp_path: Path) -> None:
    """Outside light_processes (or with subprocess imported), ``Transaction.start`` starts
    nothing: git runs to its end at ``commit``, with the same changes."""
    repo, first, _ = _repo(tmp_path)
    txn = repo.refs.begin("series rebase: abort")
    txn.start()
    for name in ("state", "onto", "saved", "current"):
        txn.delete(f"refs/series/rebase/{name}", first)
    assert len(_rebase_refs(repo)) == 4
    txn.commit()
    assert _rebase_refs(repo) == {}


def test_a_transaction_started_early_is_compare_and_swap(tmp_path: Path) -> None:
    """A ref moved between the start and the commit fails the whole transaction, named
    (``RefMoved``), as one run to its end at commit; an abandoned one changes nothing."""
    repo, first, second = _repo(tmp_path)
    body = f"""
txn = repo.refs.begin("series rebase: abort")
txn.start()
{_DELETES}
moved = repo.refs.begin("series test: elsewhere")
moved.update("refs/series/rebase/onto", second, first)
moved.commit()
try:
    txn.commit()
except RefMoved as exc:
    said.append(str("refs/series/rebase/onto" in exc.message))
dropped = repo.refs.begin("series rebase: abort")
dropped.start()
dropped.delete("refs/series/rebase/state", first)
dropped.abandon()
"""
    assert _fresh(repo, first, second, body) == ["True"]
    assert _rebase_refs(repo)["refs/series/rebase/state"] == first
    assert _rebase_refs(repo)["refs/series/rebase/onto"] == second


def test_a_transaction_whose_input_is_cut_short_changes_nothing(tmp_path: Path) -> None:
    """The changes are written to the waiting git framed (``start`` ... ``commit``): a
    series killed while it writes them (here: its input ends before the last line) leaves
    every ref as it was, not the first changes applied."""
    repo, first, second = _repo(tmp_path)
    body = f"""
real = git_run.Started.feed
def cut(self, data, k=0):
    real(self, data[: data.rstrip(b"\\n").rfind(b"\\n") + 1], k)  # the last line lost
git_run.Started.feed = cut
txn = repo.refs.begin("series rebase: abort")
txn.start()
{_DELETES}
txn.commit()
"""
    _fresh(repo, first, second, body)
    assert len(_rebase_refs(repo)) == 4


def test_questions_asked_at_once_get_the_answers_asked_one_by_one(tmp_path: Path) -> None:
    """``Runner.lookups`` (--abort's check that each listed ref names an object) asks the
    long-lived cat-file all its questions at once: the answers are ``lookup``'s, in order,
    missing names None, also for more questions than are written in one go."""
    repo, first, second = _repo(tmp_path)
    runner = Runner(repo.path)
    names = [first, "main", "1" * 40, "refs/series/rebase/state", "nothing", second, "HEAD"]
    names = names * 60  # 420: two rounds of questions
    with light_processes():
        asked = runner.lookups(names)
        one_by_one = [runner.lookup(name) for name in names]
    assert asked == one_by_one
    assert asked[2] is None and asked[4] is None and asked[0] == (first, "commit")
    assert runner.lookups([]) == []


def test_a_rested_cat_file_exits_and_a_later_question_starts_another(tmp_path: Path) -> None:
    """``Runner.rest``: the long-lived cat-file is told its input ended and exits while
    series goes on (reaped with the runner); a question after it is answered by another."""
    repo, first, _ = _repo(tmp_path)
    runner = Runner(repo.path)
    with light_processes():
        assert runner.lookup("main") is not None
        pid = runner.__dict__["_plain"].proc.pid
        runner.rest()
        assert runner.lookup(first) == (first, "commit")
        again = runner.__dict__["_plain"].proc.pid
    assert again != pid
    _, status = os.waitpid(pid, 0)  # it ended by itself, its input closed
    assert os.waitstatus_to_exitcode(status) == 0
    runner.__dict__["_resting"][0].proc.returncode = 0  # reaped here, not by its owner
