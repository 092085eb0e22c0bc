"""The ``Series`` object: manifest, patch files, cache and checkout, built once.

Commands receive one ``Series`` and never open repositories or read the
manifest themselves. A checkout made by ``series apply`` records its state in
its own git directory, documented in docs/manifest.md ("Checkout state"):

* ``refs/series/base``: the upstream commit the stack sits on;
* ``refs/series/synced``: the branch tip last written by apply or export;
  commits above it that it does not contain were never exported;
* ``series/state.json``: format version, source, and the ids applied.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from series.errors import RefusedError, SeriesError
from series.git import Repo, mailinfo
from series.manifest import Manifest, Patch, load

BASE_REF = "refs/series/base"
SYNCED_REF = "refs/series/synced"
BACKUP_PREFIX = "refs/series/backup/"
STATE_FORMAT = 1
TRAILER = "Series-Id"
_TRAILER = re.compile(rf"^{TRAILER}:\s*(\S+)\s*$", re.MULTILINE)


def default_cache_dir() -> Path:
    if os.environ.get("SERIES_CACHE_DIR"):
        return Path(os.environ["SERIES_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "keras-series"


def find_root(start: Path) -> Path:
    for candidate in (start, *start.parents):
        if (candidate / "series.toml").is_file():
            return candidate
    raise SeriesError(
        f"no series.toml in {start} or any parent directory",
        hint="run series inside the keras-series project, or pass -C DIR",
    )


def series_id(message: str) -> str | None:
    found = _TRAILER.findall(message)
    return found[-1] if found else None


def with_trailer(message: str, patch_id: str) -> str:
    """The message with exactly one ``Series-Id`` trailer, naming ``patch_id``."""
    body = _TRAILER.sub("", message).rstrip()
    paragraphs = body.split("\n\n")
    last = paragraphs[-1].splitlines() if len(paragraphs) > 1 else []
    is_trailer_block = bool(last) and all(re.match(r"^[A-Za-z0-9-]+: ", ln) for ln in last)
    sep = "\n" if is_trailer_block else "\n\n"
    return f"{body}{sep}{TRAILER}: {patch_id}\n"


@dataclass(frozen=True)
class CheckoutState:
    base: str
    synced: str | None
    applied: tuple[str, ...]
    source: str


class Checkout:
    """A ``series apply`` checkout: a git repository with a branch of the stack."""

    def __init__(self, path: Path, branch: str) -> None:
        self.path = path
        self.repo = Repo(path)
        self.branch = branch
        self.branch_ref = f"refs/heads/{branch}"

    def exists(self) -> bool:
        return self.repo.is_repo()

    @property
    def state_file(self) -> Path:
        return self.repo.git_dir / "series" / "state.json"

    def state(self) -> CheckoutState | None:
        if not self.exists() or not self.state_file.is_file():
            return None
        data = json.loads(self.state_file.read_text(encoding="utf-8"))
        if data.get("format") != STATE_FORMAT:
            raise SeriesError(
                f"{self.path} was made by another version of series",
                why=f"state format {data.get('format')!r}, this series reads {STATE_FORMAT}",
                hint="export with the version that made it, or apply into a new --dir",
            )
        base = self.repo.rev(BASE_REF)
        if base is None:
            return None
        return CheckoutState(
            base, self.repo.rev(SYNCED_REF), tuple(data["applied"]), data["source"]
        )

    def write_state(self, applied: list[str], source: str) -> None:
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": STATE_FORMAT, "applied": applied, "source": source}
        self.state_file.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    def require(self) -> CheckoutState:
        state = self.state()
        if state is None:
            raise SeriesError(
                f"{self.path} is not a series checkout",
                hint="run `series apply` first (or pass --dir to the checkout you used)",
            )
        return state

    def tip(self) -> str | None:
        return self.repo.rev(self.branch_ref)

    def unexported(self, state: CheckoutState) -> list[str]:
        """Commits on the branch that neither apply nor export wrote."""
        tip = self.tip()
        if tip is None or tip == state.synced:
            return []
        if state.synced is not None and self.repo.is_ancestor(tip, state.synced):
            return []
        return self.repo.commits(state.synced or state.base, tip)

    def on_branch(self) -> bool:
        return self.repo.symbolic_head() == self.branch_ref


@dataclass
class Series:
    root: Path
    manifest: Manifest
    cache_dir: Path

    @classmethod
    def load(cls, root: Path | None = None, cache_dir: Path | None = None) -> Series:
        root = find_root(Path.cwd()) if root is None else root.resolve()
        manifest = load(root / "series.toml")
        return cls(root, manifest, cache_dir or default_cache_dir())

    def patch_path(self, patch: Patch) -> Path:
        return self.root / patch.file

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

    def mail(self, patch: Patch) -> tuple[str, str, str]:
        """(subject, body, author) of a patch file, read as ``git am`` reads it."""
        with tempfile.TemporaryDirectory(prefix="series-mail-") as tmp:
            info = mailinfo(self.patch_path(patch), Path(tmp))
        return info.subject, info.body, f"{info.author.name} <{info.author.email}>"


def refuse_dirty(checkout: Checkout, action: str) -> None:
    dirty = checkout.repo.dirty()
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
