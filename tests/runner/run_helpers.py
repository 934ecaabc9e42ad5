"""Constants shared by the run tests (their folder is put on sys.path by conftest)."""

EPISODES = 8
"""Episodes the stub model has gold plans for."""
