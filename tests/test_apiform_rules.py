"""One rule of the API form per test, on tiny transcripts shaped like the real CLI's rows.

The expected outputs are what CLI 2.1.328 sent in the runs of tests/corpus/extra (E1..E5) and
tests/corpus/generated; rules marked "JS" come from its bundled code without a run of their own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.apiform import INTERRUPTED, NO_RESPONSE, api_messages
from storage.chain import build_chain
from storage.transcript import Transcript

DATE = "<system-reminder>\nToday's date is 2026-11-29.\n</system-reminder>"
ENV = "<system-reminder>\n# Environment\nPrimary working directory: /w\n</system-reminder>"


class Rows:
    """Builds a linear transcript: each chain row's parent is the previous chain row."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.n = 0

    def _add(self, row: dict[str, Any], parent: str | None = "prev") -> str:
        self.n += 1
        uid = f"00000000-0000-4000-8000-{self.n:012d}"
        prev = next((r["uuid"] for r in reversed(self.rows) if "uuid" in r), None)
        self.rows.append(
            {
                "parentUuid": prev if parent == "prev" else parent,
                "isSidechain": False,
                **row,
                "uuid": uid,
                "timestamp": f"2026-11-29T10:00:{self.n:02d}.000Z",
                "sessionId": "s",
            }
        )
        return uid

    def user(self, content: Any, **extra: Any) -> str:
        return self._add({"type": "user", "message": {"role": "user", "content": content}, **extra})

    def assistant(self, *blocks: dict[str, Any], mid: str | None = None) -> str:
        mid = mid or f"msg_{self.n + 1}"
        return self._add({"type": "assistant", "message": {"id": mid, "role": "assistant", "content": list(blocks)}})

    def attachment(self, kind: str, role: str | None, *rendered: str, **extra: Any) -> str:
        row: dict[str, Any] = {"type": "attachment", "attachment": {"type": kind, **extra}}
        if role is not None:
            row |= {"rendered": [{"content": r} for r in rendered], "renderedRole": role}
        return self._add(row)

    def boundary(self) -> str:
        return self._add(
            {
                "type": "system",
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "compactMetadata": {"trigger": "manual"},
            },
            parent=None,
        )

    def form(self, tmp_path: Path, **kw: Any) -> list[dict[str, Any]]:
        path = tmp_path / "s.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in self.rows), encoding="utf-8")
        return api_messages(path, build_chain(Transcript.load(path)), **kw)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def system(t: str | None = None) -> dict[str, Any]:
    return {"role": "system", "content": [text(t)] if t is not None else []}


def tool_use(i: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "Read", "input": {"file_path": "/w/a"}}


def tool_result(i: str, content: Any = "1\ta") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": content}


def first_turn() -> Rows:
    r = Rows()
    r.user("hello")
    r.attachment("environment", "system", ENV)
    r.attachment("session_context", None)
    r.attachment("date", "system", DATE)
    r.assistant(text("echo: hello"))
    return r


def test_system_attachments_become_one_system_message_after_the_prompt(tmp_path: Path) -> None:
    """E2/E4 (full runs): reminders unwrapped, joined by a blank line, after the user message."""
    got = first_turn().form(tmp_path)
    body = "# Environment\nPrimary working directory: /w\n\nToday's date is 2026-11-29."
    assert got == [user(text("hello")), system(body), assistant(text("echo: hello"))]


def test_bare_resume_sends_no_attachments(tmp_path: Path) -> None:
    """E1/E3/E5 and the generated corpus: with --bare the `date` reminder is not sent at all."""
    assert first_turn().form(tmp_path, bare=True) == [user(text("hello")), assistant(text("echo: hello"))]


def test_effort_statement_is_an_empty_system_message_or_rides_on_the_first_one(tmp_path: Path) -> None:
    """Every run: `{"role":"system","content":[],"output_config":{"effort":...}}` after message 0."""
    full = first_turn().form(tmp_path, effort_statement=True)
    assert [m["role"] for m in full] == ["user", "system", "assistant"]
    bare = first_turn().form(tmp_path, bare=True, effort_statement=True)
    assert bare == [user(text("hello")), system(), assistant(text("echo: hello"))]


