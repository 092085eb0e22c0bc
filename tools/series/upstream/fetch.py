"""The one way an upstream revision is fetched, and the policy that says how.

The pin and ``--onto REV`` are fetched by the same routine,
:func:`fetch`. What differs between them is written down as data, a
:class:`Policy`, not as two code paths:

* ``depth``: commits of history fetched at first. The pin needs only its
  tree (1); REV needs the range since the pin (``DEPTH``), or no depth at
  all when its commit is here already (a depth would cut the history the
  repository has of it).
* ``deepen_to``: deepen a shallow history until the fetched commit and
  this one (the pin's real upstream commit) share a merge base (REV's
  range since the pin). ``exclude``, the source's ref that names that
  commit (its release tag), makes it two fetches however long the range,
  for a REV this fetch brought: REV's history down to the pin's
  (``--shallow-exclude``), then the one commit below it (``--deepen=1``).
  Without one, or where that does not meet, the depth doubles up to
  ``MAX_DEPTH``.
* ``memory``: remember a URL that did not answer (``unreachable``), so
  that ``upstream.source = "auto"`` goes straight to the sdist for a while.
* ``every_ref_under``: when every refspec is refused (a commit id that no
  ref names at its tip: servers refuse to send it alone), fetch every
  branch and tag under this prefix and look for it there.

Each try is a list of refspecs that all land under ``Want.ref``; the tries
run in order until one gives a commit that ``accept`` takes. A network
failure ends the tries: the next one would wait just as long for the same
silence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from series.errors import SeriesError
from series.git import EnvironmentFault, Repo
from series.upstream.unreachable import forget, network_failure, recall, remember, stall

Say = Callable[[str], None]

DEPTH = 256  # commits fetched at first for REV; upstream moves tens to hundreds per release
MAX_DEPTH = 1 << 15


class RememberedUnreachable(SeriesError):
    """Not tried: the URL did not answer a moment ago (``unreachable``)."""


@dataclass(frozen=True)
class Memory:
    """Where an unreachable URL is remembered, and whether it is consulted.

    The memory is always cleared when the URL answers; only ``consult``
    (``upstream.source = "auto"``, which has the sdist to fall back on)
    skips a remembered URL and remembers a new failure.
    """

    cache_dir: Path
    url: str  # the key: the URL or path as series.toml or --upstream spells it
    consult: bool


@dataclass(frozen=True)
class Policy:
    """How one revision is fetched (module docstring)."""

    depth: int | None
    deepen_to: str | None = None
    exclude: str | None = None  # the source's ref naming ``deepen_to`` (module docstring)
    memory: Memory | None = None
    every_ref_under: str | None = None


@dataclass(frozen=True)
class Want:
    """``ref`` in the repository, from the first of ``tries`` that ``source`` gives."""

    source: str  # a URL, or an absolute path
    ref: str
    tries: Sequence[Sequence[str]]


@dataclass(frozen=True)
class Fetched:
    """What :func:`fetch` got: ``ok``, from the cache (nothing fetched), or every ref."""

    ok: bool
    cached: bool = False
    every_ref: bool = False
    errors: list[str] = field(default_factory=list)

    def why(self) -> str:
        """Each distinct error once, in the order they came."""
        return "\n".join(dict.fromkeys(e for e in self.errors if e))


def fetch(
    repo: Repo,
    want: Want,
    policy: Policy,
    *,
    have: Callable[[], bool] = lambda: False,
    accept: Callable[[str], str | None] = lambda tried: None,
    announce: str | None = None,
    say: Say = lambda text: None,
) -> Fetched:
    """Fetch ``want`` into ``repo`` as ``policy`` says.

    ``have()`` is asked first, after the memory: True when the revision
    is here already (then nothing is fetched, and only the history is
    deepened). ``announce`` is said before the first fetch. ``accept(try)``
    is asked after a fetch that git took: None, or why its result is not
    the wanted one (the next try runs). A remembered unreachable URL is
    raised as :class:`RememberedUnreachable`, a failure git reports is in
    the answer (a disk or a damaged repository is raised by ``Repo.fetch``).
    """
    memory = policy.memory
    if memory is not None and memory.consult:
        remembered = recall(memory.cache_dir, memory.url)
        if remembered is not None:
            raise RememberedUnreachable(f"{memory.url} was unreachable", why=remembered)
    try:
        fetched = _fetch(repo, want, policy, have, accept, announce, say)
    except EnvironmentFault:
        raise  # the machine's fault, not the URL's: nothing to remember
    except SeriesError as exc:
        _remember(memory, exc.why.splitlines()[0] if exc.why else exc.message)
        raise
    if memory is not None and fetched.ok:
        forget(memory.cache_dir, memory.url)
    elif not fetched.ok:
        _remember(memory, fetched.why().splitlines()[0] if fetched.why() else "")
    return fetched


def _remember(memory: Memory | None, error: str) -> None:
    if memory is not None and memory.consult:
        remember(memory.cache_dir, memory.url, error)


def _fetch(
    repo: Repo,
    want: Want,
    policy: Policy,
    have: Callable[[], bool],
    accept: Callable[[str], str | None],
    announce: str | None,
    say: Say,
) -> Fetched:
    if have():
        _deepen(repo, want.source, [*want.tries[0]], want.ref, policy, deep=False)
        return Fetched(True, cached=True)
    if announce is not None:
        say(announce)
    errors: list[str] = []
    patience = stall()
    for refspecs in want.tries:
        status, err = repo.remote.fetch(want.source, refspecs, depth=policy.depth, stall=patience)
        if status != 0:
            errors.append(err.strip())
            if network_failure(err):
                break  # the next try would wait just as long for the same silence
            continue
        refused = accept(refspecs[0])
        if refused is not None:
            errors.append(refused)
            continue
        _deepen(repo, want.source, [*refspecs], want.ref, policy, deep=bool(policy.depth))
        return Fetched(True, errors=errors)
    if policy.every_ref_under is not None:
        prefix = policy.every_ref_under
        every = [f"+refs/heads/*:{prefix}heads/*", f"+refs/tags/*:{prefix}tags/*"]
        if repo.remote.fetch(want.source, every)[0] == 0:
            return Fetched(False, every_ref=True, errors=errors)
    return Fetched(False, errors=errors)


def _deepen(
    repo: Repo, source: str, refspecs: list[str], ref: str, policy: Policy, *, deep: bool
) -> None:
    """Deepen a shallow history until ``ref`` and ``policy.deepen_to`` meet (or it ends).

    ``deep``: the fetch of ``ref`` had a depth of its own (``DEPTH``): its
    history here is what that fetch brought. Then, where the source names
    the pin (``policy.exclude``), ``ref``'s history is fetched down to the
    pin's and one commit below it: two fetches for any length of range (the
    first marks the commits just above the pin's history shallow, the
    second gives them their parents back). A ``ref`` that was here already
    may have history of the user's that the first would cut, were the
    second to fail: its depth doubles from ``DEPTH``, as it does where the
    two do not meet (a pin far off REV's line, a source that cannot
    exclude).
    """
    real = policy.deepen_to
    if real is None or not repo.objects.has(real):
        return
    got = repo.objects.rev(ref)
    if got is None:
        return

    def met() -> bool:  # the range since the pin listed beside (History.base_and_heads)
        return repo.history.base_and_heads(real, got, [got, f"^{real}"]).answer()[0] is not None

    if met():
        return
    exclude = policy.exclude if deep else None  # not a history of the user's (docstring)
    if exclude is not None:
        taken, err = _down_to(repo, source, refspecs, exclude)
        if (taken and met()) or network_failure(err):
            return  # met; or a silent source, which the next fetch would wait for again
    depth = DEPTH
    while depth <= MAX_DEPTH:
        if not _deeper(repo, source, refspecs, depth) or met():
            return
        depth *= 2


def _deeper(repo: Repo, source: str, refspecs: list[str], depth: int) -> bool:
    """``depth`` more commits below the shallow boundary: whether the history grew."""
    roots = repo.history.shallow_roots()
    if not roots:
        return False  # complete history: there is nothing below to fetch
    status, _ = repo.remote.fetch(source, refspecs, deepen=depth)
    return status == 0 and repo.history.shallow_roots() != roots


def _down_to(repo: Repo, source: str, refspecs: list[str], exclude: str) -> tuple[bool, str]:
    """The history of ``refspecs[0]`` down to ``exclude``'s, then the commit below: whether
    both fetches were taken (a source that cannot exclude refuses the first), and git's
    error if not."""
    status, err = repo.remote.fetch(source, refspecs[:1], shallow_exclude=exclude)
    if status == 0:
        status, err = repo.remote.fetch(source, refspecs, deepen=1)
    return status == 0, err if status else ""
