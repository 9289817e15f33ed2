"""Permission prompts for editor turns: the server asks the editor (`sessions/permission`) before a
tool the turn was not allowed up front runs; allow once, allow for the session, deny, no answer.

The real server over stdio runs turns with the scripted test model (`BASH <command>`, `WRITE <path>
<text>`); the test client answers the server's requests as an editor would. A denial is recorded as
the CLI records a "No", and the real CLI's resume of the file is checked by our reader (the same
reader the oracle tests hold to the real CLI).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from server.lsp.server import to_plain
from storage.recorder import INTERRUPTED_FOR_TOOL_USE, REJECTED_TOOL_USE
from storage.resume import resume

S1 = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    cwd = tmp_path / "work"
    cwd.mkdir()
    return {"projects": projects, "cwd": cwd}


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "server.cli", "serve", "--stdio"]),
)
async def client(lsp_client: LanguageClient, work: dict[str, Path]):  # type: ignore[no-untyped-def]
    lsp_client.asked = []  # type: ignore[attr-defined]
    lsp_client.answers = []  # type: ignore[attr-defined]

    @lsp_client.feature("sessions/permission")
    async def permission(ls: LanguageClient, params: Any) -> Any:
        ls.asked.append(to_plain(params))  # type: ignore[attr-defined]
        answer = ls.answers.pop(0) if ls.answers else None  # type: ignore[attr-defined]
        if answer == "silence":
            await asyncio.sleep(4)  # answers only after the turn was cancelled: too late
            answer = "allow"
        return {"decision": answer}

    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"projectsDir": str(work["projects"]), "watch": False},
        )
    )
    yield
    await lsp_client.shutdown_session()


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def turn(client: LanguageClient, work: dict[str, Path], prompt: str, **extra: Any) -> dict[str, Any]:
    params = {
        "prompt": prompt,
        "provider": "anthropic",
        "cwd": str(work["cwd"]),
        "mode": "new",
        "askPermission": True,
        **extra,
    }
    return to_plain(await client.protocol.send_request_async("sessions/runTurn", params))


async def test_allow_once_runs_the_command_and_asks_again(client: LanguageClient, work: dict[str, Path]) -> None:
    client.answers[:] = ["allow", "allow"]  # type: ignore[attr-defined]
    out = await turn(client, work, "BASH echo hi > made.txt")
    assert (work["cwd"] / "made.txt").read_text() == "hi\n"
    asked = client.asked[0]  # type: ignore[attr-defined]
    assert (
        asked["tool"] == "Bash" and asked["preview"] == "echo hi > made.txt" and asked["sessionId"] == out["sessionId"]
    )
    again = await turn(client, work, "BASH echo again > made.txt", sessionId=out["sessionId"], mode="resume")
    assert len(client.asked) == 2 and again["stopReason"] == "end_turn"  # type: ignore[attr-defined]


async def test_allow_for_the_session_asks_once(client: LanguageClient, work: dict[str, Path]) -> None:
    client.answers[:] = ["allowSession"]  # type: ignore[attr-defined]
    out = await turn(client, work, "WRITE notes.md first")
    await turn(client, work, "WRITE notes.md second", sessionId=out["sessionId"], mode="resume")
    assert [a["tool"] for a in client.asked] == ["Write"]  # type: ignore[attr-defined]
    assert "+first" in client.asked[0]["preview"]  # type: ignore[attr-defined]
    assert (work["cwd"] / "notes.md").read_text() == "second"


@pytest.mark.parametrize("answer", ["deny", "nonsense"])
async def test_denial_is_recorded_as_the_cli_records_a_no(
    client: LanguageClient, work: dict[str, Path], answer: str
) -> None:
    client.answers[:] = [answer]  # type: ignore[attr-defined]
    out = await turn(client, work, "BASH touch should-not-exist")
    assert not (work["cwd"] / "should-not-exist").exists()
    assert out["stopReason"] == "denied"
    path = Path(out["path"])
    written = [r for r in rows(path) if r.get("type") in ("user", "assistant")]
    result = written[-2]["message"]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] and result["content"] == REJECTED_TOOL_USE
    assert written[-2]["toolUseResult"] == "User rejected tool use"
    assert written[-1]["message"]["content"][0]["text"] == INTERRUPTED_FOR_TOOL_USE
    # what a resume sends: the rejected call is answered, the interruption closes the turn
    messages = resume(path).messages
    assert messages[-2]["content"][0]["content"] == REJECTED_TOOL_USE


async def test_a_cancel_while_asked_records_the_interruption(client: LanguageClient, work: dict[str, Path]) -> None:
    client.answers[:] = ["silence"]  # type: ignore[attr-defined]
    params = {
        "prompt": "BASH touch never",
        "provider": "anthropic",
        "cwd": str(work["cwd"]),
        "mode": "new",
        "askPermission": True,
    }
    fut = asyncio.ensure_future(client.protocol.send_request_async("sessions/runTurn", params, msg_id="asking"))
    for _ in range(200):
        if client.asked:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.05)
    assert client.asked  # type: ignore[attr-defined]
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="asking"))
    with pytest.raises(JsonRpcException):  # answered as cancelled
        await asyncio.wait_for(fut, 30)
    await asyncio.sleep(5)  # the late "allow" has come and gone
    assert not (work["cwd"] / "never").exists()
    path = Path(client.asked[0]["cwd"])  # type: ignore[attr-defined]
    listed = to_plain(await client.protocol.send_request_async("sessions/list", {"cwd": str(path)}))
    texts = [
        b.get("text")
        for r in rows(Path(listed["sessions"][0]["path"]))
        if r.get("type") == "user"
        for b in (r["message"]["content"] if isinstance(r["message"]["content"], list) else [])
    ]
    assert INTERRUPTED_FOR_TOOL_USE in texts


async def test_allowed_up_front_is_not_asked(client: LanguageClient, work: dict[str, Path]) -> None:
    out = await turn(client, work, "BASH echo ok > up-front.txt", tools=["Bash"])
    assert client.asked == [] and (work["cwd"] / "up-front.txt").exists()  # type: ignore[attr-defined]
    assert out["stopReason"] == "end_turn"


async def test_the_prompt_shows_what_a_command_hides(client: LanguageClient, work: dict[str, Path]) -> None:
    """A command that would read as another in a dialog (a right-to-left override, a run of spaces pushing the
    rest away, more than the dialog shows) is previewed with all of that written out."""
    client.answers[:] = ["deny"]  # type: ignore[attr-defined]
    command = "echo safe" + " " * 40 + "\u202e; touch pwned\u200b #" + "x" * 4000
    await turn(client, work, f"BASH {command}")
    shown = client.asked[0]["preview"]  # type: ignore[attr-defined]
    assert shown.startswith(f"[{len(command) - 40 + len('⟨40 blanks⟩') + 14:,} characters; the first 3,000 are shown")
    assert "echo safe⟨40 blanks⟩⟨U+202E⟩; touch pwned⟨U+200B⟩ #" in shown
    assert "\u202e" not in shown and "\u200b" not in shown and len(shown) < 4000  # the editors cut at 4000
    assert not (work["cwd"] / "pwned").exists()


async def test_the_prompt_says_an_edit_replaces_every_occurrence(client: LanguageClient, work: dict[str, Path]) -> None:
    """An Edit with `replace_all` changes every occurrence of its text; its prompt showed one `-a`/`+b` pair, as a
    change of one place would read (here it would have rewritten every `a` of the file)."""
    client.answers[:] = ["deny"]  # type: ignore[attr-defined]
    (work["cwd"] / "notes.txt").write_text("a cat, a hat, a mat\n")
    await turn(client, work, "EDITALL notes.txt a b")
    shown = client.asked[0]["preview"]  # type: ignore[attr-defined]
    assert shown == "edit notes.txt, every occurrence:\n-a\n+b\n"
    assert (work["cwd"] / "notes.txt").read_text() == "a cat, a hat, a mat\n"


async def test_the_prompt_counts_the_blank_lines_a_command_holds(client: LanguageClient, work: dict[str, Path]) -> None:
    """Blank lines push the rest of a command below what the dialog shows at first (VS Code's scrolls, Neovim's
    pages), so a harmless first line could be all one reads: a run of them is shown as its count."""
    client.answers[:] = ["deny"]  # type: ignore[attr-defined]
    await turn(client, work, "BASH echo safe" + "\n" * 42 + "  \t\n" * 19 + "touch pwned\n\nls")
    shown = client.asked[0]["preview"]  # type: ignore[attr-defined]
    assert shown == "echo safe\n⟨60 blank lines⟩\ntouch pwned\n\nls"  # one or two blank lines are shown as they are
    assert not (work["cwd"] / "pwned").exists()
