#!/usr/bin/env python3
"""The paths a user waits on when nothing needs embedding, measured for two versions of nav side by side in one
run (issue 25, part 4): a no-op `nav index`, a one-file re-index, a cold `nav search`, and a warm search
through `nav mcp`. A benchmark, not a test: it prints figures, ratios between the two versions and to the
targets, and fails only if nav itself fails.

    python bench/cold_paths.py                                  # werkzeug (4k chunks), before = ae3c7bd
    python bench/cold_paths.py --tree ~/src/django-5.0 --index-from DIR   # a large tree, its index copied
    python bench/cold_paths.py --before REV --rounds 7 --out bench/results/cold-paths.json

"before" is a git worktree of REV run from its own folder (`python -m navigator` imports the working
directory's package first); "now" is this checkout. Each tree is indexed once by the before side (or copied
from --index-from), then each side gets its own copy of that index and one untimed warm-up run, so both start
from the same files. Every figure is the median over the rounds, and the sides alternate which goes first.

  no-op index      `nav index TREE` with nothing changed
  one-file index   a comment line inserted mid-file in the median-size .py file, `nav index`; then the edit
                   undone and `nav index` again: both runs are samples
  cold search      `nav search Q --repo TREE -k 10`, process spawn to exit, a different question each round
  mcp warm p50     one `nav mcp` process per side, the search tool called over stdio JSON-RPC (first call
                   untimed), round trip per call
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import corpora  # noqa: E402  (bench/ is not a package: sibling scripts)
from run import QUERIES, edit_file, python_files  # noqa: E402

DEFAULT_BEFORE = "ae3c7bd"       # main before issue 25's speed work (129bece, and this file's slice)
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "cold-paths.json"
MCP_CALLS = 30
# The targets, by the chunk count they are stated for: (<= 10k chunks, larger).
TARGETS = {"noop_index_s": (0.5, 0.5), "one_file_index_s": (1.0, 1.0), "cold_search_s": (0.5, 1.0),
           "mcp_warm_p50_ms": (None, 30.0)}
LABELS = {"noop_index_s": "no-op nav index (s)", "one_file_index_s": "one-file re-index (s)",
          "cold_search_s": "cold nav search (s)", "mcp_warm_p50_ms": "mcp warm search p50 (ms)",
          "mcp_warm_p95_ms": "mcp warm search p95 (ms)"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Side:
    """One version of nav: the folder it runs from and its own copy of each tree's index."""

    def __init__(self, name: str, root: Path):
        self.name, self.root = name, root

    def run(self, args: list[str], index_dir: Path) -> tuple[float, subprocess.CompletedProcess]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"NAV_INDEX_DIR": str(index_dir)}
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "navigator", *args], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=7200)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise corpora.BenchError(f"{self.name}: nav {' '.join(args)} exited {done.returncode}: "
                                     f"{done.stderr.strip()[-800:]}")
        return wall, done


def worktree(rev: str, where: Path) -> Path:
    target = where / f"nav-{rev}"
    if not (target / "navigator").is_dir():
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "--force", str(target), rev],
                       check=True, capture_output=True, text=True)
    return target


