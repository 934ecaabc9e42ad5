# Each target sets itself up: a virtualenv in .venv with agentgym and its test extras.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

# The verl extra is installed so the verl integration's tests run in CI too; torch==2.13.0 is a
# CPU build on the project's machines (an unpinned torch pulls multi-GB CUDA wheels). ~3 min fresh.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[dev,verl,trl]" "torch==2.13.0"
	touch $(STAMP)

demo: $(STAMP)  ## the main job: play TravelPlanner and SearchQA episodes offline, print and plot results
	$(VENV)/bin/agentgym demo

test: $(STAMP)  ## the whole test suite
	$(VENV)/bin/python -m pytest

bench: $(STAMP)  ## the benchmarks (generate a full-scale world on first run)
	$(VENV)/bin/python benchmarks/bench_travelplanner_tools.py
	$(VENV)/bin/python benchmarks/bench_evaluator.py
	$(VENV)/bin/python benchmarks/bench_rewards.py
	$(VENV)/bin/python benchmarks/bench_solver.py
	$(VENV)/bin/python benchmarks/bench_searchqa.py
	$(VENV)/bin/python benchmarks/bench_searchqa_retrieve.py
	$(VENV)/bin/python benchmarks/bench_server.py
	$(VENV)/bin/python benchmarks/bench_run_resume.py
	$(VENV)/bin/python benchmarks/bench_cli_startup.py
	$(VENV)/bin/python benchmarks/bench_degenerate_actions.py

clean:
	rm -rf $(VENV) build *.egg-info
