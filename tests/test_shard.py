"""series test --shard I/N and --list: the same split on every machine, every patch once."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from helpers import Project
from series.errors import Exit
from series.project import default_cache_dir
from series.runs.cache import ResultCache, digest, fingerprint
from series.runs.shard import DURATIONS, POSITION, assign
from tinytests import OPS, make_tiny_project


def cases() -> list[tuple[list[float | None], int]]:
    """Seeded random cost lists (some unknown, some zero) and shard counts."""
    rng = random.Random(13)
    found: list[tuple[list[float | None], int]] = []
    for _ in range(300):
        costs: list[float | None] = [
            None if rng.random() < 0.1 else round(rng.uniform(0, 600), 3)
            for _ in range(rng.randint(0, 30))
        ]
        found.append((costs, rng.randint(1, 8)))
    return found


def named(costs: list[float | None]) -> list[tuple[str, float | None]]:
    return [(f"P{i + 1}", cost) for i, cost in enumerate(costs)]


def test_every_patch_is_in_exactly_one_shard_and_the_split_is_deterministic() -> None:
    for costs, count in cases():
        items = named(costs)
        shards, by = assign(items, count)
        assert list(shards) == [pid for pid, _ in items]  # each patch once, in series order
        assert all(1 <= s <= count for s in shards.values())
        assert assign(list(items), count) == (shards, by)


def test_without_durations_for_every_patch_the_split_is_round_robin() -> None:
    assert assign(named([None] * 5), 2) == ({"P1": 1, "P2": 2, "P3": 1, "P4": 2, "P5": 1}, POSITION)
    # durations known for some patches only (e.g. only they ran here) change nothing
    partial = named([30.0, None, 1.0, None, 2.0])
    assert assign(partial, 2) == assign(named([None] * 5), 2)


def test_with_durations_the_shards_are_balanced() -> None:
    items = named([1.0, 50.0, 2.0, 40.0, 3.0, 10.0, 0.0])
    shards, by = assign(items, 2)
    assert by == DURATIONS
    loads = [sum(c or 0 for p, c in items if shards[p] == s) for s in (1, 2)]
    assert sorted(loads) == [53.0, 53.0]
    assert shards["P2"] != shards["P4"]  # the two long ones go apart


def test_balanced_within_the_longest_patch() -> None:
    for costs, count in cases():
        known: list[float | None] = [c for c in costs if c is not None]
        if not any(known):
            continue
        items = named(known)
        shards, by = assign(items, count)
        assert by == DURATIONS
        loads = [sum(c or 0 for p, c in items if shards[p] == s) for s in range(1, count + 1)]
        assert max(loads) - min(loads) <= max(c or 0 for c in known) + 1e-6


def run_json(project: Project, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = project.run("test", "--json", *args)
    return code, json.loads(out) if out.strip() else {}, err


def test_list_prints_the_plan_and_runs_nothing(tmp_path: Path) -> None:
    project = make_tiny_project(tmp_path)
    code, plan, err = run_json(project, "--list", "--shard", "2/2")
    assert code == 0, err
    assert not (default_cache_dir() / "tests" / "results").exists()
    assert not (default_cache_dir() / "upstream.git").exists()  # no upstream, no stack: offline
    assert plan["shards"] == 2 and plan["shard"] == 2 and plan["balanced_by"] == "position"
    assert [(p["id"], p["position"], p["shard"]) for p in plan["patches"]] == [
        ("P1", 1, 1),
        ("P2", 2, 2),
        ("P3", 3, 1),
    ]
    assert all(p["expected_seconds"] is None for p in plan["patches"])
    assert plan["patches"][0]["subset"] == ["tests/test_ops.py"]
    assert plan["patches"][0]["title"] == "ops: add returns b + a"
    code, plain, _ = run_json(project, "--list")
    assert plain["shards"] == 1 and "shard" not in plain["patches"][0]


def shard_runs(project: Project, count: int) -> list[str]:
    ran = []
    for i in range(1, count + 1):
        _, report, err = run_json(project, "--shard", f"{i}/{count}")
        assert f"shard {i}/{count}" in err, err
        ran += [p["id"] for p in report["patches"]]
    return sorted(ran)


def test_shards_run_one_after_another_run_every_patch_once(tmp_path: Path) -> None:
    project = make_tiny_project(tmp_path)
    run_json(project, "P1")  # durations for some selections only
    assert shard_runs(project, 2) == ["P1", "P2", "P3"]  # each run records more durations
    assert shard_runs(project, 3) == ["P1", "P2", "P3"]


def test_shards_are_balanced_by_recorded_durations_and_kept(tmp_path: Path) -> None:
    project = make_tiny_project(tmp_path)
    # the tiny tests take no measurable time: record durations as a slow machine would
    cache, env = ResultCache(default_cache_dir() / "tests"), digest(fingerprint())[:16]
    cache.note_duration((OPS,), env, 5.0)
    cache.note_duration(("tests/test_sub.py", f"{OPS}::test_add", f"{OPS}::test_mul"), env, 20.0)
    _, plan, _ = run_json(project, "--list", "--shard", "1/2")
    assert plan["balanced_by"] == "durations"
    split = {p["id"]: (p["expected_seconds"], p["shard"]) for p in plan["patches"]}
    assert split == {"P1": (5.0, 2), "P2": (5.0, 2), "P3": (20.0, 1)}
    assert shard_runs(project, 2) == ["P1", "P2", "P3"]
    # the runs recorded new durations; the split stays the one every shard used
    _, again, _ = run_json(project, "--list", "--shard", "2/2")
    assert {p["id"]: p["shard"] for p in again["patches"]} == {k: v[1] for k, v in split.items()}
    assert again["patches"][0]["expected_seconds"] != 5.0


def test_bad_shards_are_refused_before_anything_runs(tmp_path: Path) -> None:
    project = make_tiny_project(tmp_path)
    for bad in ("0/2", "3/2", "1/0", "a/b", "2", "-1/2"):
        code, _, err = project.run("test", f"--shard={bad}")
        assert code == Exit.BAD_INPUT, bad
        assert "not a shard I/N" in err and "--shard 1/4" in err
    assert not (default_cache_dir() / "tests").exists()
