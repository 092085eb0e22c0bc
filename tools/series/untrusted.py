"""Strings from series.toml and the command line that become arguments of git.

series.toml arrives through pull requests, and the command line through
scripts and CI jobs, so a URL, path, remote or revision from either may be
hostile. Each is checked here, before anything runs, and refused when:

* it starts with ``-``: git would read ``--upload-pack=CMD`` as an option and
  run CMD (the git layer also puts ``--`` or ``--end-of-options`` before
  such values, so this holds where a check is missed; here it is refused
  early and clearly);
* as a URL, it names a transport other than https, http, ssh, git or a
  local path (``file://``, a path, ``host:path``): ``ext::CMD`` runs CMD,
  and any other ``NAME::`` or unknown ``NAME://`` starts a remote helper
  program. The git layer also sets ``GIT_ALLOW_PROTOCOL`` (series.git.run).

The checks return the problem in words, or None; the manifest (a
ManifestError naming the key) and the command line (a usage error naming
the option) say it in their own way. docs/hardening.md lists the cases.
"""

from __future__ import annotations

TRANSPORTS = ("https", "http", "ssh", "git", "file")
_ALIASES = {"git+ssh": "ssh", "ssh+git": "ssh"}
# The checks below spell out regular expressions (each in its docstring) without re, whose
# import (with enum's) was 2 ms of every command that reads series.toml; tests/
# test_import_diet.py compares them.
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # ASCII's: [A-Za-z]
LETTERS_DIGITS = LETTERS + "0123456789"
# git starts the helper git-remote-NAME for "NAME::ADDRESS" (NAME of RFC 3986
# unreserved characters, possibly none) and for "NAME://" it does not know.
_UNRESERVED = LETTERS_DIGITS + "._~+-"
_RUNS = "--upload-pack=CMD runs CMD"

URL_RULE = (
    "a URL (https://, http://, ssh://, git://, file://, or host:path) or a local path, "
    "not starting with '-'"
)


def _common(value: str, what: str) -> str | None:
    if value.startswith("-"):
        return f"{value!r} starts with '-': git would take the {what} for an option ({_RUNS})"
    if control(value):
        return f"{value!r} holds a control character"
    return None


def url_problem(value: str, what: str = "URL") -> str | None:
    """Why ``value`` may not be given to git as a URL, path or remote name; None if it may."""
    found = _common(value, what)
    if found:
        return found
    named = helper(value)
    if named is not None:
        return (
            f"{value!r} names the remote helper {named or '(empty)'}:: (ext:: runs any "
            f"command): series fetches and pushes only over {', '.join(TRANSPORTS)}, or from "
            "a local path"
        )
    scheme = scheme_of(value)
    if scheme is not None:
        name = scheme.lower()
        if _ALIASES.get(name, name) not in TRANSPORTS:
            return (
                f"{value!r} uses {name}://, which git serves with a remote helper program: "
                f"series fetches and pushes only over {', '.join(TRANSPORTS)}, or from a local path"
            )
    return None


def control(value: str) -> bool:
    """Whether ``value`` holds a control character: ``re.search(r"[\\x00-\\x1f\\x7f]")``."""
    return any(c <= "\x1f" or c == "\x7f" for c in value)


def helper(value: str) -> str | None:
    """The remote helper ``value`` names as ``NAME::ADDRESS`` (NAME possibly empty), or None:
    ``re.match(r"[A-Za-z0-9._~+-]*::")`` (no ":" is in NAME: the first "::" ends it)."""
    name, sep, _ = value.partition("::")
    return name if sep and not name.strip(_UNRESERVED) else None


def scheme_of(value: str) -> str | None:
    """The scheme of ``value`` as ``SCHEME://...``, or None:
    ``re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://").group(1)`` (no ":" is in SCHEME)."""
    name, sep, _ = value.partition("://")
    return name if sep and spelled(name, LETTERS, LETTERS_DIGITS + "+.-") else None


def spelled(value: str, first: str, rest: str, last: str = "") -> bool:
    """Whether ``value`` is one character of ``first``, then characters of ``rest``, and
    (``last`` given) ends with one of ``last``: ``[first][rest]*`` matched in full."""
    return (
        value[:1] != ""
        and value[0] in first
        and not value[1:].strip(rest)  # none left when all are of rest
        and (not last or value[-1] in last)
    )


def revision_problem(value: str) -> str | None:
    """Why ``value`` may not be given to git as a revision (a ref or commit); None if it may."""
    return _common(value, "revision")


def path_hint(value: str) -> str:
    """How to name a local path that starts with '-', or what to pass instead."""
    if value.startswith("-") and "::" not in value:
        return f"a local path that starts with '-' can be written ./{value}"
    return f"pass {URL_RULE}"
