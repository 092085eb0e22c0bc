"""Splitting ``series test`` over machines: ``--shard I/N`` and the plan ``--list`` prints.

The unit of a shard is a *patch* (its run and its baseline run on the pin).
Every CI job computes the same split from the same inputs, with no
coordination, so the split depends only on the patches selected (in
series.toml order), N, and the durations recorded for their subsets
(series.runs.cache keeps the last one per selection and environment). It
needs neither the pinned upstream nor the stack, so ``--list`` is instant
and offline:

* when every patch that has tests to run has a recorded duration, the
  patches are balanced by them: longest first, each to the shard with the
  least expected time so far (ties: fewer patches, then the lower shard);
* otherwise by position, round robin: the k-th selected patch goes to
  shard ``(k - 1) % N + 1``.

All or nothing on purpose: durations known for only some patches would
make the split depend on which patches happened to run (or be cached)
where, and two jobs could then both run a patch or both skip it. Whether a
result is *cached* never enters: a cached patch keeps its recorded
duration.

Running a shard records new durations, which would change the split for
the shards still to come (on one machine, or on CI machines that restore
a cache another shard saved). So the first split computed for a (mode, N,
patches) is kept in the cache (``<cache>/tests/shards/``) and reused until
the patches or N change; deleting it rebalances. docs/testing.md
("Shards") is the contract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from series import json_text
from series.errors import UsageError
from series.files import write_atomic
from series.manifest import Patch
from series.plain import read_plain
from series.runs.cache import ResultCache, digest, fingerprint
from series.ui import Ui

Costs = list[tuple[str, float | None]]  # (patch id, seconds or None unknown), series order

DURATIONS, POSITION = "durations", "position"
_SHARD = re.compile(r"^([0-9]+)/([0-9]+)$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int


def parse(text: str) -> Shard:
    match = _SHARD.match(text.strip())
    index, count = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    if match is None or count < 1 or not 1 <= index <= count:
        why = (
            "I and N are whole numbers, 1 <= I <= N"
            if match is None
            else f"shard {index} of {count} does not exist: I runs from 1 to N"
        )
        raise UsageError(
            f"--shard {text!r}: not a shard I/N",
            why=why,
            hint="e.g. --shard 1/4 ... --shard 4/4 on four machines; "
            "`series test --list --shard 1/4` shows the split",
        )
    return Shard(index, count)


def costs(cache_root: Path, patches: list[Patch]) -> Costs:
    """Seconds each patch's subset last spent in its tests here; 0 without a subset.

    The subset as series.toml gives it is the selection a patch runs with
    whenever its files are all in the tree (series.runs.plan), so the
    durations recorded for the runs are found without building anything.
    """
    cache, env = ResultCache(cache_root), digest(fingerprint())[:16]
    return [(p.id, cache.last_duration(p.subset, env) if p.subset else 0.0) for p in patches]


def assign(costs: Costs, count: int) -> tuple[dict[str, int], str]:
    """patch id -> shard (1-based) for patches in series order, and what balanced them."""
    if all(cost is not None for _, cost in costs) and any(cost for _, cost in costs):
        loads = [(0.0, 0)] * count
        shards = {}
        order = sorted(range(len(costs)), key=lambda i: (-(costs[i][1] or 0.0), i))
        for i in order:
            pid, cost = costs[i]
            best = min(range(count), key=lambda s: (loads[s], s))
            shards[pid] = best + 1
            loads[best] = (round(loads[best][0] + (cost or 0.0), 3), loads[best][1] + 1)
        return {pid: shards[pid] for pid, _ in costs}, DURATIONS
    return {pid: i % count + 1 for i, (pid, _) in enumerate(costs)}, POSITION


def split(
    patch_costs: Costs, shard: Shard | None, mode: str, cache_root: Path
) -> tuple[dict[str, int], str]:
    """The split: the one kept in the cache for these patches and N, else a new one, kept."""
    if shard is None:
        return assign(patch_costs, 1)
    ids = [pid for pid, _ in patch_costs]
    path = cache_root / "shards" / f"{digest([mode, shard.count, ids])[:32]}.json"
    kept = _kept(path, ids, shard.count)
    if kept is not None:
        return kept
    shards, by = assign(patch_costs, shard.count)
    data = json_text.dumps({"shards": shards, "balanced_by": by}) + "\n"
    write_atomic(path, data, within=None, durable=False)
    return shards, by


def _kept(path: Path, ids: list[str], count: int) -> tuple[dict[str, int], str] | None:
    try:
        data = json_text.loads(read_plain(path))
        shards, by = dict(data["shards"]), str(data["balanced_by"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none yet, or damaged: make a new one
    if list(shards) != ids or not all(
        isinstance(s, int) and 1 <= s <= count for s in shards.values()
    ):
        return None
    return shards, by


def plan_json(
    patches: list[tuple[int, Patch]],
    patch_costs: Costs,
    shard: Shard | None,
    mode: str,
    split_: tuple[dict[str, int], str],
) -> dict[str, Any]:
    """The plan ``--list --json`` prints; ``patches`` are (position, patch)."""
    shards, by = split_
    seconds = dict(patch_costs)
    rows = []
    for position, patch in patches:
        row: dict[str, Any] = {"id": patch.id, "title": patch.title, "position": position}
        if shard is not None:
            row["shard"] = shards[patch.id]
        row["subset"] = list(patch.subset)
        row["expected_seconds"] = seconds[patch.id]
        rows.append(row)
    data: dict[str, Any] = {"mode": mode, "patches": rows, "shards": shard.count if shard else 1}
    if shard is not None:
        data["shard"] = shard.index
        data["balanced_by"] = by
    return data


def show_plan(ui: Ui, data: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        ui.json(data)
        return
    sharded = "shard" in data
    how = f", balanced by {data['balanced_by']}" if sharded else ""
    table = Table(
        title=f"series test plan: {len(data['patches'])} patch(es), {data['shards']} shard(s){how}"
    )
    for column in ("#", "id", *(["shard"] if sharded else []), "expected", "subset"):
        table.add_column(column, overflow="fold")
    for row in data["patches"]:
        seconds = row["expected_seconds"]
        cells = [str(row["position"]), row["id"], *([str(row["shard"])] if sharded else [])]
        cells.append("unknown" if seconds is None else f"{seconds:.1f}s")
        cells.append("\n".join(row["subset"]) or "-")
        table.add_row(*cells)
    ui.table(table)
