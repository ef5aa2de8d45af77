"""Run a query set against ranking callables and keep every query's ranks.

The harness sees retrieval only through `rank_fn(query_text, depth) -> ranking` (see metrics for the
chunk-like records a ranking holds), so any retriever, a head of one, or a fake in a test plugs in.
One run to depth >= DEFAULT_DEPTH serves `nav eval` (scores at k), `nav ceiling` (rank
distribution) and, saved with to_json, `nav compare`.

If the ranking's chunks carry per-head ranks (`heads`), each head's view is measured too, by
re-ordering the returned chunks by that head's rank: exact for every chunk the fused ranking kept,
which at depth 200 includes each head's top ranks. `EvalRun.head_view(name)` lays it beside the fused run.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from navigator.core.errors import InputError, UsageError
from navigator.evaluation import metrics
from navigator.evaluation.leakage import check_leakage
from navigator.evaluation.queryset import (
    EvalQuery, ExpectItem, Unanswerable, find_unanswerable, load_queries,
)

RankFn = Callable[[str, int], Sequence[object]]
ProgressFn = Callable[[int, int], None]

DEFAULT_KS = (1, 3, 5, 10)
DEFAULT_DEPTH = 200          # deep enough for `nav ceiling`'s >100 bucket and pools up to 100
LEVELS = ("chunk", "file")
RUN_FORMAT = "nav-eval-run/1"


@dataclass
class RankView:
    """How one ranking (fused, or one head's) placed a query's items, and what its top k cost."""
    item_ranks: list[int | None]        # chunk level: rank of the first chunk matching each item
    file_ranks: list[int | None]        # file level: rank of each item's file in the file order
    tokens_at_k: dict[int, int]         # tokens of the top k chunks
    file_tokens_at_k: dict[int, int]    # tokens read until the top k files were seen

    def to_json(self) -> dict[str, Any]:
        return {
            "ranks": self.item_ranks, "file_ranks": self.file_ranks,
            "tokens_at_k": {str(k): v for k, v in self.tokens_at_k.items()},
            "file_tokens_at_k": {str(k): v for k, v in self.file_tokens_at_k.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RankView":
        return cls(
            item_ranks=list(data["ranks"]), file_ranks=list(data["file_ranks"]),
            tokens_at_k={int(k): int(v) for k, v in data["tokens_at_k"].items()},
            file_tokens_at_k={int(k): int(v) for k, v in data["file_tokens_at_k"].items()},
        )


@dataclass
class QueryResult:
    id: str
    lang: str
    category: str
    mode: str
    items: list[ExpectItem]
    fused: RankView
    heads: dict[str, RankView] = field(default_factory=dict)
    returned: int = 0          # chunks the ranking returned (<= depth)
    seconds: float = 0.0       # wall time of the rank_fn call


@dataclass
class EvalRun:
    retriever: str
    level: str
    ks: tuple[int, ...]
    depth: int
    results: list[QueryResult]
    unanswerable: list[Unanswerable] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def ranks(self, result: QueryResult) -> list[int | None]:
        """The ranks this run's level scores: chunk ranks, or file ranks at --level file."""
        return result.fused.file_ranks if self.level == "file" else result.fused.item_ranks

    def score(self, result: QueryResult, k: int) -> float:
        return metrics.score_at_k(self.ranks(result), k, result.mode, self.level)

    def tokens(self, result: QueryResult, k: int) -> int:
        view = result.fused
        return view.file_tokens_at_k[k] if self.level == "file" else view.tokens_at_k[k]

    def head_names(self) -> list[str]:
        return sorted({name for result in self.results for name in result.heads})

    def head_view(self, head: str) -> "EvalRun":
        """This run as seen by one head: its ranks in place of the fused ones."""
        results = []
        for result in self.results:
            view = result.heads.get(head)
            if view is None:  # the ranking carried no rank from this head: every item absent, nothing read
                view = _absent_view(len(result.items), self.ks)
            results.append(replace(result, fused=view, heads={}))
        return replace(self, retriever=f"{self.retriever}/{head}", results=results)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RUN_FORMAT,
            "retriever": self.retriever, "level": self.level, "ks": list(self.ks), "depth": self.depth,
            "meta": self.meta,
            "unanswerable": [
                {"id": u.query_id, "path": u.item.path, "text": u.item.text, "reason": u.reason}
                for u in self.unanswerable
            ],
            "queries": [self._result_json(r) for r in self.results],
        }

    def _result_json(self, result: QueryResult) -> dict[str, Any]:
        return {
            "id": result.id, "lang": result.lang, "category": result.category, "mode": result.mode,
            "items": [{"path": it.path, "text": it.text} for it in result.items],
            # Derived, written for people reading the file; from_json recomputes from the ranks.
            "scores": {str(k): self.score(result, k) for k in self.ks},
            **result.fused.to_json(),
            "heads": {name: view.to_json() for name, view in result.heads.items()},
            "returned": result.returned, "seconds": round(result.seconds, 4),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "EvalRun":
        if data.get("format") != RUN_FORMAT:
            raise InputError(
                f"not a saved nav eval run (format {data.get('format')!r}, expected {RUN_FORMAT!r})",
                hint="Save runs with `nav eval ... --json > run.json`.",
            )
        if data.get("level") not in LEVELS:
            raise InputError(
                f"saved nav eval run has an unknown level {data.get('level')!r}",
                hint=f"A run's level is one of: {', '.join(LEVELS)}.",
            )
        try:
            results = [
                QueryResult(
                    id=q["id"], lang=q["lang"], category=q["category"], mode=q["mode"],
                    items=[ExpectItem(it["path"], it.get("text")) for it in q["items"]],
                    fused=RankView.from_json(q),
                    heads={name: RankView.from_json(v) for name, v in q.get("heads", {}).items()},
                    returned=int(q.get("returned", 0)), seconds=float(q.get("seconds", 0.0)),
                )
                for q in data["queries"]
            ]
            unanswerable = [
                Unanswerable(u["id"], ExpectItem(u["path"], u.get("text")), u["reason"])
                for u in data.get("unanswerable", [])
            ]
            return cls(
                retriever=data["retriever"], level=data["level"], ks=tuple(int(k) for k in data["ks"]),
                depth=int(data["depth"]), results=results, unanswerable=unanswerable, meta=dict(data.get("meta", {})),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(
                f"saved nav eval run is incomplete or damaged ({type(err).__name__}: {err})",
                hint="Re-run `nav eval ... --json` to write it again.",
            ) from err


def load_run(path: Path) -> EvalRun:
    """Read a run saved by `nav eval --json`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise InputError(f"saved run {path} does not exist", hint="Pass files written by `nav eval --json`.") from err
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"cannot read saved run {path}: {err}", hint="Pass files written by `nav eval --json`.") from err
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a saved nav eval run", hint="Pass files written by `nav eval --json`.")
    return EvalRun.from_json(data)


# ---------------------------------------------------------------- preparing and running

def prepare_query_set(
    queries_path: Path,
    indexed_root: Path,
    indexed_files: Mapping[str, str],
    *,
    chunk_texts: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[EvalQuery], list[Unanswerable]]:
    """Everything checked before a run: parse (QueryFileError), leakage (LeakageError), unanswerable items."""
    queries = load_queries(queries_path)
    check_leakage(queries_path, queries, indexed_root, indexed_files)
    return queries, find_unanswerable(queries, indexed_files, chunk_texts=chunk_texts)


def run_eval(
    queries: Sequence[EvalQuery],
    rank_fn: RankFn,
    *,
    ks: Iterable[int] = DEFAULT_KS,
    depth: int = DEFAULT_DEPTH,
    level: str = "chunk",
    retriever: str = "retriever",
    unanswerable: Sequence[Unanswerable] = (),
    meta: Mapping[str, Any] | None = None,
    on_progress: ProgressFn | None = None,
) -> EvalRun:
    """Rank every query to `depth` with rank_fn and measure it. rank_fn's errors propagate."""
    ks = _validate(ks, depth, level)
    results = []
    for done, query in enumerate(queries, start=1):
        started = time.perf_counter()
        ranking = metrics.view_ranking(list(rank_fn(query.query, depth))[:depth])
        seconds = time.perf_counter() - started
        results.append(QueryResult(
            id=query.id, lang=query.lang, category=query.category, mode=query.mode, items=list(query.items),
            fused=_measure(ranking, query.items, ks),
            heads={head: _measure_head(ranking, head, query.items, ks) for head in _heads_in(ranking)},
            returned=len(ranking), seconds=seconds,
        ))
        if on_progress is not None:
            on_progress(done, len(queries))
    return EvalRun(
        retriever=retriever, level=level, ks=ks, depth=depth, results=results,
        unanswerable=list(unanswerable), meta=dict(meta or {}),
    )


def run_evals(queries: Sequence[EvalQuery], retrievers: Mapping[str, RankFn], **options: Any) -> dict[str, EvalRun]:
    """The same set through several rank functions, keyed by name, ready to lay side by side."""
    return {name: run_eval(queries, fn, retriever=name, **options) for name, fn in retrievers.items()}


def with_head_views(run: EvalRun) -> dict[str, EvalRun]:
    """The fused run followed by one run per head, for a report with head columns beside the fused one."""
    return {run.retriever: run, **{f"{run.retriever}/{h}": run.head_view(h) for h in run.head_names()}}


def _validate(ks: Iterable[int], depth: int, level: str) -> tuple[int, ...]:
    ks = tuple(sorted(set(ks)))
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise UsageError(f"k values must be positive integers, got {ks}", hint="e.g. --k 1,3,5,10")
    if depth < ks[-1]:
        raise UsageError(f"candidate depth {depth} is below the largest k ({ks[-1]})", hint="Raise --depth.")
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}", hint=f"Use one of: {', '.join(LEVELS)}.")
    return ks


def _measure(
    ranking: Sequence[metrics.ChunkView],
    items: Sequence[ExpectItem],
    ks: Sequence[int],
    positions: Sequence[int] | None = None,
) -> RankView:
    return RankView(
        item_ranks=metrics.item_ranks(ranking, items, positions=positions),
        file_ranks=metrics.file_ranks(ranking, items),
        tokens_at_k={k: metrics.tokens_at_k(ranking, k, positions=positions) for k in ks},
        file_tokens_at_k={k: metrics.file_prefix_tokens(ranking, k) for k in ks},
    )


def _absent_view(n_items: int, ks: Sequence[int]) -> RankView:
    return RankView([None] * n_items, [None] * n_items, {k: 0 for k in ks}, {k: 0 for k in ks})


def _heads_in(ranking: Sequence[metrics.ChunkView]) -> list[str]:
    return sorted({name for view in ranking for name in view.heads})


def _measure_head(
    ranking: Sequence[metrics.ChunkView], head: str, items: Sequence[ExpectItem], ks: Sequence[int],
) -> RankView:
    # The head's own order over the chunks the fused ranking kept, with the head's true ranks.
    ordered = sorted((view for view in ranking if head in view.heads), key=lambda view: view.heads[head])
    return _measure(ordered, items, ks, positions=[view.heads[head] for view in ordered])
