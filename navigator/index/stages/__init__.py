"""The stages of `nav index`, one module each, in the order build_index (navigator.index.indexer) runs them:

    walk.py     which files the tree holds, and which rules skipped the others
    chunk.py    re-chunk the new or changed files, tokenize their chunks for BM25
    store.py    one transaction swaps this run's files and chunks into nav.db, with the symbol graph of the
                changed files and the manifest (a kill before its COMMIT leaves the previous index whole)
    postings.py the BM25 postings of the new generation, written beside nav.db
    embed.py    embed the chunk texts that have no cached vector, committing every batch
    vectors.py  bring the chroma collection in line with nav.db

The per-run facts every stage reads (config, connection, embedder, summary) travel in one IndexRun."""
