"""Custom reward terms the tests name in specs (``kind: custom``): scripted raw values."""

from __future__ import annotations


def scripted(task, config):
    """The raw value stored under this term's name in the episode's task dict (None abstains)."""
    return task.get(config.key)


def answer_chars(answer):
    """A content term of our own: the answer's length in characters."""
    return 0.0 if answer is None else float(len(answer))


def not_finite(task):
    return float("nan")


def old_input_names(question, references):
    """A custom term of 0.1, asking for the inputs by their old names."""
    return float(question == "q" and references == ("gold",))
