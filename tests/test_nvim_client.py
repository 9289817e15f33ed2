"""The Neovim client (editor-client/nvim) in a real headless Neovim against the real server.

One Neovim run (module fixture) drives the plugin through editor-client/nvim/test/headless.lua
against a temp copy of the shared corpus plus a damaged transcript, and records what it sees in
a JSON file; the tests below judge those observations. Debian's Neovim is 0.7.2 (bookworm):
install it with scripts/setup.d/nvim.sh. Skips only when `nvim` is absent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS
from scripted_api import SCRIPTED_KEY, SCRIPTED_MODEL, ScriptedModelServer

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "editor-client" / "nvim"
TEST_INIT = PLUGIN / "test" / "init.lua"
SHOP = "-Users-me-shop"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
KILLED = "e4444444-4444-4444-8444-444444444444"
"""A session whose turn was killed after its `last-prompt`: resume starts below the leaf that row names."""
KILLED_SOURCE = REPO / "tests" / "corpus" / "extra" / "killed" / f"{KILLED}.jsonl"
KILLED_DIR = "-tmp-slsp-extra-killed"
DAMAGED = "44444444-4444-4444-8444-444444444444"
CONVO = "c0c0c0c0-0000-4000-8000-000000000001"
CONVO_CORPUS = REPO / "tests" / "corpus" / "convo" / "projects"
CONVO_PROMPT = "Another way, please."
GARBAGE_LINE = 20  # 0-based line of the garbage in the damaged copy
BIG = "b1b1b1b1-0000-4000-8000-000000000001"
BIG_DIR = "-tmp-big-work"
BIG_PAIRS = 300  # prompts, each with a reply: 600 messages, three pages of 200 and one more
BIG_MARKED = 40  # the prompt that holds the word searched for
BIG_WORD = "marmalade"
TIMEOUT_MS = 60_000
RUN_TIMEOUT_S = 600

# SESSION_LSP_NVIM picks another Neovim (a newer build, to try the vim.lsp.start path).
NVIM = os.environ.get("SESSION_LSP_NVIM") or shutil.which("nvim")
pytestmark = [
    pytest.mark.editor,
    pytest.mark.slow,
    pytest.mark.skipif(
        NVIM is None, reason="NEOVIM NOT AVAILABLE: install it with scripts/setup.d/nvim.sh (apt-get install neovim)"
    ),
]


def _server_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "session-lsp"
    if exe.exists():
        return [str(exe), "serve", "--stdio"]
    return [sys.executable, "-m", "server.cli", "serve", "--stdio"]


def _rows(path: Path) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        out.append(value if isinstance(value, dict) else None)
    return out


def _make_projects(tmp: Path) -> Path:
    dest = tmp / "projects"
    shutil.copytree(CORPUS / "projects", dest)
    shutil.copytree(CONVO_CORPUS, dest, dirs_exist_ok=True)
    for p in dest.rglob("*"):
        p.chmod(0o700 if p.is_dir() else 0o600)
    lines = (dest / SHOP / f"{S1}.jsonl").read_bytes().split(b"\n")
    lines.insert(GARBAGE_LINE, b'{"type": "user", garbage')
    (dest / SHOP / f"{DAMAGED}.jsonl").write_bytes(b"\n".join(lines))
    _write_big_session(dest)
    (dest / KILLED_DIR).mkdir(mode=0o700)
    shutil.copyfile(KILLED_SOURCE, dest / KILLED_DIR / f"{KILLED}.jsonl")
    return dest


def _write_big_session(projects: Path) -> Path:
    """A session of BIG_PAIRS prompts and replies in the shape the CLI writes them."""
    folder = projects / BIG_DIR
    folder.mkdir(mode=0o700)
    path = folder / f"{BIG}.jsonl"
    rows: list[dict[str, Any]] = []
    parent = None
    for n in range(BIG_PAIRS):
        common = {"isSidechain": False, "sessionId": BIG, "cwd": "/tmp/big/work", "version": "2.1.328"}
        stamp = f"2026-01-02T03:{n // 60:02d}:{n % 60:02d}.000Z"
        prompt = f"paging prompt {n}" + (f" about {BIG_WORD}" if n == BIG_MARKED else "")
        user = {"parentUuid": parent, "type": "user", "uuid": f"b1b1b1b1-0000-4000-8001-{n:012d}", "timestamp": stamp}
        user["message"] = {"role": "user", "content": prompt}
        reply = {"parentUuid": user["uuid"], "type": "assistant", "uuid": f"b1b1b1b1-0000-4000-8002-{n:012d}"}
        reply["timestamp"] = stamp
        reply["message"] = {
            "id": f"msg_{n:08d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",  # a model resumed without the effort carrier: one item per row
            "content": [{"type": "text", "text": f"reply {n}"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }
        rows += [{**user, **common}, {**reply, **common}]
        parent = reply["uuid"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    path.chmod(0o600)
    return path


def _hover_target(path: Path, after: int = 0) -> dict[str, Any]:
    for i, row in enumerate(_rows(path)):
        if i > after and row and row.get("uuid") and row.get("parentUuid") and row.get("type") in ("user", "assistant"):
            return {"path": str(path), "line": i, "uuid": row["uuid"], "type": row["type"], "parent": row["parentUuid"]}
    raise AssertionError(f"no message row after line {after} in {path}")


def _line_holding(path: Path, text: str) -> int:
    """The 0-based line of the user row whose message holds `text`."""
    for i, row in enumerate(_rows(path)):
        if row and row.get("type") == "user" and text in json.dumps(row["message"]["content"]):
            return i
    raise AssertionError(f"no user row holds {text!r} in {path}")


def _definition_target(path: Path) -> dict[str, Any]:
    rows = _rows(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    where = {r["uuid"]: i for i, r in enumerate(rows) if r and r.get("uuid")}
    for i, row in enumerate(rows):
        parent = row and row.get("parentUuid")
        if not parent or parent not in where or where[parent] == i - 1:
            continue  # prefer a parent that is not simply the line above
        col = lines[i].find(f'"{parent}"')
        if col < 0 or not lines[i][:col].isascii():
            continue
        return {"path": str(path), "line": i, "col": col + 10, "parent": parent, "parent_line": where[parent]}
    for i, row in enumerate(rows):
        parent = row and row.get("parentUuid")
        if parent and parent in where:
            col = lines[i].find(f'"{parent}"')
            if col >= 0 and lines[i][:col].isascii():
                return {"path": str(path), "line": i, "col": col + 10, "parent": parent, "parent_line": where[parent]}
    raise AssertionError(f"no row with a local parent in {path}")


@pytest.fixture(scope="module")
def nvim_run(tmp_path_factory: pytest.TempPathFactory, scripted_model: ScriptedModelServer) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("nvim").resolve()
    projects = _make_projects(tmp)
    outside = tmp / "outside" / "notes.jsonl"
    outside.parent.mkdir()
    outside.write_text('{"hello": "world"}\n')
    damaged = projects / SHOP / f"{DAMAGED}.jsonl"
    convo = next(projects.glob(f"*/{CONVO}.jsonl"))
    s1 = projects / SHOP / f"{S1}.jsonl"
    s2 = projects / SHOP / f"{S2}.jsonl"
    expected_ids = sorted(p.stem for p in projects.glob("*/*.jsonl"))
    sys.path.insert(0, str(REPO))
    from storage.resume import resume
    from storage.sessions import list_sessions

    listed = {s.session_id: s for s in list_sessions(projects)}
    killed = listed[KILLED]
    resumed = resume(killed.path).chain.leaf
    assert resumed is not None and killed.leaf_uuid not in (None, resumed.uuid)  # the listing names another row
    leaf = {KILLED: resumed.uuid}
    out = tmp / "results.json"
    config = {
        "out": str(out),
        "cmd": _server_cmd(),
        "projects_dir": str(projects),
        "provider": "anthropic",
        "claude_cmd": ["sh", "-c", 'echo "CLAUDE-RESUME $* IN $(pwd) END"; sleep 5', "claude"],
        "timeout_ms": TIMEOUT_MS,
        "turn_timeout_ms": 120_000,
        "damaged_path": str(damaged),
        "outside_path": str(outside),
        "hover": _hover_target(s1),
        "hover_damaged": _hover_target(damaged, after=GARBAGE_LINE + 2),
        "definition": _definition_target(s2),
        "open_session": KILLED,
        "open_path": str(projects / KILLED_DIR / f"{KILLED}.jsonl"),
        "resume_session": S2,
        "fork": {"path": str(s1)},
        "turn": {"path": str(s2), "prompt": "Say hello from Neovim."},
        "permission": {"path": str(s1), "prompt": "BASH touch should-not-exist", "answer": "deny"},
        "conversation": {"path": str(next(projects.glob(f"*/{CONVO}.jsonl"))), "prompt": CONVO_PROMPT},
        "search": {
            "query_big": BIG_WORD,
            "big_path": str(projects / BIG_DIR / f"{BIG}.jsonl"),
            "big_line": 2 * BIG_MARKED,
            "query_branch": "colour square",
            "branch_path": str(convo),
            "branch_line": _line_holding(convo, "What colour is this square?"),
            "query_hidden": "Image source",
            "hidden_line": next(
                i for i, r in enumerate(_rows(convo)) if r and r.get("type") == "user" and r.get("isMeta")
            ),
        },
        "paging": {"session": BIG},
        "lsp_log_level": "WARN",
    }
    cfg_path = tmp / "config.json"
    cfg_path.write_text(json.dumps(config))
    home = tmp / "home"
    home.mkdir()
    env = {
        **os.environ,
        "SESSION_LSP_TEST_CONFIG": str(cfg_path),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        # the server's `anthropic` provider talks to the scripted test model (this fixture outlives
        # the per-test environment, so it is set here)
        "ANTHROPIC_BASE_URL": scripted_model.base_url,
        "ANTHROPIC_API_KEY": SCRIPTED_KEY,
        "ANTHROPIC_MODEL": SCRIPTED_MODEL,
    }
    cmd = [NVIM, "--headless", "--clean", "-u", str(TEST_INIT)]
    try:
        proc = subprocess.run(
            cmd, cwd=tmp, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
        )
        stderr, rc = proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        stderr, rc = f"TIMEOUT after {RUN_TIMEOUT_S}s\n{exc.stderr or ''}", None
    (tmp / "nvim-stderr.txt").write_text(stderr)
    logs = sorted(home.rglob("*.log"))
    lsp_log = "\n".join(p.read_text(errors="replace")[-4000:] for p in logs)
    results = json.loads(out.read_text()) if out.exists() else {}
    return {
        "results": results,
        "config": config,
        "expected_ids": expected_ids,
        "leaf": leaf,
        "projects": projects,
        "tmp": tmp,
        "rc": rc,
        "diag": f"nvim rc={rc}\n--- nvim stderr ---\n{stderr[-6000:]}\n--- lsp log ---\n{lsp_log[-6000:]}",
    }


def _step(run: dict[str, Any], name: str) -> dict[str, Any]:
    rec = run["results"].get(name)
    assert rec is not None, f"step {name!r} did not run\n{run['diag']}"
    assert rec.get("ok"), f"step {name!r} failed: {rec.get('error')}\n{run['diag']}"
    return rec


def test_neovim_runs_and_quits(nvim_run: dict[str, Any]) -> None:
    assert nvim_run["rc"] == 0, nvim_run["diag"]
    assert nvim_run["results"].get("finished"), nvim_run["diag"]
    v = nvim_run["results"]["nvim"]
    assert (v["major"], v["minor"]) >= (0, 7)


def test_setup_defines_the_commands(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "setup")
    assert rec["commands"] == {"Sessions": True, "SessionResume": True, "SessionFork": True, "SessionTurn": True}
    assert rec["projects_dir"] == str(nvim_run["projects"])


def test_client_attaches_to_transcripts_only(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "attach")
    assert rec["attached"], f"session-lsp never attached and initialized\n{nvim_run['diag']}"
    assert rec["client_name"] == "session-lsp"
    assert rec["root_dir"] == str(nvim_run["projects"])
    assert rec["outside_clients"] == 0, "a .jsonl outside the projects folder got the client"


def test_damaged_transcript_gets_invalid_json(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "diagnostics")
    assert rec["found"], f"no invalid-json diagnostic: {rec['diagnostics']}\n{nvim_run['diag']}"
    bad = [d for d in rec["diagnostics"] if d["code"] == "invalid-json"]
    assert [d["lnum"] for d in bad] == [GARBAGE_LINE], rec["diagnostics"]
    assert bad[0]["severity"] == 1  # vim.diagnostic.severity.ERROR


@pytest.mark.parametrize("step", ["hover", "hover_damaged"])
def test_hover_names_the_row(nvim_run: dict[str, Any], step: str) -> None:
    rec = _step(nvim_run, step)
    target = nvim_run["config"][step]
    md = rec["markdown"]
    assert isinstance(md, str) and md, f"no hover at line {target['line']}\n{nvim_run['diag']}"
    assert target["uuid"] in md, md
    assert target["type"] in md, md
    assert target["parent"] in md, md


def test_definition_of_parent_uuid_goes_to_the_parent(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "definition")
    target = nvim_run["config"]["definition"]
    assert {"path": target["path"], "line": target["parent_line"]} in rec["locations"], rec


def test_sessions_lists_every_session(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "sessions")
    assert rec["listed"], f"the quickfix list never filled\n{nvim_run['diag']}"
    assert rec["title"] == "Claude sessions"
    assert rec["quickfix_window_open"]
    assert sorted(rec["ids"]) == nvim_run["expected_ids"]
    projects = nvim_run["projects"]
    assert sorted(Path(i["path"]).stem for i in rec["items"]) == nvim_run["expected_ids"]
    for item, sid in zip(rec["items"], rec["ids"]):
        assert Path(item["path"]).stem == sid
        assert Path(item["path"]).parent.parent == projects
        assert sid in item["text"] and "messages" in item["text"], item
    named = next(i for i in rec["items"] if Path(i["path"]).stem == "1c99f271-c426-49f7-9ae1-2b8728ab22c4")
    assert named["text"].startswith("named session"), named
    assert rec["whole"], f"the list still shows pending counts: {rec['items']}"  # partial at first: listed again
    assert all(re.search(r" \d+ messages ", i["text"]) for i in rec["items"]), rec["items"]


def test_a_partial_session_shows_its_count_as_pending(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "partial_format")
    assert "… messages" in rec["partial_text"] and "0 messages" not in rec["partial_text"], rec
    assert "nil" not in rec["partial_text"] and "a session still being indexed" in rec["partial_text"], rec
    assert "12 messages" in rec["whole_text"], rec


def test_enter_opens_the_session_at_its_leaf(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "open_at_leaf")
    assert rec["opened"], rec
    assert rec["buffer"] == nvim_run["config"]["open_path"]
    row = json.loads(rec["line_text"])
    assert row["uuid"] == nvim_run["leaf"][KILLED], (rec["cursor_line"], row.get("type"))  # where resume starts


def test_resume_runs_claude_in_a_terminal(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "resume")
    assert rec["ran"], rec
    assert rec["buftype"] == "terminal"
    # the corpus's cwd (/Users/me/shop) does not exist here: the plugin falls back to Neovim's cwd
    assert not Path("/Users/me/shop").exists(), "something made /Users/me/shop on this machine: remove it"
    assert rec["output"].strip() == f"CLAUDE-RESUME --resume {S2} IN {rec['nvim_cwd']}", rec


def test_fork_opens_the_new_transcript(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "fork")
    assert rec["opened"], rec
    new = Path(rec["buffer"])
    assert new.parent == nvim_run["projects"] / SHOP and new.stem not in (S1, S2, DAMAGED)
    assert new.is_file() and rec["line_count"] > 1
    assert any("forked from nvim" in line for line in new.read_text().splitlines()), "the fork lost its title"


def test_turn_streams_the_reply(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "turn")
    assert rec["done"], f"runTurn never answered\n{nvim_run['diag']}"
    err = rec["response"]["err"]
    if isinstance(err, str) and ("-32601" in err or "not found" in err.lower() or "unknown" in err.lower()):
        pytest.skip(f"SERVER HAS NO sessions/runTurn yet: {err}")
    assert err is None, err
    result = rec["response"]["result"]
    assert result["sessionId"] == S2
    assert result["text"], result
    assert any(result["text"].splitlines()[0] in line for line in rec["lines"]), rec["lines"]
    assert rec["progress_reports"] > 0, "no streamed progress"


def test_turn_asks_permission_and_a_denial_is_recorded(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "permission")
    assert rec["done"], f"runTurn never answered\n{nvim_run['diag']}"
    assert rec["response"]["err"] is None, rec["response"]["err"]
    assert rec["asked"] == [{"tool": "Bash", "preview": "touch should-not-exist"}]
    result = rec["response"]["result"]
    assert result["stopReason"] == "denied"
    texts = [
        b.get("text")
        for r in _rows(Path(result["path"]))
        if r and r.get("type") == "user"
        for b in (r["message"]["content"] if isinstance(r["message"]["content"], list) else [])
    ]
    assert texts[-1] == "[Request interrupted by user for tool use]"


def test_conversation_buffer_folds_hidden_items_and_jumps(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "conversation")
    path = Path(nvim_run["config"]["conversation"]["path"])
    rows = _rows(path)
    assert rec["rendered"], nvim_run["diag"]
    assert rec["name"].endswith(f"session-conversation://{CONVO}") and rec["modifiable"] is False
    lines = rec["lines"]
    tools = [line for line in lines if line.startswith("▸ ")]
    assert tools == [
        "▸ Read notes.txt ✓",
        "▸ Edit /tmp/slsp-convo/work/notes.txt ✓",
        "▸ Write /tmp/slsp-convo/work/hello.txt ✓",
    ]
    assert not any("[hidden]" in line for line in lines)
    # one closed fold per tool call; the Edit call's fold holds its patch and opens with zo
    assert rec["closed_folds"] == 3
    assert rec["fold_closed_at_start"] == rec["edit_line"]
    assert rec["fold_closed_after_zo"] == -1 and rec["fold_closed_after_zc"] == rec["edit_line"]
    assert [x.strip() for x in rec["fold_text_lines"] if x.strip()[:1] in "+-" and x.strip()[1:2] != "-"] == [
        "-two",
        "+TWO",
        "+three",
    ]
    # H shows every attachment row of the chain, a second H hides them
    attachments = [r for r in rows if r and r.get("type") == "attachment"]
    hidden = [line for line in rec["lines_hidden"] if line.startswith("> [hidden] ")]
    assert len([h for h in hidden if "attachment · " in h]) == len(attachments) == 10
    assert rec["lines_after_second_h"] == len(lines)
    # <CR> on a prompt opens the transcript at that prompt's row
    want = next(i for i, r in enumerate(rows) if r and (r.get("message") or {}).get("content") == CONVO_PROMPT)
    assert rec["jumped_to"] == str(path) and rec["jumped_line"] == want
    # <CR> on the other branch shows it: its thinking fold and its image
    other_leaf = next(
        r["uuid"]
        for r in rows
        if r and r.get("type") == "assistant" and "[Image" in json.dumps(r["message"]["content"])
    )
    assert rec["back_in"] and rec["branch_info"]["leafUuid"] == other_leaf
    assert "▸ Thinking" in rec["branch_lines"] and "[image image/png]" in rec["branch_lines"]
    assert CONVO_PROMPT not in rec["branch_lines"]


def test_search_hit_opens_the_conversation_at_that_message(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "search_hit")
    assert rec["hits"] >= 1 and rec["in_quickfix"] is True and rec["index"] is not None
    info = rec["info"]
    # the page reaches back from the end to prompt 40 (of 300) and six items more, not to the start
    assert info["hasMore"] is True and info["atId"] == f"b1b1b1b1-0000-4000-8001-{BIG_MARKED:012d}"
    assert info["items"] == 2 * (BIG_PAIRS - BIG_MARKED) + 6
    # the cursor is on that message, at the top of the window, and its two lines are highlighted
    assert rec["cursor"] == info["atLine"] == rec["top"]
    assert (
        rec["cursor_text"][0].startswith("## You · ")
        and rec["cursor_text"][1] == f"paging prompt {BIG_MARKED} about {BIG_WORD}"
    )
    assert rec["highlighted"] == [rec["cursor"], rec["cursor"] + 1]
    assert "paging prompt 37" in rec["lines"] and "paging prompt 36" not in rec["lines"]


def test_search_hit_on_a_rewound_branch_opens_that_branch(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "search_branch_hit")
    rows = _rows(Path(nvim_run["config"]["conversation"]["path"]))
    line = nvim_run["config"]["search"]["branch_line"]
    info = rec["info"]
    assert info["atId"] == rows[line]["uuid"]
    other_leaf = next(
        r["uuid"]
        for r in rows
        if r and r.get("type") == "assistant" and "[Image" in json.dumps(r["message"]["content"])
    )
    assert info["leafUuid"] == other_leaf
    assert rec["cursor"] == info["atLine"] and rec["cursor_text"][1] == "What colour is this square?"
    assert rec["cursor"] in rec["highlighted"]
    assert CONVO_PROMPT not in rec["lines"]  # the branch shown is the rewound one


def test_search_hit_on_a_hidden_row_shows_the_hidden_items(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "search_hidden_hit")
    rows = _rows(Path(nvim_run["config"]["conversation"]["path"]))
    row = rows[nvim_run["config"]["search"]["hidden_line"]]
    assert row["isMeta"] is True
    info = rec["info"]
    # the meta row the CLI wrote for the image is hidden by default: the buffer shows hidden items
    assert info["atId"] == row["uuid"] and info["show_hidden"] is True
    assert rec["cursor"] == info["atLine"] and rec["cursor_text"][0].startswith("## You [hidden] · ")
    assert rec["cursor_text"][1].startswith("[Image: source: ")


def test_a_large_session_opens_at_its_end_and_pages_back(nvim_run: dict[str, Any]) -> None:
    rec = _step(nvim_run, "paging")
    pages = rec["pages"]
    # 600 messages: 200 at first (the last 100 prompts), then 400, 600: all loaded, nothing more
    assert [p["info"]["items"] for p in pages] == [200, 400, 600]
    assert [p["info"]["hasMore"] for p in pages] == [True, True, False]
    assert [p["first_prompt"] for p in pages] == ["paging prompt 200", "paging prompt 100", "paging prompt 0"]
    assert all(p["last_line"] == f"reply {BIG_PAIRS - 1}" for p in pages)
    assert pages[0]["more_line"].startswith("(earlier items not loaded") and not pages[-1]["more_line"].startswith("(")
    # the cursor stays on the prompt it was on while pages load before it
    assert rec["cursor_before"] == f"paging prompt {BIG_PAIRS - 1}"
    assert [p["cursor_text"] for p in pages[1:]] == [rec["cursor_before"]] * 2


STUB_SERVER = """
from typing import Any
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

