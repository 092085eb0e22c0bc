"""What series.git.run strips from the environment before git runs, and the transports it allows.

Apart from series.git.run (GitPython's runner, pathlib, re) so that a
re-run answered before the CLI is imported (series.stack.verified_kept)
knows the same variables: it imports nothing.
"""

from __future__ import annotations

# git's own list (git rev-parse --local-env-vars, 2.39), the namespace, the
# quarantine of a receive hook; GIT_CONFIG_KEY_n/VALUE_n go with GIT_CONFIG_COUNT.
INHERITED = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_DIR",
        "GIT_GRAFT_FILE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_NAMESPACE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_PREFIX",
        "GIT_QUARANTINE_PATH",
        "GIT_REPLACE_REF_BASE",
        "GIT_SHALLOW_FILE",
        "GIT_WORK_TREE",
    }
)
_CONFIG_PAIRS = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"


def inherited(name: str) -> bool:
    """Whether the environment variable ``name`` is one series.git.run strips."""
    return name in INHERITED or name.startswith(_CONFIG_PAIRS)
