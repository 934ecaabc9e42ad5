"""`agentgym eval travelplanner` reads submissions as written (issue 22, item 9): a blank line no
longer shifts every later plan, every unreadable line is warned about, and a JSON array or a file
of garbage is refused with the format named."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentgym.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def gold(tiny_world):
    """Lines of five gold plans of the tiny world, each carrying its query, and the queries file."""
    world, queries = tiny_world
    return world, [json.dumps({"idx": i, "query": q.to_row(), "plan": list(q.annotated_plan)})
                   for i, q in enumerate(queries[:5])], queries[:5]


def _eval(world, path, *flags):
    return runner.invoke(app, ["eval", "travelplanner", "-s", str(path), "-d", str(world.root), *flags],
                         terminal_width=200)


def _final_pass(tmp_path, world, text, *flags):
    path = tmp_path / "plans.jsonl"
    path.write_text(text)
    out = tmp_path / "out.json"
    result = _eval(world, path, "-o", str(out), *flags)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())["metrics"], result.output


def test_a_blank_line_in_the_middle_shifts_nothing_and_is_reported(gold, tmp_path):
    world, lines, _ = gold
    clean, _ = _final_pass(tmp_path, world, "\n".join(lines) + "\n")
    gapped, output = _final_pass(tmp_path, world, "\n".join(lines[:2] + ["", "   "] + lines[2:]) + "\n\n")
    assert gapped == clean
    assert "skipped 2 blank line(s) (line 3, 4)" in " ".join(output.split())


def test_every_unreadable_line_is_warned_about(gold, tmp_path):
    world, lines, queries = gold
    qfile = tmp_path / "queries.jsonl"
    qfile.write_text("".join(json.dumps(q.to_row()) + "\n" for q in queries))
    text = "\n".join([lines[0], "{not json", lines[2], "also not json", lines[4]]) + "\n"
    metrics, output = _final_pass(tmp_path, world, text, "-q", str(qfile))
    flat = " ".join(output.split())
    assert "line 2 of the submission is not valid JSON" in flat and "line 4 of the submission is not valid JSON" in flat
    assert metrics["Delivery Rate"] == pytest.approx(0.6)


def test_a_non_json_line_without_queries_says_so(gold, tmp_path):
    world, lines, _ = gold
    path = tmp_path / "plans.jsonl"
    path.write_text("\n".join([lines[0], "{oops"]) + "\n")
    result = _eval(world, path)
    assert result.exit_code == 1
    flat = " ".join(result.output.split())
    assert "line 2 of the submission is not valid JSON" in flat and "carries no query object" not in flat


def test_a_json_array_names_json_lines(gold, tmp_path):
    world, lines, _ = gold
    path = tmp_path / "plans.json"
    path.write_text(json.dumps([json.loads(line) for line in lines], indent=2))
    result = _eval(world, path)
    assert result.exit_code == 1 and "JSON Lines" in " ".join(result.output.split())


def test_a_file_of_garbage_is_refused(gold, tmp_path):
    world, _, _ = gold
    path = tmp_path / "plans.jsonl"
    path.write_text("this is\nnot a submission\n")
    result = _eval(world, path, "-q", "train")
    assert result.exit_code == 1 and "JSON Lines" in " ".join(result.output.split())
