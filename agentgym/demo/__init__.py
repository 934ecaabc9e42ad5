"""``agentgym demo``: the whole SDK working offline, in about a minute.

It plays TravelPlanner-v0 on the embedded world with the solver agent and a deliberately weak
baseline, and SearchQA-v0 with a scripted agent, each under a reward preset, then prints the
official metrics, the per-constraint pass rates and the reward breakdowns, and writes a results
folder (``summary.json``, ``episodes.jsonl``, and PNG plots when matplotlib is installed).
"""

from agentgym.demo._play import DemoResult, run_demo

__all__ = ["run_demo", "DemoResult"]
