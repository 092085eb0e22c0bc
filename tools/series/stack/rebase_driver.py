"""The rebase sequencer's driver: performs with git what series.stack.rebase_step decides.

:func:`drive` feeds an event to the pure step function, performs the
effect it returns, and feeds the result back, until the rebase stops at
a conflict (ConflictError) or finishes (series.stack.rebase_finish). It
decides nothing about the plan; it knows how to do each effect:

* Replay: each patch is the merge of the tree so far and the patch's
  commit over the patch's parent (``merge-tree``, no index, no work
  tree), so trees are those of plain ``git rebase``. Each merge is made
  when the walk asks for it, in one long-lived ``merge-tree`` for the run
  (:class:`Steps`, series.git.mergetree.MergeStream). Where that stream
  cannot answer one merge at a time, the merges are speculated two
  batches per chunk of patches, as check-conflicts does
  (series.merge.predict, :class:`Guesses`): predict the trees after the
  chunk's patches, then cherry-pick each patch onto the prediction before
  it; a Replay whose tree was predicted is that cherry-pick. Where the
  walk leaves the predictions (a conflict, a run taken up again), they
  start again from the walk's tree. A conflict is looked up in
  the recorded resolutions (series.merge.resolutions) before it stops
  anything.
* Write: the commits of the patches replayed so far, with one ``hash-object``.
* Halt: the state is saved (one ref transaction), HEAD detached at the
  commit so far, the conflicted files written with markers and their
  stages into the index; then ConflictError. At an edit stop
  (``series edit``), HEAD is detached on the patch to edit and the files
  follow it; the run ends there (exit 0). The transaction logs HEAD's move
  in git's own words, "checkout: moving from series to
  refs/series/stop/<kind>-<id>", with that ref pointing at the stop, so
  ``git status`` says "HEAD detached at refs/series/stop/edit-P5".

Nothing visible moves while patches apply, and the state changes only in
transactions, so a ``kill -9`` at any git call leaves the old state or the
new one (tests/test_rebase_kill.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from series.checkout import Checkout
from series.errors import ConflictError, RefusedError
from series.git.history import CommitInfo, LogEntry
from series.git.ident import Ident
from series.git.mergetree import MergeStream, TreeMerge
from series.git.objects import commit_chain
from series.git.repo import Repo
from series.git.run import ZERO
from series.git.worktree import start_added
from series.merge import Job, Merger, Node, resolutions
from series.stack import part_notes
from series.stack import rebase_state as rstate
from series.stack.rebase_plan import RebaseState, Stop
from series.stack.rebase_step import (
    Event,
    Finish,
    Halt,
    Merged,
    Replay,
    Write,
    Written,
    step,
    upcoming,
)
from series.stack.stop_written import mark_unwritten
from series.ui import Ui

TYPE_CHECKING = False  # typing is not imported: see series.records
if TYPE_CHECKING:
    from typing import Protocol

    from series.git.worktree import Moving
    from series.project import Series

    class Early(Protocol):
        """What ``Run.early`` does: start reading the upstream commits, end that unread."""

        def start(self) -> None: ...

        def abandon(self) -> None: ...


class Run:
    """What the driver acts on: the project, the checkout, the commits being replayed.

    ``upstream_commits`` gives the upstream commits since the pin (for the
    conflict report), read from git only when a stop needs them; ``early``, if
    given, starts that reading at a conflict that will stop, before the conflict is
    marked up (its git processes run meanwhile), and ends it if unread. ``end``: the
    end of a ``series edit`` (an export: series.stack.edit_finish, handed in by
    the edit's commands, so that a rebase loads none of the export); a rebase
    ends with series.stack.rebase_finish. (A plain class, not a dataclass: a
    resume loads no dataclasses, inspect or ast.)
    """

    def __init__(
        self,
        series: Series,
        ui: Ui,
        checkout: Checkout,
        infos: dict[str, CommitInfo],
        upstream_commits: Callable[[], list[LogEntry]],
        end: Callable[[Series, Ui, Checkout, RebaseState], None] | None = None,
        *,
        early: Early | None = None,
    ) -> None:
        self.series = series
        self.early = early
        self.ui = ui
        self.checkout = checkout
        self.infos = infos
        self.upstream_commits = upstream_commits
        self.end = end
        self._commits: list[LogEntry] | None = None
        # The tree the checkout's index holds, where this run just put it there
        # (``--skip`` resets the checkout to the commit so far): a stop's
        # ``written_from`` without a ``write-tree``. None: asked of git.
        self.index_tree: str | None = None
        # HEAD's commit and branch (``Refs.head_and_ref``), where this run just set them
        # (``--skip`` detaches HEAD at the commit so far): the stop's transaction
        # compares them and swaps. None: read from git.
        self.head: tuple[str | None, str | None] | None = None
        # A move of the checkout's files this run started and has not waited for
        # (``--skip``'s reset to the commit so far): the merges need nothing of the
        # checkout, so git moves the files meanwhile; the walk waits for it
        # (:meth:`settle`) before its first change of anything visible.
        self.moving: Moving | None = None
        # The merge stream, started before the walk (``--skip``: while the state is read),
        # for :class:`Steps` to take; None: Steps starts its own.
        self.stream: MergeStream | None = None

    @property
    def repo(self) -> Repo:
        return self.checkout.repo

    def settle(self) -> None:
        """Wait for the move of the files this run started (:attr:`moving`), if any."""
        moving, self.moving = self.moving, None
        if moving is not None:
            moving.wait()

    def commits(self) -> list[LogEntry]:
        if self._commits is None:
            self._commits = self.upstream_commits()
        return self._commits

    def title(self, pid: str) -> str:
        for p in self.series.manifest.patches:
            if p.id == pid:
                return p.title
        return pid


class Walk:
    """The merges of one :func:`drive`: the merger, the speculation in batches
    (:class:`Guesses`) and the long-lived stream (:class:`Steps`); made by
    :func:`begin`, or by :func:`drive` itself."""

    def __init__(self, run: Run, state: RebaseState) -> None:
        self.merger = Merger(run.repo, run.repo.merge.hermetic(), "synthetic")
        self.guesses = Guesses(run, self.merger, state)
        self.steps = Steps(run, self.merger)

    def close(self) -> None:
        self.steps.close()


def begin(run: Run, state: RebaseState, event: Event) -> Walk:
    """The walk :func:`drive` will make from ``event``, its first merge handed to git now.

    The first merge depends on the saved state alone (the step function is pure), not on
    the checkout: ``--skip`` starts it before it keeps what the user changed at the stop
    and resets the checkout, and git merges on the other core meanwhile. The caller
    closes the walk (:meth:`Walk.close`) if it does not drive it.
    """
    walk = Walk(run, state)
    _, effect = step(state, event)
    if isinstance(effect, Replay) and not _unchanged(run, effect):
        walk.steps.send(_job(run, effect.commit, effect.onto_tree))
    return walk


def drive(run: Run, state: RebaseState, event: Event = None, walk: Walk | None = None) -> None:
    """Walk ``state``'s plan from ``event``: finish, or stop at a conflict (raises).

    The merges name their base by synthetic commits (series.merge.merger), as
    on git 2.39, whatever git runs: the stream writes them with the replay's
    commits (no process of their own), and the probe of whether this git takes
    ``<base> -- <one> <two>`` lines, one more process per run, is not made.
    The merge is the same either way (the base is the same commit). ``walk``: made
    by :func:`begin` from the same state and event.
    """
    walk = walk or Walk(run, state)
    try:
        _walk(run, state, event, walk.merger, walk.guesses, walk.steps)
    except Exception:
        with contextlib.suppress(Exception):  # the walk's failure is the one said
            run.settle()  # the files as git leaves them, not a move cut short
        raise
    finally:
        walk.close()
        if run.early is not None:
            run.early.abandon()
        if run.moving is not None:  # interrupted: git ends with series (a cut move recorded)
            run.moving.abandon()
            run.moving = None


def _walk(
    run: Run, state: RebaseState, event: Event, merger: Merger, guesses: Guesses, steps: Steps
) -> None:
    while True:
        state, effect = step(state, event)
        if isinstance(effect, Replay):
            event = _replay(run, merger, guesses, steps, effect)
        elif isinstance(effect, Write):
            chain = [
                (tree, _message(run, state, k, c), run.infos[c].author)
                for k, tree, c in effect.items
            ]
            event = Written(tuple(steps.write_commits(chain, effect.parent)))
        elif isinstance(effect, Halt):
            run.settle()
            _halt(run, state, steps)
            return
        else:
            assert isinstance(effect, Finish)
            steps.close()
            run.settle()
            if state.kind == "edit":
                assert run.end is not None, "an edit is ended by the edit's own end"
                run.end(run.series, run.ui, run.checkout, state)
                return
            from series.stack.rebase_finish import finish  # the export: only at the end

            subjects = {c: i.message.splitlines()[0] for c, i in run.infos.items()}
            finish(run.series, run.ui, run.checkout, state, subjects)
            return


def _message(run: Run, state: RebaseState, k: int, commit: str) -> str:
    """The patch's message; with a Partly-Upstream trailer per commit that took part of it."""
    message, part = run.infos[commit].message, state.plan[k].part
    if part is not None and part.verdict == "partial":
        from series.builder.message import with_parts  # a patch upstream took part of

        return with_parts(message, list(part.took))
    return message


def _parent(run: Run, info: CommitInfo) -> Node:
    parent = run.infos.get(info.parent)
    tree = parent.tree if parent is not None else run.repo.objects.tree_of(info.parent)
    return Node(tree, info.parent)


def _job(run: Run, commit: str, onto_tree: str) -> Job:
    info = run.infos[commit]
    return Job(_parent(run, info), Node(onto_tree), Node(info.tree, info.commit, info.parent))


class Guesses:
    """The merges the walk will most likely ask for, speculated a chunk at a time.

    As check-conflicts does (series.merge.predict): the trees after the
    next ``CHUNK`` patches are predicted in one batch, then each patch is
    cherry-picked onto the prediction before it in a second; the next
    chunk goes onto the last prediction, when the walk gets there. A
    speculated merge is used only for the very tree the walk puts the
    patch on, so it is exactly the merge the walk would make.

    Where the walk leaves the predictions (a conflict resolved, by a
    recorded resolution or by hand at ``--continue``; a patch skipped; a
    run taken up again), the speculation starts again from the tree the
    walk asks for, when at least two picks are left: one restart per
    departure, so the walk never merges one patch at a time for the rest
    of the series.
    """

    def __init__(self, run: Run, merger: Merger, state: RebaseState) -> None:
        self.run, self.merger, self.state = run, merger, state
        self.todo = [c for _, c in upcoming(state)]
        self.position = {c: k for k, c in enumerate(self.todo)}
        self.nodes: list[Node] = []  # the first pick's parent, then each pick (predict's nodes)
        self.onto: Node | None = None  # where the next chunk goes (None: nothing to predict)
        self.done = 0  # picks of todo predicted so far
        self.merges: dict[tuple[str, str], TreeMerge] = {}  # (commit, tree it goes onto)

    def get(self, commit: str, onto_tree: str) -> TreeMerge | None:
        k = self.position.get(commit)
        if k is None:
            return None
        merge = self.merges.get((commit, onto_tree))
        if merge is None and k >= self.done and self.onto is not None:
            while k >= self.done and self._next_chunk():
                pass
            merge = self.merges.get((commit, onto_tree))
        if merge is None and len(self.todo) - k >= 2:
            self._restart(k, onto_tree)
            self._next_chunk()
            merge = self.merges.get((commit, onto_tree))
        return merge

    def _restart(self, k: int, onto_tree: str) -> None:
        """Speculate from pick ``k`` onto ``onto_tree`` (the walk's tree there)."""
        onto = self.state.onto
        self.onto = Node(onto_tree, onto if onto_tree == self.state.onto_tree else None)
        self.done = k

    def _next_chunk(self) -> bool:
        if self.onto is None or self.done >= len(self.todo):
            return False
        if not self.nodes:
            infos = [self.run.infos[c] for c in self.todo]
            self.nodes = [_parent(self.run, infos[0])] + [
                Node(i.tree, i.commit, i.parent) for i in infos
            ]
        start, onto = self.done, self.onto
        from series.merge.predict import clean_node, predict_jobs  # no stream: batches

        predicted = self.merger.run(predict_jobs(self.nodes, start, onto))
        ontos = [onto.tree] + [m.tree if m.clean else "" for m in predicted[:-1]]
        chunk = self.todo[start : start + len(predicted)]
        keys = [(c, x) for c, x in zip(chunk, ontos, strict=True) if x]
        verified = self.merger.run([_job(self.run, c, x) for c, x in keys])
        self.merges.update(zip(keys, verified, strict=True))
        self.done += len(predicted)
        self.onto = clean_node(predicted[-1])
        return True


class Steps:
    """Each merge of the walk made when the walk asks for it, in one long-lived
    ``merge-tree`` (series.git.mergetree.MergeStream): the very merge :class:`Guesses`
    would verify, without the prediction before it (a second, dearer merge per
    patch). The lines are the ones series.merge.Merger writes for a batch.
    Where the stream cannot answer one merge at a time it closes, and the walk
    goes back to :class:`Guesses` for the rest.
    """

    def __init__(self, run: Run, merger: Merger) -> None:
        self.run, self.merger = run, merger
        self.stream: MergeStream | None = None
        self.sent: Job | None = None  # handed to the stream by send, not answered yet

    def send(self, job: Job) -> None:
        """Hand the stream ``job`` now; its answer is read when the walk asks for it."""
        line = self._line(job)
        if line is not None and self.stream is not None and self.stream.send(line):
            self.sent = job

    def get(self, job: Job) -> TreeMerge | None:
        sent, self.sent = self.sent, None
        if sent is not None and self.stream is not None:
            merge = self.stream.answer()
            if sent == job:
                return self._counted(merge)
        line = self._line(job)
        if line is None or self.stream is None:
            return None
        return self._counted(self.stream.merge(line))

    def _counted(self, merge: TreeMerge | None) -> TreeMerge | None:
        if merge is not None:
            self.merger.merges += 1
        return merge

    def _line(self, job: Job) -> str | None:
        """The stream's input line for ``job``, its synthetic commits written (None: the
        stream is closed)."""
        if self.stream is None:
            self.stream, self.run.stream = self.run.stream, None  # started already
        if self.stream is None:
            self.stream = self.run.repo.merge.stream(self.merger.env)
            self.stream.start()  # both processes at once: neither waits for the other
        return self.merger.stream_line(self.stream, job)

    def start_blobs(self) -> None:
        """The stream's blob writer started now (series.git.mergetree ``start_blobs``)."""
        if self.stream is not None:
            self.stream.start_blobs()

    def blob_writer(self) -> Callable[[Sequence[bytes]], list[str] | None] | None:
        """Blobs written by the stream's blob writer, where :meth:`start_blobs` started it
        (None: not started, or the stream is closed; its None: the stream closed meanwhile,
        the caller writes them itself)."""
        stream = self.stream
        if stream is None or not stream.writes_blobs():
            return None

        def write(payloads: Sequence[bytes]) -> list[str] | None:
            return stream.write_all("blob", payloads)  # one round trip for all

        return write

    def write_commits(self, chain: list[tuple[str, str, Ident]], parent: str) -> list[str]:
        """The commits of series.git.objects' ``write_commits``, written by the stream's
        ``hash-object`` when it runs (no process of their own), else as that writes them."""
        payloads, ids = commit_chain(chain, parent)
        stream = self.stream
        if stream is not None and stream.live and stream.write_all("commit", payloads) == ids:
            return ids  # one round trip for all
        return self.run.repo.objects.write_commits(chain, parent)

    def end_input(self) -> None:
        """No more merges or writes: the stream's processes exit, reaped by :meth:`close`."""
        if self.stream is not None:
            self.stream.end_input()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def _replay(run: Run, merger: Merger, guesses: Guesses, steps: Steps, effect: Replay) -> Merged:
    info = run.infos[effect.commit]
    if _unchanged(run, effect):
        return Merged(True, info.tree, same=effect.commit)
    merge = steps.get(_job(run, effect.commit, effect.onto_tree))
    if merge is None:  # no stream: speculated in batches
        merge = guesses.get(effect.commit, effect.onto_tree)
    if merge is None:
        merge = merger.run([_job(run, effect.commit, effect.onto_tree)])[0]
    if merge.clean:
        return Merged(True, merge.tree)
    found = _recorded(run, effect, merge, steps)
    if found.conflict is not None and effect.propose:
        proposal = merger.favour_ours(merge)
        return found._replace(conflict=found.conflict._replace(proposal=proposal))
    return found


def _unchanged(run: Run, effect: Replay) -> bool:
    """Whether nothing before the patch changed: it is its own commit, no merge."""
    return bool(effect.onto) and run.infos[effect.commit].parent == effect.onto


def _recorded(run: Run, effect: Replay, merge: TreeMerge, steps: Steps) -> Merged:
    """The tree a recorded resolution gives (series.merge.resolutions); else the conflict.

    At a conflict that will stop the walk, the stop's blobs (its marked-up files, then
    its state) are written by a ``hash-object`` started now, beside the report's reading."""
    repo, root, pid = run.repo, run.series.root, effect.id
    if run.early is not None and not resolutions.is_recorded(root, pid, merge):
        run.early.start()  # this conflict stops the walk: its report is read meanwhile
        steps.start_blobs()
    found = resolutions.lookup(repo, root, pid, merge, write=steps.blob_writer())
    if found.tree is not None:
        used = found.name(root)
        run.ui.status(f"  {pid:<4} conflict resolved by {used}")
        return Merged(False, found.tree, resolution=used)
    files = tuple(merge.files)
    touched = [f"{c.commit} {c.subject}" for c in run.commits() if set(c.files) & set(files)]
    index_tree = run.index_tree or repo.worktree.index_tree()
    assert index_tree is not None, "the checkout was clean when the rebase began"
    stages = tuple((e.mode, e.oid, e.stage, e.path) for e in merge.entries)
    stop = Stop(
        effect.index,
        found.conflicted,
        found.key,
        files,
        stages,
        index_tree,
        tuple(touched[:10]),
        found.note,
    )
    return Merged(False, merge.tree, conflict=stop)


def _halt(run: Run, state: RebaseState, steps: Steps) -> None:
    """Write the state, detach HEAD at the commit so far, write the conflict; raise.

    At an edit stop: the files follow HEAD to the patch to edit; no raise. ``steps``: the
    walk's merges, their input ended here (their blob writer, if started, writes the state
    first), their processes reaped when the walk closes.
    """
    stop = state.stop
    assert stop is not None
    repo = run.repo
    if stop.kind == "edit":
        index_tree = repo.worktree.index_tree()
        assert index_tree is not None, "the checkout was clean when the edit began"
        stop = stop._replace(written_from=index_tree)
        state = state._replace(stop=stop)
    # what the conflict's move adds (its check before it moves), asked while the
    # transaction is written: neither needs the other (the files are settled already)
    adds = None
    if stop.kind == "conflict" and not stop.proposal:
        adds = start_added(repo.worktree, stop.conflict_tree)
    try:
        try:
            _stop_transaction(repo, state, run.head, steps.blob_writer())
        finally:
            # no more merges: the stream's processes exit as the checkout moves (each exit
            # waited for here was a wait of its own), reaped when the walk closes
            steps.end_input()
        try:
            if stop.kind == "conflict":
                write_conflict(repo, stop)
            else:
                tree = repo.objects.tree_of(state.current)
                repo.worktree.checkout_tree(stop.written_from, tree)
        except RefusedError as exc:
            raise _stop_not_written(run, state, exc) from None
    finally:
        if adds is not None:
            adds.abandon()
    if stop.kind == "conflict":
        raise conflict_error(run, state)
    cmd, where = state.command, run.checkout.path
    run.ui.result(
        f"edit: stopped at {state.stopped_at} (HEAD in {where}); change it with `git commit "
        f"--amend`, add patches after it with `git commit`, then `{cmd} --continue` "
        f"(or `{cmd} --abort`)"
    )


def _stop_not_written(run: Run, state: RebaseState, exc: RefusedError) -> RefusedError:
    """The move to a stop refused (a file of the user's in its way, series.git.worktree),
    after the stop was saved and HEAD detached there: the stop stands with nothing of it in
    the files, as a kill between the two leaves it, and ``--continue`` writes them then
    (series.stack.rebase_resume ``_finish_stop``, series.stack.edit_finish
    ``stop_cut_short``). The move's own hint, "run the command again", was wrong there:
    ``--onto`` or ``series edit`` again is refused, one being in progress. Nor is `git add -f`
    a way on here: the file staged at a stop never written makes the index no longer the
    one the stop was to be written over, and ``--continue`` took it, with the series' files,
    for the stop's resolution (P2 and P3 then dropped as empty)."""
    cmd, sid, where = state.command, state.stopped_at, run.checkout.path
    assert state.stop is not None
    mark_unwritten(run.repo, state)  # what --continue tells it by
    what = "its conflict" if state.stop.kind == "conflict" else f"the files of {sid}"
    return RefusedError(
        f"{state.kind} stopped at {sid}, but refusing to write {what} into {where}",
        why=f"{exc.why}\nthe stop is saved (HEAD detached at {state.current[:12]}); nothing "
        "of it is in the files yet",
        hint=f"move them out of the way, then `{cmd} --continue` writes the stop; or "
        f"`{cmd} --abort`",
    )


def stop_ref(state: RebaseState) -> str:
    """The ref that names the stop for ``git status`` (refs/series/stop/<kind>-<id>)."""
    assert state.stop is not None
    return f"{rstate.STOP_PREFIX}{state.stop.kind}-{state.stopped_at}"


def _stop_transaction(
    repo: Repo,
    state: RebaseState,
    at: tuple[str | None, str | None] | None = None,
    write: Callable[[Sequence[bytes]], list[str] | None] | None = None,
) -> None:
    """The state with its stop saved; HEAD detached at the commit so far, logged in git's
    words (git status reads the last "checkout: moving from A to B" of HEAD's reflog).

    ``at``: HEAD's commit and branch as this run left them (else read here); ``write``:
    the state blob written by a ``hash-object`` running already (else one is run). Its
    ``update-ref`` starts first, beside the state's writing; it changes nothing until the
    transaction's last line is written (series.git.refs ``Transaction.start``)."""
    head, on = repo.refs.head_and_ref() if at is None else at
    ref = stop_ref(state)
    moving = (on or head or "HEAD").removeprefix("refs/heads/")
    txn = repo.refs.begin(f"checkout: moving from {moving} to {ref}")
    txn.start()  # git starts while the state is written: the commit is git's work alone
    try:
        old_blob = repo.refs.value(rstate.STATE_REF)
        rstate.save(repo, txn, state, old_blob, write)
        for name, old in repo.refs.under_read(repo.git_dir, rstate.STOP_PREFIX).items():
            if name != ref:
                txn.delete(name, old)
        txn.update(ref, state.current, repo.refs.value(ref) or ZERO)
        if head != state.current or on is not None:
            txn.detach_head(state.current, head or ZERO)
    except BaseException:
        txn.abandon()
        raise
    txn.commit()


def write_conflict(repo: Repo, s: Stop) -> None:
    """The conflicted files with markers into the work tree, their stages into the index.

    At a remainder, the proposed remainder instead: no markers, no stages.
    """
    if s.proposal:
        repo.worktree.checkout_tree(s.written_from, s.proposal)
        return
    repo.worktree.checkout_tree(s.written_from, s.conflict_tree)
    repo.worktree.stage_conflicts(s.stages)


def conflict_error(run: Run, state: RebaseState) -> ConflictError:
    assert state.stop is not None
    s, action = state.stop, state.plan[state.stop.index]
    if s.proposal and action.part is not None:
        return part_notes.proposal_error(
            action.id, run.title(action.id), action.part, state.onto_label, run.checkout.path
        )
    pid = action.id
    where = run.checkout.path
    why = [f"conflict: {f}" for f in s.files]
    if state.kind == "rebase":
        why += ["upstream commits since the pin that touched them:"] + [
            f"  {u[:12]}{u[40:]}" for u in s.upstream
        ]
    if s.note:
        why.append(s.note)
    if action.part is not None:
        why += part_notes.stop_lines(pid, action.part, state.drop_merged)
    why.append(
        f"{where} has the conflicted files with markers; HEAD is {state.onto_rev} with the "
        f"patches before {pid}"
    )
    files = " ".join(s.files)
    cmd = state.command
    return ConflictError(
        f"{state.kind} stopped: {pid} ({run.title(pid)}) conflicts with {state.onto_label}",
        why="\n".join(why),
        hint=f"resolve, `git -C {where} add {files}`, then `{cmd} --continue` "
        f"(the resolution is recorded under resolutions/{pid}/ and replayed next time);\n"
        f"`{cmd} --skip` drops {pid} (series.toml records why); "
        f"`{cmd} --abort` puts everything back",
    )
