"""`nav context`: retrieve candidates, select under a token budget, and wrap them in a ContextEnvelope.
Also the search tool of `nav ask`."""
from __future__ import annotations

from pathlib import Path

from navigator.config import Config
from navigator.errors import IndexMissingError, UsageError

# How deep the selector looks into the ranking. Selection stops on its own when candidates stop adding
# anything; this only bounds the work (and, for rerank, the cross-encoder calls).
CANDIDATE_DEPTH = 30
DEFAULT_BUDGET = 2000


def build_context(question: str, budget: int, repo: str | Path | None, retriever_name: str | None = None,
                  config: Config | None = None, *, depth: int = CANDIDATE_DEPTH):
    from navigator.envelope import build_envelope
    from navigator.index import NavIndex, missing_index_state, resolve_repo
    from navigator.selection import params_for_retriever, select_context
    from retrievers.registry import get_retriever, selected_name
    if budget <= 0:
        raise UsageError(f"--budget must be a positive number of tokens, got {budget}")
    config = config or Config.from_env()
    name = selected_name(retriever_name, config)
    root = resolve_repo(repo)
    try:
        index = NavIndex.open(root, config)
    except IndexMissingError:
        return build_envelope(question, None, budget, name, missing_index_state(root, config.index_dir_for(root)),
                              repo_root=root)
    state = index.state()
    if index.chunk_count == 0:
        return build_envelope(question, None, budget, name, state, repo_root=root)
    retriever = get_retriever(name, index, config)
    candidates = retriever.retrieve(question, depth)
    selection = select_context(question, candidates, budget, params_for_retriever(name))
    return build_envelope(question, selection, budget, name, state, repo_root=root)


def ask(question: str, repo: str | Path | None, *, retriever_name: str | None = None, model: str | None = None,
        max_steps: int | None = None, max_tokens: int | None = None, budget: int | None = None, on_event=None):
    """Run the agent loop with nav's budgeted context as its search tool."""
    from agent_loop import run_agent
    from navigator.index import resolve_repo
    root = resolve_repo(repo)
    config = Config.from_env()

    def search_code(query: str, budget_tokens: int) -> str:
        return build_context(query, budget_tokens, root, retriever_name, config).render_text()

    return run_agent(question, root, search_code, model=model, max_steps=max_steps, max_tokens=max_tokens,
                     budget=budget, on_event=on_event)
