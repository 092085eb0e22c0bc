"""The docs' option tables, written from the commands' declarations.

In docs/*.md, the lines between ``<!-- options: NAME -->`` and
``<!-- end options -->`` are the synopsis and option table of ``series
NAME``, made here from the same declarations as its ``--help``; the prose
around them is written by hand. ``python -m series.cli.docs`` checks that
every block is current and every command has one (exit 1, naming what is
stale); ``--write`` rewrites the blocks. tests/test_docs_options.py runs
the check.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from series.cli.table import COMMANDS, Command
from series.commands.options import Declared, Exclusive, Option, flat

REGENERATE = "python -m series.cli.docs --write"
_BLOCK = re.compile(
    r"(?P<open><!-- options: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(?P<close><!-- end options -->)",
    re.DOTALL,
)
_WIDTH = 80


def block(command: Command) -> str:
    """The synopsis and option table of one command, as markdown."""
    declared: Declared = command.load().OPTIONS
    rows = [f"| {_cell(_names(o))} | {_cell(o.help)} |" for o in flat(declared)]
    return (
        "```sh\n"
        + synopsis(command.name, declared)
        + "\n```\n\n| option | meaning |\n| --- | --- |\n"
        + "".join(row + "\n" for row in rows)
    )


def synopsis(name: str, declared: Declared) -> str:
    """``series NAME [ID ...] [--opt VALUE] ...``: positionals first, as the docs write it."""
    words = [_usage(o) for o in flat(declared) if o.positional]
    for item in declared:
        if isinstance(item, Exclusive):
            words.append("[" + " | ".join(_usage(o) for o in item.options) + "]")
        elif not item.positional:
            words.append(f"[{_usage(item)}]")
    head = f"series {name} "
    return textwrap.fill(
        " ".join(w.replace(" ", "\0") for w in words),
        _WIDTH,
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_on_hyphens=False,
    ).replace("\0", " ")


def _usage(o: Option) -> str:
    if o.positional:
        return {"*": f"[{o.shown} ...]", "?": f"[{o.shown}]"}.get(o.nargs or "", o.shown)
    return o.names[0] + (f" {_value(o)}" if o.takes_value else "")


def _value(o: Option) -> str:
    return "|".join(o.choices) if o.choices and o.metavar is None else o.shown


def _names(o: Option) -> str:
    if o.positional:
        return f"`{_usage(o)}`"
    value = f" {_value(o)}" if o.takes_value else ""
    return ", ".join(f"`{flag}{value}`" for flag in o.names)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def refresh(text: str) -> tuple[str, list[str]]:
    """The text with every options block rewritten, and the commands it has blocks for."""
    by_name = {c.name: c for c in COMMANDS}
    found: list[str] = []

    def one(match: re.Match[str]) -> str:
        name = match["name"]
        found.append(name)
        if name not in by_name:
            return match[0]
        return match["open"] + block(by_name[name]) + match["close"]

    return _BLOCK.sub(one, text), found


def problems(docs: Path) -> list[str]:
    """What is stale: blocks that differ from the declarations, unknown or missing commands."""
    found: list[str] = []
    stale: list[str] = []
    for page in sorted(docs.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        new, names = refresh(text)
        found += names
        if new != text:
            old_blocks = {m["name"]: m[0] for m in _BLOCK.finditer(text)}
            new_blocks = {m["name"]: m[0] for m in _BLOCK.finditer(new)}
            stale += [
                f"{page.name}: the options of `series {name}` are stale"
                for name in names
                if old_blocks.get(name) != new_blocks.get(name)
            ]
    known = {c.name for c in COMMANDS}
    stale += [f"a block names `series {n}`, which is no command" for n in found if n not in known]
    stale += [
        f"`series {c.name}` has no options block in {docs.name}/ "
        f"(add '<!-- options: {c.name} -->' and '<!-- end options -->' to its page)"
        for c in COMMANDS
        if c.name not in found
    ]
    return stale


def write(docs: Path) -> list[Path]:
    """Rewrite the stale blocks; the pages that changed."""
    changed = []
    for page in sorted(docs.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        new, _ = refresh(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m series.cli.docs", description=__doc__)
    p.add_argument("--docs", type=Path, default=Path("docs"), help="the docs (default: ./docs)")
    p.add_argument("--write", action="store_true", help="rewrite the stale blocks")
    a = p.parse_args(argv)
    if not a.docs.is_dir():
        p.error(f"{a.docs} is not a directory: run it at the top of the project, or pass --docs")
    if a.write:
        for page in write(a.docs):
            print(f"rewrote {page}")
    found = problems(a.docs)
    for line in found:
        print(line, file=sys.stderr)
    if found and not a.write:
        print(f"regenerate with: {REGENERATE}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
