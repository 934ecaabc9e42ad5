"""TravelPlanner tools, world opening and env steps: agentgym vs the official pandas approach.

Both sides run on the same full-scale synthetic world (about 4M flight rows) in one run. The
baseline does what the official tools do: ``pd.read_csv(...).dropna()`` at start-up, then a
boolean-mask scan of the DataFrame per call and ``to_string``. Our calls are measured cold (the
per-world result cache bypassed), so each one does the lookup and renders the table.

Opening is measured in fresh processes (peak RSS from ``getrusage``), alternating ours and the
pandas load in the same rounds: the first open parses the CSVs and writes the cache, the warm
reopen checks and maps it. Both wall time and CPU time (``process_time``, all threads) are the
best of the rounds; on a shared machine the CPU time is the fair comparison. Both sides include
their import (agentgym's world, pandas).

    python benchmarks/bench_travelplanner_tools.py [--world DIR] [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import full_world, in_fresh_process, median_us, row  # noqa: E402

OPEN_OURS = """
import time
t, c = time.perf_counter(), time.process_time()
from agentgym.envs.travelplanner.world import World
imported, imported_cpu = time.perf_counter(), time.process_time()
w = World.open({root!r}, cache_dir={cache!r})
done, done_cpu = time.perf_counter(), time.process_time()
RESULT = {{'seconds': done - t, 'cpu': done_cpu - c, 'open_seconds': done - imported,
          'open_cpu': done_cpu - imported_cpu, 'flights': w.n_flights}}
"""

OPEN_PANDAS = """
import time
t, c = time.perf_counter(), time.process_time()
import pandas as pd
db = {root!r} + '/database/'
flights = pd.read_csv(db + 'flights/clean_Flights_2022.csv').dropna()[['Flight Number', 'Price', 'DepTime', 'ArrTime', 'ActualElapsedTime', 'FlightDate', 'OriginCityName', 'DestCityName', 'Distance']]
acc = pd.read_csv(db + 'accommodations/clean_accommodations_2022.csv').dropna()
rest = pd.read_csv(db + 'restaurants/clean_restaurant_2022.csv').dropna()
attr = pd.read_csv(db + 'attractions/attractions.csv').dropna()
dist = pd.read_csv(db + 'googleDistanceMatrix/distance.csv')
RESULT = {{'seconds': time.perf_counter() - t, 'cpu': time.process_time() - c, 'flights': len(flights)}}
"""

# The floor under any first open that stores dictionary codes: pyarrow.csv (threads on) parsing the
# flights alone into them, with pandas' missing-value strings as nulls; no other table, no index,
# no cache. Not agentgym's code: it shows what the fastest available reader costs here.
OPEN_FLOOR = """
import time
t, c = time.perf_counter(), time.process_time()
import pyarrow as pa, pyarrow.csv as pcsv
path = {root!r} + '/database/flights/clean_Flights_2022.csv'
header = open(path, encoding='utf-8').readline().rstrip('\\n').split(',')
types = {{h: pa.binary() if h == 'Flight Number' else pa.dictionary(pa.int32(), pa.string()) for h in header}}
table = pcsv.read_csv(path, read_options=pcsv.ReadOptions(block_size=16 << 20),
                      convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=True,
                                                          null_values={na!r}))
