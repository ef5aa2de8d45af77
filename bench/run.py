#!/usr/bin/env python3
"""nav's speed figures, measured side by side in one run. A benchmark, not a test: it prints figures,
ratios to the targets, and how each figure grows with the corpus; it fails only if nav itself fails.

    python bench/run.py [--sizes small,medium,large] [--quick] [--out bench/results/latest.json]

For each corpus size (bench/corpora.py) on a fresh copy of the project, with its index outside the tree:
  full index        `nav index` wall time, chunks/s, peak RSS of that process, FLOPs/s as a fraction of
                    the matmul ceiling (bench/ceiling.py)
  re-index          nothing changed; one file edited; 50 files edited; another release checked out
                    (only the files that differ are written, as git does) and then checked back
  cold queries      `nav search` and `nav context`, process start to exit (median of several queries)
  warm queries      p50 / p95 per registered retriever, in this process, over an opened NavIndex
Once per run: the cold-start cost of the pieces a query process may import (chromadb, torch, the ONNX
query encoder), so a slow cold search can be attributed.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import ceiling  # noqa: E402  (bench/ is not a package: sibling scripts)
import corpora  # noqa: E402

DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "latest.json"
TOP_K = 10
FILES_IN_BIG_CHANGE = 50
MB = 1024 * 1024
# A load average above this per core during the run means the figures were measured on a shared machine.
BUSY_LOAD_PER_CORE = 0.5

# Questions of the kind a developer asks about any Python project; each cold run uses a different one so
# no answer is cached anywhere.
QUERIES = [
    "where are command line arguments parsed",
    "how is a configuration file loaded",
    "retry a failed network request",
    "format an error message for the user",
    "handle a connection timeout",
    "read a file in chunks",
    "where is logging configured",
    "convert a string to bytes with an encoding",
    "validate user input and raise an error",
    "parse an HTTP header value",
    "register a callback for an event",
    "close resources when an exception happens",
    "compare two version numbers",
    "escape special characters in a string",
    "run a function in a background thread",
    "test that an exception is raised",
    "build a URL from parts",
    "cache the result of an expensive call",
    "iterate over lines of a stream",
    "what happens when the process receives a signal",
]


@dataclass(frozen=True)
class Target:
    key: str            # a per-size result key, e.g. "reindex_one_file_s" or "warm.vector.p50_ms"
    label: str
    op: str             # "<=" or ">="
    value: float
    unit: str


TARGETS = [
    Target("fraction_of_ceiling", "indexing throughput / matmul ceiling", ">=", 0.90, ""),
    Target("reindex_one_file_s", "re-index after editing one file", "<=", 1.5, "s"),
    Target("cold_search_s", "cold `nav search` (process start to exit)", "<=", 1.0, "s"),
    Target("warm.vector.p50_ms", "warm p50, vector retriever", "<=", 10.0, "ms"),
    Target("warm.hybrid.p50_ms", "warm p50, hybrid retriever", "<=", 25.0, "ms"),
    Target("peak_index_rss_mb", "peak RSS of `nav index`", "<=", 1536.0, "MB"),
]
# Figures whose growth with corpus size is reported (exponent of chunks: 0 flat, 1 linear).
GROWTH_KEYS = ["full_index_s", "chunks_per_s", "peak_index_rss_mb", "noop_reindex_s", "reindex_one_file_s",
               "reindex_50_files_s", "cold_search_s", "cold_context_s", "warm.vector.p50_ms", "warm.bm25.p50_ms",
               "warm.hybrid.p50_ms"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- processes

@dataclass
class ProcessRun:
    wall_s: float
    returncode: int
    stdout: str
    stderr: str
    max_rss_mb: float          # the process's own peak resident memory (VmHWM), see run_process


def nav_command() -> list[str]:
    script = Path(sys.executable).parent / "nav"
    return [str(script)] if script.exists() else [sys.executable, "-m", "navigator"]


# How often the peak-memory watcher reads /proc/PID/status.
HWM_POLL_S = 0.01


def _watch_peak_rss(pid: int, peak: list[float]) -> None:
    """Keep the last VmHWM (the process's resident high-water mark) read from /proc/PID/status in peak[0],
    until the process has exited. VmHWM belongs to the memory map exec made, so it is the process's own."""
    status = Path(f"/proc/{pid}/status")
    while True:
        try:
            text = status.read_text()
        except OSError:
            return                      # reaped
        hwm = next((line for line in text.splitlines() if line.startswith("VmHWM:")), None)
        if hwm is None:
            return                      # a zombie: its memory map is gone, the last figure stands
        peak[0] = int(hwm.split()[1]) / 1024
        time.sleep(HWM_POLL_S)


def run_process(args: list[str], env: dict[str, str]) -> ProcessRun:
    """Run to completion; wall time from spawn to exit and the peak RSS of that one process.

    The peak is VmHWM, sampled by a thread every HWM_POLL_S (the wall time is not affected: this thread
    waits in wait4). Not wait4's ru_maxrss: on Linux a child spawned by vfork+exec inherits its parent's
    high-water mark in ru_maxrss, so every child of this process, which has loaded torch for the ceiling,
    reported at least this process's own peak (a `python -c pass` child of a 1.5 GB parent: 1,520 MB)."""
    import threading
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=REPO_ROOT)
        peak = [0.0]
        watcher = threading.Thread(target=_watch_peak_rss, args=(proc.pid, peak), daemon=True)
        watcher.start()
        _, status, _ = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        watcher.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ProcessRun(wall, proc.returncode, out.read().decode(errors="replace"),
                          err.read().decode(errors="replace"), peak[0])


