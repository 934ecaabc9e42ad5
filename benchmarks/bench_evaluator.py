"""Benchmark: agentgym's TravelPlanner evaluator vs a pandas evaluator done the official way.

The baseline below (``PandasOfficialEvaluator``) implements the same 8 + 5 checks as the
official evaluator does them: the tables are pandas DataFrames loaded like the official
loaders (``read_csv`` + ``dropna()``; the distance table kept whole), and every lookup is a
boolean-mask scan over a whole table (``Name.str.contains(...) & City == city``, flight number
and route equality over the full flights table). It is written for this benchmark from the
documented semantics; it is also an independent second implementation, so the run reports how
many `official` verdicts the two disagree on (expected: 0).

Usage::

    python benchmarks/bench_evaluator.py                       # full-scale synthetic world in /tmp
    python benchmarks/bench_evaluator.py --world /path/to/world  # a folder holding database/
    python benchmarks/bench_evaluator.py --baseline-plans 10 --repeat 5

The plan set: every query of the world that carries an ``annotated_plan`` (train, validation
and test splits), each also perturbed once (wrong-city meal, invented venue, changed flight
number, dropped trailing ``;``, repeated restaurant, ...), so passing and failing paths both run.
Figures: plans per second of CPU time on one core; "first pass" starts with empty memo caches
(the per-world indexes and per-text memos are built during it), "steady" is the best of
``--repeat`` further passes. The scaling rows do the same over the first 1,000 and 10,000 plans of
one stream of distinct plans (the gold plans with venues redrawn from their cities), so a memo
or working set that grows with the plan count would show as a lower steady rate at 10,000.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentgym.envs.travelplanner import _plan_text  # noqa: E402
from agentgym.envs.travelplanner.evaluation import _commonsense  # noqa: E402
from agentgym.envs.travelplanner.world.index import index_for  # noqa: E402
from agentgym.envs.travelplanner.evaluation import COMMONSENSE, HARD, evaluate  # noqa: E402
from agentgym.envs.travelplanner.plan import parse_plan  # noqa: E402
from agentgym.envs.travelplanner.tasks import TravelTask, load_tasks  # noqa: E402
from agentgym.envs.travelplanner.world import World  # noqa: E402


# ---------------------------------------------------------------------------------------------
# The baseline: pandas, one full-table boolean mask per lookup
# ---------------------------------------------------------------------------------------------
ROUTE = re.compile(r"from\s+(.+?)\s+to\s+([^,]+)(?=[,\s]|$)")
SUFFIX = re.compile(r"^(.*?)\([^)]*\)")
VENUE = re.compile(r"(.*?),\s*([^,]+)(\(\w[\w\s]*\))?$")
MEALS = ("breakfast", "lunch", "dinner")


def route(text):
    m = ROUTE.search(text)
    return m.groups() if m else (None, None)


def strip_state(text):
    m = SUFFIX.search(text)
    return m.group(1) if m else text


def venue(text):
    m = VENUE.search(text)
    if not m:
        return "-", "-"
    return m.group(1).strip(), strip_state(m.group(2).strip()).strip()


def has(value):
    return bool(value) and value != "-"


class PandasOfficialEvaluator:
    """The official checks over pandas DataFrames (boolean-mask scans per lookup)."""

    def __init__(self, root: Path) -> None:
        db = Path(root) / "database"
        self.flights = pd.read_csv(db / "flights/clean_Flights_2022.csv").dropna()[
            ["Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate",
             "OriginCityName", "DestCityName", "Distance"]]
        self.hotels = pd.read_csv(db / "accommodations/clean_accommodations_2022.csv").dropna()[
            ["NAME", "price", "room type", "house_rules", "minimum nights", "maximum occupancy",
             "review rate number", "city"]]
        self.restaurants = pd.read_csv(db / "restaurants/clean_restaurant_2022.csv").dropna()[
            ["Name", "Average Cost", "Cuisines", "Aggregate Rating", "City"]]
        self.attractions = pd.read_csv(db / "attractions/attractions.csv").dropna()[
            ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"]]
        self.distances = pd.read_csv(db / "googleDistanceMatrix/distance.csv")
        lines = (db / "background/citySet_with_states.txt").read_text().split("\n")
        self.state_of = dict(line.split("\t") for line in lines if line)

    # -- lookups (whole-table masks) ------------------------------------------------------
    def _match(self, df, name_col, city_col, text):
        name, city = venue(text)
        return df[df[name_col].astype(str).str.contains(re.escape(name)) & (df[city_col] == city)]

    def _drive_cost(self, origin, dest, mode):
        origin, dest = strip_state(origin), strip_state(dest)
        rows = self.distances[(self.distances["origin"] == origin) & (self.distances["destination"] == dest)]
        if len(rows) == 0:
            return None
        duration, distance = rows["duration"].values[0], rows["distance"].values[0]
        if not isinstance(duration, str) or not isinstance(distance, str) or "day" in duration:
            return None
        km = float(distance.replace("km", "").replace(",", ""))
        if "driving" in mode:
            return int(km * 0.05)
        return int(km) if mode == "taxi" else None

    # -- commonsense --------------------------------------------------------------------------
    def commonsense(self, q, plan):
        n = min(q["days"], len(plan))
        return {
            "is_reasonable_visiting_city": self._route_ok(q, plan, n),
            "is_valid_restaurants": self._no_repeat(plan, n, lambda u: [u[m] for m in MEALS if m in u and has(u[m])]),
            "is_valid_attractions": self._no_repeat(
                plan, n, lambda u: u["attraction"].split(";")[:-1] if "attraction" in u and has(u["attraction"]) else []),
            "is_valid_accommodation": self._nights_ok(plan, n),
            "is_valid_transportation": self._modes_ok(plan, n),
            "is_valid_information_in_current_city": self._current_city_ok(plan, n),
            "is_valid_information_in_sandbox": self._sandbox_ok(plan, n),
            "is_not_absent": self._complete(q, plan, n),
        }

    def _cities(self, q, plan, n):
        out = []
        for i in range(n):
            cc = plan[i]["current_city"]
            if "from" in cc:
                a, b = route(cc)
                a, b = strip_state(a), strip_state(b)
                if i == 0 and a != q["org"]:
                    return None
                out += [a, b]
            else:
                out.append(strip_state(cc))
        return out

    def _route_ok(self, q, plan, n):
        cities = self._cities(q, plan, n)
        if cities is None or cities[0] != cities[-1] or len(cities) < 3:
            return False
        done, k = set(), 0
        while k < len(cities):
            c = cities[k]
            if c in done and k not in (0, len(cities) - 1):
                return False
            j = k
            while k < len(cities) and cities[k] == c:
                k += 1
            if k - j == 1 and 0 < k - 1 < len(cities) - 1:
                return False
            done.add(c)
        for k, c in enumerate(cities):
            if c not in self.state_of:
                return False
            if 0 < k < len(cities) - 1 and q["days"] > 3 and self.state_of[c] != q["dest"]:
                return False
        return True

    @staticmethod
    def _no_repeat(plan, n, items):
        seen = []
        for i in range(n):
            for v in items(plan[i]):
                if v in seen:
                    return False
                seen.append(v)
        return True

    def _nights_ok(self, plan, n):
        stays = []
        for i in range(n):
            if "accommodation" not in plan[i]:
                return False
            v = plan[i]["accommodation"]
            if stays and stays[-1][0] == v:
                stays[-1][1] += 1
            else:
                stays.append([v, 1])
        for v, nights in stays:
            if v not in ("-", ""):
                rows = self._match(self.hotels, "NAME", "city", v)
                if len(rows) == 1 and nights < rows.iloc[0]["minimum nights"]:
                    return False
        return True

    @staticmethod
    def _mode(text):
        low = text.lower()
        return "taxi" if "taxi" in low else "self" if "self-driving" in low else "flight" if "flight" in low else None

    def _modes_ok(self, plan, n):
        if not has(plan[0]["transportation"]):
            return False
        modes = {self._mode(plan[0]["transportation"])}
        modes.update(self._mode(plan[i]["transportation"]) for i in range(n)
                     if "transportation" in plan[i] and has(plan[i]["transportation"]))
        return not ("self" in modes and ("flight" in modes or "taxi" in modes))

    def _current_city_ok(self, plan, n):
        for i in range(n):
            u = plan[i]
            cc = u["current_city"]
            if "from" in cc:
                a, b = route(cc)
                allowed = [strip_state(a), strip_state(b)]
            else:
                allowed = strip_state(cc)  # a string: iterated character by character, as upstream
            if "transportation" in u and has(u["transportation"]) and any(c not in u["transportation"] for c in allowed):
                return False
            for m in MEALS:
                if m in u and has(u[m]) and not any(c in u[m] for c in allowed):
                    return False
            if "attraction" in u and has(u["attraction"]):
                for piece in u["attraction"].split(";")[:-1]:
                    if not any(c in piece for c in allowed):
                        return False
            if "accommodation" in u and has(u["accommodation"]) and allowed[-1] not in u["accommodation"]:
                return False
        return True

    def _sandbox_ok(self, plan, n):
        for i in range(n):
            u = plan[i]
            t = u["transportation"]
            if has(t):
                a, b = route(t)
                if a is None or b is None:
                    a, b = route(u["current_city"])
                if "flight number" in t.lower():
                    if a is None:
                        raise ValueError("flight without a route")
                    number = t.split("Flight Number: ")[1].split(",")[0]
                    f = self.flights
                    rows = f[(f["Flight Number"] == number) & (f["OriginCityName"] == strip_state(a))
                             & (f["DestCityName"] == strip_state(b))]
                    if len(rows) < 1:
                        return False
                elif "self-driving" in t.lower() or "taxi" in t.lower():
                    a, b = ("-", "-") if a is None else (strip_state(a), strip_state(b))
                    mode = "self-driving" if "self-driving" in t.lower() else "taxi"
                    if self._drive_cost(a, b, mode) is None:
                        return False
            for m in MEALS:
                if m in u and has(u[m]) and len(self._match(self.restaurants, "Name", "City", u[m])) < 1:
                    return False
            if "attraction" in u and has(u["attraction"]):
                for piece in u["attraction"].split(";")[:-1]:
                    if len(self._match(self.attractions, "Name", "City", piece)) < 1:
                        return False
            if "accommodation" in u and has(u["accommodation"]):
                if len(self._match(self.hotels, "NAME", "city", u["accommodation"])) < 1:
                    return False
        return True

    def _complete(self, q, plan, n):
        filled_days = sum(1 for i in range(n) if plan[i] != {} and plan[i]["current_city"]
                          != "You don't need to fill in the information for this or later days.")
        if filled_days != q["days"]:
            return False
        cities = self._cities(q, plan, n)
        if cities is None or len(set(cities) - {q["org"]}) != q["visiting_city_number"]:
            return False
        total = 0
        for i in range(n):
            u = plan[i]
            if any(k not in u for k in ("transportation", "breakfast", "lunch", "dinner", "attraction", "accommodation")):
                return False
            cc = u["current_city"]
            if ("from " in cc or "to " in cc) and u["transportation"] in ("", "-"):
                return False
            if "from " not in cc and " to " not in cc and u["attraction"] in ("", "-"):
                return False
            if i != q["days"] - 1 and u["accommodation"] in ("", "-"):
                return False
            if any(u[m] in ("", "-") for m in MEALS) and "from " not in cc:
                return False
            total += sum(1 for k in u if has(u[k]))
        return total / (6 * q["days"]) >= 0.5

    # -- hard -------------------------------------------------------------------------------
    def hard(self, q, plan):
        n, lc = min(q["days"], len(plan)), q["local_constraint"]
        hotels = [self._match(self.hotels, "NAME", "city", plan[i]["accommodation"])
                  for i in range(n) if has(plan[i]["accommodation"])]
        hotels = [h for h in hotels if len(h)]
        out = {"valid_cost": bool(self._cost(q, plan, n) <= q["budget"])}
        rule = lc["house rule"]
        banned = {"smoking": "No smoking", "parties": "No parties", "children under 10": "No children under 10",
                  "visitors": "No visitors", "pets": "No pets"}.get(rule)
        out["valid_room_rule"] = None if rule is None else not any(
            banned and banned in str(h["house_rules"].values[0]) for h in hotels)
        out["valid_cuisine"] = self._cuisine(q, plan, n) if lc["cuisine"] else None
        want = lc["room type"]
        target = {"shared room": "Shared room", "private room": "Private room", "entire room": "Entire home/apt"}
        out["valid_room_type"] = None if want is None else all(
            (h["room type"].values[0] != "Shared room") if want == "not shared room"
            else (want not in target or h["room type"].values[0] == target[want]) for h in hotels)
        ban = {"no flight": "Flight", "no self-driving": "Self-driving"}.get(lc["transportation"])
        out["valid_transportation"] = None if lc["transportation"] is None else not any(
            has(plan[i]["transportation"]) and ban and ban in plan[i]["transportation"] for i in range(n))
        return out

    def _cost(self, q, plan, n):
        people, total = q["people_number"], 0
        for i in range(n):
            u = plan[i]
            t = u["transportation"]
            if has(t):
                a, b = route(t)
                if a is None or b is None:
                    a, b = route(u["current_city"])
                if a is not None:
                    if "flight number" in t.lower():
                        rows = self.flights[self.flights["Flight Number"] == t.split("Flight Number: ")[1].split(",")[0]]
                        if len(rows):
                            total += rows["Price"].values[0] * people
                    elif "self-driving" in t.lower():
                        total += self._drive_cost(a, b, "self-driving") * math.ceil(people / 5)
                    elif "taxi" in t.lower():
                        total += self._drive_cost(a, b, "taxi") * math.ceil(people / 4)
            for m in MEALS:
                if has(u[m]):
                    rows = self._match(self.restaurants, "Name", "City", u[m])
                    if len(rows):
                        total += rows["Average Cost"].values[0] * people
            if has(u["accommodation"]):
                rows = self._match(self.hotels, "NAME", "city", u["accommodation"])
                if len(rows):
                    total += rows["price"].values[0] * math.ceil(people / rows["maximum occupancy"].values[0])
        return total

    def _cuisine(self, q, plan, n):
        wanted, seen = q["local_constraint"]["cuisine"], set()
        for i in range(n):
            for m in MEALS:
                if has(plan[i][m]):
                    if venue(plan[i][m])[1] == q["org"]:
                        break  # upstream's `continue` ends the day
                    rows = self._match(self.restaurants, "Name", "City", plan[i][m])
                    if len(rows):
                        seen.update(c for c in wanted if c in rows.iloc[0]["Cuisines"])
        return len(seen) == len(wanted)

    def evaluate(self, q, plan):
        """``(commonsense, hard | None)`` like upstream; exceptions propagate as upstream."""
        if not plan:
            return None, None
        cs = self.commonsense(q, plan)
        hard = self.hard(q, plan) if cs["is_not_absent"] and cs["is_valid_information_in_sandbox"] else None
        return cs, hard


# ---------------------------------------------------------------------------------------------
# Plan set
# ---------------------------------------------------------------------------------------------
def perturb(plan: list[dict], k: int, q: TravelTask) -> list[dict]:
    """One deterministic change of a gold plan (kind chosen by ``k``)."""
    plan = [dict(d) for d in plan]
    days = [d for d in plan if d.get("current_city")]
    mid = days[len(days) // 2]
    kind = k % 7
    if kind == 0 and mid.get("lunch", "-") != "-":
        mid["lunch"] = "Imaginary Bistro, " + mid["lunch"].rsplit(",", 1)[-1].strip()
    elif kind == 1:
        mid["dinner"] = days[0].get("dinner") if days[0].get("dinner", "-") != "-" else mid.get("dinner")
        if len(days) > 1:
            days[-1]["breakfast"] = mid.get("lunch", "-")
    elif kind == 2 and "Flight Number: F" in days[0].get("transportation", ""):
        days[0]["transportation"] = days[0]["transportation"].replace("Flight Number: F", "Flight Number: F9")
    elif kind == 3 and mid.get("attraction", "-").endswith(";"):
        mid["attraction"] = mid["attraction"][:-1]
    elif kind == 4:
        mid["accommodation"] = "-"
    elif kind == 5:
        days[-1]["current_city"] = days[-1]["current_city"].replace(q.org, "Nowhere City")
    elif kind == 6 and mid.get("breakfast", "-") != "-":
        mid["breakfast"] = mid["breakfast"].upper()
    return plan


def plan_set(world: World) -> list[tuple[TravelTask, list[dict]]]:
    items = []
    for split in ("train", "validation", "test"):
        try:
            queries = load_tasks(split, world_root=world.root)
        except Exception:  # noqa: BLE001 - a world without this split
            continue
        for k, q in enumerate(queries):
            if q.annotated_plan:
                gold = [dict(d) for d in q.annotated_plan]
                items.append((q, gold))
                items.append((q, perturb(gold, k, q)))
    return items


def distinct_plans(world: World, base: list[tuple[TravelTask, list[dict]]], n: int, seed: int = 0):
    """``n`` plans with distinct texts, as a policy's stream would be: each base plan with its meals,
    attractions and hotels redrawn from the same city's rows (valid names, new strings)."""
    import random

    rng = random.Random(seed)
    tables = {"breakfast": world.restaurants, "lunch": world.restaurants, "dinner": world.restaurants,
              "accommodation": world.accommodations}
    out = []
    while len(out) < n:
        q, plan = base[len(out) % len(base)]
        plan = [dict(d) for d in plan]
        for day in plan:
            city = str(day.get("current_city", ""))
            city = city.rsplit(" to ", 1)[-1] if "from" in city else city
            for key, table in tables.items():
                rows = table(city)
                if rows and day.get(key, "-") != "-":
                    day[key] = f"{rng.choice(rows).name}, {city}"
            sights = world.attractions(city)
            if sights and day.get("attraction", "-") != "-":
                picks = rng.sample(sights, min(2, len(sights)))
                day["attraction"] = "".join(f"{a.name}, {city};" for a in picks)
        out.append((q, parse_plan(plan)))
    return out


