"""How much of the index the vector head covers. The lexical index (chunks, BM25, graph) is committed
before any embedding, so searches work while vectors are still being computed; this record says how far
along they are, and every search and `nav status` reports it.

nav.db meta "vectors" (written by the indexer's stages, read at open with one meta lookup):
    generation  the index generation the record describes
    chunks      chunks in the index
    embedded    chunks whose text has a cached vector from the index's embedder (the ones synced into chroma)
    excluded    chunks left unembedded by rule (navigator.index.embed_rule), counted apart from the partial share
    embed_all   NAV_EMBED_ALL when it was measured (what counted as excluded)
    synced      the chroma collection was brought in line with nav.db after the last group was embedded;
                false from the lexical commit until the vector stage finishes, so a run killed in between
                makes the next run (or a reader, when no build is running) compare every id again
A record that is missing (an index built before this record existed) counts as complete: that flow
embedded everything before committing."""
from __future__ import annotations

import sqlite3

from navigator.index import store
from navigator.index.embed_rule import embed_excluded

META_KEY = "vectors"


_COUNTS = ("SELECT c.path, COUNT(*), COUNT(e.content_hash) FROM chunks c LEFT JOIN embeddings e "
           "ON e.content_hash = c.content_hash AND e.model = ?")


def measure(conn: sqlite3.Connection, generation: int, model: str, *, synced: bool, embed_all: bool = False) -> dict:
    """The record for nav.db's current chunks and `model`'s vectors: one grouped pass over chunks joined to
    the cache (0.2 s at django's 79k chunks)."""
    counts = _tally(conn.execute(f"{_COUNTS} GROUP BY c.path", (model,)), embed_all)
    return {"generation": generation, **counts, "synced": synced, "embed_all": embed_all}


def of_paths(conn: sqlite3.Connection, paths, model: str, embed_all: bool) -> dict:
    """The record's counts over the chunks of these paths alone (one indexed lookup per path). The counts add
    up path by path (a content hash belongs to one path: the hashed text starts with it), so a record can be
    carried from one set of chunks to the next by the paths that changed: see `moved`."""
    rows = (conn.execute(f"{_COUNTS} WHERE c.path = ?", (model, path)).fetchone() for path in paths)
    return _tally(rows, embed_all)


def moved(record: dict, before: dict, after: dict, generation: int) -> dict:
    """`record` with the changed paths' counts `before` the change taken out and `after` it put in."""
    return {**record, **{key: record[key] - before[key] + after[key] for key in ("chunks", "embedded", "excluded")},
            "generation": generation, "synced": False}


def _tally(rows, embed_all: bool) -> dict:
    chunks = embedded = excluded = 0
    for path, n, with_vector in rows:
        if not n:          # a path without chunks (an aggregate over no rows)
            continue
        chunks += n
        embedded += with_vector
        if with_vector < n and not embed_all and embed_excluded(path):
            excluded += n - with_vector
    return {"chunks": chunks, "embedded": embedded, "excluded": excluded}


def write(conn: sqlite3.Connection, record: dict) -> None:
    store.set_meta(conn, META_KEY, record)


def read(conn: sqlite3.Connection) -> dict | None:
    return store.get_meta(conn, META_KEY)


def is_complete(record: dict | None) -> bool:
    if record is None:
        return True
    return record["synced"] and record["embedded"] + record["excluded"] >= record["chunks"]


def summary(record: dict | None, building_pid: int | None) -> dict:
    """The coverage facts an envelope carries, with the sentence a reader is shown when the head is partial."""
    if record is None:
        return {"vectors": "complete", "vector_note": None}
    want = record["chunks"] - record["excluded"]
    done = min(record["embedded"], want)
    pct = 100.0 * done / want if want else 100.0
    facts = {"vectors": "complete" if is_complete(record) else "partial", "vectors_embedded": done,
             "vectors_wanted": want, "vectors_excluded": record["excluded"], "vector_note": None}
    if is_complete(record):
        return facts
    if done < want:
        what = f"vector head partial: {done:,} of {want:,} chunks embedded ({pct:.0f}%)"
    else:
        what = "vector head partial: the vector store is not yet in step with the index"
    if building_pid is not None:
        facts["vector_note"] = f"{what}; nav index (pid {building_pid}) is still embedding"
    else:
        facts["vector_note"] = f"{what}; interrupted: run nav index to finish"
    facts["building"] = building_pid is not None
    return facts
