"""Old import paths of the server and client modules still work for one release, with a warning."""

from __future__ import annotations

import importlib
import sys

import pytest

from agentgym._deprecated import AgentGymDeprecationWarning


def _fresh_import(name: str):
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def test_the_wire_format_at_its_old_path_warns_and_is_the_same():
    import agentgym.remote.protocol as protocol

    with pytest.warns(AgentGymDeprecationWarning, match="agentgym.remote.protocol"):
        old = _fresh_import("agentgym.server.protocol")
    assert old.StepReply is protocol.StepReply and old.encode is protocol.encode
    assert set(old.__all__) == set(protocol.__all__)


def test_the_live_server_at_its_old_path_warns_and_is_the_same():
    from agentgym.server.live_server import LiveServer

    with pytest.warns(AgentGymDeprecationWarning, match="agentgym.server.live_server"):
        old = _fresh_import("agentgym.server.testing")
    assert old.LiveServer is LiveServer


def test_server_settings_is_the_server_config_by_its_old_name():
    import agentgym.server as server

    with pytest.warns(AgentGymDeprecationWarning, match="ServerConfig"):
        old = server.ServerSettings
    assert old is server.ServerConfig
    assert old(max_sessions=3).max_sessions == 3


def test_the_app_factories_take_their_config_by_the_old_settings_keyword_with_a_warning():
    from agentgym.errors import ConfigError
    from agentgym.server import ServerConfig, create_app

    config = ServerConfig(tokens=("t",), max_sessions=3)
    with pytest.warns(AgentGymDeprecationWarning, match="'config'"):
        app = create_app(settings=config)
    assert app.state.server.config is config
    with pytest.raises(ConfigError, match="only one of .settings."):
        create_app(config=config, settings=config)
