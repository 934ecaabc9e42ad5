"""The server's trust boundary: what a client may ask of an env, checked before anything is built.

The operator fixes paths, URLs, reward specs and secrets in presets (``agentgym.server.presets``);
a client picks a preset and may set only these bounded options:

* every env: ``max_turns`` (up to the preset's cap), ``render_mode``, ``reward`` (the *name* of a
  reward the server allows);
* what the env declares (``TextEnv.client_kwargs``), with their retired spellings (the env's
  ``renamed_kwargs``, which then maps them to the new names with its deprecation warning): e.g.
  TravelPlanner-v0's ``action_format``, ``mode``, ``evaluator``, ``tasks``; SearchQA-v0's
  ``metric``, ``bm25``, ``top_k``... ``tasks`` is inline rows, or one of the env's
  ``task_splits`` (the operator's own data).

Anything else (a path, a URL, a cache or index folder, a size, a reward spec, a custom term, a
secret's env var name) is refused with a ``ConfigError`` naming the field and the allowed ones,
as are inline data past the size limits. Reset options get the same treatment (``check_options``),
for every env: the ones a TextEnv reads (``TextEnv.reset_options``), an inline ``task`` within the
size and depth limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentgym._toolbox import is_int, short
from agentgym.core.tasks import SCHEDULE_OPTIONS, TASK_OPTION_RENAMES
from agentgym.errors import ConfigError, short_repr
from agentgym.registration import env_class
from agentgym.server.presets import EnvPreset, Presets

__all__ = ["ClientBoundary", "INLINE_LIMITS", "client_options", "world_splits", "task_kwargs", "reset_options"]

DEFAULT_MAX_TURNS_CAP = 100
_COMMON = ("max_turns", "render_mode", "reward")
_TASK_ID_OPTIONS = ("task_id", *TASK_OPTION_RENAMES.retired(["task_id"]))
_INLINE_OPTIONS = ("task", *TASK_OPTION_RENAMES.retired(["task"]))
_INT_OPTIONS = ("task_index", *TASK_OPTION_RENAMES.retired(["task_index"]), *SCHEDULE_OPTIONS)


class _Limits:
    rows = 1000
    """Inline tasks per session."""
    bytes = 1 << 20
    """Their encoded size, all together."""
    row_bytes = 64 << 10
    """One inline task (reset option) or row."""
    depth = 6
    string_chars = 10_000
    """Any one string inside them (e.g. a task's date list, which the env parses)."""


INLINE_LIMITS = _Limits()


def _declared(env_id: str, name: str, default: Any = ()) -> Any:
    # What the env's class declares (TextEnv's ClassVars); nothing for an env of another kind.
    return getattr(env_class(env_id), name, default)


def _with_retired(env_id: str, names: tuple[str, ...]) -> tuple[str, ...]:
    renamed = _declared(env_id, "renamed_kwargs", None)
    return names + (renamed.retired(names) if renamed is not None else ())


def client_options(env_id: str) -> tuple[str, ...]:
    """The constructor kwargs a client may set for ``env_id``: the common ones and the env's
    ``client_kwargs``, with their retired spellings."""
    return _with_retired(env_id, _COMMON + tuple(_declared(env_id, "client_kwargs")))


def world_splits(env_id: str) -> tuple[str, ...]:
    """The split names of the operator's world a client may pass as ``tasks`` for ``env_id``."""
    return tuple(_declared(env_id, "task_splits"))


def task_kwargs(env_id: str) -> tuple[str, ...]:
    """The kwarg that takes ``env_id``'s tasks, with its retired spellings."""
    return _with_retired(env_id, ("tasks",))


def reset_options(env_id: str) -> tuple[str, ...] | None:
    """The reset options ``env_id`` reads, with the schedule's and retired spellings (None: an env
    that is no TextEnv, whose options only the size limits bound)."""
    names = _declared(env_id, "reset_options", None)
    if names is None:
        return None
    renamed = _declared(env_id, "renamed_options", None)
    return (*names, *SCHEDULE_OPTIONS, *(renamed.retired(names) if renamed is not None else ()))


class ClientBoundary:
    """Turns a client's create request into the kwargs the server builds the env with."""

    def __init__(self, presets: Presets, env_ids: tuple[str, ...], *, trust_clients: bool = False) -> None:
        self.trust_clients = trust_clients
        self.presets = {p.name: p for p in presets.presets}
        self.rewards = dict(presets.rewards)
        from agentgym.rewards import PRESETS

        builtin = PRESETS if presets.reward_presets is None else presets.reward_presets
        unknown = sorted(set(builtin) - set(PRESETS))
        if unknown:
            raise ConfigError("reward_presets", unknown, sorted(PRESETS))
        self.reward_names = tuple(sorted(set(builtin) | set(self.rewards)))
        self.env_ids = tuple(dict.fromkeys([*env_ids, *(p.env_id for p in presets.presets)]))

    def preset_names(self, env_id: str) -> list[str]:
        return [name for name, p in self.presets.items() if p.env_id == env_id]

    def preset_name(self, env_id: str, preset: str | None) -> str | None:
        """The operator's preset a create request gets (None: the env's defaults)."""
        name = self._preset(env_id, preset).name
        return name if name in self.presets else None

    def kwargs(self, env_id: str, preset: str | None, client: Mapping[str, Any]) -> dict[str, Any]:
        """The env's kwargs: the preset's, with the client's checked options on top."""
        chosen = self._preset(env_id, preset)
        if self.trust_clients:
            return {**chosen.kwargs, **client}
        allowed = client_options(env_id)
        kwargs = dict(chosen.kwargs)
        for field, value in client.items():
            if field not in allowed:
                raise ConfigError(field, _short(value), f"one of the options a client may set for {env_id}: "
                                  f"{', '.join(allowed)} (paths, URLs, sizes and reward specs are the server "
                                  "operator's, in its presets)")
            kwargs[field] = self._check(field, value, chosen, env_id)
        return kwargs

    def check_options(self, env_id: str, options: Mapping[str, Any] | None) -> None:
        """Refuse reset options past the env's allowlist or the size limits (every env)."""
        if options is None or self.trust_clients:
            return
        allowed = reset_options(env_id)
        for field, value in options.items():
            if allowed is not None and field not in allowed:
                raise ConfigError(f"options.{field}", _short(value), list(allowed))
            if field in _INLINE_OPTIONS:
                _check_inline(f"options.{field}", value, INLINE_LIMITS.row_bytes, rows=False)
            elif field in _TASK_ID_OPTIONS:
                _check_text(f"options.{field}", value, 200)
            elif field in _INT_OPTIONS:
                _check_int(f"options.{field}", value, 0, 2**62)
            else:  # an option of the env's own: JSON within the limits of one inline task
                _walk(f"options.{field}", value, INLINE_LIMITS.row_bytes)

    # -- the checks --------------------------------------------------------------------------
    def _preset(self, env_id: str, preset: str | None) -> EnvPreset:
        if preset is None:
            names = self.preset_names(env_id)
            return self.presets[names[0]] if names else EnvPreset(name=env_id, env_id=env_id)
        chosen = self.presets.get(preset)
        if chosen is None or chosen.env_id != env_id:
            raise ConfigError("preset", _short(preset), self.preset_names(env_id) or f"no preset: {env_id} is "
                              "served with its defaults")
        return chosen

    def _check(self, field: str, value: Any, preset: EnvPreset, env_id: str) -> Any:
        if field == "max_turns":
            cap = preset.max_turns or preset.kwargs.get("max_turns") or DEFAULT_MAX_TURNS_CAP
            return _check_int(field, value, 1, cap)
        if field == "reward":
            if not isinstance(value, str) or value not in self.reward_names:
                raise ConfigError(field, _short(value), f"the name of a reward this server allows: "
                                  f"{', '.join(self.reward_names)} (specs are the operator's)")
            return self.rewards.get(value, value)
        if field == "render_mode":
            return value if value is None else _check_text(field, value, 32)
        if field in ("top_k", "max_searches"):
            return _check_int(field, value, 1, 50)
        if field == "max_observation_tokens":
            return _check_int(field, value, 1, 32_768)
        if field in task_kwargs(env_id):
            if isinstance(value, str) and value in world_splits(env_id):  # the operator's own data
                return value
            return _check_inline(field, value, INLINE_LIMITS.bytes, rows=True)
        if isinstance(value, bool) or value is None:
            return value
        if is_int(value):  # a number the env bounds itself (it declared the kwarg a client's)
            return _check_int(field, value, -2**31, 2**31)
        return _check_text(field, value, 64)  # a choice the env itself checks against its list


def _check_int(field: str, value: Any, low: int, high: int) -> int:
    if not is_int(value) or not low <= value <= high:
        raise ConfigError(field, _short(value), f"an int from {low} to {high}")
    return value


def _check_text(field: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise ConfigError(field, _short(value), f"a string of at most {limit} characters")
    return value


def _check_inline(field: str, value: Any, limit: int, *, rows: bool) -> Any:
    """Inline data: rows (a list of mappings) or one mapping, within the size and depth limits."""
    if rows:
        if not isinstance(value, list) or not all(isinstance(r, Mapping) for r in value):
            raise ConfigError(field, _short(value), "inline rows (a list of objects); files are the operator's")
        if len(value) > INLINE_LIMITS.rows:
            raise ConfigError(field, f"{len(value)} rows", f"at most {INLINE_LIMITS.rows} rows")
    elif not isinstance(value, Mapping):
        raise ConfigError(field, _short(value), "an object")
    _walk(field, value, limit)
    return value


def _walk(field: str, value: Any, limit: int) -> None:
    # Iterative, so that depth is checked before anything recurses; sizes are counted as we go.
    stack, size = [(value, 0)], 0
    while stack:
        item, depth = stack.pop()
        if depth > INLINE_LIMITS.depth:
            raise ConfigError(field, "(nested too deep)", f"at most {INLINE_LIMITS.depth} levels of nesting")
        if isinstance(item, str):
            if len(item) > INLINE_LIMITS.string_chars:
                raise ConfigError(field, f"a string of {len(item)} characters",
                                  f"strings of at most {INLINE_LIMITS.string_chars} characters")
            size += len(item) + 2
        elif isinstance(item, Mapping):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        else:
            size += 8
        if size > limit:
            raise ConfigError(field, f"over {limit} bytes", f"inline data of at most {limit} bytes")


def _short(value: Any, limit: int = 80) -> Any:
    # Never echo a client's megabyte back in the error (whose value crosses the wire); a short value stays itself.
    return value if len(value if isinstance(value, str) else short_repr(value)) <= limit else short(value, limit)
