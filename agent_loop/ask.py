"""`nav ask`: the agent loop with nav's budgeted context (navigator.context) as its search tool."""
from __future__ import annotations

from pathlib import Path

from navigator.core.config import Config


def ask(question: str, repo: str | Path | None, *, retriever_name: str | None = None, model: str | None = None,
        max_steps: int | None = None, max_tokens: int | None = None, budget: int | None = None, on_event=None):
    """Run the agent loop on `question` over the repository at `repo`."""
    from agent_loop.loop import run_agent
    from navigator.context.build import build_context
    from navigator.index.nav_index import resolve_repo
    root = resolve_repo(repo)
    config = Config.from_env()

    def search_code(query: str, budget_tokens: int) -> str:
        return build_context(query, budget_tokens, root, retriever_name, config).render_text()

    def open_graph():
        from navigator.index.graph import SymbolGraph
        from navigator.index.nav_index import NavIndex
        return SymbolGraph(NavIndex.open(root, config, check_embedder=False).conn)

    return run_agent(question, root, search_code, model=model, max_steps=max_steps, max_tokens=max_tokens,
                     budget=budget, on_event=on_event, open_graph=open_graph)
