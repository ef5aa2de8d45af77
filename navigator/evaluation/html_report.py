"""`nav eval --html FILE`: one self-contained page per run, opened offline.

The page holds what the text report holds (navigator.evaluation.report), for people who read figures:
  - recall@k curves: the overall hit@k (expect_any queries) and coverage@k (expect_all queries) of each
    retriever against k;
  - per-category bars at each retriever's middle cut-off;
  - the same numbers as a table, and as a JSON block (`<script id="nav-eval-figures">`) the figures were drawn
    from, so a test or a script can check the page against the run.
The charts are drawn with matplotlib (the optional extra `nav[report]`, imported only here) and embedded as
inline SVG with their text kept as text; nothing is fetched when the page opens.
"""
from __future__ import annotations

import html
import io
import json
from collections.abc import Mapping
from statistics import fmean

from navigator.core.errors import UsageError
from navigator.evaluation.queryset import MODE_ALL, MODE_ANY
from navigator.evaluation.runner import EvalRun

METRIC_NAMES = {MODE_ANY: "hit", MODE_ALL: "coverage"}


def figures(runs: Mapping[str, EvalRun]) -> dict:
    """retriever -> {"ks", "level", mode -> {group -> {k -> value}}, mode + "_n" -> {group -> n}}: every number
    the page shows, computed as the text report computes it (EvalRun.score, averaged per group)."""
    out = {}
    for name, run in runs.items():
        entry: dict = {"ks": list(run.ks), "level": run.level}
        for mode in (MODE_ANY, MODE_ALL):
            results = [r for r in run.results if r.mode == mode]
            if not results:
                continue
            groups = {"overall": results}
            for category in sorted({r.category for r in results}):
                groups[f"category {category}"] = [r for r in results if r.category == category]
            for lang in sorted({r.lang for r in results}):
                groups[f"lang {lang}"] = [r for r in results if r.lang == lang]
            entry[METRIC_NAMES[mode]] = {g: {str(k): round(fmean(run.score(r, k) for r in rs), 4) for k in run.ks}
                                         for g, rs in groups.items()}
            entry[METRIC_NAMES[mode] + "_n"] = {g: len(rs) for g, rs in groups.items()}
        out[name] = entry
    return out


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise UsageError("nav eval --html draws its charts with matplotlib, which is not installed",
                         hint="pip install 'nav[report]'  (or pip install matplotlib)") from exc
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"     # text stays text in the SVG: searchable, no font files
    matplotlib.rcParams["svg.hashsalt"] = "nav"      # the same run draws the same bytes
    import matplotlib.pyplot as plt
    return plt


def _svg(fig) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _curve_svg(plt, data: dict, metric: str) -> str | None:
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    drawn = False
    for name, entry in data.items():
        if metric not in entry:
            continue
        ks = entry["ks"]
        ax.plot(ks, [entry[metric]["overall"][str(k)] for k in ks], marker="o", label=name)
        drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric}@k")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{metric}@k, overall")
    svg = _svg(fig)
    plt.close(fig)
    return svg


def _category_svg(plt, data: dict, metric: str) -> str | None:
    names = [n for n, e in data.items() if metric in e]
    if not names:
        return None
    categories = sorted({g for n in names for g in data[n][metric] if g.startswith("category ")})
    fig, ax = plt.subplots(figsize=(max(5.5, 1.2 * len(categories) + 2), 3.4))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        entry = data[name]
        k = str(entry["ks"][len(entry["ks"]) // 2])
        values = [entry[metric].get(c, {}).get(k, 0.0) for c in categories]
        positions = [j + i * width for j in range(len(categories))]
        ax.bar(positions, values, width, label=f"{name} @{k}")
    ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(categories))])
    ax.set_xticklabels([c.removeprefix("category ") for c in categories], fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel(metric)
    ax.legend(fontsize=8)
    ax.set_title(f"{metric} per category")
    svg = _svg(fig)
    plt.close(fig)
    return svg


def _table(data: dict) -> str:
    rows = ["<table><tr><th>retriever</th><th>metric</th><th>group</th><th>n</th>" +
            "".join(f"<th>@{k}</th>" for k in next(iter(data.values()))["ks"]) + "</tr>"]
    for name, entry in data.items():
        for metric in ("hit", "coverage"):
            for group, values in entry.get(metric, {}).items():
                n = entry[metric + "_n"][group]
                rows.append(f"<tr data-retriever='{html.escape(name)}' data-metric='{metric}' "
                            f"data-group='{html.escape(group)}'><td>{html.escape(name)}</td><td>{metric}</td>"
                            f"<td>{html.escape(group)}</td><td>{n}</td>" +
                            "".join(f"<td data-k='{k}'>{v:.3f}</td>" for k, v in values.items()) + "</tr>")
    return "\n".join(rows + ["</table>"])


def render_html(runs: Mapping[str, EvalRun], title: str) -> str:
    plt = _pyplot()
    data = figures(runs)
    first = next(iter(runs.values()))
    charts = [svg for metric in ("hit", "coverage") for svg in (_curve_svg(plt, data, metric),
                                                                  _category_svg(plt, data, metric)) if svg]
    meta = first.meta
    facts = ", ".join(f"{k}: {html.escape(str(v))}" for k, v in meta.items() if v is not None)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}
td:nth-child(-n+3),th:nth-child(-n+3){{text-align:left}}.charts svg{{max-width:100%;height:auto}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>level {first.level}; candidate depth {first.depth}; {len({r.id for run in runs.values() for r in run.results})}
queries. {facts}</p>
<div class="charts">{''.join(charts)}</div>
<h2>The figures</h2>
{_table(data)}
<script type="application/json" id="nav-eval-figures">{json.dumps(data, sort_keys=True)}</script>
</body></html>
"""
