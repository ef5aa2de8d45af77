"""Stage 3, store: one transaction swaps this run's files and chunks into nav.db, together with the symbol
graph of the changed files, the new manifest and the vector coverage record (navigator.index.coverage).
It runs before any embedding, so the lexical index is usable within seconds of a first `nav index`;
a kill before its COMMIT changes nothing on disk."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from navigator.index import coverage, store
from navigator.index.embed_rule import embed_all
from navigator.index.graph import update_graph
from navigator.index.secrets import redaction_mode
from navigator.index.stages.chunk import Changes
from navigator.index.stages.run import IndexRun, crash_point


@dataclass
class Committed:
    """What the store stage committed: the new generation and the chunk ids it removed and added."""
    generation: int
    chunk_count: int
    files_indexed: int
    manifest: dict
    removed_ids: set[str] = field(default_factory=set)
    added_ids: set[str] = field(default_factory=set)


# Up to this many changed files the coverage record is carried over path by path instead of measured again
# (two indexed lookups per path against one 0.2 s pass over django's 79k chunks).
CARRY_COVERAGE_PATHS = 2000


def commit_lexical(run: IndexRun, ch: Changes) -> Committed:
    conn = run.conn
    conn.execute("BEGIN IMMEDIATE")
    carried = _coverage_before(run, ch)
    replaced_ids = _swap_files_and_chunks(conn, ch)
    if ch.retokenize and ch.document_tokens:
        _retokenize_kept_chunks(conn, ch)
    update_graph(conn, ch.new_chunks, ch.deleted)
    committed = _write_manifest(run, ch, carried)
    crash_point("lexical-commit")
    conn.execute("COMMIT")
    added_ids = {c.id for chunks in ch.new_chunks.values() for c in chunks}
    committed.removed_ids, committed.added_ids = replaced_ids - added_ids, added_ids - replaced_ids
    return committed


def index_is_current(run: IndexRun, ch: Changes) -> bool:
    """Whether this run can leave the index's generation as it is: no file, chunk or token list changes, and
    nothing derived from them (the graph, this generation's BM25 postings) is missing or out of date."""
    from navigator.index.graph import GRAPH_META_KEY
    from navigator.index.versions import outdated_parts
    conn = run.conn
    generation = store.get_meta(conn, "generation", 0)
    return (not ch.changes_content and bool(run.manifest) and generation > 0
            # Chunks, graph and secret rule as this nav builds them (the one rule `nav status` reads too).
            and not outdated_parts(run.manifest, store.get_meta(conn, GRAPH_META_KEY), run.config)
            # A switched embedder: a new generation searched with the new model's vectors.
            and run.manifest.get("embedder") == run.embedder.identity
            and _postings_readable(run, generation, ch.tok_version))


def _postings_readable(run: IndexRun, generation: int, tok_version: str | None) -> bool:
    """This generation's BM25 postings are on disk, for this tokenizer, and open (memory-mapped: cheap)."""
    if tok_version is None:
        return True
    from navigator.index.lexical import BM25Postings, BM25StateError
    try:
        _, params = BM25Postings.load(store.bm25_state_dir(run.index_dir, generation))
    except (BM25StateError, OSError, ValueError):
        return False
    return params.get("generation") == generation and params.get("tokenizer_version") == tok_version


def touch_manifest(run: IndexRun, ch: Changes) -> Committed:
    """A run that changed nothing: the same generation (a long-lived reader need not reopen anything), the
    files' new mtimes and the manifest's build time, HEAD and skip counts."""
    from navigator.index.walk import git_head
    conn = run.conn
    conn.execute("BEGIN IMMEDIATE")
    for size, mtime, path in ch.touched_mtime:
        conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime, path))
    now = time.time()
    manifest = {**run.manifest, "built_at": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
                "built_at_epoch": now, "git_head": git_head(run.repo_root), "skipped": dict(run.skipped),
                "skip": run.skip_rules}
    store.set_meta(conn, "manifest", manifest)
    conn.execute("COMMIT")
    return Committed(manifest["generation"], manifest["chunk_count"], manifest["files_indexed"], manifest)


def _swap_files_and_chunks(conn, ch: Changes) -> set[str]:
    """Delete the deleted and changed files' chunks, insert the changed files' new ones; the ids removed
    (some come back unchanged)."""
    replaced_ids: set[str] = set()
    for path in ch.deleted:
        replaced_ids.update(r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,)))
        conn.execute("DELETE FROM files WHERE path=?", (path,))
        conn.execute("DELETE FROM chunks WHERE path=?", (path,))
        conn.execute("DELETE FROM file_facts WHERE path=?", (path,))
    for size, mtime, path in ch.touched_mtime:
        conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime, path))
    for path, (sha, size, mtime, perr, derr) in ch.new_files.items():
        replaced_ids.update(r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,)))
        conn.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)", (path, sha, size, mtime, perr, derr))
        conn.execute("DELETE FROM chunks WHERE path=?", (path,))
        conn.execute("DELETE FROM file_facts WHERE path=?", (path,))
        if path in ch.facts:
            conn.execute("INSERT INTO file_facts VALUES (?,?,?,?)", (path, *ch.facts[path]))
        conn.executemany(
            "INSERT OR REPLACE INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(c.id, c.path, seq, c.start_line, c.end_line, c.kind, c.symbol, c.parent, c.header, c.text,
              c.content_hash, c.tokens, ch.token_json.get(c.id))
             for seq, c in enumerate(ch.new_chunks[path])])
    ch.token_json.clear()
    return replaced_ids


