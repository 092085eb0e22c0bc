"""Remotes: what a remote has (``ls-remote``), fetching, pushing with leases, copying commits.

Between two repositories of series' own (the cache and a checkout)
commits go one way: :meth:`Remote.copy_from`, a bounded :meth:`Remote.fetch`
of the cache's refs that name them. An upstream is fetched by
:meth:`Remote.fetch` (from series.upstream only), the user's remote by
:meth:`Remote.fetch_heads`.

``series branches --push`` never overwrites what it has not seen: every
pushed ref carries ``--force-with-lease=<ref>:<the value ls-remote saw>``
(empty for "must not exist"), and all of them go in one ``push --atomic``,
so the remote takes every update or none. The push runs with the user's
git configuration (credentials, URL rewrites), unlike the hermetic
commands that make content.

A fetch from a local *partial* clone (``--filter=blob:none``) lets git
fetch the objects the clone lacks from its promisor remote
(``GIT_NO_LAZY_FETCH=0``: since 2.39.4 upload-pack refuses to unless
told, as a repository it serves may not be trusted; here the clone is the
user's, named by them). When that fails, :class:`PartialCloneUnreachable`
says so instead of git's "repository corruption on the remote side".

A URL, path or remote name, and the refspecs and patterns after it, come
after ``--`` in every argv here: they come from series.toml and from the
command line, and one that starts with ``-`` (``--upload-pack=CMD``) must
never be read as an option (series refuses those before git is reached;
this holds even where that check is bypassed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from series.errors import InternalError, SeriesError
from series.git.refs import Refs
from series.git.run import GitFailed, Part, Runner, environment_fault, execute
from series.git.run import net_timeout as net_timeout  # its home is the runner
from series.refnames import ROOT as SERIES_REFS


@dataclass(frozen=True)
class PushUpdate:
    """Set ``ref`` on the remote to ``new`` (None: delete it) if it is at ``expect``.

    ``expect`` None means the ref must not exist on the remote.
    """

    ref: str
    new: str | None
    expect: str | None


@dataclass(frozen=True)
class PushResult:
    ok: bool
    rejected: tuple[tuple[str, str], ...]  # (ref, git's reason) for each ref refused
    stderr: str


# Every fetch: no tags, no FETCH_HEAD; the caller keeps what it fetched under its own refs.
_FETCH = ("fetch", "--quiet", "--no-tags", "--no-write-fetch-head")


class RemoteUnreachable(SeriesError):
    """The remote did not answer as a git repository."""


@dataclass(frozen=True)
class Promisor:
    """The remote a partial clone fetches the objects it was cloned without from."""

    remote: str  # its name in the clone
    url: str


def promisor_of(source: str) -> Promisor | None:
    """The promisor remote of ``source`` if it is a local partial clone, else None."""
    path = Path(source.removeprefix("file://"))
    if not path.is_dir():
        return None  # a URL: the server decides what it fetches, not series
    pattern = r"^(remote\..+\.(promisor|url)|extensions\.partialclone)$"
    status, out, _ = execute(path, ["config", "--get-regexp", pattern])
    assert isinstance(out, str)
    if status != 0:
        return None  # none set, or not a repository
    values = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        values[key] = value
    names = [
        key.removeprefix("remote.").removesuffix(".promisor")
        for key, value in values.items()
        if key.endswith(".promisor") and value.lower() in ("", "true", "yes", "on", "1")
    ]
    names += [values["extensions.partialclone"]] if "extensions.partialclone" in values else []
    if not names:
        return None
    return Promisor(names[0], values.get(f"remote.{names[0]}.url", "(no URL configured)"))


# What upload-pack says when the clone lacks an object and cannot get it.
_LAZY_FAILED = re.compile(r"from promisor remote|lazy fetching disabled")
_ECHOES = re.compile(r"from promisor remote|aborting due to|protocol error|bad pack header")


class PartialCloneUnreachable(SeriesError):
    """A fetch from a local partial clone needed objects it lacks, and its promisor failed."""

    def __init__(self, source: str, promisor: Promisor, refspecs: Sequence[str], err: str):
        wanted = ", ".join(spec.lstrip("+").split(":")[0] for spec in refspecs)
        name = promisor.remote
        super().__init__(
            f"cannot fetch {wanted} from {source}: it is a partial clone that lacks "
            "objects the fetch needs",
            why=f"{source} was cloned with a filter (remote.{name}.promisor is set): git "
            f"fetches the blobs it lacks from its promisor remote {promisor.url} when "
            f"they are needed, and that failed:\n{_reason(err)}",
            hint=f"from a machine that reaches {promisor.url}, make it a full clone:\n"
            f"  git -C {source} config --unset remote.{name}.partialclonefilter\n"
            f"  git -C {source} fetch --refetch {name}\n"
            "or use a full clone, or a shallow one (git clone --depth=500 URL), instead",
        )


def _reason(err: str) -> str:
    """git's own reason why the lazy fetch failed, without upload-pack's echoes of it."""
    lines = [line.replace("\0", "").removeprefix("remote:").strip() for line in err.splitlines()]
    fatal = [line for line in lines if line.startswith("fatal:") and not _ECHOES.search(line)]
    return (fatal or [line for line in lines if _LAZY_FAILED.search(line)] or [err.strip()])[0]


class Store(Protocol):
    """A repository of series' own (the cache) that commits are copied from."""

    @property
    def path(self) -> Path: ...

    @property
    def refs(self) -> Refs: ...


