"""The ``Series`` object: the project (root, manifest, cache), built once per command.

``cli.main`` opens one ``Series`` (:meth:`Series.session`) and hands it to
the command. The session is the prologue every command shares: a command
that writes (the checkout, series.toml, patches/ or resolutions/) first
takes the project lock (``.series/lock``) for its whole run, then reads
the manifest, so two writers never interleave and the second sees what
the first left; a command that only reads never waits for it, and says
when a writer is running (what it reads may change under it). A writer also
locks each checkout it names (:meth:`Series.checkout_path`), in the per-user
cache (``checkouts/<sha256 of its real path>.lock``): two projects whose
``--dir`` (or ``[series] checkout``) names one checkout are two project
locks, and their commands wrote the one checkout at once (an apply held
half way and another project's apply run meanwhile both said "applied",
leaving the branch of one and the files of the other). Commands get
everything from it: the pinned upstream base (:meth:`Series.pin`, which
also prints the one status line saying where it came from), the stack
built on it (:meth:`Series.stack`, memoised), the checkout
(:meth:`Series.checkout`) and the per-user cache repository
(:attr:`Series.cache`). No command opens a repository or reads the
manifest itself.

The engines behind the prologue (series.upstream: fetches, the sdist; the
stack builder; the git layer's repository, the checkout and the patch
files' reading) are imported by the methods that use them, when first
called: ``list``, ``show`` and a ``status`` or a re-run answered from what
is kept never pay for them (docs/architecture.md, rule 12).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from functools import cached_property
from pathlib import Path

from series import known as kept
from series import logs
from series.digests import sha256
from series.errors import SeriesError
from series.files import clear_stale_temps, confined
from series.locks import exclusive, holder

TYPE_CHECKING = False  # typing is not imported: a re-run of apply or export loads this
if TYPE_CHECKING:
    from series.builder.build import Built, PatchFile
    from series.checkout import Checkout
    from series.git import FileStat, MailInfo, Repo
    from series.manifest import Manifest, Patch
    from series.ui import Ui
    from series.upstream import Base, UpstreamSource

# What commands may use of the git layer's values, without importing it.
__all__ = ["FileStat", "MailInfo", "Series", "default_cache_dir", "find_root"]


# The project lock, relative to the project root: inside the project (so it
# exists before the checkout does, and covers the project's files and the
# checkout alike), in the directory .gitignore keeps out of the project's git.
LOCK = Path(".series") / "lock"
_LOCKED = "the project lock: one command at a time writes the checkout or the series"
# The checkout locks, in the per-user cache (series cache clean leaves them).
CHECKOUT_LOCKS = "checkouts"
_CHECKOUT_LOCKED = "the checkout's lock: one command at a time writes it, whatever its project"
# A project that cannot take its lock file can have nothing written in it.
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def default_cache_dir() -> Path:
    if os.environ.get("SERIES_CACHE_DIR"):
        return Path(os.environ["SERIES_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "keras-series"


def _clear_leftovers(root: Path, files: Iterable[str]) -> None:
    """Remove the temporary files a killed series run left in the project (never the user's);
    ``files``: the manifest's patch files."""
    # As strings: a set of a few dozen Paths (their hashes) cost a re-run a millisecond.
    top = str(root)
    resolutions = os.path.join(top, "resolutions")
    dirs = {top, os.path.join(top, ".series"), os.path.join(top, "patches")}
    dirs |= {os.path.dirname(os.path.join(top, file)) for file in files}
    if os.path.isdir(resolutions) and not os.path.islink(resolutions):
        dirs.add(resolutions)
        with contextlib.suppress(OSError):  # unreadable: the command that reads it says so
            dirs |= {e.path for e in os.scandir(resolutions) if e.is_dir(follow_symlinks=False)}
    clear_stale_temps(*dirs)


def find_root(start: Path) -> Path:
    for candidate in (start, *start.parents):
        if (candidate / "series.toml").is_file():
            return candidate
    raise SeriesError(
        f"no series.toml in {start} or any parent directory",
        hint="run series inside the keras-series project, or pass -C DIR",
    )


class Series:
    """The project of one command: its root, its manifest (parsed when first used, when
    what apply and export need of it was known: series.known) and the cache."""

    def __init__(
        self,
        root: Path,
        manifest: Manifest | None,
        cache_dir: Path,
        *,
        known: kept.Known | None = None,
        missing_ok: bool = False,
        keep_parse: bool = True,
    ) -> None:
        if manifest is None and known is None:
            raise ValueError("a Series needs its manifest, or what is known of it")
        self.root = root
        self.cache_dir = cache_dir
        self._manifest = manifest
        self._known = known
        self._missing_ok = missing_ok
        # where what tomllib reads of series.toml is kept (series.manifest_kept), or None
        self._parses: Path | None = cache_dir if keep_parse else None
        self._pins: dict[tuple[str | None, str | None], Base] = {}
        # A writing session's lock of each checkout it names (None: a reader's session)
        self._hold: Callable[[Path], None] | None = None
        # each patch file's bytes as a build read them, by patch id (None: two builds read
        # two contents), for the checks without the lock to read again (series.unchanged)
        self.read: dict[str, bytes | None] = {}

    @property
    def manifest(self) -> Manifest:
        """series.toml, read and validated (on first use, when it was known unchanged)."""
        if self._manifest is None:
            from series.manifest import load

            self._manifest = load(
                self.root / "series.toml", missing_ok=self._missing_ok, kept=self._parses
            )
        return self._manifest

    @manifest.setter
    def manifest(self, manifest: Manifest) -> None:
        self._manifest = manifest

    @property
    def branch(self) -> str:
        """The checkout's branch (``[series] branch``)."""
        if self._manifest is None and self._known is not None:
            return self._known.branch
        return self.manifest.branch

    def named(self) -> list[tuple[str, str]]:
        """Each patch's id and file (relative to the root), in the series' order."""
        if self._manifest is None and self._known is not None:
            return list(self._known.patches)
        return [(p.id, p.file) for p in self.manifest.patches]

    @classmethod
    def load(
        cls,
        root: Path | None = None,
        cache_dir: Path | None = None,
        *,
        missing_ok: bool = False,
        known: bool = False,
        keep_parse: bool = True,
    ) -> Series:
        """``missing_ok``: a patch file may be missing (export writes it again).

        ``known``: what the last parse of the same series.toml kept may stand in for
        the parse until the manifest is used (apply and export: series.known); a
        parse keeps it. ``keep_parse``: what tomllib reads of series.toml is kept in the
        cache (series.manifest_kept); not for ``series cache``, which empties the cache.
        """
        root = find_root(Path.cwd()) if root is None else root.resolve()
        cache_dir = cache_dir or default_cache_dir()
        was = kept.recall(root, cache_dir) if known else None
        if was is not None:
            _clear_leftovers(root, (file for _, file in was.patches))
            return cls(
                root, None, cache_dir, known=was, missing_ok=missing_ok, keep_parse=keep_parse
            )
        from series.manifest import load, loads  # the parser, only when nothing stands in

        parses = cache_dir if keep_parse else None

        # What the parse gives is kept for the bytes it parsed (``text``, read once): a file
        # saved meanwhile, even twice within one tick of the clock, has its own digest.
        text = _bytes(root / "series.toml") if known else None
        if text is None:
            manifest = load(root / "series.toml", missing_ok=missing_ok, kept=parses)
        else:  # decoded as Path.read_text decodes (universal newlines), as load() reads it
            decoded = io.TextIOWrapper(io.BytesIO(text), encoding="utf-8").read()
            manifest = loads(root / "series.toml", decoded, missing_ok=missing_ok, kept=parses)
        _clear_leftovers(root, (p.file for p in manifest.patches))
        if text is not None:
            named = tuple((p.id, p.file) for p in manifest.patches)
            kept.keep(root, cache_dir, text, kept.Known(manifest.checkout, manifest.branch, named))
        return cls(root, manifest, cache_dir, missing_ok=missing_ok, keep_parse=keep_parse)

    @classmethod
    @contextmanager
    def session(
        cls,
        root: Path | None,
        *,
        writes: bool,
        command: str,
        say: Callable[[str], None],
        missing_ok: bool = False,
        known: bool = False,
        keep_parse: bool = True,
    ) -> Iterator[Series]:
        """The project, loaded under the project lock when the command ``writes``.

        ``command`` (its command line) is recorded in the lock file, for the
        command that waits for it to name. A project whose lock file cannot
        be created (a read-only file system or directory) is not locked:
        nothing can be written in it, and a command that tries fails there,
        saying what it could not write.
        """
        root = find_root(Path.cwd()) if root is None else root.resolve()
        with ExitStack() as stack:
            if (root / "series.toml").is_file():  # else load() says so, creating nothing
                # .series/ linked out of the project must not get the lock file
                lock = confined(root, root / LOCK, reading=not writes)
                _lock(stack, lock, writes=writes, command=command, say=say)
            series = cls.load(root, missing_ok=missing_ok, known=known, keep_parse=keep_parse)
            if writes:
                series._hold = _checkout_locks(stack, series.cache_dir, command, say)
            yield series

    # -- the prologue every command shares ------------------------------------
    @cached_property
    def cache(self) -> Repo:
        """The per-user cache repository: upstream bases and memoised stacks."""
        from series.upstream import cache_repo

        return cache_repo(self.cache_dir)

    def pin(
        self,
        ui: Ui,
        *,
        source: str | None = None,
        override: str | None = None,
        why: str = "--source",
    ) -> Base:
        """The pinned upstream base in the cache repository, said once on stderr."""
        key = (source, override)
        if key not in self._pins:
            base = self.upstream(ui, override).pin(source=source, why=why)
            ui.status(f"upstream: {base.label} [{base.source}: {base.reason}]")
            self._pins[key] = base
        return self._pins[key]

    def upstream(self, ui: Ui | None = None, override: str | None = None) -> UpstreamSource:
        """Where upstream revisions come from: [upstream], the cache, ``--upstream``.

        ``ui`` gets a status line before anything that may wait (none: quiet).
        """
        from series.upstream import UpstreamSource

        if ui is None:
            return UpstreamSource(self.manifest.upstream, self.cache_dir, override)
        return UpstreamSource(self.manifest.upstream, self.cache_dir, override, ui.status)

    def stack(
        self, base: str, patches: list[Patch] | None = None, *, memoised: bool = True
    ) -> Built[Patch]:
        """``patches`` (default: all) applied in order on ``base``, in the cache repository
        (its loose objects packed once there are many: series.upstream.pack_cache)."""
        from series.builder import memo
        from series.builder.build import build
        from series.upstream import pack_cache

        files = self.patch_files(list(self.manifest.patches) if patches is None else patches)
        cache = self.cache
        built = memo.build(cache, base, files) if memoised else build(cache, base, files)
        for item, data in zip(files, built.data, strict=False):
            was = self.read.setdefault(item.patch.id, data)
            if was != data:
                self.read[item.patch.id] = None
        if built.reused < len(built.steps) or built.failure is not None:
            pack_cache(cache, self.cache_dir)  # this build wrote objects
        return built

    # -- the manifest's patches ---------------------------------------------------
    def patch_path(self, patch: Patch) -> Path:
        return self.root / patch.file

    def patch_files(self, patches: list[Patch]) -> list[PatchFile[Patch]]:
        from series.builder.build import PatchFile

        return [PatchFile(p, self.patch_path(p)) for p in patches]

    def project_repo(self) -> Repo | None:
        """The git repository the project itself lives in, when it is one.

        Refused where its ``.git`` is there but git cannot open it (another user's
        directory that ``safe.directory`` does not name: "dubious ownership"): taken
        for no repository, ``series range-diff`` would compare with another version
        than the one it names (docs/range-diff.md), saying nothing of why."""
        from series.errors import RefusedError
        from series.git.repo import Repo

        repo = Repo(self.root)
        if repo.is_repo():
            return repo
        if repo.unopened is not None:
            raise RefusedError(
                f"refusing to use the project repository {self.root}: git cannot open it",
                why=repo.unopened,
                hint=f"`git -C {self.root} status` says the same; mend what it names, "
                "then run the command again",
            )
        return None

    def checkout_path(self, directory: Path | None = None) -> Path:
        """Where the checkout is: ``directory`` (``--dir``), else the manifest's, resolved;
        locked for the rest of a writing session (the module's docstring), once named."""
        if directory is None:
            directory = self.root / self.checkout_where()
        path = directory.resolve()
        if self._hold is not None:  # a writer: no other command writes it from here on
            self._hold(path)
        return path

    def checkout_where(self) -> str:
        """``[series] checkout`` as the manifest says it (relative to the root)."""
        known = self._known if self._manifest is None else None
        return known.checkout if known else self.manifest.checkout

    def checkout(self, directory: Path | None = None) -> Checkout:
        from series.checkout import Checkout

        return Checkout(self.checkout_path(directory), self.branch, self.root)

    def select(self, ids: list[str] | None) -> list[Patch]:
        if not ids:
            return list(self.manifest.patches)
        wanted = {self.manifest.by_id(i).id for i in ids}
        return [p for p in self.manifest.patches if p.id in wanted]

    def upto(self, patch_id: str | None) -> list[Patch]:
        if patch_id is None:
            return list(self.manifest.patches)
        return list(self.manifest.patches[: self.manifest.index(patch_id) + 1])

    def mail(self, patch: Patch) -> MailInfo:
        """The patch file read as ``git am`` reads it (kept by content: series.patchinfo)."""
        from series import patchinfo

        return patchinfo.mail(self.cache_dir, self.patch_path(patch))

    def stat(self, patch: Patch) -> list[FileStat]:
        """Per-file line counts of the patch file (kept by content: series.patchinfo)."""
        from series import patchinfo

        return patchinfo.stat(self.cache_dir, self.patch_path(patch))


def _bytes(path: Path) -> bytes | None:
    """``path``'s bytes, or None (the parse then says what is wrong with it)."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def _checkout_locks(
    stack: ExitStack, cache_dir: Path, command: str, say: Callable[[str], None]
) -> Callable[[Path], None]:
    """What locks a checkout (by its real path) once for the session ``stack``."""
    held: set[str] = set()

    def hold(path: Path) -> None:
        key = sha256(os.fsencode(path)).hexdigest()
        if key not in held:
            held.add(key)
            lock = cache_dir / CHECKOUT_LOCKS / f"{key}.lock"
            _lock(stack, lock, writes=True, command=command, say=say, what=_CHECKOUT_LOCKED)

    return hold


def _lock(
    stack: ExitStack,
    path: Path,
    *,
    writes: bool,
    command: str,
    say: Callable[[str], None],
    what: str = _LOCKED,
) -> None:
    if not writes:
        held = holder(path)
        if held is not None:
            say(
                f"note: another series command is running ({held.describe()}); "
                "what this one reads may change under it"
            )
        return
    try:
        stack.enter_context(exclusive(path, say=say, what=what, command=command))
    except OSError as exc:
        if exc.errno not in _READ_ONLY:
            raise
        logs.debug("series.project", "not locked: %s cannot be created (%s)", path, exc.strerror)
