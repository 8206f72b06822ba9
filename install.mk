# The install the repository's Makefile and the learner bundle's share: the workbook into .venv, once.
# The including Makefile sets EXTRAS first (the repository: [dev], for the tests; the bundle: nothing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# For tests/labs/test_bundle.py, which installs offline into an environment that reads the repository's packages:
# VENV_ARGS=--without-pip, PIP_ARGS="--no-index --no-deps --no-build-isolation" (added to each pip call).
VENV_ARGS ?=
PIP_ARGS ?=
# The install reports its progress through a filter; pipefail keeps pip's exit status.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# Checks that a Python is 3.11 or newer; prints the version it found otherwise.
SUPPORTED := import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python " + sys.version.split()[0])
# uv, when it is on PATH, installs the same pins from constraints.txt in a third of the time (32 s against 88 s here,
# bytecode included); pip otherwise, or with `make UV= start`. uv reads its own configuration (uv.toml, UV_*), not
# pip.conf: a machine whose index is set only for pip keeps pip by leaving uv off PATH or with UV=.
UV ?= $(shell command -v uv 2>/dev/null)
# JupyterLab refuses to run as root (containers, Binder) unless told it is on purpose.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c '$(SUPPORTED)' || { echo "The workbook needs Python 3.11 or newer; '$(PYTHON)' is not (see above)." \
		"Install one and run e.g. 'make PYTHON=python3.11 start'."; exit 1; }
	@if [ -e $(BIN)/python ] && ! $(BIN)/python -c '$(SUPPORTED)' 2>/dev/null; then \
		echo "Removing $(VENV): an unsupported Python made it."; rm -rf $(VENV); fi
	@echo "Installing the workbook into $(VENV) (1.3 GB, a minute or two; 'make clean' removes it)..."
	$(PYTHON) -m venv $(VENV_ARGS) $(VENV)
ifneq ($(UV),)
	@$(UV) pip install --python $(BIN)/python --compile-bytecode -e ".$(EXTRAS)" -c constraints.txt 2>&1 | \
		tee $(VENV)/install.log | awk '/^(Resolved|Installed|Bytecode) /{print "  " $$0; fflush()}' \
		|| { tail -n 30 $(VENV)/install.log; echo "The install failed; the whole log is $(VENV)/install.log."; exit 1; }
else
	@$(BIN)/python -m pip install --quiet --upgrade pip $(PIP_ARGS)
	@$(BIN)/python -m pip install --no-compile -e ".$(EXTRAS)" -c constraints.txt $(PIP_ARGS) 2>&1 | tee $(VENV)/install.log | \
		awk '/^Collecting /{n++; printf "\r  %d packages resolved", n; fflush()} \
		     /^Installing collected/{printf "\n  installing them...\n"; fflush()} \
		     END{if (n) print "  done"}' \
		|| { tail -n 30 $(VENV)/install.log; echo "The install failed; the whole log is $(VENV)/install.log."; exit 1; }
	@echo "  compiling it..."
	@# What pip's own compile step does (it skips the files that are not Python 3), on every core instead of one:
	@# 24 s for 1.1 GB on one core. Compiled here, a user who cannot write to .venv (a hub's learner) still has it.
	@$(BIN)/python -m compileall -q -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
		>/dev/null 2>&1 || true
endif
	@touch $(STAMP)

# The rule above is not the default goal: the including Makefile's first target after this file is.
.DEFAULT_GOAL :=
