# hoodie-lab: `make demo` and `make test` are the two set-up commands.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
WITH_ENV := source scripts/env.sh &&

.PHONY: install compile demo test deep bench mutate report clean

$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@echo "installing hoodie-lab and its dependencies into $(VENV) (first time: about 1-2 minutes)"
	@$(BIN)/python -m pip install -q --no-cache-dir -e '.[spark,dev]'
	@touch $(STAMP)

install: $(STAMP)

# rebuild the compiled engine (setup.py, mypyc) after editing engine/*.py: until then a stale build is not used
# and the pure-Python engine runs, with a warning (engine.BUILD says which runs)
compile: install
	@$(BIN)/python -m pip install -q --no-deps -e .
	@$(BIN)/python -c "import engine; print('engine:', engine.BUILD)"

demo: install
	@$(WITH_ENV) $(BIN)/hoodie-lab demo

test: install
	@$(WITH_ENV) $(BIN)/python -m pytest -q -m "not slow" --timeout=900 --durations=15 -n 2 --dist loadgroup

deep: install
	@$(WITH_ENV) HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest -q properties --timeout=0
	@$(WITH_ENV) $(BIN)/python -m pytest -q -m slow tests --timeout=0

bench: install
	@$(WITH_ENV) $(BIN)/python benchmarks/run.py

# mutation score of model/ (mutmut 3, results kept in mutants/; benchmarks/mutate.py --help)
mutate: install
	@$(BIN)/python benchmarks/mutate.py

report: install
	@$(WITH_ENV) $(BIN)/hoodie-lab report

clean:
	rm -rf $(VENV) build *.egg-info engine/_compiled/*.so; find reports -mindepth 1 ! -name .gitkeep ! -name README.md -exec rm -rf {} +
