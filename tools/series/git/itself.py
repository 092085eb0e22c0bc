"""Whether the git ``PATH`` leads to is git itself, as far as its file can say.

series.git.version keeps its verdict on git's version only for such a file,
and the answers kept before the CLI is imported (series.stack.branches_kept,
series.stack.verified_kept) are taken for a wrapper script only once git
behind it has been asked this run (:func:`ask`). Imports ``os``, and
series.git.child (which starts git without subprocess) only to ask a
wrapper script: a kept answer that starts no git does not load it.
"""

from __future__ import annotations

import os

MINIMUM = (2, 39)  # series.git.version says why
_SAYS = "git version "

# The first bytes of a binary executable: ELF; Mach-O 32 and 64 bits, either byte order,
# and a universal (fat) one.
_BINARY = frozenset(
    {
        b"\x7fELF",
        b"\xfe\xed\xfa\xce",
        b"\xfe\xed\xfa\xcf",
        b"\xce\xfa\xed\xfe",
        b"\xcf\xfa\xed\xfe",
        b"\xca\xfe\xba\xbe",
    }
)


def is_git_itself(path: str) -> bool:
    """Whether ``path`` is a file whose verdict may be kept: a binary executable whose
    resolved name is ``git`` (not a ``#!`` script, nor a binary of another name that
    PATH leads to through a link)."""
    real = os.path.realpath(path)
    if os.path.basename(real) != "git":
        return False
    try:
        with open(real, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return False
    return head in _BINARY


def ask(path: str) -> tuple[str, tuple[int, ...] | None]:
    """What ``path version`` says, and the version in it (None: unreadable).

    Started as a re-run's one ``git status`` is (series.git.child, without
    subprocess): a wrapper script is asked each run, re-runs answered from what
    was kept included. Not started when git would wait for ever on a configuration
    file it reads first (series.git.inprogress.config_blocking): no version then, and
    the full run refuses, naming the file."""
    from series.git.child import run_child  # docs/architecture.md, rule 12
    from series.git.inprogress import config_blocking

    blocked = config_blocking()
    if blocked is not None:
        return f"(not asked: git would wait for ever on {blocked[1]}, no plain file)", None

    try:
        done = run_child("/", [path, "version"], env={}, stdin=None, stall=None, light=True)  # type: ignore[arg-type]
    except OSError as exc:
        return f"(could not run it: {exc})", None
    out = done.out.decode("utf-8", "replace")
    said = out + done.err.decode("utf-8", "replace")
    version = parse(out)
    if done.status != 0 or version is None:
        return said, None
    return said, version


def parse(out: str) -> tuple[int, int, int] | None:
    """The version ``git version`` printed first (``git version 2.39.1.windows.1``: 2, 39,
    1; a third number missing is 0), None when it does not start so; without ``re``."""
    if not out.startswith(_SAYS):
        return None
    numbers: list[int] = []
    for field in out[len(_SAYS) :].split(".", 3)[:3]:
        digits = len(field) - len(field.lstrip("0123456789"))
        if digits == 0:
            break
        numbers.append(int(field[:digits]))
        if digits != len(field):  # something else follows the number: the version ends
            break
    if len(numbers) < 2:
        return None
    return numbers[0], numbers[1], numbers[2] if len(numbers) > 2 else 0