class Remote(Part):
    """Other repositories: what they have, fetching from them, pushing to them.

    :meth:`copy_from` is the one way commits go from one repository of
    series' to another (the cache into a checkout); :meth:`fetch` gets
    them from an upstream URL or path, :meth:`fetch_heads` from the user's
    own remote.
    """

    def __init__(self, run: Runner) -> None:
        super().__init__(run)
        self._promisors: dict[str, Promisor | None] = {}

    def heads(self, remote: str) -> dict[str, str]:
        """refs/heads/* -> commit on ``remote`` (a remote name, URL or path), bounded.

        Gives up after ``SERIES_NET_TIMEOUT`` seconds without data (``_bounded``).
        """
        status, out, err = _bounded(
            self.path, ["ls-remote", "--heads", "--", remote], None, users_ssh=True
        )
        if status != 0:
            raise RemoteUnreachable(
                f"cannot read the branches of remote {remote!r}",
                why=err.strip() or f"git ls-remote exited {status}",
                hint=f"check the name or URL (git -C {self.path} remote -v), "
                "and that you can reach it" + (_SLOW if err.startswith(_SILENT) else ""),
            )
        found = {}
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if ref.startswith("refs/heads/"):
                found[ref] = sha
        return found

    def push_leased(self, remote: str, updates: Sequence[PushUpdate]) -> PushResult:
        """One ``git push --atomic``, each ref leased against its expected value.

        Bounded like a fetch (``_bounded``); a push stopped for silence
        raises :class:`RemoteUnreachable`: what the remote took is then
        unknown (all or nothing, as the push is atomic).
        """
        if not updates:
            return PushResult(True, (), "")
        argv = ["push", "--atomic", "--porcelain"]
        argv += [f"--force-with-lease={u.ref}:{u.expect or ''}" for u in updates]
        argv += ["--", remote]
        argv += [f"{u.new or ''}:{u.ref}" for u in updates]
        status, out, err = _bounded(self.path, argv, None, users_ssh=True)
        if status != 0 and err.startswith(_SILENT):
            raise RemoteUnreachable(
                f"the push to {remote} did not finish: git was stopped",
                why=f"{err.strip()}\nthe push is atomic: {remote} took every update or none",
                hint=f"git -C {self.path} ls-remote --heads {remote} shows which; then run "
                "`series branches --push` again (its leases make that safe)" + _SLOW,
            )
        rejected = []
        for line in out.splitlines():
            flag, _, rest = line.partition("\t")
            if flag == "!":
                spec, _, reason = rest.partition("\t")
                rejected.append((spec.rpartition(":")[2], reason.strip()))
        return PushResult(status == 0, tuple(rejected), err)

    def fetch_heads(self, remote: str, refs: Sequence[str]) -> tuple[bool, str]:
        """Copy the objects of ``refs`` of ``remote`` here, writing no ref: (ok, stderr).

        The caller then keeps them under a ref of its own, in a transaction.
        Bounded like every fetch (``_bounded``).
        """
        argv = [*_FETCH, "--", remote, *refs]
        status, _, err = _bounded(self.path, argv, None, users_ssh=True)
        return status == 0, err

    def has(self, remote: str, commit: str) -> tuple[bool, str]:
        """Whether ``remote`` has ``commit``, which this repository has: (has, git's stderr).

        Asks for it by id, a depth of one (``fetch --depth=1``: without a
        depth git trusts what it has and asks nothing); a commit this
        repository already has at its shallow boundary fetches nothing.
        "not our ref" is git's answer for a commit the remote lacks. Bounded
        like every fetch (``_bounded``): a remote that stops answering
        raises :class:`RemoteUnreachable`.
        """
        argv = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--depth=1"]
        status, _, err = _bounded(self.path, [*argv, "--", remote, commit], None, users_ssh=True)
        if status != 0 and err.startswith(_SILENT):
            raise RemoteUnreachable(
                f"cannot ask {remote} whether it has {commit[:12]}: git was stopped",
                why=err.strip(),
                hint=f"check that you can reach {remote}" + _SLOW,
            )
        return status == 0, err

    def copy_from(self, source: Store, commits: Sequence[str]) -> None:
        """Copy ``commits`` and their history from ``source``, writing no ref here.

        ``source`` is a repository of series' in which a ref under
        ``refs/series/`` names each commit (the cache's memo of built
        stacks, its pins). One ``for-each-ref`` and one bounded
        :meth:`fetch`, however many commits; none when all are here.
        The caller keeps them under refs of its own, in a transaction.
        """
        missing = [c for c in dict.fromkeys(commits) if self._run.lookup(c) is None]
        if not missing:
            return
        named: dict[str, str] = {}
        for name, sha in source.refs.under(SERIES_REFS).items():
            named.setdefault(sha, name)
        unnamed = [c for c in missing if c not in named]
        if unnamed:
            raise InternalError(f"{unnamed[0][:12]} has no ref in {source.path}")
        status, err = self.fetch(str(source.path), [named[c] for c in missing])
        if status != 0:
            what = f"cannot copy {len(missing)} commit(s) from {source.path}"
            raise GitFailed(["fetch"], status, err, cwd=self.path, source=source.path, message=what)

    def _promisor(self, source: str) -> Promisor | None:
        """:func:`promisor_of`, asked once per source for this ``Repo`` (a command)."""
        if source not in self._promisors:
            self._promisors[source] = promisor_of(source)
        return self._promisors[source]

    def fetch(
        self,
        source: str,
        refspecs: Sequence[str],
        *,
        depth: int | None = None,
        deepen: int | None = None,
        shallow_exclude: str | None = None,
        stall: int | None = None,
    ) -> tuple[int, str]:
        """``git fetch`` of ``refspecs`` from a URL or path: (status, stderr).

        A failure whose cause is outside both repositories' contents (a lock
        file, a full or read-only disk, a damaged object) is raised as
        :class:`~series.git.run.EnvironmentFault`, not returned as an answer.

        ``--update-shallow`` always: a shallow source (what CI systems and
        most maintainers have) is otherwise refused without a word (git
        only warns and writes no ref). ``depth`` fetches that many commits
        of history, ``deepen`` that many more below the current boundary,
        ``shallow_exclude`` (a ref of the source) the history down to that ref's.
        A remote that stops sending for ``stall`` seconds (default
        ``SERIES_NET_TIMEOUT``, see :func:`net_timeout`; or never answers)
        makes it fail instead of hanging: git's low-speed limit for http(s),
        a connect timeout for ssh, and a hard bound for the rest (``_bounded``).
        From a local partial clone git may fetch what the clone lacks from
        its promisor remote, under the same bounds; if that fails,
        :class:`PartialCloneUnreachable` is raised.
        """
        argv = [*_FETCH, "--update-shallow"]
        argv += [f"--depth={depth}"] if depth else []
        argv += [f"--deepen={deepen}"] if deepen else []
        argv += [f"--shallow-exclude={shallow_exclude}"] if shallow_exclude else []
        promisor = self._promisor(source)
        lazy = {"GIT_NO_LAZY_FETCH": "0"} if promisor else {}
        status, _, err = _bounded(self.path, [*argv, "--", source, *refspecs], stall, lazy)
        if status != 0 and promisor is not None and _LAZY_FAILED.search(err):
            raise PartialCloneUnreachable(source, promisor, refspecs, err)
        fault = environment_fault(err, self.path, source=source, status=status) if status else None
        if fault is not None:  # a full disk is no answer about the source: say it
            raise fault
        return status, err

    def reachable(self, source: str, *, stall: int | None = None) -> tuple[bool, str]:
        """Whether ``source`` answers as a git repository: (ok, git's stderr)."""
        argv = ["ls-remote", "--heads", "--", source]
        status, _, err = _bounded(self.path, argv, stall)
        return status == 0, err

    def rev(self, source: str, rev: str, *, stall: int | None = None) -> str | None:
        """The commit ``rev`` names in ``source`` (``ls-remote``, bounded), or None."""
        return self.revs(source, [rev], stall=stall)[rev]

    def revs(
        self, source: str, revs: Sequence[str], *, stall: int | None = None
    ) -> dict[str, str | None]:
        """The commit each of ``revs`` names in ``source``, with one ``ls-remote`` (bounded)."""
        status, out, _ = _bounded(self.path, ["ls-remote", "--", source, *revs], stall)
        if status != 0:
            return dict.fromkeys(revs)
        found: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            found[name] = sha
        answer: dict[str, str | None] = {}
        for rev in revs:
            tag, head = f"refs/tags/{rev}", f"refs/heads/{rev}"
            names = (f"{tag}^{{}}", tag, head, f"{rev}^{{}}", rev)
            answer[rev] = next((found[n] for n in names if n in found), None)
        return answer

    def names(self) -> list[str]:
        return self._run.git("remote").split()


