# Two commands: `make start` (install + open the workbook) and `make test` (install + every test).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The install reports its progress through a filter; pipefail keeps pip's exit status.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# Checks that a Python is 3.11 or newer; prints the version it found otherwise.
SUPPORTED := import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python " + sys.version.split()[0])
# JupyterLab refuses to run as root (containers, Binder) unless told it is on purpose.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)
# Serve the repository root (so labs/, README.md and the package are in the file browser) and read the
# project's JupyterLab settings (.jupyterlab-settings/overrides.json: no "official Jupyter news" prompt).
LAB := $(BIN)/jupyter lab $(ALLOW_ROOT) --ServerApp.root_dir=. --LabApp.app_settings_dir=$(CURDIR)/.jupyterlab-settings

.PHONY: start test lint notebooks benchmark clean learner-bundle

start: $(STAMP)
	$(LAB) notebooks/00_start_here.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c '$(SUPPORTED)' || { echo "The workbook needs Python 3.11 or newer; '$(PYTHON)' is not (see above)." \
		"Install one and run e.g. 'make PYTHON=python3.11 start'."; exit 1; }
	@if [ -e $(BIN)/python ] && ! $(BIN)/python -c '$(SUPPORTED)' 2>/dev/null; then \
		echo "Removing $(VENV): an unsupported Python made it."; rm -rf $(VENV); fi
	@echo "Installing the workbook into $(VENV) (about 40 s and 750 MB; 'make clean' removes it)..."
	$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install -e ".[dev]" -c constraints.txt 2>&1 | tee $(VENV)/install.log | \
		awk '/^Collecting /{n++; printf "\r  %d packages resolved", n; fflush()} \
		     /^Installing collected/{printf "\n  installing them...\n"; fflush()} \
		     END{if (n) print "  done"}' \
		|| { tail -n 30 $(VENV)/install.log; echo "The install failed; the whole log is $(VENV)/install.log."; exit 1; }
	@touch $(STAMP)

# Maintainers: lint, refresh the committed outputs of the lesson notebooks, time them.
lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

notebooks: $(STAMP)
	$(BIN)/python tools/nbtools.py execute notebooks/*.ipynb

benchmark: $(STAMP)
	$(BIN)/python benchmarks/notebook_times.py

# Start over: remove the virtual environment and every cache the tests made.
clean:
	rm -rf $(VENV) .cache

# Instructors: the zip to hand out to learners (package, notebooks, labs; nothing of solutions/).
learner-bundle: $(STAMP)
	$(BIN)/python -m mercadofresco.course.grading build
	$(BIN)/python -m mercadofresco.course.bundle dist/mercadofresco-learner.zip
