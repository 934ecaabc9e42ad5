"""`.ci/run`: the suite against the shared data, then once more on a writable copy of it, exiting
with pytest's status.

`make` and `.venv/bin/python` are stand-ins here (shell scripts that record how they were called):
the real ones would build a virtualenv from PyPI and run this suite inside itself.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Records the data folder it was given, how many of its entries lack the owner's write bit (the mode
# bits, since root may write anyway), and exits with the next scripted status.
_FAKE_PYTHON = """#!/usr/bin/env bash
n=$(cat "$LOG_DIR/count" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$LOG_DIR/count"
ro=$(find "$AGENTGYM_SHARED_DATA" ! -perm -u=w | wc -l | tr -d ' ')
listing=$(ls "$AGENTGYM_SHARED_DATA/travelplanner")
echo "$* | $AGENTGYM_SHARED_DATA | read-only entries=$ro | $listing" >> "$LOG_DIR/calls"
exit $(echo $STATUSES | cut -d' ' -f$n)
"""


def _ci(tmp_path: Path, statuses: str) -> tuple[int, list[str], Path]:
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    repo, data, logs, bin_dir = tmp_path / "repo", tmp_path / "shared" / "data", tmp_path / "logs", tmp_path / "bin"
    venvs = [repo / name / "bin" for name in (".venv", ".venv-verifiers", ".venv-openenv")]
    for folder in (repo / ".ci", *venvs, data / "travelplanner" / "database", logs, bin_dir):
        folder.mkdir(parents=True)
    (data / "travelplanner" / "database" / "x.csv").write_text("a\n")
    for path in [*data.rglob("*"), data]:  # the shared data as CI has it: no write bits
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    shutil.copy(REPO / ".ci" / "run", repo / ".ci" / "run")
    for path, text in ((repo / ".venv" / "bin" / "python", _FAKE_PYTHON),
                       (repo / ".venv-verifiers" / "bin" / "python", _FAKE_PYTHON),
                       (repo / ".venv-openenv" / "bin" / "python", _FAKE_PYTHON),
                       (bin_dir / "make", '#!/usr/bin/env bash\necho "make $*" >> "$LOG_DIR/calls"\n')):
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "LOG_DIR": str(logs),
           "STATUSES": statuses}
    env.pop("AGENTGYM_SHARED_DATA", None)  # the default: ../shared/data next to the clone
    out = subprocess.run(["bash", str(repo / ".ci" / "run")], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    for path in [data, *data.rglob("*")]:  # let pytest clean up
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return out.returncode, (logs / "calls").read_text().splitlines(), data


def test_ci_runs_the_suite_on_the_shared_data_then_on_a_writable_copy(tmp_path):
    status, calls, data = _ci(tmp_path, "0 0 0 0")
    assert status == 0
    assert calls[:2] == ["make demo", "make install-test"]  # the README's demo, then the suite's extras
    first, second = calls[2].split(" | "), calls[3].split(" | ")
    assert first[0] == "-m pytest" and Path(first[1]) == data and first[2] == "read-only entries=4"
    assert second[0].startswith("-m pytest") and Path(second[1]) != data and second[2] == "read-only entries=0"
    assert second[0].endswith("-m not learning")  # the learning tests read no shared data: once is enough
    assert second[3] == "database"  # a full copy of the data
    assert not Path(second[1]).exists()  # and cleaned up
    assert calls[4] == "make install-verifiers"  # the verifiers adapter's own venv (its mcp pin)...
    assert calls[5].split(" | ")[0] == "-m pytest -p no:cacheprovider tests/integrations/test_verifiers.py"
    assert calls[6] == "make install-openenv"  # the OpenEnv door on openenv 0.10 (its fastmcp<4, so mcp<2)...
    assert calls[7].split(" | ")[0] == "-m pytest -p no:cacheprovider tests/server/test_openenv.py"


@pytest.mark.parametrize("statuses, expected", [("1 0 0 0", 1), ("0 5 0 0", 5), ("2 1 0 0", 2), ("0 0 3 0", 3),
                                                ("0 0 0 4", 4), ("0 0 3 4", 3)])
def test_ci_exits_with_pytests_status(tmp_path, statuses, expected):
    status, calls, _ = _ci(tmp_path, statuses)
    assert status == expected and len(calls) == 8  # the later runs happen even after a failure
