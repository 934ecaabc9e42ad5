"""Where a model turn's first complete action ends: the env's ``TurnCut``.

An env declares it as ``TextEnv.turn_cut``: the strings that close its actions (``stops``, e.g.
``</search>`` and ``</answer>`` for SearchQA), which a trainer passes to its rollout server as stop
strings, and how the env reads a finished turn. Trainers cut any tokens after that point (text the
model writes after its action, an invented ``<information>`` block, must not be trained on), and
the env server sends the cut to its clients with the session description.

A stop string inside a think block is not an action (``agentgym.core.thoughts``): the model may
muse about ``<answer>`` there. The scan follows the same rule as ``strip_thoughts`` (complete
blocks, an unclosed ``<think>``, a leading ``</think>`` closing a block the template opened) in
one linear pass.

An env may declare another rule (``priority``, ``in_thoughts``): Search-R1's loop generates a whole
turn and keeps it up to its first ``</search>``, else its first ``</answer>``, tags inside
``<think>`` included.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentgym._deprecated import alias, warn_renamed

__all__ = ["TurnCut", "first_action_end", "first_by_priority", "ends_inside_thought"]
# ``RetiredCutNames`` is not exported: a shim TextEnv and the remote clients inherit until 0.3.

_THINK_TAG = re.compile(r"<(/?)think\s*>", re.IGNORECASE)
RETIRED_NAMES = {"stop_strings": "stops", "stop_priority": "priority", "stops_in_thoughts": "in_thoughts"}
"""The env attributes that held the cut before ``TextEnv.turn_cut`` (0.2), and the field each is now."""


@dataclass(frozen=True)
class TurnCut:
    """Where a model turn ends, as its env declares it (``TextEnv.turn_cut``)."""

    stops: tuple[str, ...] = ()
    """The strings that end a complete action: a trainer may stop generation there. Empty when no
    string safely marks the end of every action of the env's format."""
    priority: tuple[str, ...] = ()
    """Cut at the first occurrence of the first of these the turn holds (Search-R1: ``</search>``,
    else ``</answer>``). Empty: at the earliest stop string outside think blocks."""
    in_thoughts: bool = False
    """Whether a stop string inside ``<think>`` ends the turn (Search-R1: yes)."""

    def __post_init__(self) -> None:
        # JSON lists (the wire) and any iterable of strings read as the same cut; empty strings mark nothing.
        object.__setattr__(self, "stops", tuple(str(s) for s in self.stops if s))
        object.__setattr__(self, "priority", tuple(str(s) for s in self.priority if s))
        object.__setattr__(self, "in_thoughts", bool(self.in_thoughts))

    @classmethod
    def of(cls, env: Any) -> TurnCut:
        """The cut ``env`` (or the env it wraps) declares; none for an env that declares none."""
        inner = getattr(env, "unwrapped", env)
        cut = getattr(inner, "turn_cut", None)
        if isinstance(cut, TurnCut):
            return cut
        return cls._of_retired_attributes(inner)

    @classmethod
    def _of_retired_attributes(cls, env: Any) -> TurnCut:
        # An env of 0.1 that is no TextEnv declared the cut as three attributes: read them, for one release.
        found = {old: getattr(env, old) for old in RETIRED_NAMES if getattr(env, old, None)}
        if found:
            warn_renamed(f"{type(env).__name__}.{'/'.join(found)}", "turn_cut = TurnCut(...)", stacklevel=4)
        return cls(**{RETIRED_NAMES[old]: value for old, value in found.items()})

    def to_json(self) -> dict[str, Any]:
        """The cut as the env server sends it (``SessionDescription.turn_cut``)."""
        return {"stops": list(self.stops), "priority": list(self.priority), "in_thoughts": self.in_thoughts}

    def end(self, text: str) -> int | None:
        """The index just past where the env stops reading ``text``, or None."""
        if self.priority and self.in_thoughts:
            return first_by_priority(text, self.priority)
        if self.priority:
            return next((end for s in self.priority if (end := first_action_end(text, (s,))) is not None), None)
        if self.in_thoughts:
            found = [at + len(s) for s in self.stops if (at := text.find(s)) >= 0]
            return min(found) if found else None
        return first_action_end(text, self.stops)

    def resumes(self, text: str) -> bool:
        """Whether a turn the server stopped on a stop string must go on (it stopped inside a thought)."""
        return not self.in_thoughts and ends_inside_thought(text)


class RetiredCutNames:
    """The cut's 0.1 attribute names on an env (``stop_strings``, ``stop_priority``,
    ``stops_in_thoughts``), read and set through ``turn_cut`` with a warning; removed in 0.3."""

    turn_cut: TurnCut = TurnCut()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A 0.1 subclass set the names in its class body, hiding the properties: fold them into its turn_cut.
        found = {old: cls.__dict__[old] for old in RETIRED_NAMES
                 if old in cls.__dict__ and not isinstance(cls.__dict__[old], property)}
        if found:
            warn_renamed(f"{cls.__name__}.{'/'.join(found)}", "turn_cut = TurnCut(...)")
            for old in found:
                delattr(cls, old)
            cls.turn_cut = replace(cls.turn_cut, **{RETIRED_NAMES[old]: value for old, value in found.items()})


def _retired_attribute(old: str, new: str) -> property:
    def read(self: Any) -> Any:
        warn_renamed(f"{type(self).__name__}.{old}", f"turn_cut.{new}")
        return getattr(self.turn_cut, new)

    def write(self: Any, value: Any) -> None:
        warn_renamed(f"{type(self).__name__}.{old}", f"turn_cut = TurnCut({new}=...)")
        self.turn_cut = replace(self.turn_cut, **{new: value})

    return property(read, write, doc=f"Deprecated: ``turn_cut.{new}`` (removed in 0.3).")


for _old, _new in RETIRED_NAMES.items():
    alias("env attribute", _old, f"turn_cut.{_new}")
    setattr(RetiredCutNames, _old, _retired_attribute(_old, _new))


def first_by_priority(text: str, strings: Sequence[str]) -> int | None:
    """The index just past the first occurrence of the first of ``strings`` that ``text`` holds."""
    for string in strings:
        at = text.find(string)
        if at >= 0:
            return at + len(string)
    return None


def first_action_end(text: str, stops: Sequence[str]) -> int | None:
    """The index just past the first stop string outside think blocks, or None."""
    stops = [s for s in stops if s]
    if not stops:
        return None
    tags = [(m.start(), m.end(), m.group(1) == "/") for m in _THINK_TAG.finditer(text)]
    visible_from = 0
    if tags and tags[0][2]:  # a leading </think>: the template opened the block, all before it is thought
        visible_from = tags[0][1]
        tags = tags[1:]
    depth, position, t = 0, visible_from, 0
    upcoming = {stop: text.find(stop, position) for stop in stops}  # each stop's next occurrence
    while True:
        for stop, at in upcoming.items():
            if 0 <= at < position:  # consumed: look further (each stop's scan moves forward only)
                upcoming[stop] = text.find(stop, position)
        found = [(at, at + len(stop)) for stop, at in upcoming.items() if at >= 0]
        if not found:
            return None
        start, end = min(found)
        while t < len(tags) and tags[t][0] < start:
            depth = depth + 1 if not tags[t][2] else max(0, depth - 1)
            t += 1
        if depth == 0:
            return end
        position = start + 1


def ends_inside_thought(text: str) -> bool:
    """True when ``text`` stops inside an open ``<think>`` block."""
    depth = 0
    for m in _THINK_TAG.finditer(text):
        depth = depth + 1 if m.group(1) != "/" else max(0, depth - 1)
    return depth > 0
