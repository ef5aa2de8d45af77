#!/usr/bin/env python3
"""Re-measure one retrieval experiment with one command: a patch against a base commit, on any query sets.

    python patches/measure.py patches/0001-e1-reverse.patch \
        --set click-en=rag-eval/queries.en.jsonl:~/.cache/nav/rag-eval/click-8.1.8 \
        --set click-zh=rag-eval/queries.zh.jsonl:~/.cache/nav/rag-eval/click-8.1.8 \
        [--base main] [--retriever hybrid] [--level chunk|file] [--k 5] [--skip tests,docs] [--out DIR]

What it does, per run:
  1. two scratch git worktrees of the base commit (detached, under the work dir): `base`, and `patched` with
     the patch applied (`git apply`; a patch that does not apply is an error naming it);
  2. per set, an index for each side kept in the work dir (NAV_INDEX_DIR), the corpus tree never touched.
     The patched side's index starts as a copy of the base side's, so `nav index` re-chunks and re-embeds
     only what the patch changed (the embedding cache is keyed by chunk text); kept between runs, so a
     second run of the same patch re-indexes nothing;
  3. `nav eval --json` on each side with that side's code, then `nav compare base patched --k K` (paired per
     query, per category, bootstrap CI), printed and saved with both runs under --out;
  4. the two worktrees are removed from the repository's worktree list at the end (they live in the shared
     .git; recreating them is cheap), unless --keep-trees. The indexes stay.
Exit status: 0 when every step ran (whatever the measurement says), 1 when a step failed.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None, out: Path | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"measure: step failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.strip()[-2000:]}")
    if out is not None:
        out.write_text(proc.stdout, encoding="utf-8")
    return proc.stdout


def scratch_worktree(git_root: Path, path: Path, base: str) -> None:
    """A detached worktree of `base` at `path`, reset to it (an earlier run's worktree is reused)."""
    if (path / ".git").exists():
        run(["git", "checkout", "--detach", "--force", base], cwd=path)
        run(["git", "clean", "-fdq"], cwd=path)
        return
    if path.exists():
        shutil.rmtree(path)
    run(["git", "worktree", "prune"], cwd=git_root)
    run(["git", "worktree", "add", "--detach", "--force", str(path), base], cwd=git_root)


def parse_set(text: str) -> tuple[str, Path, Path]:
    name, sep, rest = text.partition("=")
    queries, sep2, repo = rest.partition(":")
    if not sep or not sep2 or not name:
        raise SystemExit(f"measure: --set takes NAME=QUERIES.jsonl:REPO_DIR, got {text!r}")
    return name, Path(queries).expanduser().resolve(), Path(repo).expanduser().resolve()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("patch", help="a patch file (git diff format) against --base")
    parser.add_argument("--set", dest="sets", action="append", required=True, metavar="NAME=QUERIES:REPO",
                        help="a query set and the tree it runs on (repeatable)")
    parser.add_argument("--base", default="main", help="commit the patch applies to (default main)")
    parser.add_argument("--retriever", default="hybrid")
    parser.add_argument("--level", choices=("chunk", "file"), default="chunk")
    parser.add_argument("--k", type=int, default=5, help="cut-off of the paired comparison (default 5)")
    parser.add_argument("--skip", default=None, help="passed to nav index --skip")
    parser.add_argument("--work", default=os.environ.get("NAV_MEASURE_DIR", str(Path.home() / ".cache" / "nav-measure")),
                        help="scratch worktrees and indexes (default ~/.cache/nav-measure or $NAV_MEASURE_DIR)")
    parser.add_argument("--out", default=None, help="where runs and comparisons go (default <work>/results/<patch>)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with nav's dependencies")
    parser.add_argument("--keep-trees", action="store_true", help="leave the scratch worktrees registered")
    args = parser.parse_args(argv)

    patch = Path(args.patch).resolve()
    if not patch.is_file():
        raise SystemExit(f"measure: patch not found: {patch}")
    git_root = Path(run(["git", "rev-parse", "--show-toplevel"], cwd=REPO).strip())
    base_commit = run(["git", "rev-parse", "--verify", f"{args.base}^{{commit}}"], cwd=git_root).strip()
    work = Path(args.work).expanduser().resolve()
    out = Path(args.out).resolve() if args.out else work / "results" / patch.stem
    out.mkdir(parents=True, exist_ok=True)
    sides = {"base": work / "trees" / "base", "patched": work / "trees" / "patched"}
    try:
        return _measure(args, patch, git_root, base_commit, work, out, sides)
    finally:
        if not args.keep_trees:
            for tree in sides.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=git_root, capture_output=True)


def _measure(args, patch: Path, git_root: Path, base_commit: str, work: Path, out: Path, sides: dict) -> int:
    for tree in sides.values():
        scratch_worktree(git_root, tree, base_commit)
    applied = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=sides["patched"],
                             capture_output=True, text=True)
    if applied.returncode != 0:
        raise SystemExit(f"measure: {patch.name} does not apply to {args.base} ({base_commit[:12]}):\n"
                         f"{applied.stderr.strip()}")
    print(f"measure: {patch.name} on {args.base} {base_commit[:12]}; retriever {args.retriever}, "
          f"level {args.level}, k {args.k}")

    for spec in args.sets:
        name, queries, tree = parse_set(spec)
        if not queries.is_file() or not tree.is_dir():
            raise SystemExit(f"measure: set {name}: {queries} or {tree} does not exist")
        key = hashlib.sha1(str(tree).encode()).hexdigest()[:10]
        runs = {}
        for side, code in sides.items():
            index_dir = work / "indexes" / f"{tree.name}-{key}" / side
            if side == "patched" and not index_dir.exists() and (index_dir.parent / "base").exists():
                shutil.copytree(index_dir.parent / "base", index_dir, symlinks=True)   # seeds the embedding cache
            env = dict(os.environ, PYTHONPATH=str(code), NAV_INDEX_DIR=str(index_dir))
            nav = [args.python, "-m", "navigator"]
            index_cmd = [*nav, "index", str(tree), "--json"] + (["--skip", args.skip] if args.skip else [])
            run(index_cmd, cwd=code, env=env, out=out / f"{name}-{side}-index.json")
            runs[side] = out / f"{name}-{side}.json"
            eval_cmd = [*nav, "eval", "--queries", str(queries), "--repo", str(tree), "--retriever", args.retriever,
                        "--level", args.level, "--k", ",".join(map(str, sorted({1, 3, 5, 10, args.k}))),
                        "--json", "--out", str(runs[side])]
            run(eval_cmd, cwd=code, env=env)
        compare_txt = run([args.python, "-m", "navigator", "compare", str(runs["base"]), str(runs["patched"]),
                           "--k", str(args.k)], cwd=sides["base"], env=dict(os.environ, PYTHONPATH=str(sides["base"])),
                          out=out / f"{name}-compare.txt")
        print(f"\n== {name}: base {queries.name} on {tree}\n{compare_txt}")
    print(f"measure: runs and comparisons in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