def _retokenize_kept_chunks(conn, ch: Changes) -> None:
    """Every stored token list is from another tokenizer: redo them all (this run's are current)."""
    updates = []
    for row in conn.execute(f"SELECT {store.CHUNK_COLUMNS} FROM chunks"):
        if row[0] not in ch.new_terms:
            tokens = ch.document_tokens(store.chunk_from_row(row).embed_text)
            updates.append((json.dumps(tokens), row[0]))
            ch.new_terms[row[0]] = ch.encoder.encode(tokens)
    conn.executemany("UPDATE chunks SET bm25_tokens=? WHERE id=?", updates)


def file_fact_counts(conn) -> dict:
    """The manifest's `languages` (files per syntax read), `fallback` (per language: the files cut into line
    windows because the grammar did not load, and why) and `redacted` (secret values and the files they were
    in)."""
    languages = dict(conn.execute("SELECT language, COUNT(*) FROM file_facts WHERE language IS NOT NULL "
                                  "GROUP BY language ORDER BY language"))
    fallback = {language: {"files": n, "reason": reason} for language, n, reason in conn.execute(
        "SELECT language, COUNT(*), MIN(fallback) FROM file_facts WHERE fallback IS NOT NULL "
        "GROUP BY language ORDER BY language")}
    values, files = conn.execute("SELECT COALESCE(SUM(redactions), 0), COUNT(*) FROM file_facts "
                                 "WHERE redactions > 0").fetchone()
    return {"languages": languages, "fallback": fallback, "redacted": {"values": values, "files": files}}


def _coverage_before(run: IndexRun, ch: Changes) -> tuple[dict, dict] | None:
    """The coverage record and the counts of the paths this run changes, taken before the change, when the
    record is exact for the chunks nav.db holds now: the current generation's, finished (a killed run's
    record may lack a group), under this run's embed rule and embedder."""
    record = coverage.read(run.conn)
    paths = [*ch.deleted, *ch.new_files]
    if record is None or not record.get("synced") or len(paths) > CARRY_COVERAGE_PATHS \
            or record.get("generation") != store.get_meta(run.conn, "generation", 0) \
            or bool(record.get("embed_all", False)) != embed_all(run.config) \
            or run.manifest.get("embedder") != run.embedder.identity:
        return None
    return record, coverage.of_paths(run.conn, paths, run.embedder.identity, embed_all(run.config))


def _write_manifest(run: IndexRun, ch: Changes, carried: tuple[dict, dict] | None) -> Committed:
    from navigator.index.walk import git_head
    conn = run.conn
    generation = int(store.get_meta(conn, "generation", 0)) + 1
    counts = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    files_indexed = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    agg = conn.execute("SELECT SUM(parse_errors > 0), SUM(decode_errors > 0) FROM files").fetchone()
    now = time.time()
    manifest = {
        "built_at": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
        "built_at_epoch": now, "git_head": git_head(run.repo_root), "root": str(run.repo_root),
        "files_indexed": files_indexed, "skipped": dict(run.skipped), "skip": run.skip_rules,
        "chunk_count": counts, "embedder": run.embedder.identity, "tokenizer_version": ch.tok_version,
        "chunker_version": ch.chunker_version,
        "parse_error_files": agg[0] or 0, "decode_error_files": agg[1] or 0, "generation": generation,
        "redaction": redaction_mode(run.config.extra),
        **file_fact_counts(conn),
    }
    store.set_meta(conn, "manifest", manifest)
    store.set_meta(conn, "generation", generation)
    store.set_meta(conn, "embedder", run.embedder.identity)
    # Committed with the chunks: from this commit on, readers see how much of the vector head exists.
    record = None
    if carried is not None:
        previous, before = carried
        after = coverage.of_paths(conn, [*ch.deleted, *ch.new_files], run.embedder.identity, embed_all(run.config))
        record = coverage.moved(previous, before, after, generation)
    if record is None or record["chunks"] != counts:
        record = coverage.measure(conn, generation, run.embedder.identity, synced=False, embed_all=embed_all(run.config))
    coverage.write(conn, record)
    return Committed(generation, counts, files_indexed, manifest)
