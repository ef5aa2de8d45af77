"""What `nav version` reports about this nav: its version, the formats it writes and reads, the languages it
reads. Apart from store, so that the store does not import the stages that write into it."""
from __future__ import annotations


def versions(config) -> dict:
    """What `nav version` reports: what this nav writes and reads, without importing a model or a grammar."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from chunkers.base import CHUNKER_VERSION
    from chunkers.languages import LANGUAGES, PYTHON
    from navigator.core.version import __version__
    from navigator.index.graph import GRAPH_VERSION
    from navigator.index.store import SCHEMA_VERSION
    from navigator.index.secrets import redaction_mode
    from navigator.index.tokenize import TOKENIZER_VERSION

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return {"nav": __version__, "python": platform.python_version(), "embedder": config.embed_model,
            "index_schema": SCHEMA_VERSION, "chunker": CHUNKER_VERSION, "graph": GRAPH_VERSION,
            "tokenizer": TOKENIZER_VERSION, "redaction": redaction_mode(config.extra),
            "tree_sitter": installed("tree-sitter"), "languages": [PYTHON, *LANGUAGES]}


def outdated_parts(manifest: dict, graph_version, config) -> dict[str, str]:
    """What in an index this nav would build differently, whatever the files say, by part ("chunks", "graph",
    "redaction") with the reason: its chunks, its symbol graph or its secret rule from an older nav. The next
    `nav index` rebuilds each (the indexer asks here, so what it rebuilds and what `nav status` calls stale are
    one rule); until then the index is stale even with no file changed (an upgraded nav would otherwise search
    an old index and call it fresh: graph ranking runs without a graph of an older version, and an index from
    before redaction holds secrets)."""
    from chunkers.base import CHUNKER_VERSION
    from navigator.index.graph import GRAPH_VERSION
    from navigator.index.secrets import redaction_mode

    parts = {}
    built_with = manifest.get("chunker_version")
    if built_with != CHUNKER_VERSION:
        parts["chunks"] = f"chunks from chunker {built_with or 'unknown'} (this nav: {CHUNKER_VERSION})"
    if graph_version != GRAPH_VERSION:
        parts["graph"] = (f"symbol graph {graph_version or 'missing'} (this nav: {GRAPH_VERSION}): graph ranking "
                          "runs without it")
    rule, wanted = manifest.get("redaction"), redaction_mode(config.extra)
    if rule != wanted:
        parts["redaction"] = ("built before secret redaction: secret values may be in it" if rule is None
                              else f"built under secret rule {rule} (this run: {wanted})")
    return parts


def outdated_by(manifest: dict, graph_version, config) -> list[str]:
    """The reasons of `outdated_parts`, as `nav status` and a search's envelope print them."""
    return list(outdated_parts(manifest, graph_version, config).values())
