"""Stage 2, chunk: read and re-chunk the files that are new or changed since the last run, and tokenize
their chunks for BM25. Unchanged files (same size and mtime, or same content hash) keep their chunks."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from navigator.index.lexical import newest_bm25_state, term_encoder_over
from navigator.index import store
from navigator.index.stages.run import IndexRun
from navigator.index.walk import file_hash, read_source


@dataclass
class Changes:
    """What this run changes in the index, before any of it is written."""
    new_files: dict[str, tuple] = field(default_factory=dict)   # path -> (sha, size, mtime, parse_errors, decode_errors)
    new_chunks: dict[str, list] = field(default_factory=dict)   # path -> [CodeChunk]
    facts: dict[str, tuple] = field(default_factory=dict)       # path -> (language, fallback reason, redactions)
    deleted: list[str] = field(default_factory=list)
    touched_mtime: list[tuple] = field(default_factory=list)     # (size, mtime, path): same content, new mtime
    # BM25 terms of each new chunk: the JSON list nav.db keeps, and term ids for the persisted postings.
    token_json: dict[str, str] = field(default_factory=dict)
    new_terms: dict[str, object] = field(default_factory=dict)   # chunk id -> int32 term ids under `encoder`
    tok_version: str | None = None
    document_tokens: object = None    # the BM25 document tokenizer, None when there is none
    retokenize: bool = False          # stored token lists are another tokenizer's: redo them all
    bm25_base: object = None          # the newest postings on disk for this tokenizer (they number the terms)
    encoder: object = None
    chunker_version: str = ""

    @property
    def chunk_count(self) -> int:
        return sum(len(v) for v in self.new_chunks.values())

    @property
    def changes_content(self) -> bool:
        """Whether this run changes any file, chunk or token list (else only mtimes and the manifest move)."""
        return bool(self.new_files or self.deleted or self.retokenize)


def _tokenizer():
    """The BM25 document tokenizer, when the retrievers package provides one."""
    try:
        from navigator.index.tokenize import TOKENIZER_VERSION, document_tokens
    except ImportError:
        return None, None
    return TOKENIZER_VERSION, document_tokens


def chunk(run: IndexRun, walked) -> Changes:
    from chunkers import chunk_file
    from chunkers.base import CHUNKER_VERSION
    from navigator.index.graph import GRAPH_META_KEY
    from navigator.index.secrets import judged_clean_lines, redact, secrets_allowed
    from navigator.index.versions import outdated_parts
    conn, manifest = run.conn, run.manifest
    known = {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT path, sha256, size, mtime_ns FROM files")}
    ch = Changes(chunker_version=CHUNKER_VERSION)
    ch.tok_version, ch.document_tokens = _tokenizer()
    redacting = not secrets_allowed(run.config.extra)
    # Chunks another redaction rule produced (or none, with --allow-secrets) are re-made from the files.
    outdated = outdated_parts(manifest, store.get_meta(conn, GRAPH_META_KEY), run.config)
    rechunk_all = bool({"chunks", "redaction"} & outdated.keys())
    # Chunks kept from earlier runs hold another tokenizer's lists (a first run has none to redo).
    ch.retokenize = bool(known) and ch.tok_version is not None and manifest.get("tokenizer_version") != ch.tok_version
    loaded = False

    def load_postings() -> None:
        # The newest postings number the terms of this run's new chunks; read only when something is new (a
        # no-op run never reads them: navigator.index.indexer returns before the postings stage).
        nonlocal loaded
        if not loaded and ch.document_tokens:
            ch.bm25_base = newest_bm25_state(run.index_dir / store.BM25_DIR, ch.tok_version)
            ch.encoder = term_encoder_over(ch.bm25_base)
        loaded = True

    if ch.retokenize or not known:
        load_postings()
    present: set[str] = set()
    for f in walked.files:
        old = known.get(f.path)
        if old is not None and (old[1], old[2]) == (f.size, f.mtime_ns) and not rechunk_all:
            present.add(f.path)
            continue
        src = read_source(f.abs_path)
        if src.skip_reason is not None:
            run.skipped[src.skip_reason] += 1
            continue
        text, raw = src.text, src.raw
        if not text.strip():
            run.skipped["empty"] += 1
            continue
        present.add(f.path)
        sha = file_hash(raw)
        if old is not None and old[0] == sha and not rechunk_all:
            ch.touched_mtime.append((f.size, f.mtime_ns, f.path))
            continue
        redactions = 0
        if redacting:
            # The lines the last run's redaction passed, unless that run redacted under another rule.
            clean = judged_clean_lines(r[0] for r in conn.execute("SELECT text FROM chunks WHERE path=?", (f.path,))) \
                if old is not None and not rechunk_all else frozenset()
            redacted = redact(f.path, text, clean)
            text, redactions = redacted.text, redacted.count
        load_postings()
        result = chunk_file(f.path, text)
        ch.new_files[f.path] = (sha, f.size, f.mtime_ns, result.parse_errors, int(src.decode_error))
        ch.new_chunks[f.path] = result.chunks
        if result.language is not None or redactions:
            ch.facts[f.path] = (result.language, result.fallback, redactions)
        if ch.document_tokens:
            for c in result.chunks:
                tokens = ch.document_tokens(c.embed_text)
                ch.token_json[c.id] = json.dumps(tokens)
                ch.new_terms[c.id] = ch.encoder.encode(tokens)
    ch.deleted = [p for p in known if p not in present]
    if ch.deleted:
        load_postings()
    return ch
