"""The supervisor of `nav tune`: deterministic, no model. It scores a policy on frozen candidates, derives
its keep/discard thresholds from the dev split before the loop (calibrate), judges every trial against them
(judge), logs each trial, and pairs the winner with the starting policy on the held-out split (holdout).

A query is answered when every expected item is still in the returned text (hit for expect_any, full
coverage for expect_all); its cost is the tokens returned, counted by nav (the policy cannot report them).
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from navigator.evaluation import metrics
from navigator.evaluation.compare import paired_bootstrap_ci
from navigator.evaluation.metrics import ChunkView
from navigator.tuning.sandbox import SandboxLimits, SandboxOutcome, run_policy

# A policy must cut at least this share of tokens to replace the incumbent, however quiet the dev set is.
MIN_TOKEN_CUT_FLOOR = 0.02
CALIBRATION_RESAMPLES = 2000
KEEP, DISCARD, REJECT = "keep", "discard", "reject"


@dataclass
class QueryScore:
    id: str
    category: str
    answered: bool
    tokens: int


@dataclass
class PolicyScore:
    status: str                                   # the sandbox's status; "ok" when scored
    reason: str = ""
    queries: list[QueryScore] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def accuracy(self) -> float:
        return sum(q.answered for q in self.queries) / len(self.queries) if self.queries else 0.0

    @property
    def mean_tokens(self) -> float:
        return sum(q.tokens for q in self.queries) / len(self.queries) if self.queries else 0.0

    def by_id(self) -> dict[str, QueryScore]:
        return {q.id: q for q in self.queries}

    def summary(self) -> dict:
        return {"status": self.status, "reason": self.reason, "accuracy": round(self.accuracy, 4),
                "mean_tokens": round(self.mean_tokens, 1), "answered": sum(q.answered for q in self.queries),
                "queries": len(self.queries)}


def score_policy(policy_file: Path, frozen: list, budget: int, retriever: str,
                 limits: SandboxLimits = SandboxLimits()) -> PolicyScore:
    outcome: SandboxOutcome = run_policy(policy_file, frozen, budget, retriever, limits)
    if outcome.status != "ok":
        return PolicyScore(outcome.status, outcome.reason)
    scores = []
    for fq in frozen:
        selection = outcome.selections[fq.id]
        views = [ChunkView(p.chunk.path, p.text, p.tokens) for p in selection.pieces]
        recall = metrics.recall_at_budget(views, fq.query.items, fq.query.mode)
        scores.append(QueryScore(fq.id, fq.query.category, recall >= 1.0, sum(v.tokens for v in views)))
    return PolicyScore("ok", queries=scores)


@dataclass(frozen=True)
class Thresholds:
    """Written before the loop, from the starting policy's dev results; the worker cannot change them."""
    accuracy_floor: float         # a candidate answering fewer dev queries than this share is discarded
    max_flips: int                # ... or one that loses more than this many queries the incumbent answered
    min_token_cut: float          # ... or one that cuts the incumbent's tokens by less than this share
    start_accuracy: float
    start_mean_tokens: float
    dev_queries: int
    method: str

    def to_json(self) -> dict:
        return asdict(self)


def calibrate(start: PolicyScore, *, seed: int = 0, resamples: int = CALIBRATION_RESAMPLES) -> Thresholds:
    """Bootstrap the dev set (queries resampled with replacement) under the starting policy:
    - accuracy floor: the 2.5th percentile of the resampled accuracy, i.e. what the same policy could score
      on an unlucky draw of questions; below it a candidate is worse beyond sampling noise;
    - flips: one standard error of the accuracy, in queries (at least 0 when that rounds down);
    - token cut: one standard error of the mean tokens, as a share of the mean (at least
      MIN_TOKEN_CUT_FLOOR): a smaller cut is within what the choice of questions alone moves."""
    n = len(start.queries)
    rng = random.Random(seed)
    answered = [1.0 if q.answered else 0.0 for q in start.queries]
    tokens = [float(q.tokens) for q in start.queries]
    accs, means = [], []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        accs.append(sum(answered[i] for i in picks) / n)
        means.append(sum(tokens[i] for i in picks) / n)
    accs.sort()
    floor = accs[int(0.025 * resamples)]
    acc_se = _stdev(accs)
    mean_tokens = sum(tokens) / n
    token_cv = _stdev(means) / mean_tokens if mean_tokens else 0.0
    return Thresholds(
        accuracy_floor=round(floor, 4), max_flips=int(math.floor(acc_se * n)),
        min_token_cut=round(max(MIN_TOKEN_CUT_FLOOR, token_cv), 4), start_accuracy=round(start.accuracy, 4),
        start_mean_tokens=round(mean_tokens, 1), dev_queries=n,
        method=f"bootstrap of the {n} dev queries under the starting policy, {resamples} resamples, seed {seed}")


def _stdev(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / max(len(values) - 1, 1))


@dataclass
class Verdict:
    decision: str                 # keep | discard | reject
    reason: str
    flips: list[str] = field(default_factory=list)
    gains: list[str] = field(default_factory=list)
    token_cut: float | None = None


