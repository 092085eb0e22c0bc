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

import re

TRANSPORTS = ("https", "http", "ssh", "git", "file")
_ALIASES = {"git+ssh": "ssh", "ssh+git": "ssh"}
# Compiled when first used (re's cache): parsing a command line imports this module.
# git starts the helper git-remote-NAME for "NAME::ADDRESS" (NAME of RFC 3986
# unreserved characters, possibly none) and for "NAME://" it does not know.
_HELPER = r"^[A-Za-z0-9._~+-]*::"
_SCHEME = r"^([A-Za-z][A-Za-z0-9+.-]*)://"
_CONTROL = r"[\x00-\x1f\x7f]"
_RUNS = "--upload-pack=CMD runs CMD"

URL_RULE = (
    "a URL (https://, http://, ssh://, git://, file://, or host:path) or a local path, "
    "not starting with '-'"
)


def _common(value: str, what: str) -> str | None:
    if value.startswith("-"):
        return f"{value!r} starts with '-': git would take the {what} for an option ({_RUNS})"
    if re.search(_CONTROL, value):
        return f"{value!r} holds a control character"
    return None


def url_problem(value: str, what: str = "URL") -> str | None:
    """Why ``value`` may not be given to git as a URL, path or remote name; None if it may."""
    found = _common(value, what)
    if found:
        return found
    if re.match(_HELPER, value):
        helper = value.partition("::")[0] or "(empty)"
        return (
            f"{value!r} names the remote helper {helper}:: (ext:: runs any command): series "
            f"fetches and pushes only over {', '.join(TRANSPORTS)}, or from a local path"
        )
    scheme = re.match(_SCHEME, value)
    if scheme:
        name = scheme.group(1).lower()
        if _ALIASES.get(name, name) not in TRANSPORTS:
            return (
                f"{value!r} uses {name}://, which git serves with a remote helper program: "
                f"series fetches and pushes only over {', '.join(TRANSPORTS)}, or from a local path"
            )
    return None


def revision_problem(value: str) -> str | None:
    """Why ``value`` may not be given to git as a revision (a ref or commit); None if it may."""
    return _common(value, "revision")


def path_hint(value: str) -> str:
    """How to name a local path that starts with '-', or what to pass instead."""
    if value.startswith("-") and "::" not in value:
        return f"a local path that starts with '-' can be written ./{value}"
    return f"pass {URL_RULE}"
