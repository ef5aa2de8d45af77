# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Both create the project virtualenv if it is missing: the CPU build of torch first (a plain `torch`
# would pull a multi-GB CUDA build), then nav and its dependencies.
VENV ?= .venv
PY := $(VENV)/bin/python
NAV := $(VENV)/bin/nav
STAMP := $(VENV)/.nav-installed

.PHONY: install demo test bench eval-report corpus

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# The main job on the embedded default model: index this repository, then answer a search.
demo: $(STAMP)
	$(NAV) index .
	$(NAV) search "where are embeddings cached by content hash" -k 3

# The evaluation corpora (click 8.1.8 and each language set's pinned package) and the training sources
# (training/data/sources), fetched by version and verified by sha256, unpacked outside the repo.
corpus: $(STAMP)
	$(PY) rag-eval/fetch_corpus.py --all
	$(PY) training/data/fetch.py

test: $(STAMP) corpus
	$(PY) -m pytest -q

# Speed figures and ratios to the targets (bench/README.md): small, medium and large corpora, ~12 min.
bench: $(STAMP)
	$(PY) bench/run.py

# Every retrieval table of rag-eval/README.md (EN and ZH, each retriever, ceiling, budget curve).
eval-report: $(STAMP)
	bash rag-eval/report.sh
