"""A few damaged copies resumed by the real CLI 2.1.328 now, not from the record: what it sends before the
new prompt is our API form, and is what tests/corpus/mutations recorded (the record still holds)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS
from oracle import exact_differences
from realcli import find_claude
from scripted_api import ScriptedModelServer
from test_mutations_oracle import CASES, REQUESTS, rebuild

from storage.resume import resume

LIVE = [
    "55555555/parent-number",  # a number as parentUuid: the walk goes on by the 5 s fallback
    "10000001/duplicate-row",  # a row copied to the end of a file without last-prompt: the leaf
    "e1111111/cut-multibyte-middle",  # the compact summary cut mid-character: rows before the boundary gone
    "55555555/type-number",  # a reply whose type is a number: the walk stops above it
    "e4444444/duplicate-row",  # a killed session whose first attachment is copied to its end: the leaf
]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "make_mutations", TESTS / "corpus" / "mutations" / "make_mutations.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def model() -> Any:
    if find_claude() is None:
        pytest.skip("REAL CLI NOT AVAILABLE: run scripts/setup.d/claude-cli.sh")
    with ScriptedModelServer(seed="mutations-live") as m:
        yield m


@pytest.mark.parametrize("key", LIVE)
def test_the_cli_sends_our_reading_of_the_damaged_copy(model: Any, key: str, tmp_path: Path) -> None:
    recorded = CASES[key]
    log: list[str] = []
    live = _generator().run_case(model, recorded["source"], recorded["mutation"], log, base=tmp_path / "cli")
    assert live is not None and live["sha256"] == recorded["sha256"], log
    assert live["exitCode"] == 0 and live["sent"] is not None, log
    ours = resume(rebuild(recorded, tmp_path / "ours"), bare=recorded["bare"], effort_statement=True).messages
    assert exact_differences(ours, live["sent"]) == []
    assert live["sent"] == REQUESTS[recorded["request"]]
