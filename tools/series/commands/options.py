"""What a command declares about its options, and the options several commands share.

A command module declares ``OPTIONS`` (a tuple of ``Option`` and
``Exclusive``), optionally ``EPILOG``, and ``run(series, ui, *, ...)``
whose keyword-only parameters are the options' keys. series.cli builds
the argparse parser from the declaration and calls ``run`` with the
parsed values; series.cli.docs writes the docs' option tables from it.
This module imports nothing of series but series.untrusted (the checks of
URL and REV values), and a command module imports its concept package
inside ``run``: the CLI reads every declaration without paying for what a
command needs to run.
"""

from __future__ import annotations

from collections.abc import Callable

from series.untrusted import path_hint, revision_problem, url_problem

# ``series --help`` reads every declaration: this module, like series.cli and its table,
# imports neither typing, dataclasses (which imports inspect) nor pathlib, a third of
# the time of a ``--help`` (docs/architecture.md). mypy takes any TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal, NoReturn

    Action = Literal["store", "store_true", "store_false", "store_const", "append"]


class Frozen:
    """A frozen record compared by its ``__slots__`` (what ``@dataclass(frozen=True)`` gives)."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and isinstance(other, Frozen)
            and (other._values() == self._values())
        )

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(self.__slots__, self._values(), strict=True))
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name}")


def path(value: str) -> Path:
    """An argparse type: the value as a ``Path`` (pathlib imported when a path is given)."""
    from pathlib import Path

    return Path(value)


class Option(Frozen):
    """One option or positional argument, in argparse's terms.

    ``flags``: ``"--dir"``, ``("-j", "--jobs")``, or a positional's name
    (``"ID"``, as ``--help`` shows it). ``key``: the keyword of ``run`` that
    receives the value, when it is not argparse's name for it (``dest``).
    ``action``: ``store`` takes a value, ``store_true`` is a switch,
    ``store_false`` a switch that turns ``key`` off (``--no-cache`` ->
    ``use_cache=False``), ``store_const`` gives ``const``, ``append``
    collects a repeatable value into a list.
    """

    __slots__ = (  # noqa: RUF023 (the constructor's order, which __init__ and repr follow)
        "flags",
        "help",
        "key",
        "action",
        "type",
        "default",
        "metavar",
        "choices",
        "nargs",
        "const",
    )
    flags: str | tuple[str, ...]
    help: str
    key: str | None
    action: Action
    type: Callable[[str], object] | None
    default: object
    metavar: str | None
    choices: tuple[str, ...] | None
    nargs: Literal["?", "*"] | None
    const: str | None

    def __init__(
        self,
        flags: str | tuple[str, ...],
        help: str,
        key: str | None = None,
        action: Action = "store",
        type: Callable[[str], object] | None = None,
        default: object = None,
        metavar: str | None = None,
        choices: tuple[str, ...] | None = None,
        nargs: Literal["?", "*"] | None = None,
        const: str | None = None,
    ) -> None:
        given = (flags, help, key, action, type, default, metavar, choices, nargs, const)
        for name, value in zip(self.__slots__, given, strict=True):
            object.__setattr__(self, name, value)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.flags,) if isinstance(self.flags, str) else self.flags

    @property
    def positional(self) -> bool:
        return not self.names[0].startswith("-")

    @property
    def takes_value(self) -> bool:
        return self.action in ("store", "append")

    @property
    def dest(self) -> str:
        """Where argparse puts the value: its own name for it (``--dry-run`` ->
        ``dry_run``, ``ID`` -> ``id``), which the CLI and the rows' ``writes`` read;
        for ``store_const``, ``key``, which the options of a group share."""
        if self.action == "store_const" and self.key is not None:
            return self.key
        long = next((n for n in self.names if n.startswith("--")), self.names[0])
        return long.lstrip("-").replace("-", "_").lower()

    @property
    def keyword(self) -> str:
        """The keyword of ``run`` that receives the value."""
        return self.key or self.dest

    @property
    def shown(self) -> str:
        """The value's name in ``--help``: the metavar, the choices, or argparse's default."""
        if self.metavar is not None or self.positional:
            return self.metavar or self.names[0]
        if self.choices is not None:
            return "{" + ",".join(self.choices) + "}"
        return self.dest.upper()


class Exclusive(Frozen):
    """Options of which at most one may be given (argparse's mutually exclusive group)."""

    __slots__ = ("options",)
    options: tuple[Option, ...]

    def __init__(self, options: tuple[Option, ...]) -> None:
        object.__setattr__(self, "options", options)


Declared = tuple[Option | Exclusive, ...]


def flat(declared: Declared) -> list[Option]:
    """Every option of a declaration, those in groups included, in order."""
    return [
        o for item in declared for o in (item.options if isinstance(item, Exclusive) else [item])
    ]


def _checked(problem: Callable[[str], str | None], hint: bool) -> Callable[[str], str]:
    """An argparse type: the value as is, or a usage error (exit 2) naming the option."""

    def check(value: str) -> str:
        found = problem(value)
        if found:
            import argparse  # only argparse calls this: the module is loaded by then

            more = path_hint(value) if hint else "name a branch, tag or commit"
            raise argparse.ArgumentTypeError(f"{found}; {more}")
        return value

    return check


# --upstream URL|PATH, --push REMOTE, --onto REV, --since REV (series.untrusted).
URL = _checked(url_problem, hint=True)
REV = _checked(revision_problem, hint=False)

DIR = Option(
    "--dir",
    "the checkout (default: [series].checkout in series.toml, 'work')",
    key="directory",
    type=path,
    metavar="DIR",
)
ENVELOPE = Option(
    "--json",
    "print one JSON envelope for machines (docs/json.md)",
    key="as_json",
    action="store_true",
)
JSON = Option("--json", "print JSON for machines", key="as_json", action="store_true")
JOBS = Option(
    ("-j", "--jobs"),
    "test runs at the same time (default: the cores available)",
    type=int,
    metavar="N",
)
NO_CACHE = Option(
    "--no-cache",
    "run everything again, ignoring cached results",
    key="use_cache",
    action="store_false",
)
DEVICE = Option("--device", "cpu (default) or cuda, where a GPU is present", default="cpu")


def patch_ids(verb: str) -> Option:
    """The ``ID ...`` positional of the checks: which patches (default: all)."""
    return Option("ID", f"the patches to {verb} (default: all)", key="ids", nargs="*")


def resume(go_on: str, skip: str) -> Exclusive:
    """``--continue``, ``--skip``, ``--abort`` of a command that stops (rebase, edit)."""
    texts = (
        ("continue", go_on),
        ("skip", skip),
        (
            "abort",
            "put refs, checkout, series.toml and patches/ back as they were; what "
            "you committed or changed at the stop is kept under a backup ref",
        ),
    )
    return Exclusive(
        tuple(
            Option(f"--{verb}", text, key="action", action="store_const", const=verb)
            for verb, text in texts
        )
    )
