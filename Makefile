# Each target sets itself up in .venv: `make demo` installs only what the demo needs (agentgym and
# its plot extra); `make test` and `make bench` add the test extras, verl and torch.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test
# Extras the suite needs beyond the demo's: add an integration's extra here when its tests need it.
TEST_EXTRAS ?= dev,verl,trl,tinker,skyrl
# verifiers pins mcp==2.0.0, the `mcp` and `dev` extras mcp==2.3.0: its tests get their own venv.
VERIFIERS_VENV := .venv-verifiers
VERIFIERS_STAMP := $(VERIFIERS_VENV)/.installed-verifiers
# openenv 0.10.0 requires fastmcp<4, so mcp<2: the OpenEnv door's tests on it get their own venv too
# (the main suite runs them on openenv-core 0.3.0, the dev extra's).
OPENENV_VENV := .venv-openenv
OPENENV_STAMP := $(OPENENV_VENV)/.installed-openenv

.PHONY: demo test install-test install-verifiers test-verifiers install-openenv test-openenv bench clean

$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[plot]"
	touch $(DEMO_STAMP)

# torch==2.13.0 is a CPU build on the project's machines (an unpinned torch pulls multi-GB CUDA
# wheels); verl's tests run on CPU. ~3 min fresh.
$(TEST_STAMP): $(DEMO_STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[$(TEST_EXTRAS)]" "torch==2.13.0"
	# tinker-cookbook 0.6.1 declares tml-renderers>=0.4.1, which the package index does not serve: the
	# `tinker` extra holds its other dependencies, and the cookbook itself comes without its own.
	$(VENV)/bin/python -m pip install --quiet --no-deps "tinker-cookbook==0.6.1"
	touch $(TEST_STAMP)

$(VERIFIERS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VERIFIERS_VENV)
	$(VERIFIERS_VENV)/bin/python -m pip install --quiet -e ".[verifiers]" "pytest>=8"
	touch $(VERIFIERS_STAMP)

# ~1.5 min fresh (gradio, which openenv requires, is most of it).
$(OPENENV_STAMP): pyproject.toml
	$(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/python -m pip install --quiet -e ".[openenv]" "pytest>=8" "hypothesis>=6.100"
	touch $(OPENENV_STAMP)

demo: $(DEMO_STAMP)  ## the main job: play TravelPlanner and SearchQA episodes offline, print and plot results
	$(VENV)/bin/agentgym demo

install-test: $(TEST_STAMP)  ## what the test suite and the benchmarks need, on top of the demo's install

test: $(TEST_STAMP)  ## the whole test suite
	$(VENV)/bin/python -m pytest

install-verifiers: $(VERIFIERS_STAMP)  ## the verifiers adapter's own venv (verifiers pins mcp==2.0.0)

test-verifiers: $(VERIFIERS_STAMP)  ## the verifiers adapter's tests, in their own venv
	$(VERIFIERS_VENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_verifiers.py

install-openenv: $(OPENENV_STAMP)  ## the OpenEnv door's venv on openenv 0.10 (its fastmcp<4 means mcp<2)

test-openenv: $(OPENENV_STAMP)  ## the OpenEnv door's tests on openenv 0.10, in their own venv
	$(OPENENV_VENV)/bin/python -m pytest -p no:cacheprovider tests/server/test_openenv.py

bench: $(TEST_STAMP) $(VERIFIERS_STAMP) $(OPENENV_STAMP)  ## the benchmarks (generate a full-scale world on first run)
	$(VENV)/bin/python benchmarks/bench_travelplanner_tools.py
	$(VENV)/bin/python benchmarks/bench_evaluator.py
	$(VENV)/bin/python benchmarks/bench_rewards.py
	$(VENV)/bin/python benchmarks/bench_solver.py
	$(VENV)/bin/python benchmarks/bench_searchqa.py
	$(VENV)/bin/python benchmarks/bench_searchqa_retrieve.py
	$(VENV)/bin/python benchmarks/bench_server.py
	$(VENV)/bin/python benchmarks/bench_flood.py
	$(VENV)/bin/python benchmarks/bench_run_resume.py
	$(VENV)/bin/python benchmarks/bench_cli_startup.py
	$(VENV)/bin/python benchmarks/bench_degenerate_actions.py
	$(VENV)/bin/python benchmarks/bench_memory.py --episodes 30000
	$(VENV)/bin/python benchmarks/bench_step_info.py
	$(VENV)/bin/python benchmarks/bench_integrations.py --only "shared driver" skyrl-gym tinker-cookbook
	$(VERIFIERS_VENV)/bin/python benchmarks/bench_integrations.py --only "shared driver" verifiers
	$(OPENENV_VENV)/bin/python benchmarks/bench_integrations.py --only "shared driver" openenv

clean:
	rm -rf $(VENV) $(VERIFIERS_VENV) $(OPENENV_VENV) build *.egg-info
