"""``series branches``: one branch per patch in the checkout, for stacked pull requests.

Branch k (named by the patch's ``branch`` in series.toml, after
``--prefix``) is the pin plus patches 1..k: the commits ``Series.stack``
builds (memoised in the cache repository) on upstream's real pinned commit
(series.stack.branch_base: fetched with git when the checkout was made
from the sdist) are fetched into the checkout, next to a branch at the pin
that is the first pull request's base,
and every branch is created, moved or deleted in one compare-and-swap
transaction with the reflog message ``series branches: ...``. With
``--alone`` branch k is the pin plus patch k only, for the patches that
apply alone.

Nothing is guessed. The checkout's record of what series made
(series.stack.branch_record) tells a branch series made from someone's own
branch of the same name, and what series pushed from here from a
colleague's push. A branch that moved since series set it, a branch series
did not make, or a remote branch someone else moved is refused with exit
4 and the way out; ``--force`` goes over it after keeping the old commit
under ``refs/series/backup/``. ``--push`` leases every remote ref against
what ``ls-remote`` saw, in one atomic push. docs/branches.md is the manual.
Its git processes start without importing GitPython
(series.git.run.light_processes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from series import refnames, upstream
from series.backup import free_ref
from series.builder.build import Failure
from series.checkout import Checkout
from series.errors import ConflictError, RefusedError, UsageError
from series.git import PushUpdate, Repo, Transaction
from series.git.run import light_processes
from series.manifest import Patch
from series.stack import branch_base, branch_record
from series.stack.branch_plan import (
    CHANGES,
    CREATE,
    DELETE,
    LOCAL_BACKUP,
    MOVE,
    REMOTE_BACKUP,
    SKIP,
    UNCHANGED,
    Item,
    Options,
    Outcome,
)
from series.stack.branch_record import RECORD_REF, BranchSet, Record
from series.ui import Ui

if TYPE_CHECKING:
    from series.project import Series


@dataclass(frozen=True)
class _Target:
    patch: Patch | None  # None: the branch at the pin
    position: int
    commit: str | None
    why: str = ""


def branches(series: Series, ui: Ui, checkout: Checkout, opts: Options) -> Outcome:
    with light_processes():  # its git work is a few queries: GitPython's import costs more
        return _branches(series, ui, checkout, opts)


def _branches(series: Series, ui: Ui, checkout: Checkout, opts: Options) -> Outcome:
    state = checkout.require()
    if opts.push is not None:
        opts = replace(opts, push=_remote(checkout.repo, opts.push))
    base = branch_base.upstream_base(series, ui, checkout, state, opts.upstream)
    targets, failure = _targets(series, base.commit, opts.alone)
    repo = checkout.repo
    repo.remote.copy_from(series.cache, [base.commit] + [t.commit for t in targets if t.commit])
    record = branch_record.load(repo)
    bset = record.get(opts.prefix, opts.mode)
    upstream_ref = series.manifest.upstream.ref
    outcome = Outcome(
        opts.mode, opts.prefix, opts.push, opts.dry_run, base.commit, upstream_ref, opts.prune
    )
    outcome.failure = failure
    first = _Target(None, 0, base.commit)  # the first pull request's base: the pin
    local, head = repo.refs.branches()
    outcome.items = _items(repo, bset, [first, *targets], opts, upstream_ref, local)
    refusals = _check_local(checkout, record, outcome.items, opts, head)
    heads: dict[str, str] = {}
    if opts.push:
        ui.status(f"branches: reading the branches of {opts.push}; {_bound()}")
        heads = repo.remote.heads(opts.push)
        branch_base.check_history(ui, repo, base.commit, opts.push, heads)
        refusals += _plan_remote(record, bset, outcome.items, heads, opts)
    if refusals:
        raise _refused(checkout, opts, refusals)
    if opts.dry_run:
        return outcome
    outcome.backups = _write(ui, repo, record, bset, outcome, opts)
    if opts.push:
        _push(ui, repo, record, bset, outcome.items, opts.push)
    return outcome


def _remote(repo: Repo, remote: str) -> str:
    """A remote name of the checkout as is; a path given from here made absolute.

    git runs in the checkout, where a relative path would mean something else.
    """
    if remote in repo.remote.names() or not Path(remote).exists():
        return remote
    return str(Path(remote).resolve())


def _targets(series: Series, pin: str, alone: bool) -> tuple[list[_Target], Failure[Patch] | None]:
    patches = list(series.manifest.patches)
    if alone:
        found = []
        for pos, patch in enumerate(patches, 1):
            built = series.stack(pin, [patch])
            if built.failure is not None:
                why = f"does not apply alone on the pin: {built.failure.describe()}"
                found.append(_Target(patch, pos, None, why))
            else:
                found.append(_Target(patch, pos, built.tip))
        return found, None
    built = series.stack(pin, patches)
    commits, failure = built.commits, built.failure
    stacked = []
    for pos, patch in enumerate(patches, 1):
        why = ""
        if patch.id not in commits and failure is not None:
            why = (
                f"does not apply on the pin + patches 1..{pos - 1}: {failure.describe()}"
                if failure.patch.id == patch.id
                else f"an earlier patch ({failure.patch.id}) does not apply"
            )
        stacked.append(_Target(patch, pos, commits.get(patch.id), why))
    return stacked, failure


def _items(
    repo: Repo,
    bset: BranchSet,
    targets: list[_Target],
    opts: Options,
    upstream_ref: str,
    local: dict[str, str],
) -> list[Item]:
    items: list[Item] = []
    previous: str | None = None
    for t in targets:
        if t.patch is None:
            name = branch_base.base_branch(opts.prefix, upstream_ref)
            why = f"the first pull request's base: upstream's {upstream_ref}"
        else:
            name, why = opts.prefix + t.patch.branch, ""
        _check_name(repo, name, t.patch, opts.prefix, [i.branch for i in items])
        pid = t.patch.id if t.patch else None
        old = local.get(f"refs/heads/{name}")
        if t.commit is None:
            items.append(Item(name, pid, t.position, old, None, None, SKIP, t.why))
            continue
        action = CREATE if old is None else UNCHANGED if old == t.commit else MOVE
        items.append(Item(name, pid, t.position, old, t.commit, previous, action, why))
        if previous is None or not opts.alone:
            previous = name
    planned = {i.branch for i in items}
    made = set(bset.branches) | set(bset.pushed.get(opts.push or "", {}))
    for name in sorted(made - planned):
        gone = "its patch is no longer in series.toml"
        if name.startswith(opts.prefix + branch_base.BASE_PREFIX):
            gone = "the branch at a former pin (series.toml pins another upstream commit now)"
        why = gone + ("" if opts.prune else "; --prune deletes it")
        old = local.get(f"refs/heads/{name}")
        items.append(Item(name, None, None, old, None, None, DELETE, why))
    return items


def _check_name(repo: Repo, name: str, patch: Patch | None, prefix: str, taken: list[str]) -> None:
    what = patch.id if patch else "the pin"
    if not repo.refs.valid_branch(name):
        raise UsageError(
            f"cannot make branch {name!r} for {what}: it is not a valid branch name",
            why=f"--prefix {prefix!r} + "
            + (f"branch {patch.branch!r} from series.toml" if patch else "upstream-<ref>"),
            hint="pass a --prefix like 'me/' (letters, digits, '-', '_', '.', '/')",
        )
    if name in taken:
        raise UsageError(
            f"two branches would be named {name!r}",
            hint=f"give {what} its own branch in series.toml",
        )


def _check_local(
    checkout: Checkout, record: Record, items: list[Item], opts: Options, head: str | None
) -> list[str]:
    """Why each branch may not be moved or deleted; marks the ones --force goes over.

    ``head``: the branch HEAD is on (only a branch that exists is moved or deleted)."""
    refusals = []
    for item in items:
        touched = item.action == MOVE or (item.action == DELETE and opts.prune)
        if not touched or item.old is None:
            continue
        if head == item.ref:
            refusals.append(
                f"{item.branch} is checked out in {checkout.path}: moving it would leave "
                "its files behind (switch to another branch first, "
                f"git -C {checkout.path} switch {checkout.branch})"
            )
            continue
        owner = record.owner(item.branch)
        made = owner.branches[item.branch] if owner else None
        if item.old == made:
            continue
        if opts.force:
            item.forced = True
            continue
        refusals.append(
            f"{item.branch} is at {item.old[:12]}, "
            + (
                "a branch series did not make"
                if made is None
                else f"not {made[:12]} where series left it"
            )
        )
    return refusals


def _plan_remote(
    record: Record, bset: BranchSet, items: list[Item], heads: dict[str, str], opts: Options
) -> list[str]:
    assert opts.push is not None
    refusals = []
    for item in items:
        if item.action == SKIP or (item.action == DELETE and not opts.prune):
            continue
        theirs = heads.get(item.ref)
        item.remote_old = theirs
        if theirs == item.new:
            item.remote_action = UNCHANGED
            continue
        if theirs is None:
            item.remote_action = CREATE
            continue
        item.remote_action = DELETE if item.new is None else MOVE
        owner = record.owner(item.branch)
        ours = {bset.pushed.get(opts.push, {}).get(item.branch)}
        ours.add(owner.branches.get(item.branch) if owner else None)
        if theirs in ours:
            continue
        if opts.force:
            item.remote_forced = True
            continue
        refusals.append(
            f"{item.branch} on {opts.push} is at {theirs[:12]}: "
            "not a commit series pushed from here (someone else pushed to it)"
        )
    return refusals


def _refused(checkout: Checkout, opts: Options, refusals: list[str]) -> RefusedError:
    where = f"git -C {checkout.path}"
    look = f"{where} log BRANCH"
    if opts.push:
        look = f"{where} fetch {opts.push} BRANCH and {where} log FETCH_HEAD"
    return RefusedError(
        f"refusing to change {len(refusals)} branch(es): series did not leave them as they are",
        why="\n".join(refusals) + "\nnothing was changed, locally or on a remote",
        hint=f"look first ({look}); to keep that work, fold it into its patch "
        "(series apply, commit, series export) and run again; to replace it, run again "
        f"with --force (series keeps the old commits under {refnames.BACKUP})",
    )


def _bound() -> str:
    return upstream.UpstreamSource.patience()  # the fetch machinery, only for a remote


def _write(
    ui: Ui, repo: Repo, record: Record, bset: BranchSet, outcome: Outcome, opts: Options
) -> list[str]:
    """The local branches, backups and record: one transaction. Returns the backup refs."""
    backups: list[tuple[str, str]] = []
    forced_remote = [i for i in outcome.items if i.remote_forced]
    if forced_remote and opts.push:
        ui.status(
            f"branches: fetching {len(forced_remote)} branch(es) of {opts.push} "
            f"to keep a backup; {_bound()}"
        )
        ok, err = repo.remote.fetch_heads(opts.push, [i.ref for i in forced_remote])
        if not ok:
            names = ", ".join(i.branch for i in forced_remote)
            raise RefusedError(
                f"cannot keep a backup of the remote branches of {opts.push}: nothing was pushed",
                why=f"{err.strip()}\n--force replaces {names} there, and keeps the commits it "
                f"replaces first ({REMOTE_BACKUP}); their fetch failed, so no "
                "branch changed, here or there",
                hint=f"run `series branches --push {opts.push} --force` again once "
                f"{opts.push} answers; without --force, series replaces no one's commits",
            )
        backups += [(f"{REMOTE_BACKUP}{i.branch}", i.remote_old or "") for i in forced_remote]
    backups += [(f"{LOCAL_BACKUP}{i.branch}", i.old or "") for i in outcome.items if i.forced]
    backups = [(free_ref(repo, ref, commit), commit) for ref, commit in backups]  # never replaced
    with repo.refs.transaction(f"series branches: {_summary(outcome, opts)}") as txn:
        for ref, commit in backups:
            txn.update(ref, commit, repo.refs.value(ref))
        for item in outcome.items:
            _change(txn, record, bset, item, opts)
        _save_record(repo, txn, record)
    return [ref for ref, _ in backups]


def _change(txn: Transaction, record: Record, bset: BranchSet, item: Item, opts: Options) -> None:
    if item.action == SKIP or (item.action == DELETE and not opts.prune):
        return
    if item.action in (CREATE, MOVE):
        assert item.new is not None
        txn.update(item.ref, item.new, item.old)
    elif item.action == DELETE and item.old is not None:
        txn.delete(item.ref, item.old)
    for other in record.sets:
        other.branches.pop(item.branch, None)
    if item.new is not None:
        bset.branches[item.branch] = item.new
    item.done = True


def _save_record(repo: Repo, txn: Transaction, record: Record) -> None:
    data = record.dump()
    old = repo.objects.read_blob(record.blob) if record.blob else None
    if data == old:
        return
    blob = repo.objects.write("blob", [data])[0]
    txn.update(RECORD_REF, blob, record.blob)
    record.blob = blob


def _push(
    ui: Ui, repo: Repo, record: Record, bset: BranchSet, items: list[Item], remote: str
) -> None:
    moving = [i for i in items if i.remote_action in CHANGES]
    updates = [PushUpdate(i.ref, i.new, i.remote_old) for i in moving]
    if updates:
        ui.status(f"branches: pushing {len(updates)} branch(es) to {remote}; {_bound()}")
    result = repo.remote.push_leased(remote, updates)
    if not result.ok:
        rejected = [f"{ref}: {reason}" for ref, reason in result.rejected]
        if any("shallow update not allowed" in reason for _, reason in result.rejected):
            raise RefusedError(
                f"{remote} refused the push: it does not have the history below the pin",
                why="\n".join(rejected) + f"\nthe checkout {repo.path} is shallow: series "
                "fetches the pinned commit without its history, and REMOTE does not have it "
                "either; nothing was pushed (the local branches were updated)",
                hint=f"push the upstream history to {remote} first (a fork has it), or make "
                f"the checkout whole: git -C {repo.path} fetch --unshallow "
                "<upstream URL>; then run `series branches --push` again",
            )
        raise RefusedError(
            f"{remote} refused the push: nothing was pushed",
            why="\n".join(rejected or [result.stderr.strip()])
            + "\nthe local branches were updated; the push is all or nothing (--atomic)",
            hint=f"someone pushed meanwhile: git -C {repo.path} fetch {remote}, look, and run "
            "`series branches --push` again (add --force to replace their commits)",
        )
    pushed = bset.pushed.setdefault(remote, {})
    for item in items:
        if item.remote_action is None:
            continue
        if item.new is None:
            pushed.pop(item.branch, None)
        else:
            pushed[item.branch] = item.new
    with repo.refs.transaction(f"series branches: pushed to {remote}") as txn:
        _save_record(repo, txn, record)


def _summary(outcome: Outcome, opts: Options) -> str:
    counts: dict[str, int] = {}
    for item in outcome.items:
        if item.action in CHANGES and item.changes(opts.prune):
            counts[item.action] = counts.get(item.action, 0) + 1
    said = ", ".join(f"{n} {a}" for a, n in counts.items()) or "no branch moved"
    return f"{said} ({opts.mode}{', prefix ' + opts.prefix if opts.prefix else ''})"


def conflict(outcome: Outcome, checkout: Checkout) -> ConflictError | None:
    """The error to end with when a patch did not apply (its branch and later ones skipped)."""
    f = outcome.failure
    if f is None:
        return None
    return ConflictError(
        f"patch {f.patch.id} does not apply: no branch for it or the patches after it",
        why=f"{f.describe()}\nthe branches of the patches before it were made",
        hint=f"series apply, resolve in {checkout.path}, series export, then run "
        "`series branches` again (`series check-conflicts` shows where it breaks)",
    )
