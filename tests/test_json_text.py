"""series.json_text: json's text and json's exceptions, without importing json (issue 23).

Every case is compared with the json package itself: the same text written,
the same value read, or the same exception with the same message.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from helpers import modules_in, run_fresh
from series import json_text
from series.errors import Exit

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities included
    | st.text()
)
# What series writes: str keys; and what json also takes as keys (and sorts, or refuses to)
KEYS = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(KEYS, inner, max_size=3)
    ),
    max_leaves=12,
)
OPTIONS = st.fixed_dictionaries(
    {
        "indent": st.sampled_from([None, 0, 1, 2, "\t", "ab"]),
        "sort_keys": st.booleans(),
        "ensure_ascii": st.booleans(),
        "separators": st.sampled_from([None, (",", ":"), (", ", ": "), (";", "=")]),
    }
)


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What ``fn`` answered: its value (as json writes it, so NaN compares), or its
    exception's type, message and, for a decoding error, where it was found."""
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:  # the exception is the answer compared
        where = getattr(exc, "pos", None)
        return ("raised", type(exc), str(exc), where)
    if fn in (json.loads, json_text.loads):
        return ("value", json.dumps(value, sort_keys=False), type(value))
    return ("value", value)


@settings(max_examples=400, deadline=None)
@given(VALUES, OPTIONS)
@example({"b": [1, 2.5, None], "a": {"x": True, "y": []}, "c": {}}, {"indent": 2})
@example([float("nan"), float("inf")], {"indent": 2})
@example({1: "int key", "s": 1}, {"indent": 1, "sort_keys": True})
@example({"é": "ü\u2028\U0001f600"}, {"indent": None, "ensure_ascii": False})
def test_dumps_writes_what_json_writes(value: Any, options: dict[str, Any]) -> None:
    assert _outcome(json_text.dumps, value, **options) == _outcome(json.dumps, value, **options)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_loads_reads_back_what_json_wrote(value: Any) -> None:
    for indent in (None, 2):
        text = json.dumps(value, indent=indent)
        assert _outcome(json_text.loads, text) == _outcome(json.loads, text)
        raw = text.encode()
        assert _outcome(json_text.loads, raw) == _outcome(json.loads, raw)


# Characters of JSON text and of its mistakes, for texts near JSON
NEAR = st.text(alphabet=' \t\n\r{}[]",:0123456789.eE+-truefalsnIiyNa\\/u\ufeffé', max_size=24)


@settings(max_examples=600, deadline=None)
@given(NEAR | st.text(max_size=12))
@example("")
@example("  ")
@example('{"a": 1} x')
@example('{"a": 1}  \n')
@example("\ufeff{}")
@example("NaN")
@example("-Infinity")
@example('"\\ud800"')
@example("[1,]")
def test_loads_of_any_text_answers_as_json(text: str) -> None:
    assert _outcome(json_text.loads, text) == _outcome(json.loads, text)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=16) | NEAR.map(lambda t: t.encode("utf-8", "surrogatepass")))
@example(b"\xef\xbb\xbf{}")
@example("{}".encode("utf-16"))
@example("[1]".encode("utf-32-le"))
@example(b"\xff")
@example(b'"\xed\xa0\x80"')  # a surrogate encoded: json decodes with surrogatepass
@example(bytearray(b"[1, 2]"))
def test_loads_of_any_bytes_answers_as_json(raw: bytes) -> None:
    assert _outcome(json_text.loads, raw) == _outcome(json.loads, raw)


class _Text(str):
    pass


class _Number(float):
    pass


def _circular() -> list[Any]:
    inner: list[Any] = [1]
    inner.append(inner)
    return inner


def _shared() -> dict[str, Any]:
    twice = [1, 2]
    return {"a": twice, "b": twice}  # the same list twice, not within itself


ODD = {
    "an IntEnum": Exit.CONFLICT,
    "IntEnums within": {"code": Exit.OK, "list": [Exit.REFUSED]},
    "a str subclass": _Text("a str subclass"),
    "subclasses as key and value": {_Text("k"): _Number(1.5)},
    "a list within itself": _circular(),
    "one list twice": _shared(),
    "an object": object(),
    "an object within": {"a": object()},
    "a tuple key": {(1, 2): "tuple key"},
    "empty containers nested": {"deep": [[[[[]]]]], "e": {}},
    "pi": math.pi,
    "minus zero": -0.0,
    "a big int": 10**40,
    "true": True,
    "null": None,
}


@pytest.mark.parametrize("name", sorted(ODD))
@pytest.mark.parametrize("indent", [None, 2])
def test_what_json_refuses_or_spells_its_own_way(name: str, indent: int | None) -> None:
    value = ODD[name]
    assert _outcome(json_text.dumps, value, indent=indent) == _outcome(
        json.dumps, value, indent=indent
    )


def test_deep_nesting_is_json_s_recursion_error() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        json_text.dumps(deep, indent=2)
    with pytest.raises(RecursionError):
        json_text.loads("[" * 100_000 + "]" * 100_000)


def test_plain_values_load_neither_json_nor_re() -> None:
    """What the module is for: a command that reads and writes its JSON imports neither
    json nor re (nor enum, which re imports)."""
    probe = (
        "import sys\n"
        "from series import json_text\n"
        "text = json_text.dumps({'a': [1, 2.5, None, True], 'b': 'é'}, indent=2)\n"
        "assert json_text.loads(text) == {'a': [1, 2.5, None, True], 'b': 'é'}\n"
        "assert json_text.loads(json_text.dumps([1, {'x': 'y'}]).encode()) == [1, {'x': 'y'}]\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    code, out, err = run_fresh(probe)
    assert code == 0, err
    assert not {"json", "re", "enum"} & modules_in(out)
