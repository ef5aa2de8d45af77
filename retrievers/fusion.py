"""Reciprocal-rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): pure math, no index, no I/O.

    score(d) = sum over heads h that returned d of  w_h / (rrf_k + rank_h(d))

rank_h is 1-based. A head that did not return d adds nothing. Only ranks matter, so heads whose raw scores
live on different scales (cosine, BM25) combine without calibration.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

DEFAULT_RRF_K = 60.0      # the constant of the original paper
DEFAULT_HEAD_WEIGHT = 1.0

# Candidate depth per head as a function of corpus size: a fixed 50 over a few hundred chunks drops
# the chunks one head ranks deep but the other ranks high. Tuned later by measurement.
DEPTH_FRACTION = 0.1
MIN_DEPTH = 20
MAX_DEPTH = 200


def default_candidate_depth(n_chunks: int) -> int:
    """How many results to take from each head before fusing: clamp(round(0.1 * n), 20, 200)."""
    return max(MIN_DEPTH, min(MAX_DEPTH, round(DEPTH_FRACTION * n_chunks)))


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
) -> list[tuple[str, float]]:
    """Fuse best-first id lists, one per head, into (id, fused score), best first.

    `weights` maps head name -> weight (missing heads weigh DEFAULT_HEAD_WEIGHT; a head weighted 0 is left
    out, so ids only it returned do not appear). An id listed twice by one
    head counts at its first (best) rank only. Ties on the fused score go to the id with the better best
    rank, then to the one seen first (heads in the order given, each best first), so the output is
    deterministic.
    """
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
    weights = weights or {}
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for head, ids in rankings.items():
        weight = weights.get(head, DEFAULT_HEAD_WEIGHT)
        if weight < 0:
            raise ValueError(f"head weight must be >= 0, got {head}={weight}")
        if weight == 0:
            continue
        seen: set[str] = set()
        for rank, doc_id in enumerate(ids, start=1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (rrf_k + rank)
            best_rank[doc_id] = min(best_rank.get(doc_id, rank), rank)
    first_seen = {doc_id: i for i, doc_id in enumerate(scores)}
    order = sorted(scores, key=lambda d: (-scores[d], best_rank[d], first_seen[d]))
    return [(d, scores[d]) for d in order]

