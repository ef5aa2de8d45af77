#!/usr/bin/env bash
# Every chunk-level set, indexed as a user indexes (a plain `nav index DIR`, docs and tests included), then
# `nav eval` on its English and Chinese questions: the per-language table of rag-eval/README.md.
#
#   bash rag-eval/languages.sh                       # all sets: click werkzeug go typescript javascript rust java
#   SETS="go rust" bash rag-eval/languages.sh        # some of them
#   SETS=heldout bash rag-eval/languages.sh          # the five libraries no model of nav trains on
#                                                      (training/data/holdout.json), their written questions
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
HELDOUT="$("$PY" -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["holdout"]))' \
  "$REPO/training/data/holdout.json")"
SETS="${SETS//heldout/$HELDOUT}"
RETRIEVERS="${RETRIEVERS:-graph}"
mkdir -p "$OUT" "$INDEX_ROOT"

held_out() {   # NAME -> NAME when it is a held-out training library, else a pattern that matches nothing
  case " $HELDOUT " in *" $1 "*) echo "$1" ;; *) echo "-none-" ;; esac
}

corpus_of() {
  case "$1" in
    click) "$PY" "$HERE/fetch_corpus.py" | tail -1 ;;
    # a held-out training library: its pinned tree (training/data/fetch.py checks the sha256)
    $(held_out "$1")) "$PY" "$REPO/training/data/fetch.py" "$1" | tail -1 ;;
    werkzeug) "$PY" "$REPO/bench/corpora.py" --sizes medium | awk 'NR == 1 {print $3}' ;;
    *) "$PY" "$HERE/fetch_corpus.py" "$1" | tail -1 ;;
  esac
}

queries_of() {   # set lang -> query file
  case "$1" in
    click) echo "$HERE/queries.$2.jsonl" ;;
    # a held-out library's written questions in one language (the eval format plus "source")
    $(held_out "$1")) mkdir -p "$OUT/queries"
      "$PY" -c 'import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip() and json.loads(line)["lang"] == sys.argv[2]:
        sys.stdout.write(line)' "$REPO/training/data/questions/$1.jsonl" "$2" > "$OUT/queries/$1.$2.jsonl"
      echo "$OUT/queries/$1.$2.jsonl" ;;
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
