"""A plan template: the shape of a task's reference plan, with every entry left as a choice.

For constrained sampling (``agentgym.integrations.trl.constraints.TemplateConstraint``): a small
or random model cannot write a plan's JSON, so the template writes the structure (the day list,
the keys, the cities of each day, ``-`` where the reference plan has nothing) and leaves each
entry the reference plan fills to the model, as a slot of a few candidates:

* transportation on a travel day: the reference entry, the leg's other flights on that date, and
  self-driving and taxi when the distance table has the leg;
* breakfast, lunch and dinner (one candidate list shared by every meal of the trip, so that
  choosing distinct restaurants is the model's job), accommodation (shared by every night) and
  attraction (one ``Name, City;`` per day): the reference plan's venues and others of the city.

Each slot holds the reference plan's entries (so a plan passing every constraint can be written)
and ``per_slot - 1`` others drawn with ``seed``, in an order drawn with it too. Which candidates a plan uses, hence its cost, its room type, its
cuisines and whether meals repeat, is the model's choice. The action is ``Finish[<plan JSON>]``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from agentgym.envs.travelplanner.tasks import TravelTask
from agentgym.envs.travelplanner.tools import distance_matrix, strip_state
from agentgym.envs.travelplanner.world import World
from agentgym.errors import ConfigError

__all__ = ["plan_template"]

_MEALS = ("breakfast", "lunch", "dinner")
_VENUES = {"meal": "restaurants", "accommodation": "accommodations", "attraction": "attractions"}


def plan_template(task: TravelTask, world: World, *, per_slot: int = 4, seed: int = 0) -> list[str | tuple[str, ...]]:
    """The parts of ``Finish[<plan JSON>]`` for ``task``: literal text and slots (tuples of texts)."""
    if not task.annotated_plan or task.visiting_city_number != 1:
        raise ConfigError("task", task.id, "a one-city task with a reference plan (annotated_plan)")
    rng = np.random.default_rng(seed)
    reference = list(task.annotated_plan[: task.days])
    city = strip_state(task.dest)
    choices = {kind: _venues(world, kind, city, _used(reference, kind), per_slot, rng) for kind in _VENUES}
    parts: list[str | tuple[str, ...]] = ["Finish["]
    for i, day in enumerate(reference):
        entries: dict[str, Any] = {"days": i + 1, "current_city": day["current_city"]}
        for key in ("transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation"):
            value = str(day.get(key) or "-").strip()
            if value == "-":
                entries[key] = "-"
            elif key == "transportation":
                entries[key] = _legs(world, task, i, value, per_slot, rng)
            else:
                entries[key] = choices["meal" if key in _MEALS else key]
        parts += _day(entries, first=i == 0)
    parts.append("]]")
    return _merged(parts)


def _day(entries: dict[str, Any], *, first: bool) -> list[str | tuple[str, ...]]:
    parts: list[str | tuple[str, ...]] = ["[{" if first else ", {"]
    for n, (key, value) in enumerate(entries.items()):
        parts.append(("" if n == 0 else ", ") + json.dumps(key) + ": ")
        if isinstance(value, tuple):
            parts += ['"', value, '"']
        else:
            parts.append(json.dumps(value))
    parts.append("}")
    return parts


def _merged(parts: list[str | tuple[str, ...]]) -> list[str | tuple[str, ...]]:
    """Adjacent literal texts as one."""
    out: list[str | tuple[str, ...]] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        else:
            out.append(part)
    return out


def _used(reference: list[dict[str, Any]], kind: str) -> list[str]:
    keys = _MEALS if kind == "meal" else (kind,)
    used: list[str] = []
    for day in reference:
        for key in keys:
            value = str(day.get(key) or "-")
            pieces = [p for p in value.split(";") if p.strip()] if kind == "attraction" else [value]
            used += [p.strip() for p in pieces if p.strip() != "-" and p.strip() not in used]
    return used


def _venues(world: World, kind: str, city: str, used: list[str], per_slot: int, rng: Any) -> tuple[str, ...]:
    rows = getattr(world, _VENUES[kind])(city)
    others = sorted({f"{str(r.name).strip()}, {city}" for r in rows} - set(used))
    picked = [others[i] for i in rng.permutation(len(others))[: per_slot - 1]]
    texts = [*used, *picked]
    if kind == "attraction":  # one attraction a day, written as the official list: "Name, City;"
        texts = [t + ";" for t in texts]
    return tuple(texts[i] for i in rng.permutation(len(texts)))


def _legs(world: World, task: TravelTask, day: int, reference: str, per_slot: int, rng: Any) -> tuple[str, ...]:
    """The reference entry, then the leg's other flights that date, self-driving and taxi."""
    current = str(task.annotated_plan[day]["current_city"])
    a, b = (strip_state(x) for x in current[len("from "):].split(" to ", 1))
    date = task.date[day] if day < len(task.date) else ""
    options = [reference]
    for flight in world.flights(a, b, date):
        options.append(f"Flight Number: {flight.number}, from {a} to {b}, "
                       f"Departure Time: {flight.dep_time}, Arrival Time: {flight.arr_time}")
    for mode in ("self-driving", "taxi"):
        content = distance_matrix(world, a, b, mode).content
        if ", cost: " in content and not content.endswith("cost: None"):
            options.append(content[0].upper() + content[1:])
    unique = list(dict.fromkeys(options))
    kept = unique[:1] + [unique[1:][i] for i in rng.permutation(len(unique) - 1)[: per_slot - 1]]
    return tuple(kept[i] for i in rng.permutation(len(kept)))