_SILENT = "no answer: no data for"  # how series.git.run says it stopped a silent git
# Where git has a limit of its own (curl's low-speed time), it speaks first: its error says more.
_MARGIN = 2
_SLOW = "; if it is only slow, raise SERIES_NET_TIMEOUT (seconds without data)"


def _bounded(
    cwd: Path,
    argv: list[str],
    stall: int | None,
    extra: Mapping[str, str] | None = None,
    *,
    users_ssh: bool = False,
) -> tuple[int, str, str]:
    """Run a network git command that gives up after ``stall`` seconds without data.

    The bound holds for every transport and for a local source whose
    upload-pack hangs: git is stopped once it and its helpers have been
    silent that long (series.git.child; ``_MARGIN`` seconds later, so that
    git's own limit, where it has one, ends it first with its own words).
    git's own limits are set as environment variables, not ``-c``
    options: a local source's upload-pack is started without the ``-c``
    options (``GIT_CONFIG_PARAMETERS`` is among the variables git drops
    for a local repository) but with the rest of the environment, so a
    lazy fetch that a partial clone makes from its promisor remote is
    bounded by them too. git's own prompts are off. ssh runs in batch mode
    with a connect timeout, except for the user's own remotes
    (``users_ssh``: ``branches --push``), where the user's ssh command and
    configuration apply as they are; an ssh prompt there counts as silence.
    """
    stall = net_timeout() if stall is None else stall
    env = {
        "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
        "GIT_HTTP_LOW_SPEED_TIME": str(stall),
        "GIT_TERMINAL_PROMPT": "0",
        **(extra or {}),
    }
    if not users_ssh:
        env["GIT_SSH_COMMAND"] = (
            f"ssh -o ConnectTimeout={stall} -o ServerAliveInterval={stall} "
            "-o ServerAliveCountMax=1 -o BatchMode=yes"
        )
    status, out, err = execute(cwd, argv, env=env, stall=stall + _MARGIN)
    assert isinstance(out, str)
    if err.startswith(_SILENT):
        rest = err.partition("\n")[2]
        err = f"{_SILENT} {stall} s, so git was stopped (SERIES_NET_TIMEOUT)\n{rest}"
    return status, out, err
