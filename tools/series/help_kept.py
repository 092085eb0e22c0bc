"""``series --help`` kept as argparse wrote it, under a digest of all its text depends on.

The top-level help is argparse's formatting of the command table: a
function of series' code (series.code.code_digest), of Python's (its
version: argparse's own wording and layout), of the width argparse takes
(``shutil.get_terminal_size``: ``COLUMNS``, else the terminal on stdout)
and of what could translate or colour it (the locale's variables, the
colour switches). Building the parser (argparse, the command table, the
options' declarations with ``re``) cost ``series --help`` twice Python's
own start-up (issue 23). So the CLI keeps the text it printed
(:func:`keep`) in the per-user cache (``help/<digest>``), and
series.entry, for ``series --help`` (or ``-h``) alone, writes the text
kept under the digest of now (:func:`recall`) without importing the CLI
(:func:`words`: also after ``-C DIR``, which changes nothing in the help),
as the CLI writes it (series.stack.branches_kept.say_text, both: on stderr
with no stdout, exit 141 when the reader went away).
Any other command line, a digest with no text kept, or a text that cannot
be read, is the CLI's to answer. The text is written whole, or not at all
(a temporary file renamed into place).

The text is printed as it is, escapes and all, so only a text this user's
series wrote is: the entry is sealed and read as the other kept answers
are (series.stack.branches_kept.seal, read_entry: this user's file, that
no one else may write, whole, of this format), and names the digest it
was kept under (a file copied or linked from another digest's name is not
taken). The digest is no secret: another user who may write the cache
could otherwise have ``series --help`` print their text (docs/hardening.md).

It imports only what series.stack.branches_kept does.
"""

from __future__ import annotations

import os
import sys
from _blake2 import blake2b

from series.code import code_digest
from series.stack.branches_kept import cache_dir, read_entry, seal, write
from series.stack.branches_kept import gone as gone  # series.cli writes through these
from series.stack.branches_kept import say_text as say_text

FORMAT = 2  # 1: the text alone, unsealed
DIR = "help"
FIELDS = ("format", "key", "text")
HELP = ("--help", "-h")
# What may change argparse's text besides the code and the width: its translation
# (gettext's variables) and, in later Pythons, its colours.
ENVIRONMENT = (
    *("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"),
    *("NO_COLOR", "FORCE_COLOR", "PYTHON_COLORS", "TERM"),
)


def words(argv: list[str]) -> bool:
    """Whether ``argv`` asks argparse for the top-level help and nothing else:
    ``[-C DIR] --help`` (or ``-h``); ``DIR``, as argparse takes it after ``-C``, any word
    that does not start with ``-`` (its type, series.commands.options.path, takes any)."""
    if len(argv) == 3 and argv[0] == "-C" and not argv[1].startswith("-"):
        argv = argv[2:]
    return len(argv) == 1 and argv[0] in HELP


def key() -> str:
    """The digest of what the help's text depends on, now."""
    try:
        stdout = sys.__stdout__
        size = str(os.get_terminal_size(stdout.fileno()).columns) if stdout else "-"
        tty = str(bool(stdout and stdout.isatty()))
    except (AttributeError, ValueError, OSError):
        size, tty = "-", "-"
    env = [f"{name}={os.environ.get(name, '')}" for name in ("COLUMNS", *ENVIRONMENT)]
    said = "\0".join([str(FORMAT), sys.version, size, tty, *env])
    return blake2b(said.encode() + b"\0" + code_digest(), digest_size=32).hexdigest()


def _path(digest: str) -> str:
    return os.path.join(cache_dir(), DIR, digest)


def recall() -> str | None:
    """The help's text kept under the digest of now; None when there is none, or none this
    user's series wrote whole under it."""
    digest = key()
    entry = read_entry(_path(digest), FIELDS, FORMAT)
    if entry is None or entry["key"] != digest:
        return None
    return entry["text"] or None


def keep(text: str) -> None:
    """Keep ``text``, the help the CLI printed now; an entry that cannot be written costs
    only speed."""
    digest = key()
    sealed = seal([str(FORMAT), digest, text])
    if sealed is not None:
        write(_path(digest), sealed)
