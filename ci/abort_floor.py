"""The floor of ``series rebase --abort``: what any abort that keeps the user's work costs.

Run by ci/bench_commands.py beside ``git rebase --abort`` (its row "rebase
--abort, its floor"). A Python process that runs, one after another, only
the git processes series' abort cannot do without, with the arguments
series gives them, and nothing else: no parse, no check, no backup, no
import beyond ``os`` and ``sys``:

1. ``git status``: what the user changed at the stop, which series keeps
   under a backup ref before anything moves (git's abort throws it away,
   so it has no such step);
2. ``git read-tree --reset -u TIP``: the files back on the branch (all of
   git's own abort, but its bookkeeping), with a worker per core when a core
   is idle, as series runs it;
3. ``git symbolic-ref HEAD``: HEAD back on the branch (series runs it beside
   the move, as here);
4. ``git update-ref --stdin``: the rebase's refs deleted, in one
   transaction, after the move.

Its ratio to git's own abort is the lowest any ``series rebase --abort``
written in Python can reach with that guarantee: what series costs above
it is its own (imports, reading its state, the backup's logic).

    python ci/abort_floor.py WORK BRANCH
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    work, branch = sys.argv[1], sys.argv[2]
    git_dir = os.path.join(work, ".git")
    gone = [
        f"refs/series/{kind}/{name}"
        for kind in ("rebase", "stop")
        for name in sorted(os.listdir(os.path.join(git_dir, "refs", "series", kind)))
    ]
    tip = _ref(git_dir, f"refs/heads/{branch}")
    status = _start(work, ["--no-optional-locks", "status", "--porcelain=v1", "-z",
                           "--no-renames", "--untracked-files=all"])  # fmt: skip
    _wait(status)
    # series' workers: one per core when a core is idle as git starts (its worktree.core_idle)
    workers = "checkout.workers=0" if _core_idle() else "checkout.workers=1"
    move = _start(work, ["-c", workers, "read-tree", "--reset", "-u", tip])
    head = _start(work, ["symbolic-ref", "HEAD", f"refs/heads/{branch}"])
    _wait(head)
    _wait(move)
    txn = "".join(f"delete {name}\n" for name in gone)
    _wait(_start(work, ["update-ref", "-m", "abort floor", "--stdin"], txn))
    return 0


def _core_idle() -> bool:
    """A copy of series.git.worktree.core_idle (the floor imports nothing of series): fewer
    tasks runnable than cores, this one among them. Change both."""
    try:
        with open("/proc/loadavg", "rb") as loadavg:
            runnable = int(loadavg.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return False
    return runnable < (os.cpu_count() or 1)


def _ref(git_dir: str, name: str) -> str:
    """The commit of ``name``, loose or packed (read from its file: no git process)."""
    try:
        with open(os.path.join(git_dir, name)) as loose:
            return loose.read().strip()
    except FileNotFoundError:
        with open(os.path.join(git_dir, "packed-refs")) as packed:
            for line in packed:
                if line.rstrip("\n").endswith(f" {name}"):
                    return line.split()[0]
    raise SystemExit(f"abort floor: no {name}")


def _start(work: str, argv: list[str], stdin: str | None = None) -> int:
    actions = []
    if stdin is not None:
        read, write = os.pipe()
        actions = [(os.POSIX_SPAWN_DUP2, read, 0)]  # the pipe's ends are not inherited
    pid = os.posix_spawnp("git", ["git", "-C", work, *argv], os.environ, file_actions=actions)
    if stdin is not None:
        os.close(read)
        os.write(write, stdin.encode())
        os.close(write)
    return pid


def _wait(pid: int) -> None:
    _, status = os.waitpid(pid, 0)
    if status:
        raise SystemExit(f"abort floor: git failed ({status})")


if __name__ == "__main__":
    raise SystemExit(main())
