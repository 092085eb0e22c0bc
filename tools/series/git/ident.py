"""An author or committer, as git takes it from the environment.

A record (series.records: a ``NamedTuple`` without typing), apart from
series.git.run: neither imports dataclasses (and inspect), which a
``series rebase --abort`` does not load.
"""

from __future__ import annotations

from series.records import NamedTuple


class Ident(NamedTuple):
    """An author or committer: name, email and a git date string."""

    name: str
    email: str
    date: str

    def env(self, role: str) -> dict[str, str]:
        return {
            f"GIT_{role}_NAME": self.name,
            f"GIT_{role}_EMAIL": self.email,
            f"GIT_{role}_DATE": self.date,
        }
