"""The `nav tune` report: Markdown for people, JSON for tools, both beside the trial log."""
from __future__ import annotations

import json
from pathlib import Path


def frontier(scored: list) -> list[dict]:
    """Trials no other trial beats on both accuracy (higher) and mean tokens (lower): accuracy vs tokens."""
    points = [{"trial": t, "accuracy": round(s.accuracy, 4), "mean_tokens": round(s.mean_tokens, 1)} for t, s in scored]
    keep = []
    for p in points:
        dominated = any(q["accuracy"] >= p["accuracy"] and q["mean_tokens"] <= p["mean_tokens"]
                        and (q["accuracy"] > p["accuracy"] or q["mean_tokens"] < p["mean_tokens"]) for q in points)
        if not dominated:
            keep.append(p)
    return sorted(keep, key=lambda p: p["mean_tokens"])


def write_report(result, *, budget: int, retriever: str, queries_path: str) -> Path:
    payload = {"queries": str(queries_path), "retriever": retriever, "budget": budget,
               "thresholds": result.thresholds, "start_dev": result.start_dev, "winner_dev": result.winner_dev,
               "winner_trial": result.winner_trial, "holdout": result.holdout, "top_k_reference": result.reference,
               "frontier": result.frontier, "holdout_frontier": result.holdout_frontier, "trials": result.trials, "winner_file": str(result.winner_path)}
    (result.out_dir / "report.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n",
                                                encoding="utf-8")
    th = result.thresholds
    lines = [f"# nav tune: {queries_path}", "",
             f"Retriever `{retriever}`, budget {budget} tokens; {th['dev_queries']} dev queries. "
             f"Thresholds, fixed before the first trial ({th['method']}): accuracy floor {th['accuracy_floor']:.3f}, "
             f"at most {th['max_flips']} answered queries lost, token cut at least {th['min_token_cut']:.1%}.", "",
             "| policy | split | accuracy | mean tokens |", "|---|---|---|---|",
             f"| start | dev | {result.start_dev['accuracy']:.3f} | {result.start_dev['mean_tokens']:.0f} |",
             f"| winner (trial {result.winner_trial if result.winner_trial is not None else 'none: start kept'}) | dev | "
             f"{result.winner_dev['accuracy']:.3f} | {result.winner_dev['mean_tokens']:.0f} |"]
    for split, ref in result.reference.items():
        lines.append(f"| plain top-{ref['k']} | {split} | {ref['accuracy']:.3f} | {ref['mean_tokens']:.0f} |")
    if result.holdout:
        h = result.holdout
        lines.append(f"| start | holdout | {h['start']['accuracy']:.3f} | {h['start']['mean_tokens']:.0f} |")
        lines.append(f"| winner | holdout | {h['winner']['accuracy']:.3f} | {h['winner']['mean_tokens']:.0f} |")
        lines += ["", f"**Holdout, paired query by query: {h['verdict']}.** Lost: {', '.join(h['lost']) or 'none'}; "
                      f"gained: {', '.join(h['gained']) or 'none'}; tokens {h['token_change']:+.1%} "
                      f"(95% CI of the mean per-query difference {h['token_ci'][0]:+.1f} .. {h['token_ci'][1]:+.1f} tokens)."]
        v = h.get("versus_top_k")
        if v:
            lines += ["", f"Winner against plain top-5 on the holdout, paired: {v['verdict']}. Lost: "
                          f"{', '.join(v['lost']) or 'none'}; gained: {', '.join(v['gained']) or 'none'}; "
                          f"tokens {v['token_change']:+.1%}."]
    lines += ["", "## Frontier (accuracy against mean tokens, dev)", "", "| trial | accuracy | mean tokens |", "|---|---|---|"]
    lines += [f"| {p['trial']} | {p['accuracy']:.3f} | {p['mean_tokens']:.0f} |" for p in result.frontier]
    if result.holdout_frontier:
        lines += ["", "## The same policies on the holdout, each paired with plain top-5",
                  "", "Scored after the winner was chosen; not used to choose it. A negative token change is a cut.",
                  "", "| trial | accuracy | mean tokens | tokens vs top-5 | held-out answers lost / gained vs top-5 |",
                  "|---|---|---|---|---|"]
        for p in result.holdout_frontier:
            if "accuracy" not in p:
                lines.append(f"| {p['trial']} | {p['status']} | | | {_cell(p['reason'])} |")
                continue
            lines.append(f"| {p['trial']} | {p['accuracy']:.3f} | {p['mean_tokens']:.0f} | {p['versus_top_k']:+.1%} | "
                         f"{len(p['lost'])} ({', '.join(p['lost']) or '-'}) / {len(p['gained'])} |")
    lines += ["", "## Trials", "", "| # | family | decision | reason | hypothesis |", "|---|---|---|---|---|"]
    for t in result.trials:
        lines.append(f"| {t['trial']} | {t['family']} | {t['decision']} | {_cell(t['reason'])} | {_cell(t['hypothesis'])} |")
    kept = [t for t in result.trials if t["decision"] == "keep"]
    if kept:
        lines += ["", "## Kept edits", ""]
        for t in kept:
            lines += [f"### Trial {t['trial']}: {t['hypothesis']}", "", "```diff", t["diff"].rstrip(), "```", ""]
    path = result.out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cell(text: str) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")[:240]
