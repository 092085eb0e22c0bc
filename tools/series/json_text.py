"""JSON text as the json package reads and writes it, without importing that package.

series keeps its state and its records as JSON (a rebase's state, the
project's known values, the lock's holder, the per-user cache), so nearly
every command reads or writes some. The json package's import compiles its
regular expressions and so imports ``re`` (and ``re`` imports ``enum``): 3 to
4 ms of every command (issue 23), where the work is done by ``_json``, the C
accelerator json itself runs (its scanner and its one-line encoder).

So :func:`loads` and :func:`dumps` call ``_json`` as json calls it, with
json's defaults, and write what json writes with ``indent`` (json's own
Python encoder, for the types JSON has). Anything else, and any failure, is
handed to the json package itself, imported then: an input that is not
plain JSON text in UTF-8, a value of a type JSON has not, and with
``indent`` a float that is NaN or infinite or a key that is not a string,
so that the answer, or the exception and its message, is json's own.
tests/test_json_text.py compares both on generated values and texts.
"""

from __future__ import annotations

import _json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What json's decoder skips around a value (its WHITESPACE pattern)
_SPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Defaults:
    """What json.JSONDecoder() gives the C scanner: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_scan = _json.make_scanner(_Defaults())  # type: ignore[arg-type]  # typeshed: any object with those attributes


class _NotPlain(Exception):
    """What only the json package answers as json does (the module's docstring)."""


def loads(s: str | bytes | bytearray) -> Any:
    """``json.loads(s)``: the value of the JSON text ``s``, or json's own exception."""
    try:
        return _loads(s)
    except (_NotPlain, StopIteration):
        import json  # an error (or an input this module leaves to json): json's message

        return json.loads(s)


def error_at(exc: BaseException) -> tuple[int, str] | None:
    """Where json's decoding error ``exc`` (raised by :func:`loads`) was found, and what it
    says: (line, message); None for any other exception."""
    decoder = sys.modules.get("json.decoder")  # imported by json when it raised one
    if decoder is None or not isinstance(exc, decoder.JSONDecodeError):
        return None
    return exc.lineno, exc.msg


def _loads(s: str | bytes | bytearray) -> Any:
    if isinstance(s, (bytes, bytearray)):
        # json detects UTF-16 and UTF-32 by their zero bytes, and a BOM: left to it
        if b"\x00" in s[:4] or s[:2] in (b"\xff\xfe", b"\xfe\xff") or s[:3] == b"\xef\xbb\xbf":
            raise _NotPlain
        s = s.decode("utf-8", "surrogatepass")  # as json.loads decodes UTF-8
    elif not isinstance(s, str):
        raise _NotPlain  # json's TypeError
    start = len(s) - len(s.lstrip(_SPACE))
    value, end = _scan(s, start)  # StopIteration: no value there (json's "Expecting value")
    if s[end:].lstrip(_SPACE):
        raise _NotPlain  # json's "Extra data"
    return value


def dumps(
    obj: Any,
    *,
    indent: int | str | None = None,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
) -> str:
    """``json.dumps(obj, ...)`` with these of its options: the same text, or json's own
    exception."""
    if separators is not None:
        item, key = separators
    else:
        item, key = ("," if indent is not None else ", "), ": "
    try:
        if indent is None:
            encoder = _json.make_encoder(
                {},  # json's check_circular
                _not_plain,  # json's default: a type JSON has not
                _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring,
                None,
                key,
                item,
                sort_keys,
                False,  # skipkeys
                True,  # allow_nan
            )
            return "".join(encoder(obj, 0))
        chunks: list[str] = []
        step = indent if isinstance(indent, str) else " " * indent
        _Indented(chunks, step, item, key, sort_keys, ensure_ascii).value(obj, 0)
        return "".join(chunks)
    except (_NotPlain, RecursionError, TypeError):
        import json  # as json writes it, or json's exception (its own TypeError, too)

        return json.dumps(
            obj,
            indent=indent,
            sort_keys=sort_keys,
            ensure_ascii=ensure_ascii,
            separators=separators,
        )


def _not_plain(obj: object) -> None:
    raise _NotPlain


class _Indented:
    """json's Python encoder (json.encoder ``_make_iterencode``), which json uses when
    ``indent`` is given, for JSON's own types: str, int, finite float, bool, None, list
    and tuple, dict with str keys; anything else is :class:`_NotPlain`. A container within
    itself recurses until Python's limit: RecursionError, which :func:`dumps` hands to
    json (its "Circular reference detected")."""

    def __init__(
        self, out: list[str], step: str, item: str, key: str, sort_keys: bool, ascii: bool
    ) -> None:
        self.out = out
        self.step = step
        self.item = item
        self.key = key
        self.sort_keys = sort_keys
        self.text = _json.encode_basestring_ascii if ascii else _json.encode_basestring

    def value(self, obj: object, level: int) -> None:
        out = self.out
        if isinstance(obj, str):
            out.append(self.text(obj))
        elif obj is None:
            out.append("null")
        elif obj is True:
            out.append("true")
        elif obj is False:
            out.append("false")
        elif isinstance(obj, int):
            out.append(int.__repr__(obj))
        elif isinstance(obj, float):
            if obj != obj or obj in (_CONSTANTS["Infinity"], _CONSTANTS["-Infinity"]):
                raise _NotPlain  # NaN, Infinity: json's spelling, or its ValueError
            out.append(float.__repr__(obj))
        elif isinstance(obj, (list, tuple)):
            self.items(obj, level)
        elif isinstance(obj, dict):
            self.members(obj, level)
        else:
            raise _NotPlain

    def items(self, obj: list[Any] | tuple[Any, ...], level: int) -> None:
        if not obj:
            self.out.append("[]")
            return
        inner = "\n" + self.step * (level + 1)
        self.out.append("[" + inner)
        for n, value in enumerate(obj):
            if n:
                self.out.append(self.item + inner)
            self.value(value, level + 1)
        self.out.append("\n" + self.step * level + "]")

    def members(self, obj: dict[Any, Any], level: int) -> None:
        if not obj:
            self.out.append("{}")
            return
        inner = "\n" + self.step * (level + 1)
        self.out.append("{" + inner)
        pairs = sorted(obj.items()) if self.sort_keys else obj.items()
        for n, (name, value) in enumerate(pairs):
            if not isinstance(name, str):
                raise _NotPlain  # json's spelling of other keys, or its TypeError
            if n:
                self.out.append(self.item + inner)
            self.out.append(self.text(name) + self.key)
            self.value(value, level + 1)
        self.out.append("\n" + self.step * level + "}")