def nav_env(index_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["NAV_INDEX_DIR"] = str(index_dir)
    return env


def nav_index(tree: Path, index_dir: Path) -> tuple[ProcessRun, dict]:
    run = run_process(nav_command() + ["index", str(tree), "--json"], nav_env(index_dir))
    if run.returncode != 0:
        raise corpora.BenchError(f"nav index {tree} exited {run.returncode}: {run.stderr.strip()[-600:]}")
    return run, json.loads(run.stdout)


# ------------------------------------------------------------------------------------------------ the tree

def python_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.py") if not any(part.startswith(".") for part in p.relative_to(tree).parts))


def edit_file(path: Path, tag: str) -> None:
    """Insert a comment line at the first blank line past the middle: one chunk's text changes and every
    later chunk of the file moves down a line, as a typical edit does."""
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    middle = len(lines) // 2
    at = next((i for i in range(middle, len(lines)) if not lines[i].strip()), len(lines))
    lines.insert(at, f"# nav-bench edit {tag}")
    path.write_text("\n".join(lines), encoding="utf-8")


def spread(items: list, count: int) -> list:
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def checkout(source: Path, tree: Path) -> int:
    """Make `tree` hold exactly `source`'s files, writing only those that differ (as `git checkout` does).
    Returns the number of files written or deleted."""
    changed = 0
    wanted = {p.relative_to(source) for p in source.rglob("*") if p.is_file() and p.name != corpora.MARKER_NAME}
    for rel in sorted(wanted):
        src, dst = source / rel, tree / rel
        if dst.is_file() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        changed += 1
    for path in sorted(tree.rglob("*"), reverse=True):
        if path.is_file() and path.relative_to(tree) not in wanted:
            path.unlink()
            changed += 1
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return changed


# ----------------------------------------------------------------------------------------------- measures

def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def corpus_flops(index_dir: Path, model_shape: ceiling.ModelShape) -> tuple[int, int, float]:
    """(distinct chunk texts, their word pieces, their FLOPs) of the index: what the embedder had to do."""
    import sqlite3
    from navigator.index.store import CHUNK_COLUMNS, chunk_from_row
    conn = sqlite3.connect(index_dir / "nav.db")
    try:
        rows = conn.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks GROUP BY content_hash").fetchall()
    finally:
        conn.close()
    texts = [chunk_from_row(r).embed_text for r in rows]   # what the embedder read: context line, header, text
    pieces = ceiling.token_counts(texts)
    return len(texts), sum(pieces), sum(ceiling.flops_per_sequence(model_shape, n) for n in pieces)


def cold_commands(tree: Path, index_dir: Path, runs: int, result: dict) -> None:
    env = nav_env(index_dir)
    base = nav_command()
    search_runs, retriever_args = [], []
    for i in range(runs):
        run = run_process(base + ["search", QUERIES[i % len(QUERIES)], "--repo", str(tree), "-k", str(TOP_K)]
                          + retriever_args, env)
        if run.returncode != 0 and not retriever_args:
            result["notes"].append(f"cold nav search with the default retriever failed ({run.stderr.strip()[-300:]}); "
                                   "measured with --retriever vector")
            retriever_args = ["--retriever", "vector"]
            run = run_process(base + ["search", QUERIES[i % len(QUERIES)], "--repo", str(tree)] + retriever_args, env)
        if run.returncode != 0:
            result["notes"].append(f"cold nav search failed: {run.stderr.strip()[-300:]}")
            break
        search_runs.append(run.wall_s)
    if search_runs:
        result["cold_search_s"] = statistics.median(search_runs)
        result["cold_search_runs_s"] = search_runs
        result["cold_search_retriever"] = retriever_args[-1] if retriever_args else "default"
    if run_process(base + ["context", "--help"], env).returncode != 0:
        result["notes"].append("`nav context` does not exist yet: cold context skipped")
        return
    context_runs = []
    for i in range(runs):
        run = run_process(base + ["context", QUERIES[(i + 7) % len(QUERIES)], "--repo", str(tree)], env)
        if run.returncode != 0:
            result["notes"].append(f"cold nav context failed: {run.stderr.strip()[-300:]}")
            break
        context_runs.append(run.wall_s)
    if context_runs:
        result["cold_context_s"] = statistics.median(context_runs)
        result["cold_context_runs_s"] = context_runs


def warm_latencies(tree: Path, index_dir: Path, rounds: int) -> dict:
    """p50 / p95 per registered retriever, in-process, after one untimed first query (which loads models
    and statistics; its time is reported separately as first_ms)."""
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex
    from retrievers.registry import get_retriever, registered_names
    os.environ["NAV_INDEX_DIR"] = str(index_dir)
    config = Config.from_env()
    index = NavIndex.open(tree, config)
    out: dict[str, dict] = {}
    try:
        for name in registered_names():
            try:
                retriever = get_retriever(name, index, config)
                start = time.perf_counter()
                retriever.retrieve(QUERIES[-1], TOP_K)
                first_ms = (time.perf_counter() - start) * 1000
            # Any retriever, plugins included, may fail in any way (a model not in the cache, a missing
            # optional dependency): record why and measure the others.
            except Exception as exc:  # noqa: BLE001
                out[name] = {"error": f"{exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}
                continue
            samples = []
            for _ in range(rounds):
                for query in QUERIES:
                    start = time.perf_counter()
                    retriever.retrieve(query, TOP_K)
                    samples.append((time.perf_counter() - start) * 1000)
            out[name] = {"p50_ms": percentile(samples, 0.50), "p95_ms": percentile(samples, 0.95),
                         "first_ms": first_ms, "samples": len(samples)}
    finally:
        index.conn.close()
    return out


def query_encoder_latencies(onnx_dir: Path, model_name: str) -> dict:
    """Warm p50 / p95 of embedding one query, ONNX encoder vs the torch (sentence-transformers) path."""
    from navigator.index.embedder import Embedder
    from navigator.index.onnx_query import OnnxQueryEncoder
    encoders = {"onnx": OnnxQueryEncoder(onnx_dir).encode, "torch": Embedder(model_name).encode_query}
    out = {}
    for name, encode in encoders.items():
        encode(QUERIES[0])
        samples = []
        for query in QUERIES:
            start = time.perf_counter()
            encode(query)
            samples.append((time.perf_counter() - start) * 1000)
        out[name] = {"p50_ms": percentile(samples, 0.50), "p95_ms": percentile(samples, 0.95)}
    return out


STAGE_RUNS = 3


def stage_breakdown(tree: Path, index_dir: Path, edit_target: Path) -> dict:
    """Stage times (bench/stages.py) of a cold `nav search`, median of STAGE_RUNS processes, and of one
    `nav index` after one more one-line edit of `edit_target`."""
    script = [sys.executable, str(REPO_ROOT / "bench" / "stages.py")]
    env = nav_env(index_dir)
    runs = []
    for i in range(STAGE_RUNS):
        run = run_process(script + ["search", str(tree), QUERIES[(i + 3) % len(QUERIES)]], env)
        if run.returncode != 0:
            return {"error": run.stderr.strip()[-300:]}
        runs.append(json.loads(run.stdout))
    search = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    edit_file(edit_target, "stages")
    run = run_process(script + ["index", str(tree)], env)
    if run.returncode != 0:
        return {"search": search, "error": run.stderr.strip()[-300:]}
    return {"search": search, "index_one_file": json.loads(run.stdout)}


def cold_breakdown(onnx_dir: Path | None) -> dict:
    """Process start to exit for the imports a query process may pay for (median of 3 runs each)."""
    probes = {
        "python -c pass": "pass",
        "import navigator.frontends.cli": "import navigator.frontends.cli",
        "import chromadb": "import chromadb",
        "import chromadb as nav does (GC paused, then frozen)": "from navigator.index.store import import_chromadb; import_chromadb()",
        "import numpy": "import numpy",
        "import torch + sentence_transformers": "import torch, sentence_transformers",
    }
    if onnx_dir is not None:
        probes["ONNX query encoder: load + encode one query"] = (
            f"from navigator.index.onnx_query import OnnxQueryEncoder; OnnxQueryEncoder({str(onnx_dir)!r}).encode('where is the config read')")
    env = dict(os.environ)
    out = {}
    for label, code in probes.items():
        walls = []
        for _ in range(3):
            run = run_process([sys.executable, "-c", code], env)
            if run.returncode != 0:
                walls = None
                out[label] = {"error": run.stderr.strip()[-300:]}
                break
            walls.append(run.wall_s)
        if walls:
            out[label] = {"median_s": statistics.median(walls)}
    return out


# --------------------------------------------------------------------------------------------------- sizes

def bench_size(size: str, args, workdir: Path, model_shape, measured_ceiling: dict) -> dict:
    corpus = corpora.CORPORA[size]
    source = corpora.ensure_sdist(corpus.current)
    previous = corpora.ensure_sdist(corpus.previous) if corpus.previous else None
    tree, index_dir = workdir / size / "tree", workdir / size / "index"
    shutil.rmtree(workdir / size, ignore_errors=True)
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns(corpora.MARKER_NAME))
    result: dict = {"corpus": corpus.current.label, "tree": str(tree), "index_dir": str(index_dir), "notes": []}

    log(f"[{size}] full index of {corpus.current.label} ...")
    run, summary = nav_index(tree, index_dir)
    result.update(files=summary["files_indexed"], chunks=summary["chunks"], chunks_embedded=summary["chunks_embedded"],
                  full_index_s=run.wall_s, chunks_per_s=summary["chunks"] / run.wall_s, peak_index_rss_mb=run.max_rss_mb)
    log(f"[{size}] {summary['chunks']} chunks in {run.wall_s:.1f}s; counting their FLOPs ...")
    texts, pieces, flops = corpus_flops(index_dir, model_shape)
    achieved = flops / run.wall_s / 1e9
    result.update(distinct_texts=texts, word_pieces=pieces, gflop=flops / 1e9, achieved_gflops=achieved,
                  fraction_of_ceiling=achieved / measured_ceiling["ceiling_gflops"],
                  fraction_of_peak=achieved / measured_ceiling["peak_gflops"])

    log(f"[{size}] re-index with nothing changed ...")
    run, summary = nav_index(tree, index_dir)
    result.update(noop_reindex_s=run.wall_s)

    log(f"[{size}] cold nav search / nav context ...")
    cold_commands(tree, index_dir, args.cold_runs, result)
    log(f"[{size}] warm query latencies ...")
    result["warm"] = warm_latencies(tree, index_dir, args.warm_rounds)

    files = python_files(tree)
    by_size = sorted(files, key=lambda p: (p.stat().st_size, str(p)))
    result["edited_file"] = str(by_size[len(by_size) // 2])
    edit_file(by_size[len(by_size) // 2], "one")
    log(f"[{size}] re-index after editing one file ...")
    run, summary = nav_index(tree, index_dir)
    result.update(reindex_one_file_s=run.wall_s, reindex_one_file_embedded=summary["chunks_embedded"])

    for i, path in enumerate(spread(files, FILES_IN_BIG_CHANGE)):
        edit_file(path, f"many-{i}")
    log(f"[{size}] re-index after editing {min(len(files), FILES_IN_BIG_CHANGE)} files ...")
    run, summary = nav_index(tree, index_dir)
    result.update(reindex_50_files_s=run.wall_s, reindex_50_files_changed=summary["files_changed"],
                  reindex_50_files_embedded=summary["chunks_embedded"])

    if previous is not None:
        written = checkout(previous, tree)
        log(f"[{size}] re-index after checking out {corpus.previous.label} ({written} files differ) ...")
        run, summary = nav_index(tree, index_dir)
        result.update(checkout_other_s=run.wall_s, checkout_other_files=written,
                      checkout_other_embedded=summary["chunks_embedded"])
        written = checkout(source, tree)
        log(f"[{size}] re-index after checking {corpus.current.label} back out ...")
        run, summary = nav_index(tree, index_dir)
        result.update(checkout_back_s=run.wall_s, checkout_back_files=written,
                      checkout_back_embedded=summary["chunks_embedded"])
    else:
        result["notes"].append("no second release configured for this size: checkout not measured")
    return result


# ------------------------------------------------------------------------------------------------- report

def lookup(result: dict, key: str):
    value = result
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def targets_table(results: dict[str, dict]) -> list[dict]:
    """Each target checked on the largest corpus measured (the targets are stated for 20k+ chunks)."""
    biggest = max(results, key=lambda s: results[s]["chunks"])
    rows = []
    for target in TARGETS:
        measured = lookup(results[biggest], target.key)
        row = {"target": target.label, "key": target.key, "goal": f"{target.op} {target.value:g}{target.unit}",
               "size": biggest, "chunks": results[biggest]["chunks"], "measured": measured}
        if isinstance(measured, (int, float)):
            row["ratio"] = measured / target.value
            row["met"] = measured <= target.value if target.op == "<=" else measured >= target.value
        rows.append(row)
    return rows


def growth(results: dict[str, dict]) -> dict[str, dict]:
    """Each figure per size, and its exponent in chunks between the smallest and largest corpus."""
    order = sorted(results, key=lambda s: results[s]["chunks"])
    out = {}
    for key in GROWTH_KEYS:
        values = {s: lookup(results[s], key) for s in order}
        row: dict = {"values": values}
        first, last = order[0], order[-1]
        a, b = values[first], values[last]
        if len(order) > 1 and isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > 0 and b > 0:
            row["exponent"] = math.log(b / a) / math.log(results[last]["chunks"] / results[first]["chunks"])
        out[key] = row
    return out


def machine() -> dict:
    import onnxruntime
    import torch
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), 0)
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(mem_kb / MB, 1), "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "onnxruntime": onnxruntime.__version__}


def fmt(value, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}{unit}" if abs(value) < 100 else f"{value:.0f}{unit}"
    return f"{value}{unit}"


def print_report(report: dict) -> None:
    results = report["sizes"]
    sizes = list(results)
    print(f"\nnav bench {report['date']}  {report['machine']['cpu']}, {report['machine']['cores']} cores, "
          f"load average {report['load_before']} -> {report['load_after']}")
    c = report["ceiling"]
    print(f"matmul ceiling ({c['dtype']}, {c['threads']} threads, model-shaped at {c['seq']} pieces): "
          f"{c['ceiling_gflops']:.0f} GFLOP/s; peak {c['peak_gflops']:.0f} GFLOP/s")
    if max(report["load_before"] + report["load_after"]) > BUSY_LOAD_PER_CORE * report["machine"]["cores"]:
        print("warning: other work was running on this machine; with torch's threads waiting on a busy core, "
              "times (warm ones above all) are pessimistic")
    rows = [
        ("corpus", "corpus", ""), ("chunks", "chunks", ""), ("full index", "full_index_s", " s"),
        ("chunks/s", "chunks_per_s", ""), ("achieved GFLOP/s", "achieved_gflops", ""),
        ("fraction of ceiling", "fraction_of_ceiling", ""),
        ("fraction of peak", "fraction_of_peak", ""), ("peak RSS index", "peak_index_rss_mb", " MB"),
        ("re-index, no change", "noop_reindex_s", " s"), ("re-index, 1 file", "reindex_one_file_s", " s"),
        ("re-index, 50 files", "reindex_50_files_s", " s"), ("  files changed", "reindex_50_files_changed", ""),
        ("  chunks embedded", "reindex_50_files_embedded", ""),
        ("checkout other release", "checkout_other_s", " s"), ("  chunks embedded", "checkout_other_embedded", ""),
        ("checkout back", "checkout_back_s", " s"), ("cold nav search", "cold_search_s", " s"),
        ("cold nav context", "cold_context_s", " s"),
    ]
    names = sorted({n for r in results.values() for n in r.get("warm", {})})
    for name in names:
        rows.append((f"warm {name} p50", f"warm.{name}.p50_ms", " ms"))
        rows.append((f"warm {name} p95", f"warm.{name}.p95_ms", " ms"))
    print(f"\n{'figure':<26}" + "".join(f"{s:>16}" for s in sizes))
    for label, key, unit in rows:
        print(f"{label:<26}" + "".join(f"{fmt(lookup(results[s], key), unit):>16}" for s in sizes))
    for s in sizes:
        for name, warm in results[s].get("warm", {}).items():
            if "error" in warm:
                print(f"  [{s}] retriever {name} skipped: {warm['error']}")
        for note in results[s]["notes"]:
            print(f"  [{s}] note: {note}")

    print("\ntargets (checked on the largest corpus measured)")
    for row in report["targets"]:
        status = "-" if "met" not in row else ("met" if row["met"] else "MISSED")
        ratio = f"{row['ratio']:.2f}x" if "ratio" in row else "-"
        print(f"  {row['target']:<44} goal {row['goal']:<9} measured {fmt(row['measured']):>8}  "
              f"ratio {ratio:>7}  {status}  ({row['size']}, {row['chunks']} chunks)")

    print("\ngrowth with corpus size (exponent of chunks: 0 = flat, 1 = linear)")
    for key, row in report["growth"].items():
        values = "  ".join(f"{s} {fmt(v)}" for s, v in row["values"].items())
        exponent = f"{row['exponent']:.2f}" if "exponent" in row else "-"
        print(f"  {key:<24} exponent {exponent:>6}   {values}")

    print("\ncold start of the pieces a query process may import (median of 3, process start to exit)")
    for label, row in report["cold_breakdown"].items():
        print(f"  {label:<48} {fmt(row.get('median_s'), ' s') if 'median_s' in row else 'failed: ' + row['error']}")
    stages = report.get("stages", {})
    for part, title in (("search", f"cold nav search, stage by stage (median of {STAGE_RUNS} processes)"),
                        ("index_one_file", "nav index after a one-line edit, stage by stage")):
        if part in stages:
            print(f"\n{title}, {stages['corpus']} (ms; process start-up and exit not included)")
            for label, ms in stages[part].items():
                print(f"  {label:<56} {fmt(ms):>8}")
    if "error" in stages:
        print(f"\nstage breakdown failed: {stages['error']}")
    print("\nwarm embedding of one query, in-process")
    for name, row in report["query_encoder_warm"].items():
        print(f"  {name:<8} p50 {fmt(row['p50_ms'], ' ms'):>9}   p95 {fmt(row['p95_ms'], ' ms'):>9}")


def save(report: dict, out: Path) -> None:
    report["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report["targets"] = targets_table(report["sizes"])
    report["growth"] = growth(report["sizes"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description="nav speed benchmarks (figures, not tests)")
    parser.add_argument("--sizes", default=None, help=f"comma-separated, of {', '.join(corpora.SIZES)} "
                        "(default: all; with --quick: small)")
    parser.add_argument("--quick", action="store_true", help="one cold run and one round of warm queries per size")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT.relative_to(REPO_ROOT)})")
    parser.add_argument("--workdir", type=Path, default=None, help="where the corpus copies and indexes go "
                        "(default: <bench dir>/work)")
    args = parser.parse_args()
    sizes = corpora.parse_sizes(args.sizes or ("small" if args.quick else ",".join(corpora.SIZES)))
    args.cold_runs = 1 if args.quick else 5
    args.warm_rounds = 1 if args.quick else 3
    workdir = (args.workdir or corpora.bench_dir() / "work").expanduser().resolve()

    from navigator.core.config import Config
    from navigator.index.onnx_query import export_onnx, onnx_dir_for
    config = Config.from_env()
    model_shape = ceiling.model_shape(config.embed_model)
    from navigator.index.embedder import resolve_dtype
    config.embed_dtype = resolve_dtype(config.embed_dtype)   # "auto" measured as what it runs here
    report = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
              "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]), "embed_model": config.embed_model,
              "embed_dtype": config.embed_dtype, "model_shape": model_shape.__dict__,
              "load_before": [round(x, 2) for x in os.getloadavg()], "sizes": {}}
    # The ceiling is the machine's, measured once before anything else runs (see bench/ceiling.py).
    log(f"measuring the {config.embed_dtype} matmul ceiling ...")
    report["ceiling"] = ceiling.measure_ceiling(config.embed_dtype, model_shape)
    try:
        for size in sizes:
            report["sizes"][size] = bench_size(size, args, workdir, model_shape, report["ceiling"])
            save(report, args.out)  # a long run stopped later keeps the sizes already measured
        largest = report["sizes"][max(sizes, key=lambda s: report["sizes"][s]["chunks"])]
        log("stage times of a cold search and a one-file re-index on the largest corpus ...")
        report["stages"] = stage_breakdown(Path(largest["tree"]), Path(largest["index_dir"]), Path(largest["edited_file"]))
        report["stages"]["corpus"] = largest["corpus"]
        first_index = Path(report["sizes"][sizes[0]]["index_dir"])
        onnx_dir = export_onnx(config.embed_model, onnx_dir_for(first_index, config.embed_model))
    except corpora.BenchError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    log("cold-start breakdown ...")
    report["cold_breakdown"] = cold_breakdown(onnx_dir)
    report["query_encoder_warm"] = query_encoder_latencies(onnx_dir, config.embed_model)
    save(report, args.out)
    print_report(report)
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