def median_file(tree: Path) -> Path:
    files = sorted(python_files(tree), key=lambda p: p.stat().st_size)
    if not files:
        raise corpora.BenchError(f"{tree} has no .py file to edit")
    return files[len(files) // 2]


class McpClient:
    """A `nav mcp` process spoken to in newline-delimited JSON-RPC over stdio, as an MCP client does."""

    def __init__(self, side: Side, tree: Path, index_dir: Path, errlog):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"NAV_INDEX_DIR": str(index_dir)}
        self.proc = subprocess.Popen([sys.executable, "-m", "navigator", "mcp", "--repo", str(tree)], cwd=side.root,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog,
                                     text=True, bufsize=1)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "nav-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise corpora.BenchError(f"nav mcp exited during {method} (code {self.proc.poll()})")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise corpora.BenchError(f"nav mcp {method}: {message['error']}")
                return message["result"]

    def search(self, query: str) -> float:
        start = time.perf_counter()
        result = self.request("tools/call", {"name": "search", "arguments": {"query": query, "k": 10}})
        wall = time.perf_counter() - start
        if result.get("isError"):
            raise corpora.BenchError(f"nav mcp search failed: {result['content'][0].get('text', '')[:400]}")
        return wall

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def bench_tree(tree_source: Path, sides: list[Side], work: Path, rounds: int, index_from: Path | None) -> dict:
    label = tree_source.name
    tree = work / label / "tree"
    if not tree.is_dir():
        log(f"{label}: copying the tree")
        shutil.copytree(tree_source, tree, symlinks=True)
    base = work / label / "index-base"
    # The kept base index is reused only when it came from the same place: one copied with --index-from (a
    # newer nav's index, which an older "before" side cannot read) must not be reused by a run without it.
    origin = f"copy of {index_from.resolve()}" if index_from is not None else f"indexed by {sides[0].name}"
    origin_file = work / label / "index-base.origin"
    if not (base / "nav.db").is_file() or not origin_file.is_file() or origin_file.read_text() != origin:
        shutil.rmtree(base, ignore_errors=True)
        if index_from is not None:
            shutil.copytree(index_from, base)
        else:
            log(f"{label}: indexing with {sides[0].name} (once; both sides start from a copy)")
            sides[0].run(["index", str(tree)], base)
        origin_file.write_text(origin)
    target_file = median_file(tree)
    original = target_file.read_bytes()
    indexes = {}
    for side in sides:
        indexes[side.name] = work / label / f"index-{side.name}"
        shutil.rmtree(indexes[side.name], ignore_errors=True)
        shutil.copytree(base, indexes[side.name])
        side.run(["index", str(tree)], indexes[side.name])           # warm-up: whatever a first run does
        side.run(["search", "warm up", "--repo", str(tree), "-k", "3"], indexes[side.name])
    _, done = sides[-1].run(["index", str(tree), "--json"], indexes[sides[-1].name])
    chunks = json.loads(done.stdout)["chunks"]
    samples: dict[str, dict[str, list[float]]] = {s.name: {"noop_index_s": [], "one_file_index_s": [],
                                                           "cold_search_s": []} for s in sides}
    for r in range(rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        query = QUERIES[r % len(QUERIES)]
        for side in order:
            got, index_dir = samples[side.name], indexes[side.name]
            got["noop_index_s"].append(side.run(["index", str(tree)], index_dir)[0])
            edit_file(target_file, f"{side.name}-{r}")
            try:
                got["one_file_index_s"].append(side.run(["index", str(tree)], index_dir)[0])
            finally:
                target_file.write_bytes(original)
            got["one_file_index_s"].append(side.run(["index", str(tree)], index_dir)[0])
            got["cold_search_s"].append(side.run(["search", query, "--repo", str(tree), "-k", "10"], index_dir)[0])
        log(f"{label}: round {r + 1}/{rounds} done")
    figures = {s.name: {k: statistics.median(v) for k, v in samples[s.name].items()} for s in sides}
    with open(work / label / "mcp.log", "w") as errlog:
        for side in sides:
            client = McpClient(side, tree, indexes[side.name], errlog)
            try:
                client.search("warm up the server")
                times = sorted(client.search(QUERIES[i % len(QUERIES)] + f" ({i})") * 1000 for i in range(MCP_CALLS))
            finally:
                client.close()
            figures[side.name]["mcp_warm_p50_ms"] = statistics.median(times)
            figures[side.name]["mcp_warm_p95_ms"] = times[int(0.95 * (len(times) - 1))]
    return {"tree": str(tree_source), "chunks": chunks, "rounds": rounds, "edited": str(target_file.relative_to(tree)),
            "figures": figures, "samples": samples}


def print_report(report: dict) -> None:
    before, now = report["sides"]
    print(f"# cold paths: {before} vs {now}, {report['machine']}, load {report['load_before']} -> "
          f"{report['load_after']} (1-min average, {os.cpu_count()} cores)")
    for tree in report["trees"]:
        big = tree["chunks"] > 10_000
        print(f"\n## {Path(tree['tree']).name}: {tree['chunks']:,} chunks, median of {tree['rounds']} rounds")
        print(f"| figure | {before} | {now} | {now}/{before} | target | {now}/target |")
        print("|---|---|---|---|---|---|")
        for key, label in LABELS.items():
            a, b = tree["figures"][before].get(key), tree["figures"][now].get(key)
            if a is None or b is None:
                continue
            target = TARGETS.get(key, (None, None))[1 if big else 0]
            ratio = f"{b / a:.2f}" if a else "-"
            print(f"| {label} | {a:.3f} | {b:.3f} | {ratio} | {target if target is not None else '-'} | "
                  f"{(f'{b / target:.2f}' if target else '-')} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="the git revision to compare with")
    parser.add_argument("--tree", action="append", type=Path, help="a tree to measure (default: the medium corpus)")
    parser.add_argument("--index-from", action="append", type=Path, default=[],
                        help="an existing index of the --tree at the same position, copied instead of indexing")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    work = corpora.bench_dir() / "cold-paths"
    work.mkdir(parents=True, exist_ok=True)
    trees = args.tree or [corpora.ensure_sdist(corpora.CORPORA["medium"].current)]
    sides = [Side(f"before-{args.before}", worktree(args.before, work)), Side("now", REPO_ROOT)]
    load_before = os.getloadavg()[0]
    results = []
    for i, tree in enumerate(trees):
        index_from = args.index_from[i] if i < len(args.index_from) else None
        results.append(bench_tree(tree.expanduser().resolve(), sides, work, args.rounds, index_from))
    import platform
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    report = {"sides": [s.name for s in sides], "machine": cpu, "load_before": round(load_before, 2),
              "load_after": round(os.getloadavg()[0], 2), "trees": results,
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print_report(report)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except corpora.BenchError as exc:
        print(f"cold_paths: {exc}", file=sys.stderr)
        sys.exit(1)
