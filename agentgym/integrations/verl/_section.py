"""One section of verl's config read into a typed config, the same way wherever verl hands it over.

verl passes its config as OmegaConf nodes (driver, agent-loop workers), plain dicts (a sampler's
``sampler_kwargs``) or its own dataclasses (``AlgoConfig`` in an advantage estimator).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["select", "read_section"]

Model = TypeVar("Model", bound=BaseModel)


def select(node: Any, key: Any) -> Any:
    """``node[key]`` of an OmegaConf node, a dict or an attribute object; None when either is absent."""
    if node is None or key is None:
        return None
    getter = getattr(node, "get", None)
    return getter(key, None) if callable(getter) else getattr(node, key, None)


def read_section(model: type[Model], section: Any) -> Model:
    """``model`` from a section: the defaults for None, an instance as is, else validated (interpolations
    resolved; the models forbid unknown keys, so a misspelt one is refused by name)."""
    if section is None:
        return model()
    if isinstance(section, model):
        return section
    if not isinstance(section, Mapping):
        from omegaconf import OmegaConf

        section = OmegaConf.to_container(section, resolve=True)
    return model.model_validate(dict(section))
