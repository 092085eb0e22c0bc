"""The one error type users see, and the exit codes.

Only ``cli.main`` catches these. Anything else that escapes a command is a
bug and is reported as an internal error with its own exit code, so scripts
can tell "you asked for something the tool refused" from "the tool broke".
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import ClassVar


class _Codes(type):
    """Exit's class: ``for code in Exit`` gives each code, in the order of their values."""

    def __iter__(cls) -> Iterator[Exit]:
        return iter(sorted(_CODES.values()))


class Exit(int, metaclass=_Codes):
    """An exit code: an int with a name, one object per code (``Exit(3) is Exit.CONFLICT``),
    as an IntEnum's members, without enum, whose import was a millisecond of every command
    (issue 23). ``Exit(n)`` of a number that is no code is a ValueError."""

    OK: ClassVar[Exit]
    FAILED: ClassVar[Exit]  # the work was done and found a failure, or the environment failed
    BAD_INPUT: ClassVar[Exit]  # bad arguments or a malformed manifest
    CONFLICT: ClassVar[Exit]  # a patch does not apply / conflicts were found
    REFUSED: ClassVar[Exit]  # refused to run because it would lose someone's work
    INTERNAL: ClassVar[Exit]  # a bug in series (EX_SOFTWARE)
    INTERRUPTED: ClassVar[Exit]  # SIGINT (128 + 2), as a shell reports it
    BROKEN_PIPE: ClassVar[Exit]  # stdout closed by its reader (128 + SIGPIPE), as git ends

    name: str

    def __new__(cls, value: int) -> Exit:
        try:
            return _CODES[int(value)]
        except KeyError:
            raise ValueError(f"{value!r} is not a valid Exit") from None

    def __repr__(self) -> str:
        return f"<Exit.{self.name}: {int(self)}>"

    __str__ = int.__repr__  # as an IntEnum's: the number
    __format__ = int.__format__


_CODES: dict[int, Exit] = {}
for _name, _value in (
    ("OK", 0),
    ("FAILED", 1),
    ("BAD_INPUT", 2),
    ("CONFLICT", 3),
    ("REFUSED", 4),
    ("INTERNAL", 70),
    ("INTERRUPTED", 130),
    ("BROKEN_PIPE", 141),
):
    _code = int.__new__(Exit, _value)
    _code.name = _name
    _CODES[_value] = _code
    setattr(Exit, _name, _code)
del _name, _value, _code


class SeriesError(Exception):
    """A user-facing failure: what was refused, why, and how to go on."""

    exit_code: Exit = Exit.FAILED

    def __init__(
        self,
        message: str,
        *,
        why: str = "",
        hint: str = "",
        exit_code: Exit | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.why = why
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def render(self) -> str:
        lines = [f"series: {self.message}"]
        lines += [f"  {line}" for line in self.why.splitlines() if line.strip()]
        if self.hint:
            lines += [f"  hint: {line}" for line in self.hint.splitlines()]
        return "\n".join(lines)


class ManifestError(SeriesError):
    """series.toml is malformed; the message names the file and key path."""

    exit_code = Exit.BAD_INPUT


class UsageError(SeriesError):
    exit_code = Exit.BAD_INPUT


class ConflictError(SeriesError):
    exit_code = Exit.CONFLICT


class RefusedError(SeriesError):
    """Going on would lose uncommitted work, unexported commits or files."""

    exit_code = Exit.REFUSED


class InternalError(SeriesError):
    """series found itself inconsistent: a bug in series, not the user's mistake.

    ``cli.main`` prints it as an internal error (with the traceback under
    ``-v``) and exits 70, so scripts can tell "refused" from "broke".
    """

    exit_code = Exit.INTERNAL

    def __init__(self, message: str, *, why: str = "", hint: str = "") -> None:
        super().__init__(
            message,
            why=why,
            hint=hint
            or "this is a bug in series: please report it with this output "
            "(run again with -v for every git command and the traceback)",
        )

    def render(self) -> str:
        return super().render().replace("series: ", "series: internal error: ", 1)


def os_error(exc: OSError) -> SeriesError:
    """A failed file operation (full disk, read-only directory, ...) as a clear error.

    Commands that know what a failure means (export names its backup) catch
    ``OSError`` themselves; this is what ``cli.main`` says for the rest.
    """
    where = exc.filename or "a file"
    import errno  # a failure only: parsing a command line does not import it

    if exc.errno == errno.EFBIG:  # Python ignores SIGXFSZ: the write fails instead
        return SeriesError(
            f"file size limit exceeded (ulimit -f) writing {where}",
            why="the operating system refused the write: the file would grow past the limit "
            "on the size of files this process may write",
            hint="raise the limit (ulimit -f unlimited, or ask whoever set it), then run the "
            "command again; files series writes are replaced whole (temporary file + "
            "rename), so none was left half written",
        )
    return SeriesError(
        f"file operation failed on {where}: {exc.strerror or exc}",
        why="the operating system refused it (a file not readable by you, a full disk, "
        "a read-only or unwritable directory, or a path that is not a directory)",
        hint="free some space or fix the permissions, then run the command again; "
        "files series writes are replaced whole (temporary file + rename), so none was "
        "left half written",
    )
