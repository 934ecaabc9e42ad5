"""Operator settings (a server's limits): frozen pydantic models whose mistakes raise ``ConfigError``.

    class Limits(Settings):
        max_sessions: int = Field(256, ge=1)

    Limits(max_sessions=0)   # ConfigError: max_sessions=0 is not allowed; expected greater than or equal to 1

The error names the first field that is wrong (its dotted path), the value given and what is
allowed; an unknown field lists the known ones.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from agentgym.errors import ConfigError

__all__ = ["Settings"]


class Settings(BaseModel):
    """A frozen model of operator settings; unknown fields and bad values raise ``ConfigError``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, /, **fields: Any) -> None:
        try:
            super().__init__(**fields)
        except ValidationError as exc:
            raise _config_error(type(self), exc) from None


def _config_error(model: type[BaseModel], exc: ValidationError) -> ConfigError:
    error = exc.errors(include_url=False)[0]
    field = ".".join(str(part) for part in error["loc"]) or model.__name__
    inner = (error.get("ctx") or {}).get("error")
    if isinstance(inner, ConfigError):  # a validator's own, already naming what is allowed
        return ConfigError(".".join(str(part) for part in error["loc"]) or inner.field, inner.value, inner.allowed)
    if error["type"] == "extra_forbidden":
        return ConfigError(field, error["input"], f"one of {', '.join(model.model_fields)}")
    allowed = error["msg"].removeprefix("Input should be ").removeprefix("Value error, ")
    return ConfigError(field, error["input"], allowed)
