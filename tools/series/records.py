"""``NamedTuple`` for the modules a re-run of apply or export loads, without importing typing.

typing is a few ms of a command that answers "nothing changed" in tens
(issue 23), and those modules need of it only ``NamedTuple``'s class
syntax; the rest of what they take from typing is for mypy alone (under
``TYPE_CHECKING``). For mypy this is typing's ``NamedTuple``; at run time
a class written with it is what ``collections.namedtuple`` makes of its
annotated fields, with their defaults, and its methods, docstring and
other attributes set on that class: what typing's own ``NamedTuple`` makes
(which also records the field types, read by nothing in series). As in
typing's, a method may not use ``super()`` or ``__class__``.

The class is made here as ``collections.namedtuple`` makes it (the same
methods, field accessors, docstrings and errors), but for its ``__new__``:
namedtuple compiles the source of one (``eval``) for each class, a third
of what it costs; ``rebase --abort`` alone makes 23 such classes as it
imports. Here each ``__new__`` is one of ``_NEW``, compiled with this
module, by number of fields, its arguments renamed after the fields
(``CodeType.replace``): the same signature, the same body, hence the same
errors for a missing, extra or unknown argument. A class of more fields
than ``_NEW`` holds is namedtuple's (tests/test_fixed_cost.py compares
both ways with typing's).
"""

from __future__ import annotations

import collections
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import _tuplegetter

    _OWN = {"__module__", "__qualname__", "__annotations__", "__orig_bases__"}
    _tuple_new = tuple.__new__
    _function = type(lambda: None)

    # namedtuple's ``__new__`` of 1 to 16 fields: ``lambda _cls, <fields>: _tuple_new(_cls,
    # (<fields>))``, each renamed after its class's fields.
    _NEW = (
        lambda _cls, a: _tuple_new(_cls, (a,)),
        lambda _cls, a, b: _tuple_new(_cls, (a, b)),
        lambda _cls, a, b, c: _tuple_new(_cls, (a, b, c)),
        lambda _cls, a, b, c, d: _tuple_new(_cls, (a, b, c, d)),
        lambda _cls, a, b, c, d, e: _tuple_new(_cls, (a, b, c, d, e)),
        lambda _cls, a, b, c, d, e, f: _tuple_new(_cls, (a, b, c, d, e, f)),
        lambda _cls, a, b, c, d, e, f, g: _tuple_new(_cls, (a, b, c, d, e, f, g)),
        lambda _cls, a, b, c, d, e, f, g, h: _tuple_new(_cls, (a, b, c, d, e, f, g, h)),
        lambda _cls, a, b, c, d, e, f, g, h, i: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i)),
        lambda _cls, a, b, c, d, e, f, g, h, i, j: _tuple_new(_cls, (a, b, c, d, e, f, g, h, i, j)),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, m: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, m)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, m, n: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, m, n)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, m, n, o: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, m, n, o)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, m, n, o, p: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, m, n, o, p)
        ),
        lambda _cls, a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q: _tuple_new(
            _cls, (a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q)
        ),
    )

    def _made(name: str, fields: tuple[str, ...], defaults: tuple[object, ...], ns: dict) -> type:
        """collections.namedtuple(name, fields, defaults=defaults), its ``__new__`` from
        ``_NEW``, with the class body ``ns`` in it, made by one ``type()``."""
        if not fields or len(fields) > len(_NEW):
            made = collections.namedtuple(name, fields, defaults=defaults, module=ns["__module__"])
            made.__qualname__ = str(ns["__qualname__"])
            for key, value in ns.items():
                if key not in _OWN and key not in fields:
                    setattr(made, key, value)
            return made
        for field in fields:  # namedtuple's errors (an annotation is an identifier)
            if field.startswith("_"):
                raise ValueError(f"Field names cannot start with an underscore: {field!r}")
        name = sys.intern(name)
        fields = tuple(map(sys.intern, fields))
        count = len(fields)
        arg_list = ", ".join(fields) + ("," if count == 1 else "")
        repr_fmt = "(" + ", ".join(f"{f}=%r" for f in fields) + ")"
        code = _NEW[count - 1].__code__.replace(co_varnames=("_cls", *fields))
        scope = {"_tuple_new": _tuple_new, "__builtins__": {}, "__name__": f"namedtuple_{name}"}
        new = _function(code, scope, "__new__", defaults)
        new.__doc__ = f"Create new instance of {name}({arg_list})"

        @classmethod
        def _make(cls: type, iterable: object) -> tuple[object, ...]:
            result = _tuple_new(cls, iterable)
            if len(result) != count:
                raise TypeError(f"Expected {count} arguments, got {len(result)}")
            return result

        _make.__func__.__doc__ = f"Make a new {name} object from a sequence or iterable"

        def _replace(self, /, **kwds):
            result = self._make(map(kwds.pop, fields, self))
            if kwds:
                raise ValueError(f"Got unexpected field names: {list(kwds)!r}")
            return result

        _replace.__doc__ = f"Return a new {name} object replacing specified fields with new values"

        def __repr__(self):
            "Return a nicely formatted representation string"
            return self.__class__.__name__ + repr_fmt % self

        def _asdict(self):
            "Return a new dict which maps field names to their values."
            return dict(zip(self._fields, self, strict=False))

        def __getnewargs__(self):
            "Return self as a plain tuple.  Used by copy and pickle."
            return tuple(self)

        for method in (new, _make.__func__, _replace, __repr__, _asdict, __getnewargs__):
            method.__qualname__ = f"{name}.{method.__name__}"
        body = {
            "__doc__": f"{name}({arg_list})",
            "__slots__": (),
            "_fields": fields,
            "_field_defaults": dict(zip(fields[count - len(defaults) :], defaults, strict=True)),
            "__new__": new,
            "_make": _make,
            "_replace": _replace,
            "__repr__": __repr__,
            "_asdict": _asdict,
            "__getnewargs__": __getnewargs__,
            "__match_args__": fields,
        }
        for index, field in enumerate(fields):
            body[field] = _tuplegetter(index, sys.intern(f"Alias for field number {index}"))
        for key, value in ns.items():
            if key not in _OWN and key not in fields:
                body[key] = value
        body["__module__"] = ns["__module__"]
        body["__qualname__"] = str(ns["__qualname__"])
        return type(name, (tuple,), body)

    class _Made(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, object]) -> type:
            fields = tuple(ns.get("__annotations__", {}))
            defaults = tuple(ns[f] for f in fields if f in ns)
            if any(f in ns for f in fields[: len(fields) - len(defaults)]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            return _made(name, fields, defaults, ns)

    _Base = type.__new__(_Made, "NamedTuple", (), {})

    def NamedTuple(typename: str, fields: object = None) -> type:
        raise TypeError("series.records.NamedTuple: only its class syntax is supported")

    NamedTuple.__mro_entries__ = lambda bases: (_Base,)  # type: ignore[attr-defined]
