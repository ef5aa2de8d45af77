"""The record every stage shares: a CodeChunk, plus the one token estimate nav uses.

A chunk is a contiguous span of lines [start_line, end_line] (1-based, inclusive) of one file,
plus an optional `header`: a few lines of the enclosing parent (class line, method signature,
markdown heading path) so a fragment still knows what it belongs to. The text that is embedded
and indexed is `embed_text` = header + text.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

CHUNK_KINDS = (
    "constant", "function", "class", "method", "imports", "module_doc", "section", "text", "code",
)

# Bump when chunk boundaries, embed_text or token counts change: an index built by another version
# re-chunks every file on its next run (embeddings of unchanged chunk texts are still reused).
CHUNKER_VERSION = "4"   # 4: tree-sitter chunks for every language of chunkers.languages (3: the hard cap)

# The token estimate. tiktoken cannot load an encoding offline here, so nav estimates:
# every run of word characters counts ceil(len/4) tokens (BPE vocabularies hold common
# 3-5 character pieces), every other non-space character counts one token. On Python source
# this lands within ~10% of cl100k counts; it is monotonic (appending text never lowers it).
# Every token figure nav prints comes from this one function, so a better counter can replace it.
TOKEN_ESTIMATOR = "regex-estimate-v1 (word runs: ceil(len/4); other non-space chars: 1)"
_TOKEN_PIECE = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    total = 0
    for piece in _TOKEN_PIECE.findall(text):
        if piece[0].isalnum() or piece[0] == "_":
            total += math.ceil(len(piece) / 4)
        else:
            total += 1
    return total


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CodeChunk:
    path: str                 # repo-relative, '/'-separated
    start_line: int           # 1-based, inclusive
    end_line: int             # 1-based, inclusive
    kind: str                 # one of CHUNK_KINDS
    text: str                 # the source lines [start_line, end_line], verbatim
    symbol: str | None = None  # e.g. "MAX_STEPS", "Parser.parse_args"
    parent: str | None = None  # e.g. "Parser" for a method
    header: str = ""          # parent context carried along (not part of the span)
    id: str = field(default="")
    tokens: int = field(default=0)

    def __post_init__(self) -> None:
        if self.kind not in CHUNK_KINDS:
            raise ValueError(f"unknown chunk kind {self.kind!r}")
        if not self.id:
            object.__setattr__(self, "id", make_chunk_id(self.path, self.start_line, self.end_line, self.embed_text))
        if not self.tokens:
            # What nav hands a reader is the span itself; the context line and header are location metadata.
            object.__setattr__(self, "tokens", estimate_tokens(self.text))

    @property
    def context_line(self) -> str:
        """Where the chunk lives, in words a question may echo: its path and symbol."""
        return f"{self.path}: {self.symbol}" if self.symbol else self.path

    @property
    def embed_text(self) -> str:
        """The text that is embedded and indexed: the context line, the parent header, then the span."""
        parts = [self.context_line, self.header, self.text] if self.header else [self.context_line, self.text]
        return "\n".join(parts)

    @property
    def content_hash(self) -> str:
        return content_hash(self.embed_text)

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


def make_chunk_id(path: str, start_line: int, end_line: int, embed_text: str) -> str:
    """Stable id: the same text at the same place of the same file always gets the same id."""
    h = hashlib.sha1(f"{path}\0{start_line}\0{end_line}\0".encode() + embed_text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]
