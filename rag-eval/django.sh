#!/usr/bin/env bash
# The django dev set (../shared/devsets/swe-django, 114 bug reports from SWE-bench Lite): fetch each release,
# index it (skips below), run `nav eval --level file` per release and retriever, pool all 114 and the 102
# in_lite274 rows (rag-eval/django_pool.py). Usage:
#   bash rag-eval/django.sh                      # every release; RETRIEVERS="bm25 hybrid vector" FILE_RANK=evidence
#   VERSIONS="3.0 3.1" FILE_RANK=first bash rag-eval/django.sh
# Env: NAV, PY (defaults .venv/bin/...), DEVSET (the query files), DEVSET_DIR (trees, default ~/.cache/nav-devsets),
#      SKIP (the --skip of nav index; "" for none), LEXICAL_ONLY=1 (index without embedding: for bm25 runs),
#      INDEX_ROOT (when set, release X.Y's index lives in $INDEX_ROOT/idx-X.Y, else in the tree's .nav),
#      OUT (default rag-eval/results/django), DEPTH (ranking depth kept, default 10), NO_INDEX=1 (eval only).
set -euo pipefail
cd "$(dirname "$0")/.."
NAV=${NAV:-.venv/bin/nav}
PY=${PY:-.venv/bin/python}
DEVSET=${DEVSET:-../shared/devsets/swe-django}
VERSIONS=${VERSIONS:-"3.0 3.1 3.2 4.0 4.1 4.2 5.0"}
RETRIEVERS=${RETRIEVERS:-"bm25 hybrid vector"}
FILE_RANK=${FILE_RANK:-evidence}
OUT=${OUT:-rag-eval/results/django}
# The skips of the runs before issue 25 (gold files are never tests; report these skips); SKIP="" indexes each
# tree as a user would (a plain nav index, docs and tests included).
SKIP=${SKIP-"tests,docs,js_tests,extras,scripts,locale,static"}
mkdir -p "$OUT"
for v in $VERSIONS; do
  tree=$(PYTHON=$PY "$DEVSET/fetch.sh" "$v" | tail -1)
  if [[ -n ${INDEX_ROOT:-} ]]; then export NAV_INDEX_DIR=$INDEX_ROOT/idx-$v; fi
  if [[ -z ${NO_INDEX:-} ]]; then $NAV index "$tree" ${SKIP:+--skip "$SKIP"} ${LEXICAL_ONLY:+--lexical-only} --json > "$OUT/index-$v.json"; fi
  for r in $RETRIEVERS; do
    $NAV eval --queries "$DEVSET/django-$v.jsonl" --repo "$tree" --retriever "$r" --level file \
        --file-rank "$FILE_RANK" --k 1,3,5,10 --depth "${DEPTH:-10}" --json --out "$OUT/run-$r-$FILE_RANK-$v.json" > /dev/null
  done
done
for r in $RETRIEVERS; do
  runs=(); for v in $VERSIONS; do runs+=("$OUT/run-$r-$FILE_RANK-$v.json"); done
  $PY rag-eval/django_pool.py "$OUT/pooled-$r-$FILE_RANK" "${runs[@]}" --devset "$DEVSET"
done
