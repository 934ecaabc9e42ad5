"""Spec loading under hostile or degenerate input: only ConfigError, with a bounded message, and the
size and depth limits hold before anything is parsed (finding 9 of issue 12)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym import ConfigError
from agentgym.errors import MAX_ALLOWED_CHARS, MAX_FIELD_CHARS, MAX_VALUE_CHARS
from agentgym.rewards import TERM_KINDS, build_shaper
from agentgym.rewards._load import MAX_SPEC_CHARS, MAX_SPEC_DEPTH

MESSAGE_BOUND = MAX_FIELD_CHARS + MAX_VALUE_CHARS + MAX_ALLOWED_CHARS + 200  # the three parts, the words, the marks


def config_error(source) -> ConfigError | None:
    """The ConfigError ``build_shaper(source)`` raises (None when it builds); anything else fails the test."""
    try:
        build_shaper(source)
    except ConfigError as exc:
        assert len(str(exc)) <= MESSAGE_BOUND, str(exc)[:300]
        return exc
    return None


@pytest.mark.parametrize("text", [
    "[" * 200_000,                                  # RecursionError in the YAML composer
    "{" + '"a": [' * 100_000,                       # RecursionError in the JSON parser
    '{"terms": [' + "1" * 5000 + "]}",             # ValueError: an int past Python's 4,300 digits
    "terms: " + "1" * 5000,                         # the same through YAML
    "a: 2024-13-45",                                # ValueError from YAML's date constructor
    '{"terms": [}',                                 # not JSON, not YAML: a raw yaml error on main
    "terms: [a, b\n  c: {",                         # a raw yaml ScannerError/ParserError
    "x: !!python/object/apply:os.system ['true']",  # an unsafe tag
    "- " * 5000,                                    # block nesting
])
def test_degenerate_spec_text_raises_only_a_config_error(text):
    assert config_error(text) is not None


def test_a_five_megabyte_key_gives_a_short_message():
    key = "k" * 5_000_000
    for source in ({key: 1, "terms": [{"kind": "format", "weight": 1}]},
                   {"terms": [{"kind": "format", "weight": key}]},
                   {"terms": [{"kind": key, "weight": 1}]},
                   json.dumps({key: 1})):
        error = config_error(source)
        assert error is not None and len(str(error)) < 2000


def test_spec_text_and_files_are_size_checked_before_parsing(tmp_path):
    big = "terms:\n" + "  - {kind: format, weight: 1}\n" * (MAX_SPEC_CHARS // 20)
    assert "at most" in str(config_error(big))
    path = tmp_path / "big.yaml"
    path.write_text(big)
    assert f"at most {MAX_SPEC_CHARS} bytes" in str(config_error(str(path)))
    assert "a spec file" in str(config_error(Path("/dev/zero")))  # never read: not a regular file


def test_a_spec_file_never_has_its_keys_and_values_echoed_unbounded(tmp_path):
    secret = "s3cr3t" * 100_000
    path = tmp_path / "secrets.json"
    path.write_text(json.dumps({"API_TOKEN": secret, "terms": [{"kind": "format", "weight": secret}]}))
    message = str(config_error(str(path)))
    assert len(message) < 2000 and secret not in message
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00" * 1000)
    assert "UTF-8" in str(config_error(str(tmp_path / "binary.json")))


def test_deep_or_exploding_documents_are_refused_before_validation():
    deep: dict = {"kind": "custom", "function": "reward_fixture_terms:scripted", "weight": 1}
    for _ in range(MAX_SPEC_DEPTH + 5):
        deep = {"x": deep}
    assert "nested more than" in str(config_error({"terms": [{"kind": "format", "weight": 1, "params": deep}]}))
    laughs = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))
    assert "more than" in str(config_error("terms:\n  - {kind: format, weight: 1}\n" + laughs))  # 10^9 uses


# -- fuzzing ------------------------------------------------------------------------------------
YAML_BITS = ["[", "]", "{", "}", ":", ", ", "- ", "\n", "  ", "a", "1", "-1", '"', "'", "!!", "&a ", "*a", "1e999",
             ".nan", "2024-13-45", "terms", "kind", "weight", "format", "llm_judge", "custom", "stages", "preset",
             "!!python/object:os.system", "? ", "|", ">", "#", "\t", "\x85", "\\", "<<: ", "~", "9" * 5000]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["kind", "weight", "name", "gate", "term", "terms", "stages", "start",
                                       "function", "model", "preset", "clip", "unit"]) | st.text(max_size=6),
                      children, max_size=4),
    max_leaves=20)
term_docs = st.fixed_dictionaries({"kind": st.sampled_from(TERM_KINDS), "weight": json_values},
                                  optional={"name": json_values, "gate": json_values, "function": st.text(max_size=40),
                                            "model": st.text(max_size=5), "timeout": json_values,
                                            "base_url": st.text(max_size=20), "penalty": json_values})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(YAML_BITS), max_size=40).map("".join)))
def test_any_text_builds_or_raises_only_config_error(text):
    config_error(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(json_values, st.fixed_dictionaries({"terms": st.lists(term_docs, max_size=3)},
                                                    optional={"clip": json_values, "normalize": json_values,
                                                              "guards": json_values, "unit": json_values})))
def test_any_document_builds_or_raises_only_config_error(document):
    config_error(document)
    if isinstance(document, (dict, list)):
        config_error(json.dumps(document, allow_nan=True))


def test_timeouts_past_what_a_socket_takes_are_config_errors():
    for timeout in (1e308, math.inf):
        error = config_error({"terms": [{"kind": "llm_judge", "weight": 1, "model": "m", "timeout": timeout}]})
        assert error is not None and "timeout" in error.field
