"""Chunkers: turn one file's text into CodeChunks. One entry point: `chunk_file`."""
from chunkers.base import CHUNK_KINDS, TOKEN_ESTIMATOR, CodeChunk, estimate_tokens

__all__ = ["CHUNK_KINDS", "TOKEN_ESTIMATOR", "CodeChunk", "estimate_tokens", "chunk_file", "ChunkResult"]


def __getattr__(name):  # lazy: tree-sitter loads only when a file is chunked
    if name in ("chunk_file", "ChunkResult"):
        from chunkers import dispatch
        return getattr(dispatch, name)
    raise AttributeError(name)
