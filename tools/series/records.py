"""``NamedTuple`` for the modules a re-run of apply or export loads, without importing typing.

typing is a few ms of a command that answers "nothing changed" in tens
(issue 23), and those modules need of it only ``NamedTuple``'s class
syntax; the rest of what they take from typing is for mypy alone (under
``TYPE_CHECKING``). For mypy this is typing's ``NamedTuple``; at run time
a class written with it is ``collections.namedtuple`` of its annotated
fields, with their defaults, and its methods, docstring and other
attributes set on that class: what typing's own ``NamedTuple`` makes
(which also records the field types, read by nothing in series). As in
typing's, a method may not use ``super()`` or ``__class__``.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    _OWN = {"__module__", "__qualname__", "__annotations__", "__orig_bases__"}

    class _Made(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, object]) -> type:
            fields = list(ns.get("__annotations__", {}))
            defaults = [ns[f] for f in fields if f in ns]
            if any(f in ns for f in fields[: len(fields) - len(defaults)]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            made = collections.namedtuple(name, fields, defaults=defaults, module=ns["__module__"])
            made.__qualname__ = str(ns["__qualname__"])
            for key, value in ns.items():
                if key not in _OWN and key not in fields:
                    setattr(made, key, value)
            return made

    _Base = type.__new__(_Made, "NamedTuple", (), {})

    def NamedTuple(typename: str, fields: object = None) -> type:
        raise TypeError("series.records.NamedTuple: only its class syntax is supported")

    NamedTuple.__mro_entries__ = lambda bases: (_Base,)  # type: ignore[attr-defined]