def after_compaction() -> Rows:
    r = Rows()
    r.boundary()
    r.user("This session is being continued ... summary", isCompactSummary=True)
    r.assistant(text("echo: kept"))  # the preserved segment, relinked after the summary
    r.user("<local-command-caveat>caveat</local-command-caveat>", isMeta=True)
    r.user("<command-name>/compact</command-name>")
    r.user("<local-command-stdout>Compacted</local-command-stdout>")
    r.attachment(
        "file",
        "user",
        "<system-reminder>\nCalled the Read tool\n</system-reminder>",
        "<system-reminder>\nResult of calling the Read tool\n</system-reminder>",
        filename="/w/a",
    )
    r.attachment("environment", "system", ENV)
    r.user("after the compact")
    r.attachment("date", "system", DATE)
    r.assistant(text("echo: after the compact"))
    return r


def test_compaction_full(tmp_path: Path) -> None:
    """E2, request 18: the boundary sends nothing; the file attachment lifts above the command rows
    and opens two user messages; the rows join the second with `\\n` seams; the system reminders
    from before and after the prompt make one system message after it."""
    got = after_compaction().form(tmp_path)
    assert got == [
        user(text("This session is being continued ... summary")),
        assistant(text("echo: kept")),
        user(text("<system-reminder>\nCalled the Read tool\n</system-reminder>")),
        user(
            text("<system-reminder>\nResult of calling the Read tool\n</system-reminder>\n"),
            text("<local-command-caveat>caveat</local-command-caveat>\n"),
            text("<command-name>/compact</command-name>\n"),
            text("<local-command-stdout>Compacted</local-command-stdout>\n"),
            text("after the compact"),
        ),
        system("# Environment\nPrimary working directory: /w\n\nToday's date is 2026-11-29."),
        assistant(text("echo: after the compact")),
    ]


def test_compaction_bare(tmp_path: Path) -> None:
    """E1 and generated 11111111 (the former known gap): no date, no file attachment."""
    got = after_compaction().form(tmp_path, bare=True)
    assert [m["role"] for m in got] == ["user", "assistant", "user", "assistant"]
    assert len(got[2]["content"]) == 4


def test_attachments_after_a_reply_open_their_own_messages_and_lift_above_the_prompt(tmp_path: Path) -> None:
    """E2, request 18: a user-role attachment after an assistant message is pushed as its own user
    messages (one per rendered part) ahead of the turn's user rows, which join the last of them."""
    r = Rows()
    r.user("first")
    r.assistant(text("echo: first"))
    r.user("<local-command-stdout>done</local-command-stdout>")
    r.attachment("file", "user", "<system-reminder>\nA\n</system-reminder>", "<system-reminder>\nB\n</system-reminder>")
    r.user("second")
    r.assistant(text("echo: second"))
    got = r.form(tmp_path)
    assert got[2:4] == [
        user(text("<system-reminder>\nA\n</system-reminder>")),
        user(
            text("<system-reminder>\nB\n</system-reminder>\n"),
            text("<local-command-stdout>done</local-command-stdout>\n"),
            text("second"),
        ),
    ]


def test_first_turn_attachment_goes_before_the_prompt(tmp_path: Path) -> None:
    """claude-code-2.1.328 corpus request 0: a user-role attachment written after the prompt is sent
    before it, and the prompt joins it with a `\\n` seam."""
    r = Rows()
    r.user("READ /w/a")
    r.attachment(
        "remote_session_change", "user", "<system-reminder>\nremote\n</system-reminder>", renderedBesideToolResult=True
    )
    r.assistant(text("ok"))
    got = r.form(tmp_path)
    assert got[0] == user(text("<system-reminder>\nremote\n</system-reminder>\n"), text("READ /w/a"))


def test_killed_mid_tool(tmp_path: Path) -> None:
    """E3/E4: a last response whose call never got a result gets the CLI's interrupted error
    result, then "No response requested." (not "Continue from where you left off.")."""
    r = Rows()
    r.user("READ /w/pipe")
    r.assistant(tool_use("t1"))
    got = r.form(tmp_path)
    assert got == [
        user(text("READ /w/pipe")),
        assistant(tool_use("t1")),
        user({"type": "tool_result", "content": INTERRUPTED, "is_error": True, "tool_use_id": "t1"}),
        assistant(text(NO_RESPONSE)),
    ]


