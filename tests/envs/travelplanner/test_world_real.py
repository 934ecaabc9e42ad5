"""The world and its tools reproduce the official loaders and tool outputs on the real data."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest

from agentgym.envs.travelplanner.world import render_table
from agentgym.envs.travelplanner.env import tools_for
from agentgym.envs.travelplanner.world import Accommodation, Attraction, Restaurant

pytestmark = pytest.mark.realdata

TABLES = [
    ("accommodations/clean_accommodations_2022.csv", Accommodation, "accommodations", "city"),
    ("restaurants/clean_restaurant_2022.csv", Restaurant, "restaurants", "City"),
    ("attractions/attractions.csv", Attraction, "attractions", "City"),
]


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-12)
    return a == b


@pytest.mark.parametrize("rel, row_type, method, city_col", TABLES)
def test_small_tables_match_the_official_pandas_loader(real_travelplanner, real_world, rel, row_type, method, city_col):
    frame = pd.read_csv(real_travelplanner / "database" / rel).dropna()[list(row_type.COLUMNS)]
    ours = [row for city in frame[city_col].unique() for row in getattr(real_world, method)(city)]
    theirs = list(frame.itertuples(index=False, name=None))
    assert len(ours) == len(theirs)
    by_city = {}
    for r in theirs:
        by_city.setdefault(r[-1], []).append(r)
    for city, rows in by_city.items():
        got = getattr(real_world, method)(city)
        assert len(got) == len(rows)
        for g, t in zip(got, rows):
            assert all(_same(x, y) for x, y in zip(g, t)), (g, t)


@pytest.mark.parametrize("rel, row_type, method, city_col", TABLES)
def test_rendered_tables_equal_pandas_to_string(real_travelplanner, real_world, rel, row_type, method, city_col):
    frame = pd.read_csv(real_travelplanner / "database" / rel).dropna()[list(row_type.COLUMNS)]
    for city in random.Random(0).sample(sorted(frame[city_col].unique()), 25):
        expected = frame[frame[city_col] == city].to_string(index=False)
        assert render_table(row_type.COLUMNS, getattr(real_world, method)(city)) == expected


def test_flight_rows_match_pandas(real_travelplanner, real_world):
    frame = pd.read_csv(real_travelplanner / "database/flights/clean_Flights_2022.csv").dropna()
    for (o, d, date), group in frame.groupby(["OriginCityName", "DestCityName", "FlightDate"], sort=False):
        got = real_world.flights(o, d, date)
        assert [f.number for f in got] == list(group["Flight Number"])
        assert render_table(got[0].COLUMNS, got) == group.to_string(index=False)
    first = frame.iloc[0]
    assert real_world.flights_by_number(first["Flight Number"])[0].price == first["Price"]
    assert real_world.flights_by_number("F0000000") == []


def _ref_cases(real_travelplanner):
    with open(real_travelplanner / "database/train_ref_info.jsonl") as f:
        for line in f:
            yield from json.loads(line).items()


def test_tool_outputs_equal_the_recorded_reference_information(real_travelplanner, real_world):
    tools = tools_for(real_world)
    checked = 0
    for description, recorded in _ref_cases(real_travelplanner):
        kind, rest = description.split(" ", 1)
        if kind in ("Attractions", "Restaurants", "Accommodations"):
            city = rest.removeprefix("in ")
            rows = {"Attractions": real_world.attractions, "Restaurants": real_world.restaurants,
                    "Accommodations": real_world.accommodations}[kind](city)
            _assert_rows(rows, recorded)
            checked += 1
        elif kind == "Flight":
            a, b_date = rest.removeprefix("from ").split(" to ")
            b, date = b_date.split(" on ")
            result = tools.by_action("FlightSearch").run(a, b, date)
            if isinstance(recorded, str):
                assert result.content == recorded  # the official "There is no flight ..." message
            else:
                _assert_rows(real_world.flights(a, b, date), recorded)
            checked += 1
        else:  # Self-driving / Taxi
            a, b = rest.removeprefix("from ").split(" to ")
            mode = "self-driving" if kind == "Self-driving" else "taxi"
            assert tools.by_action("GoogleDistanceMatrix").run(a, b, mode).content == recorded
            checked += 1
    assert checked > 500


def _assert_rows(rows, recorded) -> None:
    assert len(rows) == len(recorded)
    for row, rec in zip(rows, recorded):
        assert list(rec) == list(row.COLUMNS)
        assert all(_same(x, y) for x, y in zip(row, rec.values())), (row, rec)


def test_reference_information_of_train_queries_is_reproduced(real_travelplanner, real_world):
    from agentgym.envs.travelplanner.tasks import load_tasks
    from agentgym.envs.travelplanner.reference_information import reference_information

    tools = tools_for(real_world)
    for q in load_tasks("train", world_root=real_travelplanner):
        ours = reference_information(q, real_world, tools)
        assert [e["Description"] for e in ours] == [e["Description"] for e in q.reference_information]
        for mine, theirs in zip(ours, q.reference_information):
            assert mine["Content"] == theirs["Content"], mine["Description"]
