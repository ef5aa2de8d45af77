"""nav's agent loop (`nav ask`). Importing this package is cheap: the anthropic SDK is imported only
when a model is called. The public names are loaded on first use."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_loop.loop import AgentAnswer, AgentEvent, run_agent

__all__ = ["AgentAnswer", "AgentEvent", "run_agent"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from agent_loop import loop

        return getattr(loop, name)
    raise AttributeError(f"module 'agent_loop' has no attribute {name!r}")
