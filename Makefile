# Two commands: `make start` (install + open the workbook) and `make test` (install + every test).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# JupyterLab refuses to run as root (containers, Binder) unless told it is on purpose.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)

.PHONY: start test lint notebooks benchmark clean learner-bundle

start: $(STAMP)
	$(BIN)/jupyter lab $(ALLOW_ROOT) notebooks/00_start_here.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]" -c constraints.txt
	touch $(STAMP)

# Maintainers: lint, refresh the committed outputs of the lesson notebooks, time them.
lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

notebooks: $(STAMP)
	$(BIN)/python tools/nbtools.py execute notebooks/*.ipynb

benchmark: $(STAMP)
	$(BIN)/python benchmarks/notebook_times.py

clean:
	rm -rf $(VENV) .cache

# Instructors: the zip to hand out to learners (package, notebooks, labs; nothing of solutions/).
learner-bundle: $(STAMP)
	$(BIN)/python -m mercadofresco.course.grading build
	$(BIN)/python -m mercadofresco.course.bundle dist/mercadofresco-learner.zip
