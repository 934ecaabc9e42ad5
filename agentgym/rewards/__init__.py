"""Composable, declarative, scheduled reward shapers for agentic RL.

Name a preset or write a spec, then shape episodes with it::

    env = gymnasium.make("TravelPlanner-v0", reward="planner_r1/dense")   # or ShapeReward(env, spec)
    ...                                                              # info["reward"] on the last step

    shaper = build_shaper({"terms": [
        {"kind": "format", "weight": 0.2},
        {"kind": "la_bleu", "weight": 0.8, "gate": {"term": "format"}},
    ]})
    breakdown = shaper.shape(Episode.from_infos(infos, actions=actions, gold_answers=golds))

See ``docs/rewards.md`` for the term catalogue, the composition rules and the presets.
"""

from agentgym.rewards._base import Gate, Guards, LinearWeight, TermSpec
from agentgym.rewards._registry import INPUTS, Abstain, abstain
from agentgym.rewards.bleu import length_aware_bleu
from agentgym.rewards.episode import Episode
from agentgym.rewards.judge import RUBRIC, Judge, JudgeResult, judge_for, parse_score
from agentgym.rewards.monitor import RewardMonitor, stages_in_force, zero_variance_share
from agentgym.rewards._load import load_preset, load_spec
from agentgym.rewards.presets import PRESETS, preset_text
from agentgym.rewards.shaper import RewardBreakdown, Shaper, TermValue, build_shaper
from agentgym.rewards.spec import TERM_KINDS, TERM_SPECS, RewardSpec, Stage, Term
from agentgym.rewards.wrapper import ShapeReward

globals().update({spec.__name__: spec for spec in TERM_SPECS})  # the term catalogue's models, by class name

__all__ = [
    # building and shaping
    "RewardSpec", "Stage", "Term", "TermSpec", "LinearWeight", "Gate", "Guards", "load_spec", "build_shaper",
    "Shaper", "RewardBreakdown", "TermValue", "Episode", "ShapeReward",
    "PRESETS", "load_preset", "preset_text", "TERM_KINDS", "INPUTS", "Abstain", "abstain",
    # terms: every spec model of the term catalogue
    *(spec.__name__ for spec in TERM_SPECS),
    # helpers
    "length_aware_bleu", "Judge", "JudgeResult", "judge_for", "RUBRIC", "parse_score", "RewardMonitor", "zero_variance_share",
    "stages_in_force",
]
