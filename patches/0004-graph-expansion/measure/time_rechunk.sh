#!/bin/bash
# Re-chunk every file of the click index (embeddings cached): main's code vs this branch's, 3 rounds each.
# usage: time_rechunk.sh SRC_INDEX_MAIN SRC_INDEX_BRANCH TREE
set -e
branch_code=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)   # before any cd
for round in 1 2 3; do
  for who in main branch; do
    if [ $who = main ]; then src=$1; code=/work/main; else src=$2; code=$branch_code; fi
    rm -rf ${TMPDIR:-/tmp}/graph-t-$who; cp -a $src ${TMPDIR:-/tmp}/graph-t-$who
    sqlite3 ${TMPDIR:-/tmp}/graph-t-$who/nav.db "UPDATE meta SET value=json_set(value,'$.chunker_version','old') WHERE key='manifest'"
    cd $code
    /usr/bin/time -f "$who round $round: wall %e s, user %U s, sys %S s, maxrss %M KB" env NAV_INDEX_DIR=${TMPDIR:-/tmp}/graph-t-$who OMP_NUM_THREADS=1 PYTHONPATH=$code /work/main/.venv/bin/python -m navigator index $3 2>&1 | grep -E "round|index  " 
  done
done
