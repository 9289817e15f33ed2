"""`sessions/conversation` over the real server (stdio, pytest-lsp) on the real-CLI corpora.

The expectations are read from the transcripts themselves (row types, tool ids, toolUseResult
patches, branch children), never from our own output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lspserver import SERVER, open_session
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from server.lsp.server import to_plain
from storage.resume import resume

TESTS = Path(__file__).resolve().parent
CORPORA = TESTS / "corpus"
CONVO = "c0c0c0c0-0000-4000-8000-000000000001"
CONVO_DIR = "-tmp-slsp-convo-work"
SHOP = "-Users-me-shop"
AGENT_SESSION = "22222222-2222-4222-8222-222222222222"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """The convo corpus and the shared corpus in one projects folder."""
    dest = tmp_path / "projects"
    shutil.copytree(CORPORA / "convo" / "projects", dest)
    shutil.copytree(CORPORA / "claude-code-2.1.328" / "projects", dest, dirs_exist_ok=True)
    return dest


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, projects: Path):  # type: ignore[no-untyped-def]
    await open_session(lsp_client, projects)
    yield
    await lsp_client.shutdown_session()


async def conversation(client: LanguageClient, **params: Any) -> dict[str, Any]:
    return to_plain(await client.protocol.send_request_async("sessions/conversation", params))  # type: ignore[no-any-return]


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def blocks(row: dict[str, Any]) -> list[dict[str, Any]]:
    content = (row.get("message") or {}).get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


@pytest.mark.asyncio
async def test_items_pairing_diffs_and_hidden(client: LanguageClient, projects: Path) -> None:
    path = projects / CONVO_DIR / f"{CONVO}.jsonl"
    file_rows = rows(path)
    out = await conversation(client, sessionId=CONVO)
    items = out["items"]
    chain = resume(path).chain
    on_chain = {r.uuid: r.line for r in chain.rows}
    assert out["leafUuid"] == chain.leaf.uuid and out["hasMore"] is False

    # every tool call of the chain is one tool item, paired with the row holding its result
    calls = [(r, b) for r in file_rows if r.get("uuid") in on_chain for b in blocks(r) if b.get("type") == "tool_use"]
    tools = [i for i in items if i["kind"] == "tool"]
    assert [t["toolUseId"] for t in tools] == [b["id"] for _r, b in calls]
    assert [t["name"] for t in tools] == ["Read", "Edit", "Write"]
    for tool in tools:
        holder = next(
            (i, r)
            for i, r in enumerate(file_rows)
            if any(b.get("tool_use_id") == tool["toolUseId"] for b in blocks(r) if b.get("type") == "tool_result")
        )
        assert tool["result"]["line"] == holder[0] and tool["result"]["uuid"] == holder[1]["uuid"]
    assert tools[0]["result"]["text"].startswith("1\tone\n2\ttwo")

    # edits carry the patch the CLI recorded in toolUseResult.structuredPatch
    edit_row = next(r for r in file_rows if (r.get("toolUseResult") or {}).get("oldString") == "two")
    assert tools[1]["diff"]["hunks"][0]["lines"] == edit_row["toolUseResult"]["structuredPatch"][0]["lines"]
    assert tools[1]["diff"]["hunks"][0]["lines"] == [" one", "-two", "+TWO", "+three", " four"]
    assert tools[2]["diff"]["created"] is True
    assert tools[2]["diff"]["hunks"][0]["lines"] == ["+hello", "+world"]
    assert "diff" not in tools[0]

    # attachments and the effort carrier are hidden; what a person typed and read is not
    attachments = [r for r in file_rows if r.get("type") == "attachment" and r["uuid"] in on_chain]
    hidden = [i for i in items if i["hidden"]]
    assert sorted(i["uuid"] for i in hidden if i["kind"] == "attachment") == sorted(r["uuid"] for r in attachments)
    # the system-role attachments before the first reply make a system message, which carries the
    # request's effort: no separate (empty) carrier here
    assert [i["kind"] for i in hidden if i["kind"] != "attachment"] == []
    shown = [i for i in items if not i["hidden"]]
    assert [i["text"] for i in shown if i["kind"] == "user"] == [
        "READ notes.txt",
        "EDIT /tmp/slsp-convo/work/notes.txt",
        "WRITE /tmp/slsp-convo/work/hello.txt",
        "Another way, please.",
        "And one more prompt.",
    ]
    for item in items:
        assert file_rows[item["line"]]["uuid"] == item["uuid"]
    assert len({i["id"] for i in items}) == len(items)
    replies = [i for i in shown if i["kind"] == "assistant"]
    assert all(i["model"] == "claude-opus-5-5" and i["usage"]["output"] > 0 for i in replies)
    last = file_rows[replies[-1]["line"]]
    assert replies[-1]["usage"]["input"] == last["message"]["usage"]["input_tokens"]


@pytest.mark.asyncio
async def test_branch_point_and_switching(client: LanguageClient, projects: Path) -> None:
    path = projects / CONVO_DIR / f"{CONVO}.jsonl"
    file_rows = rows(path)
    children: dict[str, list[dict[str, Any]]] = {}
    for r in file_rows:
        if r.get("parentUuid") and r.get("type") == "user" and not r.get("isMeta"):
            children.setdefault(r["parentUuid"], []).append(r)
    point, kids = next((p, k) for p, k in children.items() if len(k) > 1)  # the rewind
    out = await conversation(client, sessionId=CONVO)
    branch = next(i for i in out["items"] if i["kind"] == "branch")
    assert branch["uuid"] == point
    assert [b["firstUuid"] for b in branch["branches"]] == [k["uuid"] for k in kids]
    assert [b["current"] for b in branch["branches"]] == [False, True]
    assert [b["preview"] for b in branch["branches"]] == [blocks(k)[0]["text"] for k in kids]
    other = branch["branches"][0]

    switched = await conversation(client, sessionId=CONVO, leafUuid=other["leafUuid"])
    assert switched["leafUuid"] == other["leafUuid"]
    again = next(i for i in switched["items"] if i["kind"] == "branch")
    assert [b["current"] for b in again["branches"]] == [True, False]
    shown = [i for i in switched["items"] if not i["hidden"]]
    thinking = next(i for i in shown if i["kind"] == "thinking")
    think_row = file_rows[thinking["line"]]
    assert thinking["text"] == think_row["message"]["content"][0]["thinking"]
    image_prompt = next(i for i in shown if i["kind"] == "user" and i["images"])
    image_block = next(b for b in blocks(file_rows[image_prompt["line"]]) if b["type"] == "image")
    assert image_prompt["images"][0]["data"] == image_block["source"]["data"]
    assert image_prompt["text"] == "What colour is this square?"
    meta = [i for i in switched["items"] if i["uuid"] and file_rows[i["line"]].get("isMeta")]
    assert meta and all(i["hidden"] for i in meta)
    assert shown[-1]["uuid"] == other["leafUuid"]


@pytest.mark.asyncio
async def test_paging_newest_last(client: LanguageClient) -> None:
    full = (await conversation(client, sessionId=CONVO))["items"]
    pages: list[list[dict[str, Any]]] = []
    before = None
    while True:
        params: dict[str, Any] = {"sessionId": CONVO, "limit": 4}
        if before:
            params["before"] = before
        out = await conversation(client, **params)
        assert 1 <= len(out["items"]) <= 4
        pages.append(out["items"])
        if not out["hasMore"]:
            break
        before = out["items"][0]["id"]
    assert len(pages) == -(-len(full) // 4)
    assert [i for p in reversed(pages) for i in p] == full
    assert pages[0] == full[-4:]


@pytest.mark.asyncio
async def test_opening_at_a_row_reaches_back_to_its_item(client: LanguageClient, projects: Path) -> None:
    path = projects / CONVO_DIR / f"{CONVO}.jsonl"
    file_rows = rows(path)
    full = (await conversation(client, sessionId=CONVO))["items"]
    prompt = next(i for i in full if i["kind"] == "user" and i.get("text", "").startswith("EDIT "))
    at = full.index(prompt)
    assert 6 < at < len(full) - 3  # neither on a 3-item page at the end nor among the first items
    # by uuid: the page of 3 grows back to the prompt, with 6 items before it
    out = await conversation(client, sessionId=CONVO, limit=3, atUuid=prompt["uuid"])
    assert out["atId"] == prompt["id"] and out["atBranch"] is False
    ids = [i["id"] for i in out["items"]]
    assert ids == [i["id"] for i in full[at - 6 :]]
    assert out["hasMore"] is True
    # the page before it goes on where it starts
    earlier = await conversation(client, sessionId=CONVO, limit=500, before=ids[0])
    assert [i["id"] for i in earlier["items"]] == [i["id"] for i in full[: at - 6]]
    # by line: the same item
    by_line = await conversation(client, sessionId=CONVO, limit=3, atLine=prompt["line"])
    assert by_line["atId"] == prompt["id"]
    # a row that holds a tool result shows inside its call's item
    read = next(i for i in full if i["kind"] == "tool" and i["name"] == "Read")
    assert file_rows[read["result"]["line"]]["uuid"] == read["result"]["uuid"]
    res = await conversation(client, sessionId=CONVO, limit=1, atLine=read["result"]["line"])
    assert res["atId"] == read["id"] and read["id"] in [i["id"] for i in res["items"]]
    # a row at the end: the last page with 6 items of context before it
    last = await conversation(client, sessionId=CONVO, limit=3, atUuid=full[-1]["uuid"])
    assert [i["id"] for i in last["items"]] == [i["id"] for i in full[-7:]] and last["atId"] == full[-1]["id"]


@pytest.mark.asyncio
async def test_opening_at_a_row_of_another_branch_shows_that_branch(client: LanguageClient, projects: Path) -> None:
    path = projects / CONVO_DIR / f"{CONVO}.jsonl"
    file_rows = rows(path)
    default = await conversation(client, sessionId=CONVO)
    shown = {i["uuid"] for i in default["items"]}
    square = next(
        (n, r)
        for n, r in enumerate(file_rows)
        if r.get("type") == "user" and "What colour is this square?" in json.dumps(r["message"]["content"])
    )
    assert square[1]["uuid"] not in shown  # on the rewound branch
    out = await conversation(client, sessionId=CONVO, atLine=square[0])
    assert out["atBranch"] is True and out["leafUuid"] != default["leafUuid"]
    item = next(i for i in out["items"] if i["id"] == out["atId"])
    assert item["uuid"] == square[1]["uuid"] and item["text"] == "What colour is this square?"
    # the branch named by the answer pages on as any branch
    again = await conversation(client, sessionId=CONVO, leafUuid=out["leafUuid"])
    assert [i["id"] for i in again["items"]] == [i["id"] for i in out["items"]]


@pytest.mark.asyncio
async def test_compaction_subagent_and_api_form(client: LanguageClient, projects: Path) -> None:
    out = await conversation(client, sessionId=AGENT_SESSION, apiForm=True)
    items = out["items"]
    kinds = [i["kind"] for i in items if not i["hidden"]]
    at = kinds.index("compaction")
    assert kinds[at + 1] == "summary"
    compaction = [i for i in items if i["kind"] == "compaction"][0]
    assert {i["segment"] for i in items} == {0, 1} and compaction["segment"] == 1
    assert all(i["segment"] == 0 for i in items[: items.index(compaction)])
    agent = next(i for i in items if i["kind"] == "tool" and i["name"] == "Agent")
    sub = agent["subagent"]
    assert Path(sub["path"]).name == f"agent-{sub['agentId']}.jsonl" and Path(sub["path"]).is_file()
    chain = to_plain(await client.protocol.send_request_async("sessions/chain", {"sessionId": AGENT_SESSION}))
    assert out["messages"] == chain["messages"]  # type: ignore[index]

    inner = await conversation(client, path=sub["path"])
    first = next(i for i in inner["items"] if i["kind"] == "user" and not i["hidden"])
    assert first["text"] == agent["input"]["prompt"]
    assert [i["name"] for i in inner["items"] if i["kind"] == "tool"] == ["Read"]


@pytest.mark.asyncio
async def test_bad_parameters(client: LanguageClient) -> None:
    for params in (
        {"sessionId": CONVO, "leafUuid": "00000000-0000-4000-8000-000000000000"},
        {"sessionId": CONVO, "before": "nope"},
        {"sessionId": CONVO, "limit": 0},
        {"sessionId": CONVO, "limit": "10"},
        {"sessionId": CONVO, "atUuid": "00000000-0000-4000-8000-000000000000"},
        {"sessionId": CONVO, "atLine": -1},
        {"sessionId": CONVO, "atLine": 100000},
        {"sessionId": CONVO, "atLine": "3"},
        {"sessionId": CONVO, "atLine": 3, "before": "x"},
        {"sessionId": "not-a-session"},
        {},
    ):
        with pytest.raises(JsonRpcInvalidParams):
            await conversation(client, **params)
    assert (await conversation(client, sessionId=CONVO, limit=1))["items"]


@pytest.mark.parametrize("corpus", ["claude-code-2.1.328", "generated", "extra", "convo"])
def test_every_call_on_every_chain_is_paired(corpus: str) -> None:
    """Over every session file of the real corpora: one tool item per tool call on the shown rows,
    each with the result the file holds for it (or none when the file has none)."""
    from server.features.conversation import conversation as build

    files = sorted((CORPORA / corpus / "projects").rglob("*.jsonl"))
    assert files
    efforts = 0
    for path in files:
        out = build(path, limit=5000)
        file_rows = rows(path)
        by_uuid = {r["uuid"]: r for r in file_rows if r.get("uuid")}
        results = {b["tool_use_id"]: r["uuid"] for r in file_rows for b in blocks(r) if b.get("type") == "tool_result"}
        calls = [
            b["id"]
            for u in dict.fromkeys(i["uuid"] for i in out["items"])
            for b in blocks(by_uuid[u])
            if by_uuid[u].get("type") == "assistant" and b.get("type") == "tool_use"
        ]
        tools = [i for i in out["items"] if i["kind"] == "tool" and i["name"] != "(call not on the chain)"]
        assert [t["toolUseId"] for t in tools] == calls, path
        for t in tools:
            if t["result"] is not None:
                assert t["result"]["uuid"] == results[t["toolUseId"]], path
        unanswered = [t["toolUseId"] for t in tools if t["result"] is None]
        assert unanswered == [c for c in calls if c not in results], path
        assert all(i["hidden"] for i in out["items"] if i["kind"] in ("attachment", "reminder", "effort"))
        # the effort carrier is an item exactly when the API form resume sends has one
        api = build(path, limit=1, api_form=True)["messages"]
        carriers = [m for m in api if m["role"] == "system" and not m["content"]]
        assert len([i for i in out["items"] if i["kind"] == "effort"]) == len(carriers), path
        efforts += len(carriers)
    if corpus in ("extra", "generated"):  # sessions run with --bare: no reminders, so a separate carrier
        assert efforts > 0


def _per_stretch(path: Path) -> list[str]:
    """The history before the resumed chain the slow way: build_chain from each compaction's
    logical parent, one stretch at a time (each with its own recovery pass)."""
    from storage.chain import build_chain
    from storage.transcript import Transcript

    t = Transcript.load(path)
    chain = build_chain(t)
    out: list[list[str]] = []
    met: set[str] = set()
    while chain.boundary is not None and chain.boundary.logical_parent in t.nodes:
        met.add(chain.boundary.uuid or "")
        chain = build_chain(t, chain.boundary.logical_parent)
        if chain.boundary is not None and chain.boundary.uuid in met:
            break
        out.append([r.uuid for r in chain.rows])
    return [u for stretch in reversed(out) for u in stretch]


def test_history_before_compactions_matches_stretch_by_stretch(tmp_path: Path) -> None:
    """One recovery pass over all earlier stretches finds the rows one pass per stretch finds: on
    the real corpora and on a generated folder with many compactions and parallel calls."""
    from bench.make_projects import make_projects
    from server.features.conversation import earlier_rows
    from storage.chain import build_chain
    from storage.transcript import Transcript

    files = sorted(CORPORA.glob("*/projects/*/*.jsonl")) + sorted(make_projects(tmp_path, 4, 7).glob("*/*.jsonl"))
    compacted = 0
    for path in files:
        t = Transcript.load(path)
        got = [r.uuid for r in earlier_rows(t, build_chain(t))]
        want = _per_stretch(path)
        assert got == want, path
        compacted += bool(want)
    assert compacted >= 5
