"""Stage 4, postings: the BM25 postings of the generation just committed, written beside nav.db (the
symbol graph was written in the store stage's transaction, with the chunks it points at)."""
from __future__ import annotations

from navigator.index.lexical import write_bm25_state
from navigator.index.stages.chunk import Changes
from navigator.index.stages.run import IndexRun
from navigator.index.stages.store import Committed


def write_postings(run: IndexRun, ch: Changes, committed: Committed) -> list[str]:
    notes: list[str] = []
    if ch.bm25_base is None and ch.document_tokens is not None:
        # The chunk stage reads the newest postings only when a file changed; a run that rewrites them for
        # another reason (a generation whose postings a killed run never wrote) reads them here.
        from navigator.index import store
        from navigator.index.lexical import newest_bm25_state, term_encoder_over
        ch.bm25_base = newest_bm25_state(run.index_dir / store.BM25_DIR, ch.tok_version)
        ch.encoder = term_encoder_over(ch.bm25_base)
    if ch.bm25_base is not None:
        notes = write_bm25_state(run.index_dir, run.conn, committed.generation, ch.tok_version, ch.bm25_base,
                                 ch.new_terms, ch.encoder)
    ch.new_terms.clear()
    return notes
