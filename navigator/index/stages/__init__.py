"""The stages of `nav index`, one module each, in the order build_index (navigator.index.indexer) runs them:

    walk.py     which files the tree holds, and which rules skipped the others
    chunk.py    re-chunk the new or changed files, tokenize their chunks for BM25
    store.py    one transaction swaps this run's files and chunks into nav.db, with the symbol graph of the
                changed files and the manifest (a kill before its COMMIT leaves the previous index whole)
    postings.py the BM25 postings of the new generation, written beside nav.db
    embed.py    embed the chunk texts that have no cached vector, committing every batch
    vectors.py  bring the chroma collection in line with nav.db

Crash safety (this supersedes the order described in navigator.index.store's docstring: embedding now
comes after the swap): a kill before the store stage's COMMIT leaves the previous index whole; a kill
after it leaves the new lexical index, searchable, with a partial vector head that the coverage record
(navigator.index.coverage, nav.db meta "vectors") reports; the next run embeds only the texts without a
cached vector and compares every chroma id when the killed run had not finished its vector stage.
NAV_TEST_KILL_AT (stages.run.crash_point) kills a run at a named point, for the tests.

The per-run facts every stage reads (config, connection, embedder, summary) travel in one IndexRun."""
