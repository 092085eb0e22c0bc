"""An author or committer, as git takes it from the environment.

A dataclass, apart from series.git.run: a rebase's saved state holds it
(``dataclasses.asdict``, series.stack.rebase_plan), and the git layer's
runner, on every command's path, does not import dataclasses (and inspect).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ident:
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
