"""``series prove``: do a patch's tests fail without its production change?

For patch k the stack gives its parent (pin plus patches 1..k-1) and its
commit. Its changed files split by the test-file rule of
series.runs.testcode into test code and production code. Two trees are
tested with the same selection, the tests the patch adds or changes
(series.runs.testcode.touched):

* the patched tree, the commit itself;
* the **reverted** tree: the parent's tree with the patch's test files as
  the patch leaves them (added, changed or deleted), i.e. the patch with
  its production change reverted. It is built in the cache repository on a
  scratch index and committed with ``commit-tree`` (parent: the parent
  state, author: the patch's), so it is the same commit every time and no
  work tree is touched until a slot checks it out to run it.

Both runs go through the machinery of ``series test`` (series.runs.plan
jobs, series.runs.schedule slots, the harness, the result cache keyed by
tree and selection), so an unchanged patch proves from the cache. Each
test the patched run reports, within the touched scopes, is then one of:

* ``behaviour``: passes with the patch, fails without it, and not only
  because a name the patch introduces is missing;
* ``structural``: passes with the patch, fails without it only by an
  ImportError, AttributeError or NameError on a name the patch introduces
  (a name its production files define and their parent versions did not),
  or is not collected at all without it;
* ``guard``: passes both ways;
* ``broken``: fails (or errors) with the patch; one that matches a
  ``pin_failures`` entry of the manifest (it fails at the pin too, for the
  reason given there), or that the patch does not change and that fails
  without its production change as well (it failed before the patch: a
  package the test needs is missing, say), is reported with that reason
  and does not fail the patch;
* ``skipped``: skipped with the patch, or without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from series.manifest import Patch
from series.runs import plan
from series.runs.plan import Context, Job
from series.runs.pytest_run import CRASH_ID, Outcome, RunResult
from series.runs.report import known_reason
from series.runs.testcode import (
    Scope,
    TestModule,
    covers,
    defined_names,
    is_test_file,
    is_test_module,
    is_unchanged,
    missing_name,
    module_names,
    read_module,
    touched,
    unchanged_tests,
)

BEHAVIOUR, STRUCTURAL, GUARD, BROKEN, SKIPPED = (
    "behaviour",
    "structural",
    "guard",
    "broken",
    "skipped",
)
KINDS = (BEHAVIOUR, STRUCTURAL, GUARD, BROKEN, SKIPPED)

# A patch's status.
PROVEN = "proven"
FLAGGED = "no behavioural test"
HAS_BROKEN = "broken tests"
NO_TESTS = "no tests"
TESTS_ONLY = "tests only"
NO_APPLY = "does not apply"
EXEMPT = "exempt"
FAILING = (FLAGGED, HAS_BROKEN, NO_TESTS, NO_APPLY)
_FAILED = ("failed", "error")


@dataclass(frozen=True)
class Proof:
    id: str
    kind: str
    with_patch: str  # outcome on the patched tree
    without: str | None  # outcome on the reverted tree (None: not collected there)
    message: str = ""  # the failure that decided the kind
    known: str = ""  # broken, but a pin_failures entry of the manifest says why


@dataclass
class ProveReport:
    patch: Patch
    position: int
    status: str = PROVEN
    detail: str = ""
    commit: str | None = None
    tree: str | None = None
    reverted_commit: str | None = None
    reverted_tree: str | None = None
    test_files: list[str] = field(default_factory=list)
    production: list[str] = field(default_factory=list)
    selection: tuple[str, ...] = ()
    introduced: set[str] = field(default_factory=set)
    tests: list[Proof] = field(default_factory=list)
    run: RunResult | None = None
    reverted: RunResult | None = None

    def count(self, kind: str) -> int:
        return sum(1 for t in self.tests if t.kind == kind)

    @property
    def broken(self) -> list[Proof]:
        """Broken tests that no pin_failures entry explains."""
        return [t for t in self.tests if t.kind == BROKEN and not t.known]

    @property
    def failed(self) -> bool:
        return self.status in FAILING


@dataclass
class ProveTarget:
    report: ProveReport
    scopes: list[Scope] = field(default_factory=list)
    modules: dict[str, TestModule] = field(default_factory=dict)
    defined: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)  # path -> tests
    job: Job | None = None
    reverted: Job | None = None

    @property
    def jobs(self) -> list[Job]:
        return [j for j in (self.job, self.reverted) if j is not None]


def plan_proofs(ctx: Context, patches: list[Patch]) -> list[ProveTarget]:
    """One target per patch: its two trees and the selection, or why there is none."""
    series = ctx.series
    if not patches:
        return []
    built = series.stack(ctx.pin_commit, series.upto(patches[-1].id))
    commits, parents = built.commits, built.parents
    targets = []
    for patch in patches:
        report = ProveReport(patch, series.manifest.index(patch.id) + 1)
        commit = commits.get(patch.id)
        if commit is None:
            report.status, report.detail = NO_APPLY, built.why_not(patch.id)
            targets.append(ProveTarget(report))
        else:
            targets.append(_target(ctx, report, parents[patch.id], commit))
    return targets


def _target(ctx: Context, report: ProveReport, parent: str, commit: str) -> ProveTarget:
    repo = ctx.repo
    report.commit, report.tree = commit, repo.objects.tree_of(commit)
    changed = repo.diffs.changed_paths(parent, commit)
    report.test_files = [p for p in changed if is_test_file(p)]
    report.production = [p for p in changed if not is_test_file(p)]
    target = ProveTarget(report)
    modules = [p for p in report.test_files if is_test_module(p)]
    for path in sorted(repo.objects.existing_paths(commit, modules)):
        module = read_module(path, repo.objects.blob_read(commit, path).decode("utf-8", "replace"))
        target.modules[path] = module
        target.scopes += touched(module, repo.diffs.changed_lines(parent, commit, path))
        if repo.objects.existing_paths(parent, [path]):
            before = repo.objects.blob_read(parent, path).decode("utf-8", "replace")
            after = repo.objects.blob_read(commit, path).decode("utf-8", "replace")
            target.defined[path] = unchanged_tests(before, after)
    exempt = report.patch.no_behaviour_test
    if not report.production:
        report.status, report.detail = TESTS_ONLY, "the patch changes only test files"
        return target
    if not target.scopes:
        report.status = EXEMPT if exempt else NO_TESTS
        report.detail = exempt or "the patch adds or changes no test"
        return target
    report.selection = tuple(dict.fromkeys(s.selection for s in target.scopes))
    entries = repo.index.entries(commit, report.test_files)
    reverted_tree = repo.index.rewrite(repo.objects.tree_of(parent), entries)
    message = f"prove: {report.patch.id} with its production change reverted\n"
    reverted = repo.objects.commit_tree(
        reverted_tree, [parent], message, repo.history.author(commit)
    )
    report.reverted_commit, report.reverted_tree = reverted, reverted_tree
    report.introduced = _introduced(ctx, parent, commit, report.production)
    label = report.patch.id
    target.job = plan.job(ctx, label, commit, report.tree, report.selection)
    target.reverted = plan.job(ctx, f"{label} reverted", reverted, reverted_tree, report.selection)
    return target


def _introduced(ctx: Context, parent: str, commit: str, production: list[str]) -> set[str]:
    """Names the patch's production files define that their parent versions did not."""
    repo = ctx.repo
    python = [p for p in production if p.endswith(".py")]
    after = repo.objects.existing_paths(commit, python)
    before = repo.objects.existing_paths(parent, python)
    names: set[str] = set()
    for path in sorted(after):
        new = defined_names(repo.objects.blob_read(commit, path).decode("utf-8", "replace"))
        if path in before:
            names |= new - defined_names(
                repo.objects.blob_read(parent, path).decode("utf-8", "replace")
            )
        else:
            names |= new | module_names(path)
    return names


