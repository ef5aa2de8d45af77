#!/bin/bash
# usage: eval.sh TAG RETRIEVER...   (runs EN and ZH on click with this worktree's code)
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
export NAV_INDEX_DIR=${NAV_INDEX_DIR:?set NAV_INDEX_DIR to the click index} OMP_NUM_THREADS=1 PYTHONPATH=$PWD
C=$(/work/main/.venv/bin/python rag-eval/fetch_corpus.py | tail -1)
tag=$1; shift; mkdir -p ${RUNS:-/tmp/graph-runs}
args=(); for r in "$@"; do args+=(--retriever "$r"); done
for lang in en zh; do
  nice -n 10 /work/main/.venv/bin/python -m navigator eval --queries rag-eval/queries.$lang.jsonl --repo $C "${args[@]}" --out ${RUNS:-/tmp/graph-runs}/$tag-$lang.json > ${RUNS:-/tmp/graph-runs}/$tag-$lang.txt 2>&1
done
echo done
