"""NotebookWrite is a real tool bound to the episode's notebook: same observations and info as the
official agent's notebook, in both action formats, and usable outside the env."""

from __future__ import annotations

import json
import pickle

import gymnasium
import pytest

from agentgym.envs.travelplanner.tools import Notebook, make_toolbox


def _call(fmt: str, action: str, name: str, arguments: dict[str, str]) -> str:
    if fmt == "react":
        return f"{action}[{', '.join(arguments.values())}]"
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@pytest.mark.parametrize("fmt", ["react", "json"])
def test_notebook_write_records_the_last_search_and_resets_per_episode(fmt):
    env = gymnasium.make("TravelPlanner-v0", action_format=fmt)
    env.reset(options={"task_index": 0})
    inner = env.unwrapped
    city = next(iter(inner.world.cities))
    found, *_ = env.step(_call(fmt, "AttractionSearch", "search_attractions", {"city": city}))
    env.step(_call(fmt, "CitySearch", "search_cities", {"state": "Texas"}))  # never the "last result"
    for index in (0, 1):
        text, reward, done, _, info = env.step(
            _call(fmt, "NotebookWrite", "notebook_write", {"description": f"note {index}"}))
        assert text == f"The information has been recorded in Notebook, and its index is {index}."
        assert (reward, done) == (0.0, False)
        assert info["tool_call"] == {"name": "NotebookWrite", "arguments": {"description": f"note {index}"}}
        assert info["error"] is None
    assert inner._notebook.entries == [{"Short Description": "note 0", "Content": found},
                                       {"Short Description": "note 1", "Content": found}]
    restored = pickle.loads(pickle.dumps(inner))  # the env still pickles, its notebook with it
    assert restored._notebook.entries == inner._notebook.entries
    env.reset(options={"task_index": 0})
    text, *_ = env.step(_call(fmt, "NotebookWrite", "notebook_write", {"description": "fresh"}))
    assert text.endswith("its index is 0.")


def test_the_toolbox_notebook_tool_runs_outside_the_env():
    world = gymnasium.make("TravelPlanner-v0").unwrapped.world
    notebook = Notebook()
    tools = make_toolbox(world, notebook)
    assert [t.action for t in tools][-1] == "NotebookWrite"
    result = tools.by_action("NotebookWrite").run("nothing yet")
    assert result.ok and result.content.endswith("its index is 0.")
    assert notebook.entries == [{"Short Description": "nothing yet", "Content": "None"}]
