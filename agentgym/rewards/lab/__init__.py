"""The reward lab: measure what a reward spec gives the trainer before a GPU hour is spent.

    rollouts = Rollouts.load("runs/tp-groups")                    # agentgym run --samples-per-task 8
    comparison = compare(rollouts, ["planner_r1/sparse", "planner_r1/dense"])
    comparison.table(); comparison.to_json()
    report = probe("TravelPlanner-v0", ["planner_r1/dense"])      # degenerate answers vs a real pass

* ``rollouts``: the rollout record (``rollout_record``, ``Rollout``), bounded in bytes;
* ``readers``: ``Rollouts.load`` for run folders, verl rollout dumps and agentgym's JSONL logs;
* ``reshape``: the rollouts' episodes told what their env knows of each task (``TaskContexts``), and
  ``shape_rollouts``, each shaped again at the training step it was played at;
* ``ranks``: Spearman and Kendall rank correlations, ties as scipy ranks them;
* ``signal``: the group statistics of one batch (``group_metrics``, the live figures trainers log);
* ``comparison``: ``compare`` over specs and schedule steps, its table, JSON and thresholds;
* ``probes``: ``probe``, the degenerate-answer suites the envs declare;
* ``figures``: the PNGs (matplotlib, ``agentgym-rl[plot]``).

See ``docs/reward-lab.md``.
"""

from agentgym._lazy import lazy_names as _lazy_names

_LAZY = {
    **dict.fromkeys(("Rollout", "rollout_record", "bound_infos", "RecordedEnv", "RecordingPool", "MAX_INFO_BYTES",
                     "RECORD_FORMAT"),
                    "agentgym.rewards.lab.rollouts"),
    **dict.fromkeys(("Rollouts",), "agentgym.rewards.lab.readers"),
    **dict.fromkeys(("TaskContexts", "shape_rollouts"), "agentgym.rewards.lab.reshape"),
    **dict.fromkeys(("spearman", "kendall"), "agentgym.rewards.lab.ranks"),
    **dict.fromkeys(("SignalRow", "GroupStats", "group_stats", "group_metrics", "METRIC_PREFIX"),
                    "agentgym.rewards.lab.signal"),
    **dict.fromkeys(("compare", "Comparison", "Threshold"), "agentgym.rewards.lab.comparison"),
    **dict.fromkeys(("probe", "ProbeCase", "ProbeReport"), "agentgym.rewards.lab.probes"),
}

__all__ = list(_LAZY)
__getattr__, __dir__ = _lazy_names(__name__, _LAZY, __all__)
