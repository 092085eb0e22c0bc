"""What docs/ claim about timings and exit codes is checked, not only written.

Every section of docs/ that states a timing has a source that prints or
checks it (ci/doc_figures.py); the timeouts the docs name are the code's
defaults; the exit codes the docs and `--help` name are the ones series
uses. docs/json.md's "every command takes --json" is checked in
tests/test_json.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from series.cli import COMMANDS, main
from series.errors import Exit

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "ci" / "doc_figures.py"
# 143 (terminated) and 129 (hung up): 128 + the signal, as a shell reports it
CODES = {int(e) for e in Exit} | {129, 143}


def figures(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(FIGURES), *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_every_timing_in_the_docs_has_a_source() -> None:
    proc = figures()
    assert proc.returncode == 0, proc.stderr
    assert "docs/bench.md § Speed of the tool: 10 minutes, 511 s" in proc.stdout
    assert "<- script: ci/bench_series.py" in proc.stdout


def test_a_timing_without_a_source_is_named(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in (ROOT / "docs").glob("*.md"):
        (docs / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    page = docs / "status.md"
    page.write_text(page.read_text() + "\n## Speed\n\n`series status` takes 0.3 s.\n")
    proc = figures("--docs", str(docs), "--quiet")
    assert proc.returncode == 1
    assert "docs/status.md § Speed: 1 timing(s) (0.3 s) and no source" in proc.stderr


def test_the_documented_timeouts_are_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    from series.git.remote import net_timeout
    from series.locks import lock_timeout

    monkeypatch.delenv("SERIES_NET_TIMEOUT", raising=False)
    monkeypatch.delenv("SERIES_LOCK_TIMEOUT", raising=False)
    assert net_timeout() == 30 and lock_timeout() == 300
    rebase = (ROOT / "docs/rebase.md").read_text()
    branches = " ".join((ROOT / "docs/branches.md").read_text().split())
    workflow = (ROOT / "docs/workflow.md").read_text()
    assert "gives up after 30 s without data" in " ".join(rebase.split())
    assert "gives up after 30 s without data (SERIES_NET_TIMEOUT)" in branches
    assert "giving up after 300 s" in workflow


def test_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for code in CODES:
        assert re.search(rf"\b{code} [a-z(]", text), (code, text)


def test_the_docs_and_epilogs_name_only_exit_codes_series_uses() -> None:
    said = re.compile(r"\bexit(?: code| status)?:? \(?(\d+)\b|\bexits? (\d+)\b")
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = " ".join(page.read_text(encoding="utf-8").split())
        for m in said.finditer(text):
            code = int(m.group(1) or m.group(2))
            assert code in CODES, f"docs/{page.name}: exit {code} is not one of {sorted(CODES)}"
    for command in COMMANDS:
        epilog = getattr(command.load(), "EPILOG", None) or ""
        for code in re.findall(r"(?:^|[:;] )(\d+) ", epilog):
            assert int(code) in CODES, (command.name, code, epilog)
