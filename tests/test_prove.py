"""``series prove`` on the tiny project, on synthetic test modules, and on the real Keras tree.

The tiny series (PROVE_SPECS) has one patch per outcome: P1's new test is
behavioural, P2's tests fail without it only on the name it adds, P3's are
guards plus one broken case, P4 touches a parameterized method and a
module-level line, P5 changes production code with no test, P6 only tests.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from helpers import PatchSpec, Project, git
from series.project import default_cache_dir
from series.runs.testcode import Scope, covers, is_test_file, read_module, touched
from tinytests import OPS, edit_patch, make_tiny_project

DATA = Path(__file__).parent / "data" / "keras"
OPS_PY = "tiny/ops.py"
MUL = "tests/test_mul.py"
MUL_TESTS = """\
import pytest
from absl.testing import parameterized

from tiny import ops


class MulTest(parameterized.TestCase):
    @parameterized.named_parameters(("pos", 2, 3, 6), ("neg", -2, 3, -6))
    def test_mul_cases(self, a, b, want):
        self.assertEqual(ops.mul(a, b), want)

    def test_mul_cases_zero(self):
        self.assertEqual(ops.mul(0, 5), 0)


@pytest.mark.parametrize("a", [1, 2])
def test_mul_one(a):
    assert ops.mul(a, 1) == 1
