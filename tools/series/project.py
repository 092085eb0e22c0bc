"""The ``Series`` object: the project (root, manifest, cache), built once per command.

``cli.main`` loads one ``Series`` and hands it to the command. Commands get
everything from it: the pinned upstream base (:meth:`Series.pin`, which
also prints the one status line saying where it came from), the stack
built on it (:meth:`Series.stack`, memoised), the checkout
(:meth:`Series.checkout`) and the per-user cache repository
(:attr:`Series.cache`). No command opens a repository or reads the
manifest itself.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from series import upstream
from series.checkout import Checkout
from series.errors import SeriesError
from series.files import clear_stale_temps
from series.git import FileStat, MailInfo, Repo, patch_stat, read_mail
from series.manifest import Manifest, Patch, load
from series.stack import memo
from series.stack.build import Built, PatchFile
from series.stack.build import build as build_stack
from series.ui import Ui

# What commands may use of the git layer's values, without importing it.
__all__ = ["FileStat", "MailInfo", "Series", "default_cache_dir", "find_root"]


def default_cache_dir() -> Path:
    if os.environ.get("SERIES_CACHE_DIR"):
        return Path(os.environ["SERIES_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "keras-series"


def _clear_leftovers(root: Path, manifest: Manifest) -> None:
    """Remove the temporary files a killed series run left in the project (never the user's)."""
    resolutions = root / "resolutions"
    dirs = {root, root / ".series", root / "patches"}
    dirs |= {(root / p.file).parent for p in manifest.patches}
    if resolutions.is_dir() and not resolutions.is_symlink():
        dirs.add(resolutions)
        with contextlib.suppress(OSError):  # unreadable: the command that reads it says so
            dirs |= {d for d in resolutions.iterdir() if d.is_dir() and not d.is_symlink()}
    clear_stale_temps(*dirs)


def find_root(start: Path) -> Path:
    for candidate in (start, *start.parents):
        if (candidate / "series.toml").is_file():
            return candidate
    raise SeriesError(
        f"no series.toml in {start} or any parent directory",
        hint="run series inside the keras-series project, or pass -C DIR",
    )


@dataclass
class Series:
    root: Path
    manifest: Manifest
    cache_dir: Path
    _pins: dict[tuple[str | None, str | None], upstream.Base] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def load(
        cls, root: Path | None = None, cache_dir: Path | None = None, *, missing_ok: bool = False
    ) -> Series:
        """``missing_ok``: a patch file may be missing (export writes it again)."""
        root = find_root(Path.cwd()) if root is None else root.resolve()
        manifest = load(root / "series.toml", missing_ok=missing_ok)
        _clear_leftovers(root, manifest)
        return cls(root, manifest, cache_dir or default_cache_dir())

    # -- the prologue every command shares ------------------------------------
    @cached_property
    def cache(self) -> Repo:
        """The per-user cache repository: upstream bases and memoised stacks."""
        return upstream.cache_repo(self.cache_dir)

    def pin(
        self,
        ui: Ui,
        *,
        source: str | None = None,
        override: str | None = None,
        why: str = "--source",
    ) -> upstream.Base:
        """The pinned upstream base in the cache repository, said once on stderr."""
        key = (source, override)
        if key not in self._pins:
            base = upstream.resolve(
                self.manifest.upstream,
                self.cache_dir,
                source=source,
                override=override,
                why=why,
                say=ui.status,
            )
            ui.status(f"upstream: {base.label} [{base.source}: {base.reason}]")
            self._pins[key] = base
        return self._pins[key]

    def stack(
        self, base: str, patches: list[Patch] | None = None, *, memoised: bool = True
    ) -> Built:
        """``patches`` (default: all) applied in order on ``base``, in the cache repository."""
        files = self.patch_files(list(self.manifest.patches) if patches is None else patches)
        if memoised:
            return memo.build(self.cache, base, files)
        return build_stack(self.cache, base, files)

    # -- the manifest's patches ---------------------------------------------------
    def patch_path(self, patch: Patch) -> Path:
        return self.root / patch.file

    def patch_files(self, patches: list[Patch]) -> list[PatchFile]:
        return [PatchFile(p, self.patch_path(p)) for p in patches]

    def project_repo(self) -> Repo | None:
        """The git repository the project itself lives in, when it is one."""
        repo = Repo(self.root)
        return repo if repo.is_repo() else None

    def checkout(self, directory: Path | None = None) -> Checkout:
        path = directory if directory is not None else self.root / self.manifest.checkout
        return Checkout(path.resolve(), self.manifest.branch)

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
        """The patch file read as ``git am`` reads it."""
        return read_mail(self.patch_path(patch))

    def stat(self, patch: Patch) -> list[FileStat]:
        """Per-file line counts of the patch file."""
        return patch_stat(self.patch_path(patch))
