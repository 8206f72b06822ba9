# Two commands: `make start` (install + open the workbook) and `make test` (install + every test).
# The install (a Python check, .venv, pip with a line of progress) is install.mk's, shared with the learner bundle.
EXTRAS := [dev]
include install.mk
# Serve the repository root (so labs/, README.md and the package are in the file browser) and read the
# project's JupyterLab settings (.jupyterlab-settings/overrides.json: no "official Jupyter news" prompt). The URL
# it prints opens notebook 00 too (default_url), not the Launcher, for a browser on another machine.
LAB := $(BIN)/jupyter lab $(ALLOW_ROOT) --ServerApp.root_dir=. --LabApp.app_settings_dir=$(CURDIR)/.jupyterlab-settings \
	--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

# The Spanish edition: JupyterLab's menus in Spanish (its language pack, .jupyterlab-settings/es) and notebook 00 in
# Spanish, from notebooks/es/.
LAB_ES := $(BIN)/jupyter lab $(ALLOW_ROOT) --ServerApp.root_dir=. --LabApp.app_settings_dir=$(CURDIR)/.jupyterlab-settings/es \
	--LabApp.default_url=/lab/tree/notebooks/es/00_start_here.ipynb

.PHONY: start start-es test lint notebooks benchmark clean learner-bundle

start: $(STAMP)
	$(LAB) notebooks/00_start_here.ipynb

start-es: $(STAMP)
	$(LAB_ES) notebooks/es/00_start_here.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest

# Maintainers: lint, refresh the committed outputs of the lesson notebooks, time them.
lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

notebooks: $(STAMP)
	$(BIN)/python tools/nbtools.py execute notebooks/*.ipynb notebooks/es/*.ipynb

benchmark: $(STAMP)
	$(BIN)/python benchmarks/notebook_times.py --write

# Start over: remove the virtual environment and every cache the tests made.
clean:
	rm -rf $(VENV) .cache

# Instructors: the zip to hand out to learners (package, notebooks, labs, learner/README.md and learner/Makefile
# as its README and Makefile; nothing of solutions/).
learner-bundle: $(STAMP)
	$(BIN)/python -m mercadofresco.course.grading build
	$(BIN)/python -m mercadofresco.course.handout.bundle dist/mercadofresco-learner.zip
