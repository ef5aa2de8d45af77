"""Which files' chunks the embedder skips by default (they stay in the lexical index and the graph).
NAV_EMBED_ALL=1 embeds them too."""
from __future__ import annotations


def embed_all(config) -> bool:
    return (config.extra.get("NAV_EMBED_ALL") or "").strip().lower() in ("1", "true", "yes", "on")


def embed_excluded(path: str) -> bool:
    return False
