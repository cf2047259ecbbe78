# Two commands do all set-up (see README):  make book   and   make test
# Everything is installed into .venv (created if missing) with the versions in constraints.txt.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# Without a GPU, install the CPU build of torch (on these machines torch==2.13.0 resolves to a local
# CPU wheel; never the multi-GB CUDA wheels). With a GPU, the default (CUDA) build from the index.
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo 1)
TORCH_SPEC ?= $(if $(HAS_GPU),torch>=2.2,torch==2.13.0)
JB_FLAGS ?= -W --keep-going

.PHONY: help venv install book test test-fast bench reproduce notebooks clean

help:
	@echo "make book   - create .venv, install, build the book into _build/html"
	@echo "make test   - create .venv, install, run the whole test suite"
	@echo "make bench  - print the performance benchmark (JSON)"

$(VENV)/.stamp-torch:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q "$(TORCH_SPEC)"
	touch $@

$(VENV)/.stamp-install: $(VENV)/.stamp-torch pyproject.toml constraints.txt
	$(PIP) install -q -c constraints.txt -e ".[book,test,widgets]"
	touch $@

venv install: $(VENV)/.stamp-install

book: $(VENV)/.stamp-install
	$(VENV)/bin/jupyter-book build . $(JB_FLAGS)
	@echo "Book built: open _build/html/index.html"

test: $(VENV)/.stamp-install
	$(PY) -m pytest

test-fast: $(VENV)/.stamp-install
	$(PY) -m pytest -m "not slow"

bench: $(VENV)/.stamp-install
	$(PY) -m sts_lib.bench

reproduce: $(VENV)/.stamp-install
	$(PY) -m sts_lib.experiments run all --scale paper --out results

clean:
	rm -rf _build .jupyter_cache

# Chapters are authored in book/src/*.md (MyST, jupytext) and paired with book/*.ipynb for Colab.
notebooks: $(VENV)/.stamp-install
	for f in book/src/*.md; do $(VENV)/bin/jupytext --quiet --to ipynb --output book/$$(basename $$f .md).ipynb $$f; done
