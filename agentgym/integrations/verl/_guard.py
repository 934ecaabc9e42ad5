"""The import guard of the verl bridge: one place that says how to get verl."""

from __future__ import annotations

from agentgym.errors import DependencyNotInstalled

__all__ = ["require_verl", "VERL_VERSION"]

VERL_VERSION = "0.9.1"
"""The verl release this bridge is tested against (pinned by the ``agentgym-rl[verl]`` extra)."""

_HINT = "pip install 'agentgym-rl[verl]'"


def require_verl() -> None:
    """Raise ``DependencyNotInstalled`` unless verl (with its V1 trainer packages) imports."""
    try:
        import verl  # noqa: F401
        import transfer_queue  # noqa: F401  (the V1 trainer's store: part of verl[verl-core])
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"the verl integration needs verl {VERL_VERSION} with its core extras ({exc.name or exc} is missing); "
            f"{_HINT}") from exc
