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
