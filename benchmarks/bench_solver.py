"""The exact TravelPlanner solver and the query generator: time per query and throughput.

* Generation: queries per second of ``generate_queries`` on the embedded world (each query is
  drawn, solved exactly for its cheapest plan, priced and rendered; rejected draws included).
* Solver, embedded world: time per query (median and p95) by level, on freshly generated
  queries (solving them against their budgets, as the solver agent does).
* Solver, real data: the 45 train queries (and the 180 validation queries) of the real
  database, when ``AGENTGYM_SHARED_DATA``/``../shared/data/travelplanner`` exists.
* ``--full DIR``: also the validation split of a full-scale synthetic world (312 cities,
  about 4M flights; generated on first use, which takes about a minute).

    python benchmarks/bench_solver.py [--per-group 20] [--seed 0] [--full DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from agentgym.envs.travelplanner.generator import generate_queries
from agentgym.envs.travelplanner.queries import TravelQuery, load_queries
from agentgym.envs.travelplanner.solver import solve
from agentgym.envs.travelplanner.synthetic import default_world_path
from agentgym.envs.travelplanner.world import World

sys.path.insert(0, str(Path(__file__).parent))
from _common import full_world  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("AGENTGYM_SHARED_DATA", REPO.parent / "shared" / "data")) / "travelplanner"
LEVELS = ("easy", "medium", "hard")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def solve_all(name: str, queries: list[TravelQuery], world: World) -> None:
    results = [solve(q, world, must_pass="both", time_limit=60.0) for q in queries]
    print(f"\n### {name} ({len(queries)} queries)\n")
    print("| level | n | median ms | p95 ms | max ms | median nodes | solved | infeasible | timeout |")
    print("|---|---|---|---|---|---|---|---|---|")
    for level in (*LEVELS, "all"):
        picked = [r for q, r in zip(queries, results) if level in ("all", q.level)]
        if not picked:
            continue
        ms = [1000 * r.stats.seconds for r in picked]
        count = {s: sum(r.status == s for r in picked) for s in ("solved", "infeasible", "timeout")}
        print(f"| {level} | {len(picked)} | {statistics.median(ms):.1f} | {p95(ms):.1f} | {max(ms):.1f} | "
              f"{statistics.median(r.stats.nodes for r in picked):.0f} | {count['solved']} | "
              f"{count['infeasible']} | {count['timeout']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-group", type=int, default=20, help="generated queries per (level, days) group")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--full", default=None, help="also the validation split of a full-scale world (folder)")
    args = parser.parse_args()

    world = World.open(default_world_path())
    start = time.perf_counter()
    rows = generate_queries(world, per_group=args.per_group, seed=args.seed)
    elapsed = time.perf_counter() - start
    print(f"## Generation on the embedded world\n\n{len(rows)} queries in {elapsed:.2f} s: "
          f"**{len(rows) / elapsed:.1f} queries/s**")
    solve_all("Solver, embedded world, generated queries", [TravelQuery.from_row(r) for r in rows], world)
    if (REAL / "database").is_dir():
        real = World.open(REAL)
        solve_all("Solver, real database, train", load_queries(REAL / "queries" / "train.jsonl"), real)
        solve_all("Solver, real database, validation", load_queries(REAL / "queries" / "validation.jsonl"), real)
    if args.full:
        folder = full_world(args.full)
        big = World.open(folder)
        solve_all("Solver, full-scale world, validation", load_queries("validation", world_root=big.root), big)


if __name__ == "__main__":
    main()
