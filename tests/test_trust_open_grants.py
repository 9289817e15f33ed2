"""An "allow for the session" answer holds for what the person approved: that session's file, in that folder.

A grant was kept by session id alone. A `sessions/runTurn` may resume the session with another `cwd` (the client
gives it), and a session of the same id may be a file of another project folder: a Bash grant given while the
session ran in one folder then ran commands, without asking, in another folder (an untrusted checkout), and in
another file of the same id. The real server over stdio runs turns with the scripted test model (`BASH <command>`);
the test client answers the server's `sessions/permission` as an editor would. Before, the second turn below ran
`touch pwned` in the other folder and asked nothing.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from conftest import CORPUS
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from server.lsp.server import to_plain
from storage.paths import project_folder_name


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    projects = tmp_path / "projects"
    shutil.copytree(CORPUS / "projects", projects)
    for name in ("app", "checkout"):
        (tmp_path / name).mkdir()
    return {"projects": projects, "app": tmp_path / "app", "checkout": tmp_path / "checkout"}


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "server.cli", "serve", "--stdio"]),
)
async def client(lsp_client: LanguageClient, work: dict[str, Path]):  # type: ignore[no-untyped-def]
    lsp_client.asked = []  # type: ignore[attr-defined]
    lsp_client.answers = []  # type: ignore[attr-defined]

    @lsp_client.feature("sessions/permission")
    async def permission(ls: LanguageClient, params: Any) -> Any:
        ls.asked.append(to_plain(params))  # type: ignore[attr-defined]
        return {"decision": ls.answers.pop(0) if ls.answers else "deny"}  # type: ignore[attr-defined]

    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"projectsDir": str(work["projects"]), "watch": False},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def turn(client: LanguageClient, cwd: Path, prompt: str, **extra: Any) -> dict[str, Any]:
    params = {"prompt": prompt, "provider": "anthropic", "cwd": str(cwd), "mode": "new", "askPermission": True}
    reply = await client.protocol.send_request_async("sessions/runTurn", {**params, **extra})
    return to_plain(reply)  # type: ignore[no-any-return]


def asked(client: LanguageClient) -> list[str]:
    return [a["cwd"] for a in client.asked]  # type: ignore[attr-defined]


async def test_a_grant_in_one_folder_does_not_hold_in_another(client: LanguageClient, work: dict[str, Path]) -> None:
    app, checkout = work["app"], work["checkout"]
    client.answers[:] = ["allowSession"]  # type: ignore[attr-defined]
    first = await turn(client, app, "BASH echo ok > granted.txt")
    assert (app / "granted.txt").read_text() == "ok\n" and asked(client) == [str(app)]
    sid = first["sessionId"]
    # the same session, resumed by id with the checkout as its cwd: the grant was for the app folder
    other = await turn(client, checkout, "BASH touch pwned", sessionId=sid, mode="resume")
    assert not (checkout / "pwned").exists()  # before: made, nothing asked
    assert asked(client) == [str(app), str(checkout)] and other["stopReason"] == "denied"
    # in the folder it was given for, it still holds
    again = await turn(client, app, "BASH echo again > granted.txt", sessionId=sid, mode="resume")
    assert again["stopReason"] == "end_turn" and (app / "granted.txt").read_text() == "again\n"
    assert len(asked(client)) == 2


async def test_a_grant_for_one_file_does_not_hold_for_another_of_its_id(
    client: LanguageClient, work: dict[str, Path]
) -> None:
    app = work["app"]
    client.answers[:] = ["allowSession"]  # type: ignore[attr-defined]
    first = await turn(client, app, "BASH echo ok > granted.txt")
    granted = Path(first["path"])
    # a file of the same id in another project folder (copied, synced, planted), resumed by its path in the same cwd
    elsewhere = work["projects"] / project_folder_name("/srv/elsewhere") / granted.name
    elsewhere.parent.mkdir()
    shutil.copy(granted, elsewhere)
    other = await turn(client, app, "BASH touch pwned", sessionId=str(elsewhere), mode="resume")
    assert Path(other["path"]) == elsewhere
    assert not (app / "pwned").exists() and len(asked(client)) == 2  # before: made, nothing asked
    again = await turn(client, app, "BASH echo again > granted.txt", sessionId=str(granted), mode="resume")
    assert again["stopReason"] == "end_turn" and len(asked(client)) == 2