def test_killed_after_a_tool_result(tmp_path: Path) -> None:
    """E5: killed while the reply to a tool result streamed: "No response requested."."""
    r = Rows()
    r.user("READ /w/a")
    uid = r.assistant(tool_use("t1"))
    r.user([tool_result("t1")], sourceToolAssistantUUID=uid)
    assert r.form(tmp_path)[-1] == assistant(text(NO_RESPONSE))


def test_killed_prompt_without_reply(tmp_path: Path) -> None:
    """generated 33333333 (SLOW killed mid-stream): "No response requested."."""
    r = Rows()
    r.user("SLOW x")
    assert r.form(tmp_path) == [user(text("SLOW x")), assistant(text(NO_RESPONSE))]


CAVEAT = "<local-command-caveat>Caveat: the messages below were generated by the user.</local-command-caveat>"
RENAME = (
    "<command-name>/rename</command-name>\n<command-message>rename</command-message>\n<command-args>x</command-args>"
)
RENAMED = "<local-command-stdout>Session renamed to: x</local-command-stdout>"


def test_a_chain_ending_on_a_slash_command_gets_no_closing_reply(tmp_path: Path) -> None:
    """2.1.332 corpus, session 21332008 (`/rename` last): its output row (`system`, `local_command`) is the leaf
    and goes as user text, and no "No response requested." follows. The same file without the output row (an
    edited copy, resumed by 2.1.332 and by 2.1.328): the chain ends on the `<command-name>` row, no closing reply
    either."""
    r = first_turn()
    r.user(CAVEAT, isMeta=True)
    r.user(RENAME)
    without_output = r.form(tmp_path)
    assert without_output[-1] == user(text(CAVEAT + "\n"), text(RENAME))
    r._add({"type": "system", "subtype": "local_command", "content": RENAMED, "level": "info"})
    r.rows.append({"type": "last-prompt", "lastPrompt": "hello", "leafUuid": r.rows[-1]["uuid"], "sessionId": "s"})
    assert r.form(tmp_path)[-1] == user(text(CAVEAT + "\n"), text(RENAME + "\n"), text(RENAMED))


def test_parallel_results_merge_and_go_first(tmp_path: Path) -> None:
    """claude-code-2.1.328 and generated PAR sessions: blocks of one response merge, their results
    make one user message."""
    r = Rows()
    r.user("PAR a b")
    r.assistant(text("Reading them all."), mid="m1")
    a = r.assistant(tool_use("t1"), mid="m1")
    b = r.assistant(tool_use("t2"), mid="m1")
    r.user([tool_result("t1")], sourceToolAssistantUUID=a)
    r.user([tool_result("t2")], sourceToolAssistantUUID=b)
    r.assistant(text("I read it (2 tool results)."))
    got = r.form(tmp_path)
    assert got[1] == assistant(text("Reading them all."), tool_use("t1"), tool_use("t2"))
    assert got[2] == user(tool_result("t1"), tool_result("t2"))


def test_text_attachment_after_a_tool_result_goes_inside_it(tmp_path: Path) -> None:
    """JS (`mXo`/`h9e`): a text-only attachment joining a message that ends in a string tool result
    is folded into that result, trimmed, after a blank line."""
    r = Rows()
    r.user("READ /w/a")
    uid = r.assistant(tool_use("t1"))
    r.user([tool_result("t1", "1\ta\n")], sourceToolAssistantUUID=uid)
    r.attachment("todo_reminder", "user", "<system-reminder>\nnote\n</system-reminder>")
    r.assistant(text("done"))
    got = r.form(tmp_path)
    assert got[2] == user(tool_result("t1", "1\ta\n\n<system-reminder>\nnote\n</system-reminder>"))


def test_unpaired_and_blank_rows_drop_out(tmp_path: Path) -> None:
    """Spec section 4 (not re-run here): a call answered by nobody in mid-chain, a result whose call
    is missing and a thinking-only reply are left out."""
    r = Rows()
    r.user("one")
    r.assistant(text("ok"), tool_use("lost"))
    r.user("two")
    r.assistant({"type": "thinking", "thinking": "", "signature": "x"})
    r.user([tool_result("nowhere")])
    r.user("three")
    r.assistant(text("fine"))
    got = r.form(tmp_path)
    assert got == [
        user(text("one")),
        assistant(text("ok")),
        user(text("two\n"), text("three")),
        assistant(text("fine")),
    ]
