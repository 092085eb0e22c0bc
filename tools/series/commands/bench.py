"""``series bench``: what each patch buys, measured side by side against the pin.

The work is in series.runs.bench (method, cache and outputs:
docs/bench.md); the arms come from series.runs.bench.arms.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from series.commands.options import DEVICE, JSON, Option, patch_ids
from series.errors import Exit, UsageError

if TYPE_CHECKING:
    from series.project import Series
    from series.runs.bench import Arm, Profile
    from series.ui import Ui

EPILOG = (
    "arms: the pin, each patch alone on the pin (where it applies alone), the stack "
    "after each patch (compared with the one before), and the whole stack against the "
    "pin. --quick: without IDs the pin and the whole stack only (with IDs the same "
    "arms as without --quick), dense, layer_call and the torch_linear control, 7 "
    "rounds of short samples; under 2 minutes on 2 cores (40 s measured at load 10, "
    "cold cache). Workers start and build at most one per core at a time; the memory "
    "they need is said before they start. The run is flagged disturbed when its own "
    "numbers say so (a control that moved, wall time far above CPU time, spread "
    "rounds, load above the cores). exit status: 0 measured; 1 a patch's outputs "
    "differ from its baseline (equivalence failed); 2 bad input. Manual: docs/bench.md."
)
OPTIONS = (
    patch_ids("measure"),
    Option(
        "--workload",
        "a workload to run (repeatable; default: all; --quick: the tiny set)",
        key="workloads",
        action="append",
        metavar="NAME",
    ),
    Option("--rounds", "measured rounds (default: 15)", type=int, metavar="N"),
    Option(
        "--quick",
        "without IDs the pin and the stack only; 3 workloads, 7 short rounds (<2 min)",
        action="store_true",
    ),
    Option(
        "--chart",
        "where to write the chart (default: .series/bench/bench.png)",
        type=Path,
        metavar="PNG",
    ),
    Option(
        "--profile",
        "instead: the top frames of one call of WORKLOAD on the pin and the stack",
        metavar="WORKLOAD",
    ),
    DEVICE,
    JSON,
)


def run(
    series: Series,
    ui: Ui,
    *,
    ids: list[str] | None = None,
    workloads: list[str] | None = None,
    rounds: int | None = None,
    quick: bool = False,
    as_json: bool = False,
    chart: Path | None = None,
    profile: str | None = None,
    device: str = "cpu",
) -> Exit:
    from series.files import confined
    from series.runs.bench import (
        WORKLOADS,
        render_floors,
        render_table,
        render_times,
        report_json,
        run_bench,
        summary_lines,
        write_chart,
    )
    from series.runs.bench.arms import plan
    from series.unchanged import one_state

    if rounds is not None and rounds < 3:
        raise UsageError(
            f"--rounds {rounds}: at least 3 rounds make an interval",
            hint="pass --rounds 3 or more, or --quick for a short run",
        )
    unknown = [
        w for w in [*(workloads or []), *([profile] if profile else [])] if w not in WORKLOADS
    ]
    if unknown:
        raise UsageError(
            f"unknown workload {unknown[0]!r}",
            hint=f"the workloads are: {', '.join(WORKLOADS)}",
        )
    cache = series.cache_dir / "bench"
    if profile is not None:
        with one_state(series, "bench"):  # it takes no lock: nothing reported of a mix
            arms = plan(series, ui, ids, alone=False)
            found = _profile([arms.states[0], arms.states[-1]], profile, cache, device)
        _notes(ui, arms.skipped)
        return _show_profiles(ui, found, as_json)
    # The default chart goes into the project's .series/: not through a link out of it.
    target = chart or confined(series.root, series.root / ".series" / "bench" / "bench.png")
    with one_state(series, "bench"):  # it takes no lock: nothing reported of a mix
        arms = plan(series, ui, ids, quick=quick)
        report = run_bench(
            arms.arms, workloads or None, cache_dir=cache, pairs=arms.pairs, rounds=rounds,
            quick=quick, progress=ui.status,
        )  # fmt: skip
    _notes(ui, arms.skipped)  # of the one state too: not "does not apply" of a mix
    write_chart(report, target)
    if as_json:
        ui.json({**report_json(report), "chart": str(target), "skipped": arms.skipped})
    else:
        for table in (render_table(report), render_floors(report), render_times(report)):
            ui.table(table)
        for line in summary_lines(report):
            ui.result(line)
        ui.result(f"chart: {target}")
    return Exit(int(report.exit_code))


def _notes(ui: Ui, skipped: list[str]) -> None:
    for line in skipped:
        ui.status(f"note: {line}")


def _profile(arms: list[Arm], workload: str, cache: Path, device: str) -> list[Profile]:
    from series.runs.bench import run_profile
    from series.runs.bench.arms import PIN

    if arms[0].name != PIN or len(arms) < 2:
        raise UsageError("nothing to profile: no patch applies on the pin")
    return [run_profile(arm, workload, cache_dir=cache, device=device) for arm in arms]


def _show_profiles(ui: Ui, found: list[Profile], as_json: bool) -> Exit:
    from series.runs.bench import profile_json, render_profile

    if as_json:
        ui.json({"profiles": [profile_json(p) for p in found]})
    else:
        for item in found:
            ui.table(render_profile(item))
    return Exit.OK
