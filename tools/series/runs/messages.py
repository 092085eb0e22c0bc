"""Commit-message rules for ``series lint``: what upstream reviewers read, checked.

A patch's message (its subject and body, as ``git am`` reads the patch
file) must have:

* ``subject``: the form ``area: summary`` (the area one or more words of
  letters, digits, ``_ . / -``, comma-separated; the summary starting
  right after one space), at most SUBJECT_MAX characters;
* ``machine-path``: no absolute path of any machine (home and scratch
  directories, ``/work/``, a Windows drive, ``site-packages``, a
  virtualenv's ``bin/python``): a command in a message must run as
  written from a fresh checkout; URLs are not paths and are skipped;
* ``upstream-pr``: when the manifest gives the patch a ``pr``, the
  message names it, as ``#N`` or a ``.../pull/N`` URL;
* ``trailers``: the last paragraph is a block of ``Key: value`` trailer
  lines, with exactly one ``Series-Id`` in the whole message, equal to
  the patch's id.

Each problem is a ``MessageIssue`` naming the rule, the line of the message
(1 is the subject) and what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from series.builder.message import TRAILER
from series.manifest import Patch

SUBJECT_MAX = 72
_SUBJECT = re.compile(r"^[\w./-]+(?:, ?[\w./-]+)*: \S")
_TRAILER_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*: \S")
_SERIES_ID = re.compile(rf"^{TRAILER}:\s*(.*?)\s*$", re.MULTILINE)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
# Each alternative takes the rest of the path, so one path is one problem.
_REST = r"[^\s:;,'\"`()<>]*"
MACHINE_PATHS = re.compile(
    rf"(?<![\w.-])/(?:home|root|work|tmp|Users|mnt|opt|srv|var/folders|private/var)/{_REST}"
    rf"|(?<![\w])[A-Za-z]:\\{_REST}"
    rf"|{_REST}site-packages{_REST}"
    rf"|{_REST}\bbin/python[\d.]*\b"
)


@dataclass(frozen=True)
class MessageIssue:
    rule: str
    line: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "line": self.line, "message": self.message}


def check_message(patch: Patch, subject: str, body: str) -> list[MessageIssue]:
    """Every rule's problems with one patch's message, in line order within a rule."""
    lines = [subject, "", *body.splitlines()] if body else [subject]
    return [
        *_subject(subject),
        *_machine_paths(lines),
        *_upstream_pr(patch, body),
        *_trailers(patch, lines),
    ]


def _subject(subject: str) -> list[MessageIssue]:
    issues = []
    if not _SUBJECT.match(subject):
        issues.append(MessageIssue("subject", 1, f"not of the form 'area: summary': {subject!r}"))
    if len(subject) > SUBJECT_MAX:
        issues.append(
            MessageIssue("subject", 1, f"{len(subject)} characters, more than {SUBJECT_MAX}")
        )
    return issues


def _machine_paths(lines: list[str]) -> list[MessageIssue]:
    issues = []
    for number, line in enumerate(lines, start=1):
        for found in MACHINE_PATHS.finditer(_URL.sub(" ", line)):
            issues.append(
                MessageIssue(
                    "machine-path",
                    number,
                    f"a path of one machine ({found.group(0)!r}): commands must run "
                    "as written from a fresh checkout",
                )
            )
    return issues


def _upstream_pr(patch: Patch, body: str) -> list[MessageIssue]:
    if patch.pr is None:
        return []
    named = re.search(rf"(?<![\w&])#{patch.pr}\b|/pull/{patch.pr}\b", body)
    if named:
        return []
    return [
        MessageIssue(
            "upstream-pr",
            0,
            f"does not name the upstream PR: series.toml has pr = {patch.pr}; "
            f"add #{patch.pr} or its URL ({patch.pr_url})",
        )
    ]


def _trailers(patch: Patch, lines: list[str]) -> list[MessageIssue]:
    issues = []
    start = _last_paragraph(lines)
    block = lines[start:] if start > 1 else []
    # A folded value (a line starting with whitespace) continues the trailer above it.
    bad = [
        (start + offset + 1, line)
        for offset, line in enumerate(block)
        if not _TRAILER_LINE.match(line) and not (offset and line[:1].isspace())
    ]
    if block and len(bad) == len(block):
        issues.append(
            MessageIssue("trailers", start + 1, "the last paragraph is not a trailer block")
        )
    else:
        for number, line in bad:
            issues.append(MessageIssue("trailers", number, f"not a 'Key: value' trailer: {line!r}"))
    ids = [
        (number, m.group(1))
        for number, line in enumerate(lines, start=1)
        if (m := _SERIES_ID.match(line))
    ]
    if not ids:
        issues.append(MessageIssue("trailers", 0, f"no {TRAILER} trailer (want {patch.id})"))
    if len(ids) > 1:
        where = ", ".join(str(n) for n, _ in ids)
        issues.append(MessageIssue("trailers", ids[1][0], f"{len(ids)} {TRAILER} lines ({where})"))
    for number, value in ids:
        if value != patch.id:
            issues.append(
                MessageIssue("trailers", number, f"{TRAILER} is {value!r}, not {patch.id!r}")
            )
        if number <= start:
            issues.append(
                MessageIssue("trailers", number, f"{TRAILER} is not in the last paragraph")
            )
    return issues


def _last_paragraph(lines: list[str]) -> int:
    """Index of the first line of the last paragraph (0: the message is one paragraph)."""
    for index in range(len(lines) - 1, -1, -1):
        if not lines[index].strip():
            return index + 1
    return 0
