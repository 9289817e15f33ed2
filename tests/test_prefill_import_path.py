"""The first index's child (`server.index.prefill`) imports what the server imports, however it was given its
packages: here, as an installation by `PYTHONPATH` alone (a system Python run as `nobody`, this checkout and the
virtual environment's packages on `PYTHONPATH`). The child runs with `-I`, which leaves `PYTHONPATH` out: it took
only our own package's folder, could not import pygls, msgspec or orjson, and every cold start of such a server
indexed the folder a second time on its own."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from nobody import LIVENESS, cli_command, cli_env, give, shared_dir

SID = "11111111-1111-4111-8111-111111111111"

START = """
import sys
from pathlib import Path
from server.index import prefill
run = prefill.start(Path(sys.argv[1]))
assert run is not None, "no first index started"
run.stored.wait(60)
run.reported.wait(60)
print(run.done, run.report is not None)
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    yield from shared_dir()


def test_the_first_index_child_imports_as_the_server(shared: Path) -> None:
    home = shared / "home"
    projects = home / ".claude" / "projects"
    (projects / "-w").mkdir(parents=True)
    row = {"type": "user", "uuid": "a", "parentUuid": None, "sessionId": SID, "message": {"content": "hi"}}
    (projects / "-w" / f"{SID}.jsonl").write_text(json.dumps(row) + "\n")
    give(home)
    python = cli_command()[:-2]  # setpriv ... python
    env = {**cli_env(home), "XDG_CACHE_HOME": str(home / ".cache")}
    run = subprocess.run(
        [*python, "-c", START, str(projects)], env=env, cwd="/", capture_output=True, text=True, timeout=LIVENESS
    )
    assert run.returncode == 0, run.stderr
    assert "before the server loaded failed" not in run.stderr, run.stderr
    assert run.stdout.split() == ["(1,", "1)", "True"], (run.stdout, run.stderr)  # its file read, its report given
