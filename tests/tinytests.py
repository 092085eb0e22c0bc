"""A tiny pytest project as "upstream", with patches that exercise every test status.

The upstream package is ``tiny`` (the manifest's upstream.name, as helpers
writes it). Its tests, on the pin: ``test_add`` and ``test_mul`` pass,
``test_div`` fails (an upstream bug), ``test_pow`` is skipped and
``test_squares`` passes through a conftest fixture.

* P1 is harmless (all statuses as at the pin);
* P2 breaks ``mul`` (a new failure) and the fixture behind ``test_squares``
  (an error), and adds a module that upstream's ruff rules reject;
  (``tiny/table.py`` has an unused import at the pin: pre-existing for lint);
* P3 rewrites P2's line (so it cannot apply alone), adds ``sub`` with a new
  test file that the pin does not have, and selects two node ids.
"""

from __future__ import annotations

from pathlib import Path

from helpers import PatchSpec, Project, make_project

TINY_FILES = {
    "pyproject.toml": '[project]\nname = "tiny"\nversion = "1.0"\n\n'
    "[tool.ruff]\nline-length = 80\n\n"
    '[tool.ruff.lint]\nselect = ["E", "F", "I"]\n',
    "conftest.py": "import pytest\n\nfrom tiny import table\n\n\n"
    "@pytest.fixture\ndef squares():\n    return table.squares(4)\n",
    "tiny/__init__.py": "",
    "tiny/ops.py": "def add(a, b):\n    return a + b\n\n\n"
    "def mul(a, b):\n    return a * b\n\n\n"
    "def div(a, b):\n    return a // b\n",
    # An unused import: upstream's own lint drift, pre-existing for a patch that edits the file.
    "tiny/table.py": "import os\n\n\ndef squares(n):\n    return [i * i for i in range(n)]\n",
    "tests/test_ops.py": "import pytest\n\nfrom tiny import ops\n\n\n"
    "def test_add():\n    assert ops.add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert ops.mul(-2, 3) == -6\n\n\n"
    "def test_div():\n    assert ops.div(7, 2) == 3.5\n\n\n"
    '@pytest.mark.skip(reason="pow is not written yet")\n'
    "def test_pow():\n    assert ops.pow(2, 3) == 8\n\n\n"
    "def test_squares(squares):\n    assert squares == [0, 1, 4, 9]\n",
}

OPS = "tests/test_ops.py"
# 85 characters: too long for upstream's line-length 80, fine for ruff's default 88.
LONG_LINE = "# " + "x" * 83 + "\n"

TINY_SPECS = [
    PatchSpec(
        "P1",
        "ops: add returns b + a",
        {"tiny/ops.py": ("    return a + b\n", "    return b + a\n")},
        subset=(OPS,),
        body="Upstream: #1000.",
    ),
    PatchSpec(
        "P2",
        "ops: mul via abs; table: squares raises",
        {
            "tiny/ops.py": ("    return a * b\n", "    return abs(a) * b\n"),
            "tiny/table.py": (
                "    return [i * i for i in range(n)]\n",
                '    raise ValueError("squares is broken")\n',
            ),
        },
        new_files={"tiny/extra.py": f"import os\n{LONG_LINE}x=1\n"},
        subset=(OPS,),
        body="Upstream: #1001.",
    ),
    PatchSpec(
        "P3",
        "ops: mul keeps its sign, add sub",
        {
            "tiny/ops.py": (
                "    return abs(a) * b\n",
                "    return a * b if a >= 0 else -(abs(a) * b)\n\n\n"
                "def sub(a, b):\n    return a - b\n",
            )
        },
        new_files={
            "tests/test_sub.py": "from tiny import ops\n\n\n"
            "def test_sub():\n    assert ops.sub(5, 3) == 2\n"
        },
        subset=("tests/test_sub.py", f"{OPS}::test_add", f"{OPS}::test_mul"),
        body="Upstream: https://github.com/keras-team/keras/pull/1002",
    ),
]


def make_tiny_project(tmp: Path, specs: list[PatchSpec] | None = None) -> Project:
    """The tiny upstream with ``specs`` (default: P1..P3 above) as the series."""
    return make_project(tmp, TINY_SPECS if specs is None else specs, TINY_FILES)


def edit_patch(project: Project, patch_id: str, old: str, new: str) -> None:
    """Change one line of a patch file in place (a maintainer amending the patch)."""
    path = project.root / "patches" / f"perf-{patch_id}.patch"
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))
