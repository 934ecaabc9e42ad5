"""Random micro worlds (one origin, three cities in one state) and random queries on them.

Small enough for the brute force of ``_brute.py``, and drawn so that the awkward cases come
up often: restaurants serving one or two of four cuisines (cuisine lists then need dearer
restaurants or extra meals on travel days), listings with minimum nights above the stay,
missing roads, flights on some days only, rows the official loader drops.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

HOME, STATE, HOME_STATE = "Homeport", "Alpha", "Origin"
CITIES = ("Alder", "Birch", "Cedar")
CUISINES = ("Chinese", "Italian", "Mexican", "Indian")
HOUSE_RULES = ("smoking", "parties", "children under 10", "visitors", "pets")
WORDS = ("Amber", "Basil", "Clove", "Dill", "Ember", "Fennel", "Ginger", "Hazel")
ROOM_TYPES = ("Entire home/apt", "Private room", "Shared room")
RESTAURANT_HEADER = ["", "Name", "City", "Cuisines", "Average Cost", "Aggregate Rating"]


def write_micro_world(root: Path, rnd: random.Random) -> Path:
    db = root / "database"
    everyone = (HOME, *CITIES)
    _csv(db / "flights/clean_Flights_2022.csv",
         ["Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate", "OriginCityName",
          "DestCityName", "Distance"], _flights(rnd, everyone))
    _csv(db / "googleDistanceMatrix/distance.csv", ["origin", "destination", "cost", "duration", "distance"],
         [[a, b, "", f"{rnd.randint(1, 9)} hours {rnd.randint(0, 59)} mins", f"{rnd.randint(40, 900):,} km"]
          for a in everyone for b in everyone if a != b and rnd.random() < 0.8])
    _csv(db / "accommodations/clean_accommodations_2022.csv",
         ["", "NAME", "room type", "price", "minimum nights", "review rate number", "house_rules",
          "maximum occupancy", "city"], _hotels(rnd))
    _csv(db / "restaurants/clean_restaurant_2022.csv", RESTAURANT_HEADER,
         [[i, *r] for i, r in enumerate(_restaurants(rnd))])
    _csv(db / "attractions/attractions.csv", ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"],
         [[f"{w} Park", "1.0", "2.0", "Main St", "Unknown", "Unknown", c]
          for c in CITIES for w in rnd.sample(WORDS, rnd.randint(2, 5))])
    bg = db / "background"
    bg.mkdir(parents=True, exist_ok=True)
    (bg / "citySet.txt").write_text("".join(c + "\n" for c in everyone))
    (bg / "citySet_with_states.txt").write_text(f"{HOME}\t{HOME_STATE}\n" + "".join(f"{c}\t{STATE}\n" for c in CITIES))
    (bg / "stateSet.txt").write_text(f"{HOME_STATE}\n{STATE}\n")
    return root


def random_query(rnd: random.Random) -> dict[str, Any]:
    days = rnd.choice((3, 5, 7))
    k = {3: 1, 5: 2, 7: 3}[days]
    c = {"house rule": rnd.choice((None, None, None, *HOUSE_RULES)),
         "room type": rnd.choice((None, None, None, "entire room", "private room", "not shared room", "shared room")),
         "transportation": rnd.choice((None, None, "no flight", "no self-driving")),
         "cuisine": rnd.choice((None, rnd.sample(CUISINES, rnd.randint(2, 4))))}
    return {"org": HOME, "dest": rnd.choice(CITIES) if days == 3 else STATE, "days": days, "visiting_city_number": k,
            "date": [f"2022-03-0{i + 1}" for i in range(days)], "people_number": rnd.randint(1, 6),
            "local_constraint": c, "budget": 100_000, "query": "micro", "level": "hard"}


def _flights(rnd: random.Random, cities) -> list[list[Any]]:
    rows, number = [], 1000000
    for a in cities:
        for b in cities:
            for day in range(1, 8):
                if a != b and rnd.random() < 0.3:
                    number += 1
                    rows.append([f"F{number}", rnd.randint(40, 600), "08:00", "10:00", "2 hours 0 minutes",
                                 f"2022-03-0{day}", a, b, "500.0"])
    return rows


def _hotels(rnd: random.Random) -> list[list[Any]]:
    rows = []
    for c in CITIES:
        for w in rnd.sample(WORDS, rnd.randint(2, 5)):
            rules = " & ".join(f"No {r}" for r in rnd.sample(HOUSE_RULES, rnd.choice((0, 1, 1, 1, 2))))
            rows.append([len(rows), f"{w} Inn", rnd.choice(ROOM_TYPES), f"{rnd.randint(50, 400)}.0",
                         f"{rnd.choice((1, 1, 2, 3, 4))}.0", "4.0", rules, rnd.randint(1, 4), c])
    return rows


def _restaurants(rnd: random.Random) -> list[list[Any]]:
    rows = []
    for c in CITIES:
        for w in rnd.sample(WORDS, rnd.randint(3, 8)):
            cuisines = ", ".join(rnd.sample(CUISINES, rnd.choice((1, 1, 1, 2))) + ["Cafe"])
            rows.append([f"{w} Kitchen", c, cuisines, rnd.randint(5, 80), "4.0"])
    return rows


def _csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


ALL_CUISINES = ("Chinese", "Italian", "Mexican", "Indian", "American", "French", "Mediterranean")


def write_spill_world(root: Path) -> Path:
    """A world whose 7-cuisine trips need more extra meals on travel days than one day holds:
    Alder serves four cuisines and Birch three, one per restaurant, and neither has an
    attraction, so a trip can only pass through them (no full day there); Cedar serves none."""
    write_micro_world(root, random.Random(0))
    db = root / "database"
    menus = {"Alder": [(f"{w} Kitchen", c) for w, c in zip(WORDS, ALL_CUISINES[:4])],
             "Birch": [(f"{w} Kitchen", c) for w, c in zip(WORDS, ALL_CUISINES[4:])],
             "Cedar": [(f"{w} {kind}", "Cafe") for kind in ("Kitchen", "Grill") for w in WORDS]}
    rows = [[city, name, cuisine, 10 + 3 * j] for city, menu in menus.items() for j, (name, cuisine) in enumerate(menu)]
    _csv(db / "restaurants/clean_restaurant_2022.csv", RESTAURANT_HEADER,
         [[i, name, city, cuisine, cost, "4.0"] for i, (city, name, cuisine, cost) in enumerate(rows)])
    _csv(db / "attractions/attractions.csv", ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"],
         [[f"{w} Park", "1.0", "2.0", "Main St", "Unknown", "Unknown", "Cedar"] for w in WORDS])
    _csv(db / "accommodations/clean_accommodations_2022.csv",
         ["", "NAME", "room type", "price", "minimum nights", "review rate number", "house_rules",
          "maximum occupancy", "city"],
         [[i, f"{w} Inn", "Private room", "90.0", "1.0", "4.0", "No pets", 2, c]
          for i, (w, c) in enumerate(zip(WORDS, CITIES))])
    everyone = (HOME, *CITIES)
    _csv(db / "googleDistanceMatrix/distance.csv", ["origin", "destination", "cost", "duration", "distance"],
         [[a, b, "", "3 hours 5 mins", "300 km"] for a in everyone for b in everyone if a != b])
    return root
