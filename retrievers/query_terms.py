"""The query side of BM25 terms: the index's own token analysis (navigator.index.tokenize), so both sides
meet, applied after the query-only cross-lingual expansion."""
from __future__ import annotations

from navigator.index.tokenize import current_tokenizer
from retrievers.crosslingual import expand_query


def query_tokens(text: str) -> list[str]:
    """The BM25 terms of a query, after appending the English words of the Chinese programming terms in it
    (retrievers.crosslingual.expand_query: the indexed code is English). Queries only, so the glossary is not
    part of TOKENIZER_VERSION. The whole text is analysed however long it is; the BM25 retriever caps the
    number of distinct terms it scores."""
    return current_tokenizer().tokens(expand_query(text))
