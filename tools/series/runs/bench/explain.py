"""What torch.compile makes of a model, inside a worker (for ``scorecard``).

``torch._dynamo.explain`` traces one call and resets, so it cannot see a
model that recompiles on its second call. This does what it does (the same
``ExplainWithBackend`` accounting, on the ``eager`` backend: tracing only, no
code generation) through ``torch.compile``, calls the model twice with the
same inputs, and reads dynamo's compilation metrics: a compile that carries
a ``recompile_reason`` is a recompile (a guard failed), and any compile
during the second call means the model recompiles on every call.

Recompiles are summarised as (the guard that failed, without object ids
or source comments, function). Break reasons are summarised as (first line
of the reason, innermost user frame as ``path:function``). Paths are
relative to the tree; line numbers are left out so a patch that shifts
lines does not look like a new break.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def _frame(stack: list[Any], tree: Path) -> str:
    """The innermost frame inside the tree (else the innermost), as path:function."""
    chosen = None
    for frame in reversed(stack):
        path = Path(frame.filename)
        if path.is_relative_to(tree):
            chosen = f"{path.relative_to(tree)}:{frame.name}"
            break
        if chosen is None:
            chosen = f"{path.name}:{frame.name}"
    return chosen or "?"


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["?"])[0].strip()


def _guard(text: str) -> str:
    """A failed guard without what changes from run to run (ids, compile ids, source)."""
    guard = _first_line(text).split("  #", 1)[0].strip()
    guard = re.sub(r"^\d+/\d+: ", "", guard)
    return re.sub(r"\b\d{6,}\b", "<id>", guard)


def explain(torch: Any, tree: Path, model: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    from torch._dynamo.backends.debugging import ExplainWithBackend
    from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

    torch._dynamo.reset()
    clear_compilation_metrics()
    accounting = ExplainWithBackend("eager")
    compiled = torch.compile(model, backend=accounting)
    compiled(*args)
    first = len(get_compilation_metrics())
    compiled(*args)
    metrics = get_compilation_metrics()
    recompiles = [
        [
            _guard(str(m.recompile_reason)),
            f"{m.co_name} ({_rel(m.co_filename, tree)})",
        ]
        for m in metrics
        if getattr(m, "recompile_reason", None)
    ]
    reasons = [
        [_first_line(str(r.reason)), _frame(list(r.user_stack or []), tree)]
        for r in accounting.break_reasons
    ]
    graphs = len(accounting.graphs)
    torch._dynamo.reset()
    return {
        "graphs": graphs,
        "breaks": max(graphs - 1, 0),
        "ops": accounting.op_count,
        "reasons": reasons,
        "recompiles": recompiles,
        "compiles_on_repeat": len(metrics) - first,
    }


def _rel(filename: str | None, tree: Path) -> str:
    path = Path(filename or "?")
    return str(path.relative_to(tree)) if path.is_relative_to(tree) else path.name
