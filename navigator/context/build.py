"""`nav context`: retrieve candidates, select under a token budget, and wrap them in a ContextEnvelope.
Also the search tool of `nav ask` (agent_loop.ask)."""
from __future__ import annotations

from pathlib import Path

from navigator.core.config import Config
from navigator.core.errors import IndexMissingError, UsageError

# How deep the selector looks into the ranking. Selection stops on its own when candidates stop adding
# anything; this only bounds the work (and, for rerank, the cross-encoder calls).
CANDIDATE_DEPTH = 30
DEFAULT_BUDGET = 2000


def build_context(question: str, budget: int, repo: str | Path | None, retriever_name: str | None = None,
                  config: Config | None = None, *, depth: int = CANDIDATE_DEPTH, policy: str | Path | None = None):
    """The budgeted envelope for `question`. `policy` (or NAV_POLICY) names a selection policy file
    (navigator.context.policy); by default the shipped one."""
    from navigator.context.envelope import build_envelope
    from navigator.index.nav_index import NavIndex, missing_index_state, resolve_repo
    from retrievers.registry import get_retriever, selected_name
    if budget <= 0:
        raise UsageError(f"--budget must be a positive number of tokens, got {budget}")
    config = config or Config.from_env()
    selector = load_selector(policy, config)
    name = selected_name(retriever_name, config)
    root = resolve_repo(repo)
    try:
        index = NavIndex.open(root, config)
    except IndexMissingError:
        return build_envelope(question, None, budget, name, missing_index_state(root, config.index_dir_for(root)),
                              repo_root=root)
    if index.chunk_count == 0:
        return build_envelope(question, None, budget, name, index.state(), repo_root=root)
    return context_from_open_index(question, budget, index, get_retriever(name, index, config), name, selector,
                                   depth=depth)


def load_selector(policy: str | Path | None, config: Config):
    """The selection policy: `policy`, else NAV_POLICY, else the shipped one."""
    from navigator.context.policy import POLICY_ENV, load_policy
    return load_policy(policy or config.extra.get(POLICY_ENV) or None)


def context_from_open_index(question: str, budget: int, index, retriever, retriever_name: str, selector, *,
                            depth: int = CANDIDATE_DEPTH):
    """build_context over an index, retriever and policy that a long-running front end keeps between calls."""
    from navigator.context.envelope import build_envelope
    from navigator.context.policy import select_with_policy
    if budget <= 0:
        raise UsageError(f"--budget must be a positive number of tokens, got {budget}")
    state = index.state()
    if index.chunk_count == 0:
        return build_envelope(question, None, budget, retriever_name, state, repo_root=index.root)
    candidates = retriever.retrieve(question, depth)
    selection = select_with_policy(selector, question, candidates, budget, retriever_name)
    return build_envelope(question, selection, budget, retriever_name, state, repo_root=index.root)