def finish(target: ProveTarget, results: dict[str, RunResult]) -> ProveReport:
    """Classify each touched test from its two runs; the patch's status."""
    report = target.report
    if target.job is None or target.reverted is None:
        return report
    run = report.run = results[target.job.key]
    without = report.reverted = results[target.reverted.key]
    file_errors = {k: v for k, v in without.tests.items() if "::" not in k}
    crash = without.tests.get(CRASH_ID) if without.crashed else None
    for nodeid, outcome in run.tests.items():
        if nodeid == CRASH_ID:
            report.tests.append(Proof(nodeid, BROKEN, outcome.outcome, None, outcome.message))
            continue
        if not covers(target.scopes, target.modules, nodeid):
            continue
        before = without.tests.get(nodeid) or file_errors.get(nodeid.split("::")[0]) or crash
        proof = classify(nodeid, outcome, before, report.introduced)
        if proof.kind == BROKEN:
            known = known_reason(report.patch, nodeid) or _pre_existing(target, nodeid, before)
            proof = replace(proof, known=known)
        report.tests.append(proof)
    exempt = report.patch.no_behaviour_test
    if report.broken:
        report.status = HAS_BROKEN
        report.detail = f"{len(report.broken)} test(s) fail with the patch"
    elif not report.count(BEHAVIOUR):
        report.status = EXEMPT if exempt else FLAGGED
        report.detail = exempt or "no test fails on behaviour without the production change"
    return report


def classify(nodeid: str, with_patch: Outcome, without: Outcome | None, new: set[str]) -> Proof:
    """One test's kind, from its outcome with the patch and without its production change."""
    if with_patch.outcome in _FAILED:
        return Proof(nodeid, BROKEN, with_patch.outcome, _outcome(without), with_patch.message)
    if with_patch.outcome == "skipped":
        return Proof(nodeid, SKIPPED, "skipped", _outcome(without), with_patch.message)
    if without is None:
        return Proof(nodeid, STRUCTURAL, "passed", None, "not collected without the patch")
    if without.outcome == "passed":
        return Proof(nodeid, GUARD, "passed", "passed")
    if without.outcome == "skipped":
        return Proof(nodeid, SKIPPED, "passed", "skipped", without.message)
    names = [n for n in missing_name(without.message) if n in new]
    kind = STRUCTURAL if names else BEHAVIOUR
    return Proof(nodeid, kind, "passed", without.outcome, without.message)


def _pre_existing(target: ProveTarget, nodeid: str, without: Outcome | None) -> str:
    """Why a failing test is not the patch's doing: unchanged by it, and failing without it."""
    if without is None or without.outcome not in _FAILED:
        return ""
    path, _, test = nodeid.split("[", 1)[0].partition("::")
    defined, unchanged = target.defined.get(path, (set(), set()))
    if not is_unchanged(test, defined, unchanged):
        return ""
    first = (without.message.strip().splitlines() or [""])[0][:160]
    return "fails without the patch too, and the patch does not change it" + (
        f": {first}" if first else ""
    )


def _outcome(result: Outcome | None) -> str | None:
    return None if result is None else result.outcome
