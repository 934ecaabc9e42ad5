"""``info["reward"]`` has one reader, ``RewardBreakdown.from_info``: no other module indexes it.

Four modules once parsed the breakdown each their own way (the trainer's reward info, the run
records, the demo, the monitor) and drifted apart; this walks every module's syntax tree for a
``something_info["reward"]`` or ``something_info.get("reward")`` outside the reader (writing it is the shaper's job).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentgym"
READER = PACKAGE / "rewards" / "shaper.py"


def _reads_reward(node: ast.AST) -> bool:
    if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant)
            and node.slice.value == "reward"):
        target = node.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
          and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "reward"):
        target = node.func.value
    else:
        return False
    # A verl row's extra_info["reward"] is the row's reward spec, another record.
    return isinstance(target, ast.Name) and "info" in target.id and target.id != "extra_info"


def readers() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == READER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if _reads_reward(node):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_only_reward_breakdown_from_info_reads_the_breakdown():
    assert readers() == [], "read info['reward'] through RewardBreakdown.from_info"


def test_the_check_sees_a_direct_read():
    assert _reads_reward(ast.parse('final_info["reward"]').body[0].value)
    assert _reads_reward(ast.parse('info.get("reward")').body[0].value)
    assert not _reads_reward(ast.parse('reply["reward"]').body[0].value)
    assert not _reads_reward(ast.parse('info["reward"] = 1').body[0].targets[0])  # the writer
