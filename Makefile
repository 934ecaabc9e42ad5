# Each target sets itself up: a virtualenv in .venv with agentgym and its test extras.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)  ## play a TravelPlanner episode offline with a scripted agent
	$(VENV)/bin/python examples/play_travelplanner.py

test: $(STAMP)  ## the whole test suite
	$(VENV)/bin/python -m pytest

bench: $(STAMP)  ## the benchmarks (generate a full-scale world on first run)
	$(VENV)/bin/python benchmarks/bench_travelplanner_tools.py
	$(VENV)/bin/python benchmarks/bench_evaluator.py

clean:
	rm -rf $(VENV) build *.egg-info
