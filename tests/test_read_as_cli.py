"""Lines the real CLI 2.1.328 accepts are read as it reads them: a lone surrogate escape, invalid
UTF-8 bytes, a byte-order mark, conversation rows without a uuid. The CLI resumes each damaged copy
offline and what it sends must start with our API form."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from realcli import run_claude
from test_interop_write import FLAGS, assert_cli_sees, resume_with_cli

from server.cli import main
from storage.resume import resume
from storage.sessions import read_session_info


def _drop_uuids(data: bytes) -> bytes:
    out = []
    for line in data.split(b"\n"):
        if line:
            entry = json.loads(line)
            entry.pop("uuid", None)
            line = json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode()
        out.append(line)
    return b"\n".join(out)


DAMAGE = {
    "lone-surrogate": lambda data: data.replace(b"hello two", b"hello \\ud83d two"),
    "invalid-utf8": lambda data: data.replace(b"hello two", b"hello \xff\xfe two"),
    "bom": lambda data: b"\xef\xbb\xbf" + data,
    "no-uuid": _drop_uuids,
}


@pytest.fixture(scope="module")
def cli_session(claude: Path, model: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A two-turn session written by the real CLI."""
    base = tmp_path_factory.mktemp("readcli")
    env = {"shop": base / "shop", "config": base / "config", "projects": base / "config" / "projects"}
    env["shop"].mkdir()
    sid = str(uuid.uuid4())
    for prompt, how in (("hello one", "--session-id"), ("hello two", "--resume")):
        done = run_claude(
            [prompt, how, sid, *FLAGS],
            cwd=env["shop"],
            config_dir=env["config"],
            base_url=model.base_url,
            timeout=120,
            claude=claude,
            allowed_tools=None,
        )
        assert done.returncode == 0, done.stderr
    return {"env": env, "sid": sid, "path": next(env["projects"].glob(f"*/{sid}.jsonl"))}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_the_cli_and_we_read_damaged_lines_alike(
    claude: Path,
    model: Any,
    cli_session: dict[str, Any],
    damage: str,
) -> None:
    source: Path = cli_session["path"]
    sid = str(uuid.uuid4())
    path = source.with_name(f"{sid}.jsonl")
    path.write_bytes(DAMAGE[damage](source.read_bytes()).replace(cli_session["sid"].encode(), sid.encode()))
    ours = resume(path).messages
    texts = [b.get("text") for m in ours for b in m["content"] if b.get("type") == "text"]
    if damage == "no-uuid":  # one shared key: the CLI keeps only the last row, and so do we
        assert [m["role"] for m in ours if m["role"] != "system"] == ["assistant"]
        assert texts[-1] == "echo: hello two"
    else:
        expected = {"lone-surrogate": "hello \ufffd two", "invalid-utf8": "hello \ufffd\ufffd two"}.get(
            damage, "hello two"
        )
        assert expected in texts and texts[0] == "hello one"
    prompt = f"ORACLE {sid}"
    assert_cli_sees(ours, resume_with_cli(claude, model, cli_session["env"], sid, prompt), prompt, strict_system=False)


def test_lenient_lines_are_a_hint_not_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True)
    sid = "44444444-4444-4444-8444-444444444444"
    rows = [
        {"parentUuid": None, "type": "user", "uuid": "u1", "sessionId": sid, "message": {"role": "user", "content": "a"}},
        {"parentUuid": "u1", "type": "assistant", "uuid": "u2", "sessionId": sid,
         "message": {"role": "assistant", "content": [{"type": "text", "text": "SURROGATE"}]}},
    ]  # fmt: skip
    data = b"".join(json.dumps(r).encode() + b"\n" for r in rows).replace(b"SURROGATE", b"cut \\ud83d")
    path = folder / f"{sid}.jsonl"
    tag = b'{"type":"tag","tag":"\xc3","sessionId":"%s"}\n' % sid.encode()
    nested = b"[" * 100_000 + b"\n"  # no reader takes this one: an error, not a crash
    path.write_bytes(data + tag + nested)
    assert main(["check", str(path), "--json"]) == 1
    found = [(d["line"], d["code"], d["severity"]) for d in json.loads(capsys.readouterr().out)]
    assert found == [(2, "lenient-json", "hint"), (3, "lenient-json", "hint"), (4, "invalid-json", "error")]


def test_bom_file_lists_with_its_first_row(tmp_path: Path) -> None:
    """`chain` keeps the first row of a file with a BOM; listing takes title and creation time from it too."""
    path = tmp_path / "-p" / "55555555-5555-4555-8555-555555555555.jsonl"
    path.parent.mkdir()
    first = {"parentUuid": None, "type": "user", "uuid": "u1", "timestamp": "2025-01-02T03:04:05.000Z", "cwd": "/w",
             "message": {"role": "user", "content": "the very first prompt"}}  # fmt: skip
    reply = {"parentUuid": "u1", "type": "assistant", "uuid": "u2", "timestamp": "2025-01-02T03:04:09.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}}  # fmt: skip
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(json.dumps(r).encode() + b"\n" for r in (first, reply)))
    info = read_session_info(path)
    assert resume(path).chain.uuids == ["u1", "u2"]
    assert (info.title, info.created, info.cwd, info.first_uuid) == (
        "the very first prompt",
        "2025-01-02T03:04:05.000Z",
        "/w",
        "u1",
    )


def test_rows_without_uuid_list_and_chain_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True)
    path = folder / "66666666-6666-4666-8666-666666666666.jsonl"
    rows = [{"parentUuid": None, "type": t, "sessionId": path.stem,
             "message": {"role": t, "content": [{"type": "text", "text": f"{t} {i}"}]}}
            for i, t in enumerate(["user", "assistant", "user", "assistant"])]  # fmt: skip
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows))
    assert main(["list", "--projects-dir", str(tmp_path / "projects"), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [s["messageCount"] for s in listed] == [4]
    assert main(["chain", str(path), "--json", "--projects-dir", str(path.parent.parent)]) == 0
    chain = json.loads(capsys.readouterr().out)
    assert [m["content"][0]["text"] for m in chain["messages"] if m["role"] != "system"] == ["assistant 3"]
    assert main(["check", str(path), "--json"]) == 0
    diags = json.loads(capsys.readouterr().out)
    assert [(d["line"], d["code"], d["severity"]) for d in diags] == [(1, "missing-uuid", "warning")]
    assert "keeps only the last (line 4)" in diags[0]["message"]
