"""The checkout ``series apply`` makes, and its versioned, validated state.

A checkout is a git repository with the stack on one branch. What series
knows about it lives in its own git directory, as refs, so that one
``update-ref --stdin`` transaction changes all of it at once
(docs/manifest.md, "Checkout state"):

* ``refs/heads/<branch>``: the stack;
* ``refs/series/base``: the upstream commit the stack sits on;
* ``refs/series/synced``: the tip last written by apply or export; commits
  above it that it does not contain were never exported;
* ``refs/series/state``: a blob of JSON (format, applied ids, source, and
  the tip the files were last moved from), validated on every load.

A kill at any point leaves either the old refs or the new ones. The one
thing outside the transaction is moving the files (``read-tree -m -u``),
which comes after it; an interrupted move is recognised (the index still
holds the tree it was moving from) and finished by the next apply. A move
cut short while git was writing the files (git killed with series, a full
disk) is recorded in the git directory and finished first by every
command that writes the checkout (:func:`finish_cut_move`): the files git
had written are the target's, never counted as the user's changes; an empty
file there that may be git's or the user's (a move killed) is kept under the
project's ``.series/backups/`` first.

This module also holds the drift checks every command that writes runs
first: uncommitted changes, unexported commits, another branch.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from series import backup, json_text, refnames
from series.backup import Kept
from series.errors import RefusedError, SeriesError
from series.files import backup_dir, confined
from series.git import leftovers
from series.git.inprogress import in_progress
from series.git.refs import Transaction
from series.git.repo import Repo
from series.git.run import ZERO, lock_fault
from series.pids import alive
from series.plain import NotPlain, read_plain
from series.records import NamedTuple
from series.ui import Ui

TYPE_CHECKING = False  # typing is not imported (series rebase --abort loads this)
if TYPE_CHECKING:
    from typing import Any

BASE_REF = refnames.BASE
SYNCED_REF = refnames.SYNCED
STATE_REF = refnames.STATE
BACKUP_PREFIX = backup.PREFIX
STATE_FORMAT = 2
LEGACY_STATE = "series/state.json"  # format 1, before the state moved into a ref
SOURCES = ("git", "sdist")


class CheckoutState(NamedTuple):
    base: str
    synced: str | None
    applied: tuple[str, ...]
    source: str
    moved_from: str | None = None  # the tip the files were moved from by the last write
    blob: str | None = None  # the state blob's id (None for a format 1 file)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "applied": list(self.applied),
            "source": self.source,
            "moved_from": self.moved_from,
        }


class Checkout:
    """A ``series apply`` checkout: a git repository with a branch of the stack."""

    def __init__(self, path: Path, branch: str, project: Path | None = None) -> None:
        """``project``: the project's root (where :func:`finish_cut_move` keeps what it
        cannot tell from the user's), None for a checkout being built."""
        self.path = path
        self.project = project
        self.repo = Repo(path)
        self.branch = branch
        self.branch_ref = f"refs/heads/{branch}"
        self._exists = False

    def exists(self) -> bool:
        """Whether the checkout is a repository; asked of git until it is one.

        A command asks this several times (the rebase state, the cut move, the
        end's state); a directory that was a repository earlier in the same run
        still is (nothing series does removes one), so a yes is not asked again.
        """
        if not self._exists:
            self._exists = self.repo.is_repo()
            if self._exists and not self.repo.own_work_tree:
                self._exists = False
                raise self._not_its_work_tree()
            if self.repo.unopened is not None:
                unset = _unset_worktree(self.path / ".git")
                raise RefusedError(
                    f"refusing to use the checkout {self.path}: git cannot open its repository",
                    why=self.repo.unopened,
                    hint=f"{unset}, then run the command again"
                    if unset
                    else f"`git -C {self.path} status` says the same; mend its .git, or pass "
                    "--dir NEWDIR to `series apply` for a new checkout",
                )
        return self._exists

    def _not_its_work_tree(self) -> RefusedError:
        """A repository whose work tree, as git sees it, is not the checkout itself: git
        would read (status, drift) and write (apply, rebase) files elsewhere, or none."""
        path, git_dir = self.path, self.path / ".git"
        if self.repo.bare:
            why = "core.bare is true in its git configuration: git sees no work tree there"
            hint = f"git -C {path} config --unset core.bare"
        else:
            found = _worktree_settings(git_dir)
            named = ", ".join(f"{value} (in {file})" for file, value in found) or "another one"
            trees = {os.path.normpath(git_dir / value) for _, value in found}
            where = " or ".join(sorted(trees)) if trees else "another directory"
            why = (
                f"core.worktree in its git configuration names {named}: git's work tree is "
                f"{where}, so series would read and write the files there, not in {path}"
            )
            hint = _unset_worktree(git_dir) or f"git -C {path} config --unset core.worktree"
        return RefusedError(
            f"refusing to use the checkout {path}: git does not take it as its work tree",
            why=why,
            hint=f"{hint}, then run the command again",
        )

    def state(self) -> CheckoutState | None:
        """The validated state, or None when this is not a series checkout."""
        if not self.exists():
            return None
        base = self.repo.objects.rev(BASE_REF)
        blob = self.repo.refs.value(STATE_REF)
        legacy = self.repo.git_dir / LEGACY_STATE
        if blob is not None:
            where, raw = f"{STATE_REF} in {self.path}", self.repo.objects.read_blob(blob)
        else:
            where, found = str(legacy), _legacy_state(legacy)
            if found is None:
                return None
            raw = found
        data = parse_state(raw, where)
        if base is None:
            raise _corrupt(where, f"{BASE_REF} is missing")
        synced = self.repo.objects.rev(SYNCED_REF)
        return CheckoutState(
            base, synced, tuple(data["applied"]), data["source"], data.get("moved_from"), blob
        )

    def require(self) -> CheckoutState:
        state = self.state()
        if state is None:
            raise SeriesError(
                f"{self.path} is not a series checkout",
                hint="run `series apply` first (or pass --dir to the checkout you used)",
            )
        return state

    def tip(self) -> str | None:
        return self.repo.objects.rev(self.branch_ref)

    def check_move(self, tip: str, *, then: str) -> None:
        """Before a command that ends by moving the files to ``tip`` writes anything
        visible (patches/, series.toml, refs): refuse where a file of the user's is in the
        way of that move, as the move would (series.git.worktree ``checkout_tree``), and
        not once the branch has moved: from a detached HEAD (a stop) ``read-tree --reset``
        writes over an untracked file; from the branch (a rebase or edit that never
        stopped) ``-m`` refused an ignored file or a FIFO there only after patches/,
        series.toml and the refs were written. ``then``: what goes on once the path is
        free (the move's own hint, "run the command again", is refused where that command
        began the rebase or edit: one is in progress). No `git add -f` in it: the file
        staged at a rebase's last stop becomes part of that stop's resolution (the series
        would carry it), and the end of an edit refuses it as a change not committed."""
        try:
            self.repo.worktree.checkout_tree(None, tip, dry_run=True)
        except RefusedError as exc:
            raise RefusedError(
                exc.message, why=exc.why, hint=f"move them out of the way, then {then}"
            ) from None

    def on_branch(self) -> bool:
        """Whether HEAD is the series branch: read from HEAD's file where it names the
        branch as git's files backend writes it ("ref: refs/heads/..."), else asked of git
        (another form, a reftable placeholder, an unreadable file, a FIFO or anything but a
        plain file: opened without waiting on it, nor following a link)."""
        head = b""
        try:
            fd = os.open(self.repo.git_dir / "HEAD", os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    head = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            pass
        if head == f"ref: {self.branch_ref}\n".encode():
            return True
        return self.repo.refs.symbolic_head() == self.branch_ref

    def unexported(self, state: CheckoutState) -> list[str]:
        """Commits on the branch that neither apply nor export wrote."""
        tip = self.tip()
        if tip is None or tip == state.synced:
            return []
        if state.synced is not None and self.repo.history.is_ancestor(tip, state.synced):
            return []
        return self.repo.history.commits(state.synced or state.base, tip)

    def interrupted_move(self, state: CheckoutState) -> str | None:
        """The tip an interrupted file move started from, if the last one was cut short.

        The refs were written (the transaction comes first), but the index
        still holds the old tip's tree, so the files never followed.
        """
        tip = self.tip()
        old = state.moved_from
        if tip is None or old is None or not self.on_branch():
            return None
        index = self.repo.worktree.index_tree()
        if index is None or index == self.repo.objects.tree_of(tip):
            return None
        return old if index == self.repo.objects.tree_of(old) else None

    def prepare_write(
        self,
        verb: str,
        *,
        prior: CheckoutState | None,
        tip: tuple[str | None, str],
        base: str,
        applied: list[str],
        source: str,
        move_files: bool,
        also: Callable[[Transaction], None] | None = None,
        replaces_series: bool = False,
        listed: dict[str, str] | None = None,
        line: Sequence[str] = (),
    ) -> Writing:
        """Move the branch to ``tip[1]`` and record the state: one transaction.

        Compare-and-swap against what the command read when it started: the
        branch at ``tip[0]`` and the refs of ``prior`` (None: a new
        checkout). With ``move_files`` the index and files then follow.
        ``also`` adds more ref changes to the same transaction (a rebase
        ends by deleting its own state in it). Commits of the user's that
        nothing would reach after it are kept under a backup ref in the
        same transaction (series.backup); the caller prints it.
        ``replaces_series``: the exported series itself is replaced (a
        rebase rewrites patches/), so the old synced tip is no longer one
        series can write again and is kept like the user's commits.
        ``listed``: every ref under ``refs/``, read by the caller for ``also``
        (HEAD is then read from its file, where that tells it: no process).

        Prepared here: the state blob written, HEAD read, the transaction filled (its
        backup ref too), nothing changed; :meth:`Writing.commit` does the rest (apply and
        export call it at once; a rebase's end prepares while its patches are exported,
        and the transaction's compare-and-swap still holds against everything read here).

        ``line``: the commits the new tip is made of, oldest first, ending at ``tip[1]``
        (a rebase's replayed commits, onto their base): HEAD at one of them is reached by
        the moved branch when the running ``cat-file`` finds it that many first parents
        below the tip (no ``rev-list`` asked for it)."""
        old, new = tip
        state = CheckoutState(base, new, tuple(applied), source, old if move_files else None)
        blob = self.repo.objects.write("blob", [_dump(state)])[0]
        refs = self.repo.refs
        read = refs.head_and_ref_read(self.repo.git_dir, listed) if listed is not None else None
        head, symbolic = read or refs.head_and_ref()
        on_branch = symbolic == self.branch_ref
        kept = None
        txn = refs.begin(f"series {verb}: {len(applied)} patches")
        if old != new:
            txn.update(self.branch_ref, new, old or ZERO)
        txn.update(BASE_REF, base, prior.base if prior else ZERO)
        txn.update(SYNCED_REF, new, prior.synced if prior and prior.synced else ZERO)
        txn.update(STATE_REF, blob, prior.blob if prior and prior.blob else ZERO)
        if also is not None:
            also(txn)
        if prior is not None:  # a new checkout holds nothing of the user's
            stays = not on_branch and not move_files  # else HEAD is the branch, or moves
            kept = self.keep_lost(
                txn,
                verb,
                head_stays=stays,
                own=[prior.synced],
                synced=not replaces_series,
                listed=listed,
                head=head,
                label=head_label(symbolic),
                reached=[head] if head and _below(self.repo, line, new, head) else [],
            )
        moves = (old if old and on_branch else None, new) if move_files else None
        return Writing(self, txn, kept, moves, on_branch)

    def keep_lost(
        self,
        txn: Transaction,
        what: str,
        *,
        head_stays: bool = False,
        own: Iterable[str | None] = (),
        extra: Sequence[tuple[str, str | None]] = (),
        gone: Iterable[str] = (),
        synced: bool = True,
        head: str | None = None,
        listed: dict[str, str] | None = None,
        label: str | None = None,
        reached: Iterable[str] = (),
    ) -> Kept | None:
        """Keep under a backup ref, in ``txn``, what of HEAD and the branch it would lose.

        ``head_stays``: HEAD is not moved (it keeps what it reaches);
        ``own``: commits series wrote and can write again (besides the
        synced tip); ``extra``: more (label, commit) to look at, such as a
        snapshot of uncommitted changes (labelled ``backup.CHANGES``, not
        counted as a commit of the user's); ``gone``: refs a later step deletes.
        ``synced`` False: the exported series is being replaced (the end of a
        rebase), so neither the synced tip nor ``own`` count as series' own.
        ``head``: HEAD's commit, read already by the caller in this run (it
        compares against it in the same transaction); ``listed``: every ref
        under ``refs/``, read already; ``label``: :meth:`head_label`, made already;
        ``reached``: commits the caller showed the transaction's refs reach.
        """
        repo = self.repo
        head = repo.refs.head() if head is None else head
        label = self.head_label() if label is None else label
        looked_at = [(label, head), (f"branch {self.branch}", self.tip()), *extra]
        mine = [*own, repo.objects.rev(SYNCED_REF)] if synced else []
        kept = [*mine, head if head_stays else None, *reached]
        made = [commit for label, commit in extra if label == backup.CHANGES]
        return backup.keep_lost(
            repo,
            txn,
            "-".join(what.replace("-", " ").split()),
            looked_at=looked_at,
            kept=kept,
            gone=gone,
            made=made,
            listed=listed,
        )

    def head_label(self) -> str:
        return head_label(self.repo.refs.symbolic_head())


class Writing:
    """A write of the checkout prepared (:meth:`Checkout.prepare_write`): its
    transaction filled, not committed."""

    def __init__(
        self,
        checkout: Checkout,
        txn: Transaction,
        kept: Kept | None,
        moves: tuple[str | None, str] | None,
        on_branch: bool,
    ) -> None:
        self.checkout, self.txn, self.kept = checkout, txn, kept
        self.moves, self.on_branch = moves, on_branch

    def commit(self) -> Kept | None:
        """The transaction committed, then the files moved (``move_files``) and HEAD set on
        the branch where it was not; the backup ref it added, if any."""
        checkout = self.checkout
        self.txn.commit()
        (checkout.repo.git_dir / LEGACY_STATE).unlink(missing_ok=True)
        if self.moves is not None:
            checkout.repo.worktree.checkout_tree(*self.moves)
            if not self.on_branch:
                checkout.repo.refs.set_head(checkout.branch_ref)
        return self.kept


def _below(repo: Repo, line: Sequence[str], tip: str, commit: str) -> bool:
    """Whether ``commit`` is one of ``line`` (oldest first, ending at ``tip``) and, as the
    running ``cat-file`` reads it, that many first parents below ``tip``."""
    if commit not in line or line[-1] != tip:
        return False
    steps = len(line) - 1 - line.index(commit)
    return repo.objects.rev(f"{line[-1]}~{steps}") == commit


def head_label(ref: str | None) -> str:
    """How HEAD is named to the user, from its symbolic ref (None: detached)."""
    return f"HEAD (on {ref.removeprefix('refs/heads/')})" if ref else "HEAD (detached)"


def _dump(state: CheckoutState) -> bytes:
    return (json_text.dumps(state.to_json(), indent=2) + "\n").encode()


def _worktree_settings(git_dir: Path) -> list[tuple[Path, str]]:
    """Each file of ``git_dir`` that sets ``core.worktree`` (``config``, ``config.worktree``:
    git reads it from no other), with the value it sets."""
    found = []
    for file in (git_dir / "config", git_dir / "config.worktree"):
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            key, equals, value = line.partition("=")
            if equals and key.strip().lower() == "worktree":
                found.append((file, value.strip().strip('"')))
    return found


def _unset_worktree(git_dir: Path) -> str | None:
    """The commands that remove ``core.worktree`` from the files of ``git_dir`` that set
    it; None when none does. Run from ``/``: git run in the checkout (or in ``git_dir``)
    first goes to that work tree, and fails when it does not exist."""
    files = dict.fromkeys(file for file, _ in _worktree_settings(git_dir))
    found = [f"git -C / config --file {file} --unset core.worktree" for file in files]
    return "; ".join(found) or None


def parse_state(raw: bytes, where: str) -> dict[str, Any]:
    """The state's JSON, checked against the schema of its format."""
    try:
        data = json_text.loads(raw.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, or not JSON
        raise _corrupt(where, f"it is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _corrupt(where, "it is not a JSON object")
    fmt = data.get("format")
    if fmt not in (1, STATE_FORMAT):
        raise SeriesError(
            f"{where} was written by another version of series",
            why=f"state format {fmt!r}; this series reads formats 1 and {STATE_FORMAT}",
            hint="use the version of series that made the checkout, or apply into a new --dir",
        )
    applied = data.get("applied")
    if not isinstance(applied, list) or not all(isinstance(i, str) for i in applied):
        raise _corrupt(where, "'applied' is not a list of patch ids")
    if data.get("source") not in SOURCES:
        raise _corrupt(where, f"'source' is {data.get('source')!r}, not one of {SOURCES}")
    moved = data.get("moved_from")
    if moved is not None and not (isinstance(moved, str) and len(moved) == 40):
        raise _corrupt(where, "'moved_from' is not a commit id")
    return data


def _legacy_state(path: Path) -> bytes | None:
    """The bytes of main's legacy state file (format 1), None when there is none; read by
    series.plain.read_plain (series wrote it by renaming a plain file into place): a link,
    a FIFO or a directory there is refused, naming it, as the state cannot be told."""
    try:
        return read_plain(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except NotPlain:
        raise RefusedError(
            f"refusing to use the checkout: {path} is not a plain file",
            why="series 0.1 kept the checkout's state there, as a plain file; what is there "
            "now is no state series wrote, and the checkout's state cannot be told",
            hint=f"see what it is (ls -l '{path}'); if no program of yours put it there, "
            f"remove it (rm '{path}'), then run the command again",
        ) from None


def _corrupt(where: str, why: str) -> SeriesError:
    return SeriesError(
        f"the series state in {where} is damaged",
        why=why,
        hint="nothing was changed; `series apply --force --dir NEW` makes a fresh checkout "
        "(the commits of this one stay in its git history)",
    )


def refuse_dirty(checkout: Checkout, action: str) -> None:
    dirty = checkout.repo.worktree.dirty()
    if dirty:
        shown = "\n".join(dirty[:10]) + (
            f"\n... and {len(dirty) - 10} more" if len(dirty) > 10 else ""
        )
        raise RefusedError(
            f"refusing to {action}: {checkout.path} has uncommitted changes",
            why=shown,
            hint="commit them and run `series export`, or pass --force "
            "(series stashes them in the checkout first and says where)",
        )


REBASE_STATE_REF = refnames.REBASE_STATE


def refuse_during_rebase(checkout: Checkout, action: str) -> None:
    """A rebase or edit in progress owns the checkout until it is continued or aborted."""
    blob = checkout.repo.refs.value(REBASE_STATE_REF) if checkout.exists() else None
    if blob is not None:
        try:
            kind = str(json_text.loads(checkout.repo.objects.read_blob(blob)).get("kind", "rebase"))
        except (ValueError, AttributeError):
            kind = "rebase"  # a damaged state: the rebase's commands say so
        raise RefusedError(
            f"refusing to {action}: a `series {kind}` is in progress in {checkout.path}",
            why="it owns the checkout, series.toml and patches/ until it ends",
            hint=f"`series status` says where it stands; `series {kind} --continue`, "
            "`--skip` or `--abort` (--force does not override this)",
        )


def refuse_git_in_progress(checkout: Checkout, action: str, *, has_force: bool = True) -> None:
    """A git command of the user's in the middle of its work (series.git.inprogress): the
    branch and files are not what the user works on; refused, also with --force (said
    only where ``action`` has a --force: not after a rebase's --continue)."""
    found = in_progress(str(checkout.repo.git_dir)) if checkout.exists() else None
    if found is None:
        return
    marker, command, end = found
    path = checkout.path
    raise RefusedError(
        f"refusing to {action}: a git {command} is in progress in {path}",
        why=f"its state is in {checkout.repo.git_dir / marker}: branch {checkout.branch} "
        f"and the files do not hold its work yet, and a `git commit` would record it",
        hint=f"finish it or abandon it ({end}, in {path}), then run the command again"
        + (" (--force does not override this)" if has_force else ""),
    )


def guard_apply(checkout: Checkout, force: bool, ui: Ui) -> CheckoutState | None:
    """Refuse to apply where work would be lost; with ``force``, save it first."""
    path = checkout.path
    if path.exists() and not path.is_dir():
        raise RefusedError(
            f"refusing to apply into {path}: it is a file, not a directory",
            hint="move the file away, or pass --dir DIR for the checkout",
        )
    refuse_during_rebase(checkout, "apply")
    refuse_git_in_progress(checkout, "apply")
    if not checkout.exists():
        if path.exists() and any(path.iterdir()):
            raise RefusedError(
                f"refusing to apply into {path}: it is not empty and not a series checkout",
                hint="choose another --dir, or move that directory away",
            )
        return None
    state = checkout.state()
    if state is None:
        raise RefusedError(
            f"refusing to apply into {path}: it is a git repository series did not make",
            hint="choose another --dir; series only rewrites checkouts it made",
        )
    _leave_head(checkout, force, ui)
    finish_cut_move(checkout, ui)
    _finish_interrupted(checkout, state, ui)
    _save_dirty(checkout, force, ui)
    _save_unexported(checkout, state, force)
    return state


def _leave_head(checkout: Checkout, force: bool, ui: Ui) -> None:
    """HEAD elsewhere than the series branch: refuse, or (``force``) say where it stays."""
    if checkout.on_branch():
        return
    path, repo = checkout.path, checkout.repo
    ref, head = repo.refs.symbolic_head(), repo.refs.head()
    where = f"on branch {ref.removeprefix('refs/heads/')}" if ref else "detached"
    if not force:
        raise RefusedError(
            f"refusing to apply: {path} is not on branch {checkout.branch}",
            why=f"HEAD is {where}" + (f" at {head[:12]}" if head else ""),
            hint=f"git -C {path} switch {checkout.branch}, or pass --force (series moves "
            "HEAD to the branch, and keeps a detached HEAD's commits under a backup ref)",
        )
    if ref and head:  # the branch keeps its commits; say where they are
        ui.status(
            f"HEAD in {path} was {where} at {head[:12]}: that branch stays as it is, "
            f"HEAD moves to {checkout.branch}"
        )


def _finish_interrupted(checkout: Checkout, state: CheckoutState, ui: Ui) -> bool:
    old = checkout.interrupted_move(state)
    tip = checkout.tip()
    if old is None or tip is None or not checkout.repo.worktree.files_match_index():
        return False
    checkout.repo.worktree.checkout_tree(old, tip)
    ui.status(
        f"finished moving the files of {checkout.path} to {tip[:12]} "
        "(an earlier run was interrupted after moving the branch)"
    )
    return True


def finish_cut_move(checkout: Checkout, ui: Ui) -> bool:
    """Finish a move of the checkout's files that a killed or failed series run left; any?

    Every command that writes the checkout does this first, so that files
    series had half moved are never taken for the user's changes
    (series.git.worktree: ``finish_move``).
    """
    if not checkout.exists():
        return False
    target = checkout.repo.worktree.finish_move(_keeper(checkout, ui))
    if target is not None:
        ui.status(
            f"finished moving the files of {checkout.path} to {target[:12]} "
            "(an earlier series run was cut short while moving them)"
        )
    lock = leftovers.index_lock(checkout.path)
    if lock is not None:  # not series' own (those are gone by now): refuse before writing
        raise lock_fault(lock, checkout.path)
    return target is not None


def _keeper(checkout: Checkout, ui: Ui) -> Callable[[Sequence[str], str], None] | None:
    """What keeps a copy of files a cut move's finish would write over and cannot tell
    from the user's (series.git.worktree: empty files where content is due; files changed
    since a cut ``--reset``), in a new ``.series/backups/cut-move-<time>/`` of the
    project, each at its path in the checkout, and says where and why (``why``, which
    names what they are); None without a project."""
    root = checkout.project
    if root is None:
        return None

    def keep(paths: Sequence[str], why: str) -> None:
        import shutil

        backup = backup_dir(root, "cut-move")
        for path in paths:
            copy = confined(root, backup / path)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(checkout.path / path, copy)  # its mode and times kept
        ui.status(f"kept {len(paths)} {why}, in {backup.relative_to(root)}/: " + ", ".join(paths))

    return keep


def finish_interrupted_move(checkout: Checkout, ui: Ui) -> bool:
    """Finish moving the files when a run was killed after moving the branch; any done?"""
    state = checkout.state()
    return state is not None and _finish_interrupted(checkout, state, ui)


def _save_dirty(checkout: Checkout, force: bool, ui: Ui) -> None:
    if not checkout.repo.worktree.dirty():
        return
    if not force:
        refuse_dirty(checkout, "apply")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    checkout.repo.worktree.stash(f"series apply --force {stamp}")
    stash = checkout.repo.objects.rev("refs/stash") or "?"
    ui.status(
        f"saved uncommitted changes as stash@{{0}} ({stash[:12]}, message "
        f"'series apply --force {stamp}'): git -C {checkout.path} stash show -p "
        "--include-untracked stash@{0}"
    )


def _save_unexported(checkout: Checkout, state: CheckoutState, force: bool) -> None:
    """Refuse over commits never exported; ``force`` goes on (the write keeps them)."""
    lost = checkout.unexported(state)
    if lost and not force:
        raise RefusedError(
            f"refusing to apply: {len(lost)} commit(s) on {checkout.branch} were never exported",
            why="\n".join(checkout.repo.history.oneline(c) for c in lost[:10]),
            hint="run `series export` to keep them, or pass --force "
            "(series keeps a backup ref of them)",
        )


STAGING = ".series-new-"


def staging(checkout: Checkout) -> Checkout:
    """Where a new checkout is built: a hidden directory beside its final place.

    Leftovers of runs that were killed (their process is gone) are removed
    first; they never held anything but what apply wrote.
    """
    import shutil  # (with bz2, lzma, fnmatch) not on the way of a command that moves no checkout

    path = checkout.path
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}{STAGING}"
    for old in path.parent.glob(f"{prefix}*"):
        pid = old.name.removeprefix(prefix)
        if pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    new = path.parent / f"{prefix}{os.getpid()}"
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir()  # a read-only or full file system fails here, as a clear OSError
    return Checkout(new, checkout.branch, checkout.project)


def move_in(built: Checkout, final: Checkout, ui: Ui) -> None:
    """Rename the complete checkout into place (an empty directory there is replaced)."""
    try:
        os.rename(built.path, final.path)
        return
    except OSError:
        if not final.exists():
            raise
    # Another apply made the same directory meanwhile; keep its checkout if it
    # holds the same stack, else leave ours beside it and say where.
    if final.tip() == built.tip() and final.state() is not None:
        import shutil

        shutil.rmtree(built.path, ignore_errors=True)
        ui.status(f"another series apply made {final.path} meanwhile, with the same stack")
        return
    raise RefusedError(
        f"{final.path} was made by another command while this apply ran",
        why=f"this run's checkout is complete in {built.path}",
        hint=f"compare the two, then remove one (or pass --dir {built.path} to use it)",
    )


def warn_unexported(checkout: Checkout, ui: Ui) -> None:
    """For commands that read patches/: say which checkout commits they do not see.

    ``test``, ``lint`` and ``check-conflicts`` check patches/ (what CI and
    every other maintainer get), not the checkout; a commit that was never
    exported is not in it, and silently testing the old file would pass
    the old result off as the new one. ``checkout`` is the project's
    (``Series.checkout()``).
    """
    try:
        state = checkout.state() if checkout.exists() else None
    except SeriesError:
        return  # a damaged checkout is for the commands that use it to report
    lost = checkout.unexported(state) if state is not None else []
    if lost:
        shown = "\n  ".join(checkout.repo.history.oneline(c) for c in lost[:10])
        ui.status(
            f"warning: {len(lost)} commit(s) in {checkout.path} are not in patches/, so they "
            f"are not checked here:\n  {shown}\nrun `series export` to include them"
        )
