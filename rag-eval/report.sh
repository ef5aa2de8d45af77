#!/usr/bin/env bash
# Every table in rag-eval/README.md, from one command: fetch the pinned corpus, index it, and run
# nav eval (each retriever, EN and ZH), nav ceiling and nav eval --budget. Outputs go to rag-eval/results/.
#   bash rag-eval/report.sh            (uses .venv/bin/nav; the index lives in $NAV_INDEX_DIR or <corpus>/.nav)
set -euo pipefail
cd "$(dirname "$0")/.."
NAV=${NAV:-.venv/bin/nav}
PY=${PY:-.venv/bin/python}
CORPUS=$($PY rag-eval/fetch_corpus.py | tail -1)
OUT=rag-eval/results
mkdir -p "$OUT"
$NAV index "$CORPUS" > "$OUT/index.txt"
RETRIEVERS=${RETRIEVERS:-"vector bm25 hybrid baseline"}
for lang in en zh; do
  args=()
  for r in $RETRIEVERS; do args+=(--retriever "$r"); done
  $NAV eval --queries "rag-eval/queries.$lang.jsonl" --repo "$CORPUS" "${args[@]}" > "$OUT/eval-$lang.txt"
  $NAV eval --queries "rag-eval/queries.$lang.jsonl" --repo "$CORPUS" --retriever hybrid --heads > "$OUT/eval-$lang-heads.txt"
  for r in $RETRIEVERS; do
    $NAV eval --queries "rag-eval/queries.$lang.jsonl" --repo "$CORPUS" --retriever "$r" --json > "$OUT/run-$lang-$r.json"
  done
  $NAV ceiling --queries "rag-eval/queries.$lang.jsonl" --repo "$CORPUS" --retriever hybrid > "$OUT/ceiling-$lang.txt"
  $NAV eval --queries "rag-eval/queries.$lang.jsonl" --repo "$CORPUS" --retriever hybrid \
      --budget 500,1000,2000,4000,8000 > "$OUT/budget-$lang.txt"
  $NAV compare "$OUT/run-$lang-baseline.json" "$OUT/run-$lang-hybrid.json" --k 5 > "$OUT/compare-$lang-baseline-hybrid.txt"
done
echo "results in $OUT/"
