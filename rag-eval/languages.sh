#!/usr/bin/env bash
# Every chunk-level set, indexed as a user indexes (a plain `nav index DIR`, docs and tests included), then
# `nav eval` on its English and Chinese questions: the per-language table of rag-eval/README.md.
#
#   bash rag-eval/languages.sh                       # all sets: click werkzeug go typescript javascript rust java
#   SETS="go rust" bash rag-eval/languages.sh        # some of them
#   NO_INDEX=1 ... bash rag-eval/languages.sh         # reuse the indexes under INDEX_ROOT (a ranking change)
#   NAV="python -m navigator" (run from another worktree) to measure that tree's code; OUT, INDEX_ROOT elsewhere
#
# Writes OUT/<set>-index.json (the index summary: chunks, files per language, seconds) and
# OUT/<set>-<lang>-<retriever>.json (nav eval --json), then prints one line per run. Pair two OUT folders with
# `nav compare A/SET-LANG-graph.json B/SET-LANG-graph.json`.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PY="${PY:-$REPO/.venv/bin/python}"
NAV="${NAV:-$PY -m navigator}"
OUT="${OUT:-$HERE/results/languages}"
INDEX_ROOT="${INDEX_ROOT:-$HOME/.cache/nav-eval-indexes}"
SETS="${SETS:-click werkzeug go typescript javascript rust java}"
RETRIEVERS="${RETRIEVERS:-graph}"
mkdir -p "$OUT" "$INDEX_ROOT"

corpus_of() {
  case "$1" in
    click) "$PY" "$HERE/fetch_corpus.py" | tail -1 ;;
    werkzeug) "$PY" "$REPO/bench/corpora.py" --sizes medium | awk 'NR == 1 {print $3}' ;;
    *) "$PY" "$HERE/fetch_corpus.py" "$1" | tail -1 ;;
  esac
}

queries_of() {   # set lang -> query file
  case "$1" in
    click) echo "$HERE/queries.$2.jsonl" ;;
    *) echo "$HERE/$1/queries.$2.jsonl" ;;
  esac
}

for set in $SETS; do
  corpus="$(corpus_of "$set")"
  export NAV_INDEX_DIR="$INDEX_ROOT/$set"
  if [ -z "${NO_INDEX:-}" ]; then
    $NAV index "$corpus" --json > "$OUT/$set-index.json"
  fi
  for lang in en zh; do
    queries="$(queries_of "$set" "$lang")"
    [ -f "$queries" ] || continue
    for retriever in $RETRIEVERS; do
      $NAV eval --queries "$queries" --repo "$corpus" --retriever "$retriever" --json \
        --out "$OUT/$set-$lang-$retriever.json" > /dev/null
      echo "$set $lang $retriever -> $OUT/$set-$lang-$retriever.json"
    done
  done
done
