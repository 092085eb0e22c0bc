"""The docs' option tables are the commands' declarations, as ``--help`` is.

Each ``<!-- options: NAME -->`` block in docs/*.md is written by
series.cli.docs from the declaration in series.commands.NAME; a block that
differs from it is stale, and so is a command that has no block.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from series import cli
from series.cli import docs

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_the_option_tables_in_the_docs_are_current() -> None:
    stale = docs.problems(DOCS)
    assert not stale, "\n".join(stale) + f"\nregenerate with: {docs.REGENERATE}"


def test_every_option_of_the_usage_line_has_a_row(capsys: pytest.CaptureFixture[str]) -> None:
    """The flags ``series NAME --help`` shows in its usage are the flags of NAME's rows."""
    pages = "".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))
    for command in cli.COMMANDS:
        assert cli.main([command.name, "--help"]) == 0
        usage = capsys.readouterr().out.split("\n\n")[0]
        shown = {w.strip("[]") for w in usage.split() if w.lstrip("[").startswith("-")}
        start = pages.index(f"<!-- options: {command.name} -->")
        table = pages[start : pages.index("<!-- end options -->", start)]
        cells = [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines()]
        first = {c.split()[0].strip("`") for c in cells if c.startswith("`-")}
        assert first == shown - {"-h"}, command.name


def test_a_stale_table_is_named_and_rewritten(tmp_path: Path) -> None:
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy)
    page = copy / "rebase.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("| `--skip` | drop", "| `--skip` | throw away"), encoding="utf-8")
    assert docs.problems(copy) == ["rebase.md: the options of `series rebase` are stale"]
    assert docs.main(["--docs", str(copy)]) == 1
    assert docs.main(["--docs", str(copy), "--write"]) == 0
    assert page.read_text(encoding="utf-8") == text
    assert docs.problems(copy) == []


def test_a_command_without_a_table_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy)
    page = copy / "status.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("<!-- options: status -->", "<!-- options: stats -->"))
    assert docs.problems(copy) == [
        "a block names `series stats`, which is no command",
        "`series status` has no options block in docs/ "
        "(add '<!-- options: status -->' and '<!-- end options -->' to its page)",
    ]