RESULT = {{'seconds': time.perf_counter() - t, 'cpu': time.process_time() - c, 'flights': table.num_rows}}
"""


def _folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def open_figures(root: Path, cache: Path, rounds: int) -> dict[str, float]:
    """First open (cache built) and warm reopen, each in fresh processes, with the pandas load
    run alternately in the same rounds; the best round of each."""
    from agentgym.envs.travelplanner.world._database import _cache_folder

    from agentgym.envs.travelplanner.world._csv import NA_STRINGS

    first, warm, base, floor = [], [], [], []
    for _ in range(rounds):
        shutil.rmtree(cache, ignore_errors=True)
        first.append(in_fresh_process(OPEN_OURS.format(root=str(root), cache=str(cache))))
        base.append(in_fresh_process(OPEN_PANDAS.format(root=str(root))))
        warm.append(in_fresh_process(OPEN_OURS.format(root=str(root), cache=str(cache))))
        floor.append(in_fresh_process(OPEN_FLOOR.format(root=str(root), na=sorted(NA_STRINGS))))
    best = lambda runs, key: min(r[key] for r in runs)  # noqa: E731
    csv_mb = sum((root / "database" / rel).stat().st_size for rel in CSV_FILES) / 2**20
    # Wall time and CPU time are each the best round (on a shared machine the CPU time is the fair one).
    return {"first_s": best(first, "seconds"), "first_cpu": best(first, "cpu"),
            "first_rss": max(r["peak_rss_mb"] for r in first),
            "pandas_s": best(base, "seconds"), "pandas_cpu": best(base, "cpu"),
            "pandas_rss": min(r["peak_rss_mb"] for r in base),
            "floor_s": best(floor, "seconds"), "floor_cpu": best(floor, "cpu"),
            "warm_s": best(warm, "seconds"), "warm_open_s": best(warm, "open_seconds"),
            "warm_open_cpu": best(warm, "open_cpu"), "warm_rss": max(r["peak_rss_mb"] for r in warm),
            "cache_mb": _folder_mb(_cache_folder(root, cache)), "csv_mb": csv_mb, "flights": first[0]["flights"]}


CSV_FILES = ("flights/clean_Flights_2022.csv", "accommodations/clean_accommodations_2022.csv",
             "restaurants/clean_restaurant_2022.csv", "attractions/attractions.csv",
             "googleDistanceMatrix/distance.csv")


class PandasTools:
    """The official approach: one DataFrame per table, a boolean-mask scan per call."""

    def __init__(self, root: Path) -> None:
        import pandas as pd

        db = root / "database"
        self.flights = pd.read_csv(db / "flights/clean_Flights_2022.csv").dropna()
        self.acc = pd.read_csv(db / "accommodations/clean_accommodations_2022.csv").dropna()[
            ["NAME", "price", "room type", "house_rules", "minimum nights", "maximum occupancy", "review rate number", "city"]]
        self.rest = pd.read_csv(db / "restaurants/clean_restaurant_2022.csv").dropna()[
            ["Name", "Average Cost", "Cuisines", "Aggregate Rating", "City"]]
        self.attr = pd.read_csv(db / "attractions/attractions.csv").dropna()
        self.dist = pd.read_csv(db / "googleDistanceMatrix/distance.csv")

    def flight_search(self, o, d, date):
        f = self.flights
        r = f[f["OriginCityName"] == o]
        r = r[r["DestCityName"] == d]
        r = r[r["FlightDate"] == date]
        return f"There is no flight from {o} to {d} on {date}." if len(r) == 0 else r.to_string(index=False)

    def accommodation_search(self, city):
        r = self.acc[self.acc["city"] == city]
        return "There is no attraction in this city." if len(r) == 0 else r.to_string(index=False)

    def restaurant_search(self, city):
        r = self.rest[self.rest["City"] == city]
        return "There is no restaurant in this city." if len(r) == 0 else r.to_string()

    def attraction_search(self, city):
        r = self.attr[self.attr["City"] == city].reset_index(drop=True)
        return "There is no attraction in this city." if len(r) == 0 else r.to_string(index=False)

    def distance(self, o, d, mode):
        r = self.dist[(self.dist["origin"] == o) & (self.dist["destination"] == d)]
        if len(r) == 0:
            return f"{mode}, from {o} to {d}, no valid information."
        duration, distance = r["duration"].values[0], r["distance"].values[0]
        if not isinstance(duration, str) or not isinstance(distance, str) or "day" in duration:
            return "No valid information."
        km = float(str(distance).replace("km", "").replace(",", ""))
        return f"{mode}, from {o} to {d}, duration: {duration}, distance: {distance}, cost: {int(km * 0.05)}"


def _samples(world, n: int, rng: random.Random):
    cities = list(world.cities)
    flights: list[tuple[str, str, str]] = []
    while len(flights) < n:  # half route-dates that have flights, half random
        o, d = rng.choice(cities), rng.choice(cities)
        date = f"2022-03-{rng.randint(1, 28):02d}"
        if len(flights) % 2 == 0 and not world.flights(o, d, date):
            continue
        flights.append((o, d, date))
    city_args = [(rng.choice(cities),) for _ in range(n)]
    dist_args = [(rng.choice(cities), rng.choice(cities), "self-driving") for _ in range(n)]
    return flights[:n], city_args, dist_args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", help="full-scale world folder (generated if missing)")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--open-rounds", type=int, default=5, help="fresh-process rounds of the open figures")
    parser.add_argument("--open-only", action="store_true", help="only the first-open and warm-reopen figures")
    args = parser.parse_args()
    root = full_world(args.world)
    os.environ.setdefault("AGENTGYM_CACHE_DIR", str(root.parent / "agentgym-bench-cache"))

    cache = root.parent / "agentgym-bench-open-cache"
    figs = open_figures(root, cache, args.open_rounds)
    shutil.rmtree(cache, ignore_errors=True)

    print(f"\nworld: {root}  flights: {figs['flights']:,}  calls per tool: {args.calls}\n")
    print("| figure | agentgym | official approach (pandas) | speed-up | goal |")
    print("|---|---|---|---|---|")
    print(row("first open (cache built) vs pd.read_csv, wall", figs["first_s"], figs["pandas_s"], "s", "<= pandas"))
    print(row("first open vs pd.read_csv, CPU time", figs["first_cpu"], figs["pandas_cpu"], "s", "-"))
    print(row("pyarrow's parse of the flights alone (the floor), wall", figs["floor_s"], figs["pandas_s"], "s", "-"))
    print(row("pyarrow's parse of the flights alone, CPU time", figs["floor_cpu"], figs["pandas_cpu"], "s", "-"))
    print(row("first open, peak RSS", figs["first_rss"], figs["pandas_rss"], "MB", "<= 400 MB"))
    print(row("warm reopen, World.open, wall", figs["warm_open_s"], figs["pandas_s"], "s", "<= 0.1 s"))
    print(row("warm reopen, World.open, CPU time", figs["warm_open_cpu"], figs["pandas_cpu"], "s", "-"))
    print(row("warm reopen incl. importing agentgym, s", figs["warm_s"], figs["pandas_s"], "s", "-"))
    print(row("warm reopen, peak RSS", figs["warm_rss"], figs["pandas_rss"], "MB", "<= 100 MB"))
    print(f"| cache size vs the CSVs it replaces | {figs['cache_mb']:,.1f} MB | {figs['csv_mb']:,.1f} MB (CSVs) "
          f"| {figs['csv_mb'] / figs['cache_mb']:,.1f}x smaller | <= CSVs |")
    if args.open_only:
        return

    import gymnasium

    import agentgym  # noqa: F401
    from agentgym.envs.travelplanner.env import tools_for
    from agentgym.envs.travelplanner.world import World

    world = World.open(root)
    tools = tools_for(world)
    cold = {t.action: getattr(t.run, "__wrapped__", t.run) for t in tools}  # bypass the result cache
    pandas_tools = PandasTools(root)
    flights, city_args, dist_args = _samples(world, args.calls, random.Random(0))

    pairs = [
        ("FlightSearch median", cold["FlightSearch"], pandas_tools.flight_search, flights, "<= 50 us"),
        ("AccommodationSearch median", cold["AccommodationSearch"], pandas_tools.accommodation_search, city_args, "<= 20 us"),
        ("RestaurantSearch median", cold["RestaurantSearch"], pandas_tools.restaurant_search, city_args, "<= 20 us"),
        ("AttractionSearch median", cold["AttractionSearch"], pandas_tools.attraction_search, city_args, "<= 20 us"),
        ("GoogleDistanceMatrix median", cold["GoogleDistanceMatrix"], pandas_tools.distance, dist_args, "<= 20 us"),
    ]
    for name, ours_fn, base_fn, call_args, goal in pairs:
        base_args = call_args[: max(20, len(call_args) // 10)]  # the baseline is slow
        print(row(name, median_us(ours_fn, call_args), median_us(base_fn, base_args), "us", goal))
    print(row("FlightSearch median, cached", median_us(tools.by_action("FlightSearch").run, flights, repeat=2),
              median_us(pandas_tools.flight_search, flights[:20]), "us", "(repeat calls)"))

    env = gymnasium.make("TravelPlanner-v0", database=root, max_turns=10**9).unwrapped
    resets = [(i,) for i in range(200)]
    reset_us = median_us(lambda i: env.reset(seed=i), resets)
    env.reset(seed=0)
    steps = [(f"FlightSearch[{o}, {d}, {date}]",) for o, d, date in flights]
    step_us = median_us(env.step, steps)
    print(f"| env.reset() median | {reset_us:,.1f} us | - | - | <= 1000 us |")
    print(f"| env.step(FlightSearch) median | {step_us:,.1f} us | - | - | <= 100 us |")


if __name__ == "__main__":
    main()
