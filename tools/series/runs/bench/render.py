"""A bench report for people (rich tables, a PNG chart) and for machines (JSON).

The JSON shape is versioned (``"format": 1``); docs/bench.md describes it.
The chart uses matplotlib's Agg backend, imported only when a chart is
written, so nothing else pays for matplotlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from series.runs.bench.bench import BenchReport, Comparison, Floor
from series.runs.bench.spec import WORKLOADS

FORMAT = 1


def _interval(c: Comparison) -> str:
    return f"{c.cpu.low:.2f}-{c.cpu.high:.2f}"


def render_table(report: BenchReport) -> Table:
    """One row per comparison and workload: speedup, spread, verdict, equivalence."""
    table = Table(title="speedup = time(baseline) / time(candidate), CPU time per call")
    for name in (
        "comparison",
        "workload",
        "speedup",
        "IQR",
        "95% CI",
        "verdict",
        "wall",
        "outputs",
    ):
        table.add_column(name, justify="right" if name in ("speedup", "wall") else "left")
    for c in report.comparisons:
        verdict = c.cpu.verdict
        if c.control and not c.cpu.noise:
            verdict = "DISTURBED"
        if not c.cpu.paired:
            verdict += " (unpaired)"
        table.add_row(
            c.pair.title,
            c.workload + (" (control)" if c.control else ""),
            f"{c.cpu.median:.2f}x",
            f"{c.cpu.q25:.2f}-{c.cpu.q75:.2f}",
            _interval(c),
            verdict,
            f"{c.wall.median:.2f}x",
            c.equivalence.summary,
        )
    table.caption = (
        "interval: 95% bootstrap of the median; for controls Bonferroni-widened over all "
        "control comparisons"
    )
    return table


def render_floors(report: BenchReport) -> Table:
    """Keras over raw torch doing the same work, per arm."""
    table = Table(title="Keras / raw torch (median CPU time)")
    table.add_column("arm")
    workloads = sorted({f.workload for f in report.floors}, key=list(WORKLOADS).index)
    for workload in workloads:
        table.add_column(workload, justify="right")
    for arm in report.arms:
        row = {f.workload: _floor_cell(f) for f in report.floors if f.arm == arm.arm.name}
        table.add_row(arm.arm.name, *(row.get(w, "") for w in workloads))
    if any(f.same_outputs is not None for f in report.floors):
        table.caption = (
            "= : the raw twin, given the same inputs and weights, gives the same outputs "
            "(token ids identical, numbers within 1e-5)"
        )
    return table


def _floor_cell(floor: Floor) -> str:
    same = floor.same_outputs
    if same is None:
        return f"{floor.ratio:.1f}x"
    return f"{floor.ratio:.1f}x " + ("=" if same.ok else "OUTPUTS DIFFER")


def render_times(report: BenchReport) -> Table:
    """Median time per call of every arm and workload, with where it came from."""
    table = Table(title="median CPU time per call")
    table.add_column("arm")
    for workload in report.workloads:
        table.add_column(workload, justify="right")
    table.add_column("tree")
    for arm in report.arms:
        cells = []
        for workload in report.workloads:
            cpu = sorted(report.samples[(arm.arm.name, workload)].cpu)
            cells.append(_duration(cpu[len(cpu) // 2]) + ("*" if workload in arm.cached else ""))
        table.add_row(arm.arm.name, *cells, arm.tree_id[:12])
    table.caption = "* from the cache"
    return table


def _duration(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def summary_lines(report: BenchReport) -> list[str]:
    """Status lines to print under the table: load, disturbance, failures."""
    before = " ".join(f"{v:.2f}" for v in report.load_before)
    after = " ".join(f"{v:.2f}" for v in report.load_after)
    lines = [
        f"load average {before} before, {after} after; {report.settings.rounds} rounds; "
        f"{report.seconds:.0f} s"
    ]
    for c in report.moved_controls:
        lines.append(
            f"DISTURBED: control {c.workload} in {c.pair.title} came out {c.cpu.median:.3f}x "
            f"({_interval(c)}): the machine moved the numbers; run again on a quieter machine"
        )
    for reason in report.disturbance:
        if not reason.startswith("control "):  # said above, with its interval
            lines.append(f"DISTURBED: {reason}")
    lines.append(f"disturbed: {'true' if report.disturbed else 'false'}")
    for c in report.failures:
        lines.append(f"FAILED: {c.pair.title} on {c.workload}: {c.equivalence.detail}")
    for f in report.floors:
        if f.same_outputs is not None and not f.same_outputs.ok:
            lines.append(
                f"FLOOR NOT THE SAME WORK: {f.torch} differs from {f.workload} on arm {f.arm}: "
                f"{f.same_outputs.detail}"
            )
    return lines


def _samples_json(report: BenchReport, arm: str, workload: str) -> dict[str, Any]:
    s = report.samples[(arm, workload)]
    return {
        "median_cpu_ns": sorted(s.cpu)[len(s.cpu) // 2],
        "calls": s.calls,
        "run": s.session,
        "cpu_ns": s.cpu,
        "wall_ns": s.wall,
    }


def report_json(report: BenchReport) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "settings": {
            "rounds": report.settings.rounds,
            "warmup_rounds": report.settings.warmup_rounds,
            "sample_ms": report.settings.sample_ms,
            "bootstrap": report.settings.bootstrap,
            "seed": report.settings.seed,
        },
        "key": report.key,
        "load_average": {"before": list(report.load_before), "after": list(report.load_after)},
        "seconds": round(report.seconds, 2),
        "disturbed": report.disturbed,
        "disturbance": report.disturbance,
        "failed": bool(report.failures),
        "arms": [
            {
                "name": a.arm.name,
                "tree": str(a.arm.tree),
                "tree_id": a.tree_id,
                "imported_from": a.where,
                "measured": a.measured,
                "cached": a.cached,
                "samples": {w: _samples_json(report, a.arm.name, w) for w in report.workloads},
            }
            for a in report.arms
        ],
        "comparisons": [
            {
                "baseline": c.pair.baseline,
                "candidate": c.pair.candidate,
                "label": c.pair.title,
                "workload": c.workload,
                "control": c.control,
                "cpu": c.cpu.to_json(),
                "wall": c.wall.to_json(),
                "equivalence": c.equivalence.to_json(),
            }
            for c in report.comparisons
        ],
        "floors": [
            {
                "arm": f.arm,
                "workload": f.workload,
                "torch": f.torch,
                "ratio": f.ratio,
                "same_outputs": f.same_outputs.to_json() if f.same_outputs else None,
            }
            for f in report.floors
        ],
    }


COLOURS = {
    "faster": "tab:green",
    "slower": "tab:red",
    "noise": "tab:gray",
    "disturbed": "tab:orange",
}


def _colour(c: Comparison) -> str:
    return COLOURS["disturbed" if c.control and not c.cpu.noise else c.cpu.verdict]


def write_chart(report: BenchReport, path: Path) -> Path:
    """One panel per workload; in each, a bar per comparison with its 95% interval.

    Green: faster beyond noise; red: slower; grey: noise; orange: a control
    that is not noise (the run was disturbed).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = list(dict.fromkeys(c.pair.title for c in report.comparisons))
    workloads = report.workloads
    ncols = min(4, len(workloads))
    nrows = -(-len(workloads) // ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(3.6 * ncols + 1.5, 0.8 + (0.6 + 0.22 * len(titles)) * nrows),
        squeeze=False,
        sharey=True,
    )
    for index, workload in enumerate(workloads):
        ax = axes[index // ncols][index % ncols]
        rows = {c.pair.title: c for c in report.comparisons if c.workload == workload}
        chosen = [rows[t] for t in titles if t in rows]
        ax.barh(
            [titles.index(c.pair.title) for c in chosen],
            [c.cpu.median for c in chosen],
            xerr=[
                [c.cpu.median - c.cpu.low for c in chosen],
                [c.cpu.high - c.cpu.median for c in chosen],
            ],
            color=[_colour(c) for c in chosen],
            capsize=2,
        )
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_title(workload + (" (control)" if WORKLOADS[workload].control else ""), fontsize=9)
        ax.tick_params(labelsize=7)
    for index in range(len(workloads), nrows * ncols):
        axes[index // ncols][index % ncols].axis("off")
    axes[0][0].set_yticks(range(len(titles)))
    axes[0][0].set_yticklabels(titles, fontsize=7)
    axes[0][0].invert_yaxis()
    fig.suptitle(
        "speedup = baseline / candidate CPU time per call (95% bootstrap interval)", fontsize=9
    )
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
