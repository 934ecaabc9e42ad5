"""Deterministic generator of a synthetic TravelPlanner world in the official release layout.

``generate_world(out_dir, seed=..., scale=...)`` writes::

    database/flights/clean_Flights_2022.csv
    database/accommodations/clean_accommodations_2022.csv
    database/restaurants/clean_restaurant_2022.csv
    database/attractions/attractions.csv
    database/googleDistanceMatrix/distance.csv
    database/background/{citySet.txt, citySet_with_states.txt, stateSet.txt}
    queries/{train, validation, test}.jsonl

with the official file names, column names and column order, and cell formats copied from
the official tables. Only the content is invented: real US state names (placed at their real
centroids, so distances look plausible) and generated city, restaurant, hotel and attraction
names. Every random draw comes from ``numpy.random.default_rng(seed)``: one seed and scale
give byte-identical files.

Realism the official loader and evaluator depend on is reproduced on purpose: ~14 % of the
listings have empty ``house_rules`` (the official loader drops them), the distance table has
rows with no duration/distance, durations of a day or more, and duplicated pairs; flights
exist on a hub-weighted subset of city pairs, several per route-day, with some empty days.

Queries come in the Hugging Face field format (string reprs for ``date``,
``local_constraint`` and ``annotated_plan``) from the procedural generator
(``agentgym.envs.travelplanner.generator``), run on the world just written: each carries the
exact solver's cheapest plan as its reference plan, which passes every commonsense and hard
constraint in both ``strict`` and ``official`` evaluation; its budget is that plan's cost plus
a random slack (``budget_slack_min`` .. ``budget_slack_max``), rounded up to $100.
Splits are ordered easy 3/5/7, medium 3/5/7, hard 3/5/7 with equal group sizes.

Scale presets (``WorldScale`` fields can also be set one by one):

* ``"tiny"``: 3 states, 9 cities, ~1.5k flight rows, 9 queries per split. For unit tests
  (~0.1 s).
* ``"default"``: 10 neighbouring states, 50 cities, ~22k flight rows, 45/180/90 queries
  (train/validation/test), ~3.5 MB in all. The package's embedded offline world (~1.5 s).
* ``"full"``: the 48 contiguous states, 312 cities, ~4 million flight rows over March 2022
  (~345 MB of CSV), ~5,000 listings, ~9,400 restaurants, ~5,400 attractions, ~17,300 distance
  rows, 45/180/999 queries: the official table sizes, for benchmarks. Writing the tables takes
  ~6 s; the queries need the world opened (its table cache built, ~45 s on a loaded 2-core
  machine, reused by later opens) and then ~10 s of solving.

Levels follow the official data: easy = 1 person, no local constraint; medium = 2-8 people
and exactly one of house rule / cuisine (2 cuisines) / room type; hard = exactly three of the
four local constraints (4 cuisines when cuisine is one of them), with transportation among
them in ``hard_transport_share`` of the queries (0.85, as in the official validation split;
set 1.0 to always include it).

Bad sizes or seeds raise ``agentgym.errors.ConfigError`` naming the field; a world too sparse
to hold a feasible query raises ``agentgym.errors.DataError``.
"""

from __future__ import annotations

from agentgym.envs.travelplanner.synthetic._default import default_world_path, open_world, world_label
from agentgym.envs.travelplanner.synthetic._generate import generate_world
from agentgym.envs.travelplanner.synthetic._scale import SCALE_PRESETS, WorldScale

__all__ = ["WorldScale", "SCALE_PRESETS", "generate_world", "default_world_path", "open_world", "world_label"]
