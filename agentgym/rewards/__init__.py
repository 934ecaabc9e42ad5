"""Composable, declarative, scheduled reward shapers for agentic RL.

Name a preset or write a spec, then shape episodes with it::

    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")   # or ShapeReward(env, spec)
    ...                                                              # info["reward"] on the last step

    shaper = build_shaper({"terms": [
        {"kind": "format", "weight": 0.2},
        {"kind": "la_bleu", "weight": 0.8, "gate": {"term": "format"}},
    ]})
    breakdown = shaper.shape(Episode.from_infos(infos, actions=actions, gold_answers=golds))

See ``docs/rewards.md`` for the term catalogue, the composition rules and the presets, and
``docs/reward-lab.md`` for the lab that measures a spec before training (``compare``, ``probe``,
``Rollouts``, ``group_metrics``; they load on first use from ``agentgym.rewards.lab``).
"""

from agentgym.rewards._base import Gate, Guards, LinearWeight, TermSpec
from agentgym.rewards._registry import INPUTS, Abstain, abstain
from agentgym.rewards.bleu import length_aware_bleu
from agentgym.rewards.episode import Episode
from agentgym.rewards.judge import RUBRIC, Judge, JudgeResult, judge_for, parse_score
from agentgym.rewards.monitor import RewardMonitor, stages_in_force, zero_variance_share
from agentgym.rewards._load import load_preset, load_spec, override_preset
from agentgym.rewards.presets import PRESETS, preset_text
from agentgym.rewards.shaper import RewardBreakdown, Shaper, TermValue, build_shaper
from agentgym.rewards.spec import TERM_KINDS, TERM_SPECS, RewardSpec, Stage, Term
from agentgym.rewards.wrapper import ShapeReward

from agentgym._lazy import lazy_names as _lazy_names

globals().update({spec.__name__: spec for spec in TERM_SPECS})  # the term catalogue's models, by class name

# The reward lab loads on first use: it reads run folders and plays envs, which shaping does not need.
_LAB = ("compare", "probe", "Rollouts", "Rollout", "rollout_record", "shape_rollouts", "group_metrics")

__all__ = [
    # building and shaping
    "RewardSpec", "Stage", "Term", "TermSpec", "LinearWeight", "Gate", "Guards", "load_spec", "build_shaper",
    "Shaper", "RewardBreakdown", "TermValue", "Episode", "ShapeReward",
    "PRESETS", "load_preset", "override_preset", "preset_text", "TERM_KINDS", "INPUTS", "Abstain", "abstain",
    # terms: every spec model of the term catalogue
    *(spec.__name__ for spec in TERM_SPECS),
    # helpers
    "length_aware_bleu", "Judge", "JudgeResult", "judge_for", "RUBRIC", "parse_score", "RewardMonitor", "zero_variance_share",
    "stages_in_force",
    # the reward lab
    *_LAB,
]

__getattr__ = _lazy_names(__name__, dict.fromkeys(_LAB, "agentgym.rewards.lab"), __all__)[0]
