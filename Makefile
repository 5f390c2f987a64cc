# Every target creates .venv and installs the course into it, at the versions of constraints.txt,
# when absent. Any Python from 3.10 to 3.13 will do; 3.11 is the one CI uses.
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3.13 \
            || command -v python3.10 || command -v python3)
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
# nbgrader and Jupyter start helper programs (alembic, kernels) by name: find ours first.
export PATH := $(BIN):$(PATH)

# MathJax for the browser tests, which serve it for the CDN address of the feedback pages
# (grader/safe_output/tex.py names the same version).
MATHJAX_VERSION := 3.2.2
MATHJAX := $(VENV)/mathjax-$(MATHJAX_VERSION)/node_modules/mathjax/package.json

# The instructor's JupyterLab opens this course folder (the demo course unless COURSE is given).
COURSE ?= build/demo

.PHONY: install demo test portability check lab instructor release outputs format lint clean

install: $(STAMP) $(MATHJAX)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; (3, 10) <= v <= (3, 13) or sys.exit("make needs Python 3.10 to 3.13 (found " + sys.version.split()[0] + "): run make PYTHON=/path/to/python3.11")'
	@bash .ci/system-packages || true  # from Debian: the sandbox, PostgreSQL, browser tests
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

$(MATHJAX): | $(STAMP)
	npm install --silent --prefix $(VENV)/mathjax-$(MATHJAX_VERSION) --no-save --no-package-lock \
	  mathjax@$(MATHJAX_VERSION) || echo "warning: without npm, the feedback pages' browser tests fail"

demo: $(STAMP)  ## grade the bundled example class and print the score table
	$(BIN)/python -m grader demo

test: $(STAMP) $(MATHJAX)  ## the full test suite, as CI runs it
	$(BIN)/python -m pytest

portability: $(STAMP)  ## the student install on torch 2.14.1 (built once under ~/.cache): all lessons
	$(BIN)/python tests/portability/other_torch.py

lab: $(STAMP)  ## JupyterLab for a student: the lessons and Validate, no instructor tools
	JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter/student $(BIN)/jupyter lab notebooks

instructor: $(STAMP)  ## JupyterLab with the formgrader on COURSE (default: the graded demo)
	@[ -f $(COURSE)/nbgrader_config.py ] || [ "$(COURSE)" != build/demo ] || $(BIN)/python -m grader demo
	@[ -f $(COURSE)/nbgrader_config.py ] || { echo "$(COURSE) is not a course: grader init $(COURSE)"; exit 2; }
	cd $(COURSE) && JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter/instructor $(BIN)/jupyter lab

release: $(STAMP)  ## regenerate notebooks/ from solutions/
	$(BIN)/python -m grader release

outputs: $(STAMP)  ## re-run the lessons whose code changed (or LESSONS=...) and store their outputs
	$(BIN)/python -m grader outputs $(LESSONS)

check: $(STAMP)  ## check LESSONS=... before release: outputs, solution, blank, wrong and right answers
	$(BIN)/python -m grader check $(LESSONS)

format: $(STAMP)
	$(BIN)/ruff format conftest.py grader tests benchmarks solutions/*/probes.py
	$(BIN)/ruff check --fix conftest.py grader tests benchmarks solutions/*/probes.py

lint: $(STAMP)
	$(BIN)/ruff check conftest.py grader tests benchmarks solutions/*/probes.py
	$(BIN)/ruff format --check conftest.py grader tests benchmarks solutions/*/probes.py

clean:
	rm -rf $(VENV) build submitted autograded feedback gradebook.db