"""
DIV = "def test_div():\n    assert ops.div(7, 2) == 3.5\n"
HALF = "\n\ndef test_div_half():\n    assert ops.div(1, 2) == 0.5\n"
NEG_ATTR = "\n\ndef test_neg_attr():\n    assert ops.neg(1) == -1\n"

PROVE_SPECS = [
    PatchSpec(
        "P1",
        "ops: div is true division",
        {OPS_PY: ("return a // b\n", "return a / b\n"), OPS: (DIV, DIV + HALF)},
    ),
    PatchSpec(
        "P2",
        "ops: add neg",
        {
            OPS_PY: ("return a / b\n", "return a / b\n\n\ndef neg(a):\n    return -a\n"),
            OPS: (HALF, HALF + NEG_ATTR),
        },
        new_files={
            "tests/test_neg.py": "from tiny.ops import neg\n\n\n"
            "def test_neg():\n    assert neg(2) == -2\n"
        },
    ),
    PatchSpec(
        "P3",
        "ops: mul as b * a",
        {OPS_PY: ("return a * b\n", "return b * a\n")},
        new_files={MUL: MUL_TESTS},
    ),
    PatchSpec(
        "P4",
        "ops: add saturates at 100",
        {
            OPS_PY: ("return a + b\n", "return min(a + b, 100)\n"),
            MUL: ('("neg", -2, 3, -6))', '("neg", -2, 3, -6), ("big", 50, 3, 150))'),
            OPS: (
                "from tiny import ops\n",
                "from tiny import ops\n\nLIMIT = 100\n\n\n"
                "def test_add_saturates():\n    assert ops.add(99, 5) == LIMIT\n",
            ),
        },
    ),
    PatchSpec("P5", "ops: a comment", {OPS_PY: ("def neg(a):\n", "def neg(a):  # -a\n")}),
    PatchSpec("P6", "tests: add 0 + 0", {OPS: ("== 5\n", "== 5\n    assert ops.add(0, 0) == 0\n")}),
]


@pytest.fixture
def proving(tmp_path: Path) -> Project:
    return make_tiny_project(tmp_path, PROVE_SPECS)


def prove_json(project: Project, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    code, out, err = project.run("prove", "--json", *args)
    assert out, err
    return code, {p["id"]: p for p in json.loads(out)["patches"]}, err


def kinds(patch: dict[str, Any]) -> dict[str, str]:
    return {t["id"]: t["class"] for t in patch["tests"]}


def test_each_patch_gets_the_class_its_tests_earn(proving: Project) -> None:
    code, patches, _ = prove_json(proving)
    assert code == 1
    p1 = patches["P1"]
    # Only the test the patch adds; test_div also fails without P1 but is not P1's.
    assert kinds(p1) == {f"{OPS}::test_div_half": "behaviour"}
    assert p1["status"] == "proven" and p1["failed"] is False
    assert p1["production"] == [OPS_PY] and p1["test_files"] == [OPS]
    assert p1["tests"][0]["without"] == "failed"

    p2 = patches["P2"]
    assert kinds(p2) == {
        f"{OPS}::test_neg_attr": "structural",
        "tests/test_neg.py::test_neg": "structural",
    }
    assert "neg" in p2["introduced"]
    assert p2["status"] == "no behavioural test" and p2["failed"] is True
    messages = {t["id"]: t["message"] for t in p2["tests"]}
    assert "cannot import name 'neg'" in messages["tests/test_neg.py::test_neg"]
    assert "has no attribute 'neg'" in messages[f"{OPS}::test_neg_attr"]

    p3 = patches["P3"]
    assert kinds(p3) == {
        f"{MUL}::MulTest::test_mul_cases_pos": "guard",
        f"{MUL}::MulTest::test_mul_cases_neg": "guard",
        f"{MUL}::MulTest::test_mul_cases_zero": "guard",
        f"{MUL}::test_mul_one[1]": "guard",
        f"{MUL}::test_mul_one[2]": "broken",
    }
    assert p3["status"] == "broken tests"


def test_parameterized_and_module_level_changes_select_what_they_touch(
    proving: Project,
) -> None:
    code, patches, _ = prove_json(proving, "P4")
    assert code == 0
    p4 = patches["P4"]
    # The decorator line is test_mul_cases's: its cases run, selected by prefix, and
    # only they count (not test_mul_cases_zero, whose name it prefixes). A new
    # module-level constant: the tests that name it.
    assert p4["selection"] == [f"{MUL}::MulTest::test_mul_cases*", f"{OPS}::test_add_saturates"]
    assert kinds(p4) == {
        **{f"{MUL}::MulTest::test_mul_cases_{case}": "guard" for case in ("pos", "neg", "big")},
        f"{OPS}::test_add_saturates": "behaviour",
    }
    assert p4["status"] == "proven"
    # The harness ran the prefix's four tests, test_add_saturates, and nothing else.
    assert "5 passed" in Path(p4["log"]).read_text(encoding="utf-8")
    assert "1 failed, 4 passed" in Path(p4["reverted_log"]).read_text(encoding="utf-8")


def test_patches_without_tests_and_exemptions(proving: Project) -> None:
    code, patches, _ = prove_json(proving, "P5", "P6")
    assert code == 1
    assert patches["P5"]["status"] == "no tests" and patches["P5"]["failed"]
    assert patches["P6"]["status"] == "tests only" and not patches["P6"]["failed"]
    manifest = proving.root / "series.toml"
    text = manifest.read_text()
    for patch_id in ("P2", "P5"):
        anchor = f'file = "patches/perf-{patch_id}.patch"\n'
        text = text.replace(anchor, anchor + 'no_behaviour_test = "a pure refactor"\n')
    # A broken test that a pin_failures entry explains does not fail P3 (its guards do).
    anchor = 'file = "patches/perf-P3.patch"\n'
    known = f'pin_failures = [{{tests = "{MUL}::test_mul_one[2]", reason = "known"}}]\n'
    manifest.write_text(text.replace(anchor, anchor + known))
    code, patches, _ = prove_json(proving, "P2", "P3", "P5", "P6")
    assert code == 1
    statuses = [p["status"] for p in patches.values()]
    assert statuses == ["exempt", "no behavioural test", "exempt", "tests only"]
    assert patches["P2"]["exempt"] == "a pure refactor"
    broken = [t for t in patches["P3"]["tests"] if t["class"] == "broken"]
    assert [(t["id"], t["known"]) for t in broken] == [(f"{MUL}::test_mul_one[2]", "known")]


def test_results_are_cached_by_tree_and_the_reverted_tree_is_stable(proving: Project) -> None:
    code, cold, _ = prove_json(proving, "P1", "P2")
    assert not any(p["cached"] or p["reverted_cached"] for p in cold.values())
    code, warm, err = prove_json(proving, "P1", "P2")
    assert code == 1
    assert "0 to run" in err
    assert all(p["cached"] and p["reverted_cached"] for p in warm.values())
    assert [warm[i]["reverted"] for i in warm] == [cold[i]["reverted"] for i in cold]
    # The reverted tree: the parent's production files, the patch's tests.
    cache = default_cache_dir() / "upstream.git"
    reverted = cold["P1"]["reverted"]["commit"]
    assert "return a // b" in git(cache, "show", f"{reverted}:{OPS_PY}")
    assert "test_div_half" in git(cache, "show", f"{reverted}:{OPS}")
    p2_tree = cold["P2"]["reverted"]["commit"]
    assert "def neg" not in git(cache, "show", f"{p2_tree}:{OPS_PY}")
    assert "return a / b" in git(cache, "show", f"{p2_tree}:{OPS_PY}")  # P1 stays
    assert "test_neg" in git(cache, "show", f"{p2_tree}:tests/test_neg.py")
    # Editing P2's production change re-runs P2's patched tree only.
    edit_patch(proving, "P2", "+    return -a", "+    return 0 - a")
    _, edited, _ = prove_json(proving, "P1", "P2")
    assert edited["P1"]["cached"] and edited["P1"]["reverted_cached"]
    assert not edited["P2"]["cached"] and edited["P2"]["reverted_cached"]
    _, forced, _ = prove_json(proving, "P1", "--no-cache")
    assert not forced["P1"]["cached"]


def test_a_patch_that_does_not_apply_fails_without_running_tests(proving: Project) -> None:
    edit_patch(proving, "P1", "-    return a // b", "-    return a % b")
    code, patches, _ = prove_json(proving, "P1", "P2")
    assert code == 1
    assert patches["P1"]["status"] == "does not apply" and OPS_PY in patches["P1"]["detail"]
    assert patches["P2"]["detail"] == "an earlier patch does not apply"
    assert not (default_cache_dir() / "worktrees").exists()


def test_the_table_flags_and_bad_arguments(proving: Project) -> None:
    code, out, _ = proving.run("prove", "P1", "P2", "-j", "1")
    assert code == 1
    assert out.index("P2: no behavioural test") < out.index("struct")
    row = next(r for r in (line.split() for line in out.splitlines()) if r[:1] == ["P2"])
    assert row == ["P2", "2", "0", "2", "0", "0", "0", "no", "no", "behavioural", "test"]
    code, out, err = proving.run("prove", "--jobs", "0")
    assert code == 2 and out == "" and "--jobs 0" in err
    code, out, err = proving.run("prove", "P9")
    assert code == 2 and "no patch 'P9'" in err


# -- the rule and the selection, on synthetic modules ----------------------------


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("keras/src/ops/core_test.py", True),
        ("tests/test_x.py", True),
        ("pkg/tests/data/input.json", True),
        ("conftest.py", True),
        ("keras/src/ops/core.py", False),
        ("keras/src/testing/test_utils.py", True),
        ("pkg/contest.py", False),
    ],
)
def test_the_test_file_rule(path: str, is_test: bool) -> None:
    assert is_test_file(path) is is_test


SOURCE = textwrap.dedent(
    """\
    import os

    CONSTANT = 1


    class Base:
        x = 1

        def helper(self):
            return 2

        def test_one(self):
            assert self.helper()

        @mark.slow
        def test_two(self):
            assert 2


    class Child(Base):
        pass


    def test_free():
        assert os
    """
)


@pytest.mark.parametrize(
    ("hunks", "expected"),
    [
        ([(13, 1)], ["Base::test_one", "Child::test_one"]),
        ([(15, 1)], ["Base::test_two", "Child::test_two"]),  # the decorator line
        ([(10, 1)], ["Base::test_one", "Child::test_one"]),  # a helper method: its users
        ([(7, 1)], ["Base", "Child"]),  # a class attribute: the class
        ([(11, 2)], ["Base::test_one", "Child::test_one"]),  # a blank line is nobody's
        ([(25, 1)], ["test_free"]),
        ([(1, 1)], ["test_free"]),  # an import: the tests naming it
        ([(3, 1)], []),  # a constant nothing names: no test
        ([(13, 0)], ["Base::test_one", "Child::test_one"]),  # a deletion inside test_one
    ],
)
def test_touched_scopes(hunks: list[tuple[int, int]], expected: list[str]) -> None:
    module = read_module("t_test.py", SOURCE)
    found = ["::".join(filter(None, (s.cls, s.func))) for s in touched(module, hunks)]
    assert found == expected


HELPERS = textwrap.dedent(
    """\
    import pytest
    from absl.testing import parameterized

    CASES = [("a", 1)]


    def make(n):
        return Model(n)


    class Model:
        def __init__(self, n):
            self.n = n


    class ModelTest(parameterized.TestCase):
        def setUp(self):
            self.base = self._base()

        def _base(self):
            return 0

        def _check(self, n):
            return self._twice(n)

        def _twice(self, n):
            return 2 * n

        @parameterized.named_parameters(CASES)
        def test_cases(self, n):
            assert self._check(n)

        def test_model(self):
            assert make(1).n == 1

        def test_other(self):
            assert True


    @pytest.fixture
    def model():
        return make(2)


    def test_fixture(model):
        assert model.n == 2


    @register
    class Node:
        pass


    def test_node():
        assert Node()
    """
)


@pytest.mark.parametrize(
    ("hunks", "expected"),
    [
        ([(27, 1)], ["ModelTest::test_cases*"]),  # through _check: its user, by prefix
        ([(4, 1)], ["ModelTest::test_cases*"]),  # a constant a decorator names
        ([(13, 1)], [""]),  # a helper class -> make -> a fixture: the whole file
        ([(7, 1)], [""]),  # make's def line: the same
        ([(21, 1)], ["ModelTest"]),  # a helper setUp names: the class
        ([(18, 1)], ["ModelTest"]),  # setUp itself
        ([(34, 1)], ["ModelTest::test_model"]),
        ([(36, 2)], ["ModelTest::test_other"]),
        ([(51, 1)], ["test_node"]),  # a decorated class with no tests is a helper too
    ],
)
def test_a_changed_helper_touches_the_tests_that_name_it(
    hunks: list[tuple[int, int]], expected: list[str]
) -> None:
    path = "h_test.py"
    found = [
        s.selection.removeprefix(path).removeprefix("::")
        for s in touched(read_module(path, HELPERS), hunks)
    ]
    assert found == expected


def test_covers_maps_generated_names_to_their_method() -> None:
    source = "class T:\n    def test_a(self):\n        pass\n\n    def test_a_b(self):\n"
    source += "        pass\n"
    module = read_module("m_test.py", source)
    scopes = [Scope("m_test.py", "T", "test_a", renamed=True)]
    modules = {"m_test.py": module}
    assert covers(scopes, modules, "m_test.py::T::test_a_case1")
    assert covers(scopes, modules, "m_test.py::T::test_a0")
    assert not covers(scopes, modules, "m_test.py::T::test_a_b")
    assert covers(scopes, modules, "m_test.py")  # the module's collection error
    assert not covers(scopes, modules, "other_test.py::T::test_a")


# -- the real Keras tree ------------------------------------------------------------


@pytest.mark.keras
def test_prove_on_the_real_keras_tree(
    tmp_path: Path, keras_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "keras-prove"
    (root / "patches").mkdir(parents=True)
    (root / "series.toml").write_bytes((DATA / "prove.toml").read_bytes())
    for patch in DATA.glob("*.patch"):
        (root / "patches" / patch.name).write_bytes(patch.read_bytes())
    monkeypatch.setenv("SERIES_CACHE_DIR", str(keras_cache))
    project = Project(root, root, "")
    code, patches, err = prove_json(project)
    assert code == 1, err
    status = {i: p["status"] for i, p in patches.items()}
    assert status == {
        "P1": "no behavioural test",
        "P3": "proven",
        "P4": "no behavioural test",
    }
    p1 = kinds(patches["P1"])
    test = "keras/src/utils/naming_test.py::NamingUtilsTest::test_to_snake_case_camel_case_name"
    assert p1 == {test: "guard"}
    p3 = kinds(patches["P3"])
    assert set(p3.values()) == {"behaviour"} and len(p3) == 1
    p4 = kinds(patches["P4"])
    assert set(p4.values()) == {"structural"} and len(p4) == 1
    assert "is_snake_case" in patches["P4"]["introduced"]
