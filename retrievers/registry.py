"""The retriever registry. Built-ins and third-party plugins register through the same hook:

    def register_retrievers(register):
        register("myname", MyRetriever)        # MyRetriever subclasses retrievers.base.Retriever

Third-party packages expose such a function under the entry-point group `nav.retrievers`; they add names (a
plugin cannot replace a built-in: a built-in resolves without the entry-point scan)
(pyproject: [project.entry-points."nav.retrievers"] myplugin = "mypkg.nav_plugin:register_retrievers").
Which retriever runs is decided in one function, `selected_name`: --retriever, else RETRIEVER, else the default.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable

from navigator.core.errors import RetrieverError

ENTRY_POINT_GROUP = "nav.retrievers"

# Built-ins are named by import path so that registering them imports nothing heavy.
_BUILTINS = {
    "vector": "retrievers.vector:VectorRetriever",
    "bm25": "retrievers.bm25:BM25Retriever",
    "hybrid": "retrievers.hybrid:HybridRetriever",
    "rerank": "retrievers.rerank:RerankRetriever",
    "multilingual": "retrievers.multilingual:MultilingualRetriever",  # the multilingual head alone (NAV_MULTILINGUAL)
    "baseline": "retrievers.baseline:NaiveVectorBaseline",  # naive def/class chunks + plain vector top-k
    "graph": "retrievers.graph:GraphRetriever",       # hybrid, then expansion along the symbol graph
}


def register_retrievers(register: Callable) -> None:
    """nav's own hook implementation: the built-in retrievers."""
    for name, target in _BUILTINS.items():
        register(name, target)


_registry: dict[str, object] | None = None


def _load_registry() -> dict[str, object]:
    global _registry
    if _registry is None:
        found: dict[str, object] = {}

        def register(name: str, target) -> None:
            found[name] = target

        def register_plugin(name: str, target) -> None:
            found.setdefault(name, target)      # nav's own names stay nav's

        register_retrievers(register)
        # Imported here: importing importlib.metadata costs ~15 ms a cold search does not need.
        from importlib.metadata import entry_points
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            hook = ep.load()
            hook(register_plugin)
        _registry = found
    return _registry


def reset_registry() -> None:
    """Forget loaded plugins (tests install entry points at run time)."""
    global _registry
    _registry = None


def registered_names() -> list[str]:
    return sorted(_load_registry())


def selected_name(cli_value: str | None, config) -> str:
    return cli_value or config.retriever


def retriever_class(name: str):
    # A built-in is resolved without scanning installed distributions for plugins (~0.1 s at every cold
    # search); plugins add names, they do not replace nav's own.
    registry = _registry if _registry is not None else ({n: t for n, t in _BUILTINS.items()} if name in _BUILTINS
                                                          else _load_registry())
    if name not in registry:
        raise RetrieverError(f"unknown retriever {name!r}; registered: {', '.join(registered_names())}",
                             hint="choose one with --retriever NAME or RETRIEVER=NAME")
    target = registry[name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
        registry[name] = target
    return target


def get_retriever(name: str, index, config):
    return retriever_class(name)(index, config)