def judge(candidate: PolicyScore, incumbent: PolicyScore, thresholds: Thresholds,
          start: PolicyScore | None = None) -> Verdict:
    """Keep only a sound policy that holds the floor, flips few answers, and cuts tokens beyond noise.

    Flips are counted against the starting policy (the queries it answered), not only the incumbent, so
    a chain of kept trials cannot lose more than max_flips in total. Accuracy is compared in whole queries."""
    if not candidate.ok:
        return Verdict(REJECT, f"{candidate.status}: {candidate.reason}")
    mine, theirs = candidate.by_id(), incumbent.by_id()
    baseline = (start or incumbent).by_id()
    flips = [qid for qid, q in baseline.items() if q.answered and not mine[qid].answered]
    gains = [qid for qid, q in theirs.items() if not q.answered and mine[qid].answered]
    cut = 1.0 - candidate.mean_tokens / incumbent.mean_tokens if incumbent.mean_tokens else 0.0
    verdict = Verdict(KEEP, "", flips, gains, round(cut, 4))
    answered = sum(q.answered for q in candidate.queries)
    needed = math.ceil(thresholds.accuracy_floor * len(candidate.queries) - 1e-9)
    if answered < needed:
        verdict.decision, verdict.reason = DISCARD, (f"accuracy {candidate.accuracy:.3f} ({answered} answered) is "
                                                     f"under the floor {thresholds.accuracy_floor:.3f} ({needed})")
    elif len(flips) > thresholds.max_flips:
        verdict.decision, verdict.reason = DISCARD, (f"{len(flips)} queries the starting policy answered are lost "
                                                     f"(at most {thresholds.max_flips}): {', '.join(flips[:8])}")
    elif cut < thresholds.min_token_cut:
        verdict.decision, verdict.reason = DISCARD, (f"token cut {cut:+.1%} is under the minimum "
                                                     f"{thresholds.min_token_cut:.1%} needed to replace the incumbent")
    else:
        verdict.reason = (f"cuts tokens {cut:.1%} at accuracy {candidate.accuracy:.3f} "
                          f"({len(flips)} lost since the start, {len(gains)} gained)")
    return verdict


@dataclass
class HoldoutVerdict:
    start: dict
    winner: dict
    lost: list[str]
    gained: list[str]
    token_change: float           # winner vs start, share of the start's tokens
    token_ci: tuple[float, float]  # paired bootstrap CI of the mean per-query token difference
    answered_ci: tuple[float, float]
    verdict: str

    def to_json(self) -> dict:
        return asdict(self)


def holdout(start: PolicyScore, winner: PolicyScore, *, seed: int = 0) -> HoldoutVerdict:
    """Pair the two policies query by query on the held-out split; the verdict comes from this pairing."""
    if not (start.ok and winner.ok):
        bad = start if not start.ok else winner
        return HoldoutVerdict(start.summary(), winner.summary(), [], [], 0.0, (math.nan, math.nan),
                              (math.nan, math.nan), f"not comparable: {bad.status}: {bad.reason}")
    a, b = start.by_id(), winner.by_id()
    ids = [q.id for q in start.queries]
    lost = [i for i in ids if a[i].answered and not b[i].answered]
    gained = [i for i in ids if not a[i].answered and b[i].answered]
    token_diffs = [b[i].tokens - a[i].tokens for i in ids]
    answer_diffs = [float(b[i].answered) - float(a[i].answered) for i in ids]
    change = sum(token_diffs) / sum(a[i].tokens for i in ids) if sum(a[i].tokens for i in ids) else 0.0
    token_ci = paired_bootstrap_ci(token_diffs, seed=seed)
    answered_ci = paired_bootstrap_ci(answer_diffs, seed=seed)
    if lost and len(lost) > len(gained):
        verdict = f"worse: loses {len(lost)} held-out queries, gains {len(gained)}"
    elif lost:
        verdict = f"mixed: loses {len(lost)} and gains {len(gained)} held-out queries, tokens {change:+.1%}"
    elif change < 0 and token_ci[1] < 0:
        verdict = f"better: tokens {change:+.1%} (95% CI of the mean difference below 0), no held-out query lost"
    elif change < 0:
        verdict = f"not shown: tokens {change:+.1%} but the 95% CI of the difference includes 0; no query lost"
    else:
        verdict = f"no gain: tokens {change:+.1%}, no held-out query lost"
    return HoldoutVerdict(start.summary(), winner.summary(), lost, gained, round(change, 4),
                          (round(token_ci[0], 2), round(token_ci[1], 2)),
                          (round(answered_ci[0], 4), round(answered_ci[1], 4)), verdict)


def split_queries(queries: list, holdout_share: float, seed: int) -> tuple[list, list]:
    """A seeded split, stratified by category so both sides see every kind of question."""
    rng = random.Random(seed)
    by_category: dict[str, list] = {}
    for q in queries:
        by_category.setdefault(q.category, []).append(q)
    dev, held = [], []
    for category in sorted(by_category):
        group = list(by_category[category])
        rng.shuffle(group)
        n_held = int(round(len(group) * holdout_share))
        if holdout_share > 0 and len(group) > 1:
            n_held = min(max(n_held, 1), len(group) - 1)
        held.extend(group[:n_held])
        dev.extend(group[n_held:])
    order = {q.id: i for i, q in enumerate(queries)}
    return sorted(dev, key=lambda q: order[q.id]), sorted(held, key=lambda q: order[q.id])


class TrialLog:
    """Append-only JSONL: one line per trial, written as soon as the trial is judged."""

    def __init__(self, path: Path):
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.entries: list[dict] = []

    def append(self, entry: dict) -> None:
        self.entries.append(entry)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
