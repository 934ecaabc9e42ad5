"""Random damage to a copy of the real database gives a correct world or a DataError, never another
exception, and never unbounded memory.

Hypothesis damages one file of a fresh copy (truncation, overwritten or inserted bytes, another
encoding, a huge cell, a missing column, a folder in its place, a deleted file) and opens it. A
DataError must name the damaged file. A world that opens must hold what the official loader
(``pd.read_csv(...).dropna()``) reads from the damaged file: a damage that leaves a well-formed
table is a smaller, still correct, world. The process's RSS is sampled while the world is built.
"""

from __future__ import annotations

import csv
import io
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentgym.envs.travelplanner.world import Accommodation, Attraction, Restaurant, World
from agentgym.envs.travelplanner.world import _database as world_mod
from agentgym.errors import DataError
from _rss import peak_rss

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.realdata

SOURCES = dict(world_mod._SOURCES)
CSVS = ("flights", "accommodations", "restaurants", "attractions", "distances")
ROW_TYPES = {"accommodations": Accommodation, "restaurants": Restaurant, "attractions": Attraction}
CITY_COLUMN = {"accommodations": "city", "restaurants": "City", "attractions": "City"}
KINDS = ("truncate", "overwrite", "insert", "encoding", "huge_cell", "missing_column", "folder", "delete")
RSS_BOUND_MB = 600  # building the real database grows the process by about 85 MB


@st.composite
def damages(draw):
    table = draw(st.sampled_from(sorted(SOURCES)))
    kind = draw(st.sampled_from(KINDS if table in CSVS else [k for k in KINDS if k != "missing_column"]))
    return table, kind, draw(st.randoms(use_true_random=False))


def _damage(path: Path, kind: str, rng) -> None:
    data = path.read_bytes()
    if kind == "truncate":
        path.write_bytes(data[: rng.randrange(len(data))])
    elif kind == "overwrite":
        out = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] = rng.choice([rng.randrange(256), *b'",\n\r\t\x00'])
        path.write_bytes(bytes(out))
    elif kind == "insert":
        at = rng.randrange(len(data))
        junk = bytes(rng.choice([rng.randrange(256), *b'",\n']) for _ in range(rng.randint(1, 8)))
        path.write_bytes(data[:at] + junk + data[at:])
    elif kind == "encoding":
        text = data.decode("utf-8")
        if rng.random() < 0.5:
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice("éüñ☆") + text[at:]
        path.write_bytes(text.encode(rng.choice(["latin-1", "cp1252", "utf-16"]), errors="replace"))
    elif kind == "huge_cell":
        at = rng.randrange(len(data))
        path.write_bytes(data[:at] + b"9" * rng.randint(200_000, 2_000_000) + data[at:])
    elif kind == "missing_column":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
        drop = rng.randrange(len(rows[0]))
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([r[:drop] + r[drop + 1:] for r in rows])
        path.write_text(out.getvalue(), encoding="utf-8")
    elif kind == "folder":
        path.unlink()
        path.mkdir()
    else:
        path.unlink()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(damage=damages())
def test_a_damaged_database_opens_correctly_or_is_a_data_error(real_travelplanner: Path, tmp_path_factory,
                                                               damage) -> None:
    table, kind, rng = damage
    folder = tmp_path_factory.mktemp("damaged")
    shutil.copytree(real_travelplanner / "database", folder / "world" / "database")
    path = folder / "world" / SOURCES[table]
    path.chmod(0o644)
    _damage(path, kind, rng)
    world_mod._OPEN.clear()
    with peak_rss() as rss:
        try:
            world = World.open(folder / "world", cache_dir=folder / "cache")
        except DataError as exc:
            assert path.name in str(exc), (kind, str(exc))
            world = None
    assert rss["mb"] < RSS_BOUND_MB, (kind, table, rss)
    event(f"{kind}: {'DataError' if world is None else 'a world'}")
    if world is not None:
        _assert_official(world, table, path)


def _assert_official(world: World, table: str, path: Path) -> None:
    """The world holds what the official loader reads from the (damaged) file."""
    if table in ROW_TYPES:
        frame = pd.read_csv(path).dropna()[list(ROW_TYPES[table].COLUMNS)]
        assert sum(len(getattr(world, table)(c)) for c in _cities_of(world, table)) == len(frame)
        for city, rows in frame.groupby(CITY_COLUMN[table], sort=False):
            got = getattr(world, table)(city)
            assert len(got) == len(rows)
            for ours, theirs in zip(got, rows.itertuples(index=False, name=None)):
                assert all(_same(a, b) for a, b in zip(ours, theirs)), (ours, theirs)
    elif table == "flights":
        frame = pd.read_csv(path).dropna()
        assert world.n_flights == len(frame)
        for (o, d, date), group in frame.groupby(["OriginCityName", "DestCityName", "FlightDate"], sort=False):
            assert [f.number for f in world.flights(o, d, date)] == [str(n) for n in group["Flight Number"]]
    elif table == "distances":
        frame = pd.read_csv(path)
        for o, d, duration, distance in frame[["origin", "destination", "duration", "distance"]].drop_duplicates(
                ["origin", "destination"]).itertuples(index=False, name=None):
            if isinstance(o, str) and isinstance(d, str):
                row = world.distance(o, d)
                assert (row.duration, row.distance) == (_text(duration), _text(distance))
    else:
        lines = [line.rstrip("\r") for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
        got = {"city_set": list(world.cities), "state_set": list(world.states),
               "city_states": [[c, s] for c, s in _pairs_of(world)]}[table]
        assert got == [line.split("\t") for line in lines] if table == "city_states" else got == lines


def _cities_of(world: World, table: str):
    return world._small[table].keys()  # every city with a row, not only the listed ones


def _pairs_of(world: World):
    return world._small["city_states"]


def _text(value):
    return None if isinstance(value, float) and math.isnan(value) else str(value)


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-12)
    return a == b