def scaling(world: World, base, sizes=(1_000, 10_000), repeat: int = 3) -> dict[int, tuple[float, float]]:
    """(first pass, steady state) plans/s over the first ``size`` of one stream of distinct plans."""
    plans = distinct_plans(world, base, max(sizes))
    out = {}
    for size in sizes:
        clear_memos(world)
        run = lambda q, p: evaluate(p, q, world, evaluator="official")  # noqa: E731
        first = cpu_rate(run, plans[:size])
        steady = max(cpu_rate(run, plans[:size]) for _ in range(repeat))
        out[size] = (first, steady)
    return out


def official_row(q: TravelTask) -> dict[str, Any]:
    row = q.to_row()
    row["date"] = list(q.date)
    row["local_constraint"] = ast.literal_eval(row["local_constraint"])
    return row


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------
def cpu_rate(fn, items) -> float:
    gc.collect()
    t = time.process_time()
    for q, p in items:
        fn(q, p)
    dt = time.process_time() - t
    return len(items) / dt if dt > 0 else float("inf")


def clear_memos(world: World) -> None:
    ix = index_for(world)
    ix.clear()
    ix._names.clear()  # noqa: SLF001 - benchmark: start from a cold index
    ix._exact.clear()  # noqa: SLF001
    for name in ("from_to", "before_paren", "name_city", "norm", "strict_route", "strict_route_in", "strict_name_city"):
        getattr(_plan_text, name).cache_clear()
    _commonsense.current_city.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", help="a folder holding database/ (default: generate the full-scale synthetic world)")
    ap.add_argument("--out", default="/tmp/agentgym-bench-full-seed0", help="where to generate the synthetic world (shared with the other benchmarks)")
    ap.add_argument("--scale", default="full")
    ap.add_argument("--baseline-plans", type=int, default=20, help="plans the pandas baseline evaluates")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scaling", type=int, nargs="+", default=[1_000, 10_000],
                    help="stream lengths (distinct plans) whose steady-state rates are compared")
    args = ap.parse_args()

    root = Path(args.world) if args.world else Path(args.out)
    if not args.world and not (root / "database").is_dir():
        from agentgym.envs.travelplanner.synthetic import generate_world

        print(f"generating the {args.scale} synthetic world in {root} ...", flush=True)
        generate_world(root, seed=0, scale=args.scale)
    t = time.perf_counter()
    world = World.open(root)
    print(f"world: {world}  (opened in {time.perf_counter() - t:.1f} s)")
    items = plan_set(world)
    parsed = [(q, parse_plan(p)) for q, p in items]
    print(f"plans: {len(items)} (gold + one perturbation each)")

    results = {}
    for evaluation in ("official", "strict"):
        clear_memos(world)
        def run(q, p, evaluation=evaluation):
            return evaluate(p, q, world, evaluator=evaluation)

        first = cpu_rate(run, parsed)
        steady = max(cpu_rate(run, parsed) for _ in range(args.repeat))
        results[evaluation] = (first, steady)
        print(f"agentgym {evaluation:8s}: first pass {first:9,.0f} plans/s   steady {steady:9,.0f} plans/s")

    sizes = tuple(args.scaling)
    scale = scaling(world, items[::2], sizes, args.repeat)  # the gold plans, redrawn
    for size, (first, steady) in scale.items():
        print(f"agentgym official over {size:>6,} distinct plans: first pass {first:9,.0f} plans/s   "
              f"steady {steady:9,.0f} plans/s")
    lo, hi = scale[sizes[0]][1], scale[sizes[-1]][1]
    print(f"steady state at {sizes[-1]:,} vs {sizes[0]:,} plans: {hi / lo:.2f}x (flat = 1.00)")

    t = time.perf_counter()
    baseline = PandasOfficialEvaluator(root)
    print(f"pandas baseline: tables loaded in {time.perf_counter() - t:.1f} s")
    step = max(1, len(items) // max(1, args.baseline_plans))
    sample = items[::step][: args.baseline_plans]
    rows = [(official_row(q), p) for q, p in sample]
    base_rate = cpu_rate(lambda q, p: _safe(baseline.evaluate, q, p), rows)
    print(f"pandas   official: {base_rate:9,.2f} plans/s ({1 / base_rate:.3f} s per plan, {len(sample)} plans)")

    disagreements = compare(baseline, world, sample)
    first, steady = results["official"]
    print(f"speed-up (official, per plan): first pass {first / base_rate:,.0f}x, steady {steady / base_rate:,.0f}x")
    print(f"official verdicts differing from the pandas baseline: {disagreements} of {len(sample) * 13}")
    print(json.dumps({"world": str(root), "flight_rows": world.n_flights, "plans": len(items),
                      "agentgym_official_first": round(first), "agentgym_official_steady": round(steady),
                      "agentgym_strict_first": round(results["strict"][0]),
                      "agentgym_strict_steady": round(results["strict"][1]),
                      "pandas_official": round(base_rate, 3), "ratio_first": round(first / base_rate),
                      "ratio_steady": round(steady / base_rate), "disagreements": disagreements,
                      "scaling": {str(k): [round(a), round(b)] for k, (a, b) in scale.items()},
                      "cpu": os.cpu_count()}))


def _safe(fn, q, p):
    try:
        return fn(q, p)
    except Exception as exc:  # noqa: BLE001 - upstream would abort; the benchmark records it
        return exc


def compare(baseline: PandasOfficialEvaluator, world: World, sample) -> int:
    differing = 0
    for q, p in sample:
        ours = evaluate(p, q, world, evaluator="official").to_official()
        theirs = _safe(baseline.evaluate, official_row(q), p)
        if isinstance(theirs, Exception):
            differing += ours["error"] is None
            continue
        cs, hard = theirs
        if (ours["hard"] is None) != (hard is None):
            differing += 1
        for name in COMMONSENSE:
            differing += ours["commonsense"][name] != cs[name]
        for name in HARD:
            differing += (ours["hard"] or {}).get(name) != (hard or {}).get(name)
    return differing


if __name__ == "__main__":
    main()