server = LanguageServer("stub-session-lsp", "0.0")


@server.feature("sessions/runTurn")
def run_turn(ls: LanguageServer, params: Any) -> dict:
    token = params.workDoneToken
    ls.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title="turn"))
    text = ""
    for chunk in ["Hello ", "from ", "the\\nstub ", "model."]:
        text += chunk
        ls.work_done_progress.report(token, lsp.WorkDoneProgressReport(message=chunk))
    ls.work_done_progress.end(token, lsp.WorkDoneProgressEnd())
    return {"sessionId": params.sessionId, "path": "/nowhere", "appended": 2, "text": text,
            "usage": {"input_tokens": 5, "output_tokens": 7}}


server.start_io()
"""

STUB_SCRIPT = """
vim.opt.rtp:prepend(vim.env.PLUGIN)
local sl = require('session_lsp')
sl.setup({ cmd = { vim.env.PYTHON, vim.env.STUB }, projects_dir = vim.env.PROJECTS, provider = 'anthropic' })
local done
local buf = sl.turn('hi there', { session = vim.env.SID }, function(r, e) done = { ok = r ~= nil } end)
vim.wait(60000, function() return done ~= nil end, 50)
local out = { done = done ~= nil, lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
  reports = vim.b[buf].session_lsp_reports or 0 }
vim.fn.writefile({ vim.fn.json_encode(out) }, vim.env.OUT)
vim.cmd('qa!')
"""


def test_turn_streams_progress_from_a_stub_server(tmp_path: Path) -> None:
    """The client side of :SessionTurn (work-done progress into a scratch buffer), with a stub server."""
    (tmp_path / "stub.py").write_text(STUB_SERVER)
    (tmp_path / "t.lua").write_text(STUB_SCRIPT)
    (tmp_path / "projects").mkdir()
    env = {
        **os.environ,
        "PLUGIN": str(PLUGIN),
        "PYTHON": sys.executable,
        "STUB": str(tmp_path / "stub.py"),
        "PROJECTS": str(tmp_path / "projects"),
        "SID": S1,
        "OUT": str(tmp_path / "out.json"),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {tmp_path / 't.lua'}"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["done"], out
    assert out["reports"] == 4, out
    lines = out["lines"]
    assert lines[0] == "# hi there"
    assert "Hello from the" in lines and "stub model." in lines, lines
    assert any("2 row(s) appended" in line and "5 in / 7 out" in line for line in lines), lines
