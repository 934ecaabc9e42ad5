"""The import guard of the TRL bridge: one place that says how to get TRL."""

from __future__ import annotations

from agentgym.errors import DependencyNotInstalled

__all__ = ["require_trl", "TRL_VERSION"]

TRL_VERSION = "1.16.0"
"""The TRL release this bridge is tested against (pinned by the ``agentgym-rl[trl]`` extra)."""


def require_trl() -> None:
    """Raise ``DependencyNotInstalled`` unless TRL and torch import."""
    try:
        import torch  # noqa: F401
        import trl  # noqa: F401
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"the TRL integration needs trl {TRL_VERSION} ({exc.name or exc} is missing); "
            "pip install 'agentgym-rl[trl]'") from exc
