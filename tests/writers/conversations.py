"""Scripted conversations driven through a SessionRecorder, with the API form they must give.

Used by the property tests, the crash writer and the interop tests. A step is one of
`("text", prompt)`, `("tools", n, order)` (n parallel Read calls, results recorded in `order`),
`("agent", prompt)` (a subagent that reads one file) and `("compact", summary)`.
"""

from __future__ import annotations

import itertools
from typing import Any

from storage.recorder import COMPACT_SUMMARY_PREFIX, SessionRecorder

_ids = itertools.count(1)


def _tid() -> str:
    return f"toolu_{next(_ids):020d}"


def _mid() -> str:
    return f"msg_{next(_ids):024d}"


def reply(blocks: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": _mid(),
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def read_call(path: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": _tid(), "name": "Read", "input": {"file_path": path}}


def result(call: dict[str, Any], body: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call["id"], "content": body}


class Script:
    """Plays steps into a recorder and keeps the API form the main transcript must resume to."""

    def __init__(self, rec: SessionRecorder, files: list[str] | None = None) -> None:
        self.rec = rec
        self.files = files or ["/work/a.txt", "/work/b.txt", "/work/c.txt", "/work/d.txt"]
        self.expected: list[dict[str, Any]] = []
        self.agents: dict[str, list[dict[str, Any]]] = {}

    def play(self, step: tuple[Any, ...]) -> None:
        getattr(self, f"_{step[0]}")(*step[1:])

    def _text(self, prompt: str) -> None:
        self.rec.record_prompt(prompt)
        out = f"echo: {prompt}"
        self.rec.record_assistant(reply([text(out)]))
        self.expected += [{"role": "user", "content": [text(prompt)]}, {"role": "assistant", "content": [text(out)]}]

    def _tools(self, n: int, order: list[int] | None = None) -> None:
        paths = [self.files[i % len(self.files)] for i in range(n)]
        prompt = "PAR " + " ".join(paths)
        self.rec.record_prompt(prompt)
        calls = [read_call(p) for p in paths]
        blocks = [text("Reading them all."), *calls]
        self.rec.record_assistant(reply(blocks, "tool_use"))
        order = order if order is not None else list(range(n))
        results = [result(calls[i], f"1\tcontents of {paths[i]} #{i}") for i in order]
        self.rec.record_tool_results(results)
        out = f"I read it ({n} tool results)."
        self.rec.record_assistant(reply([text(out)]))
        self.expected += [
            {"role": "user", "content": [text(prompt)]},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": results},
            {"role": "assistant", "content": [text(out)]},
        ]

    def _agent(self, prompt: str) -> None:
        self.rec.record_prompt(f"AGENT {prompt}")
        call = {
            "type": "tool_use",
            "id": _tid(),
            "name": "Agent",
            "input": {"description": "sub task", "prompt": prompt, "subagent_type": "general-purpose"},
        }
        self.rec.record_assistant(reply([call], "tool_use"))
        sub = self.rec.record_subagent(description="sub task", tool_use_id=call["id"])
        sub.record_prompt(prompt)
        inner = read_call(self.files[0])
        sub.record_assistant(reply([inner], "tool_use"))
        inner_result = result(inner, "1\tinner")
        sub.record_tool_results([inner_result])
        sub.record_assistant(reply([text("I read it (1 tool results).")]))
        self.agents[sub.agent_id] = [
            {"role": "user", "content": [text(prompt)]},
            {"role": "assistant", "content": [inner]},
            {"role": "user", "content": [inner_result]},
            {"role": "assistant", "content": [text("I read it (1 tool results).")]},
        ]
        outer = {"type": "tool_result", "tool_use_id": call["id"], "content": [text("I read it (1 tool results).")]}
        self.rec.record_tool_results([outer])
        self.rec.record_assistant(reply([text("I read it (1 tool results).")]))
        self.expected += [
            {"role": "user", "content": [text(f"AGENT {prompt}")]},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [outer]},
            {"role": "assistant", "content": [text("I read it (1 tool results).")]},
        ]

    def _compact(self, summary: str) -> None:
        self.rec.record_compact_boundary(summary, pre_tokens=1000, post_tokens=100)
        # the boundary itself never reaches the model; the summary starts the conversation
        self.expected = [{"role": "user", "content": [text(COMPACT_SUMMARY_PREFIX + summary)]}]


def _kind(m: dict[str, Any]) -> int:
    if m["role"] == "system":
        return 3
    return 0 if any(b.get("type") == "tool_result" for b in m["content"]) else 2


def api_form(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the CLI sends for these messages: inside each stretch between assistant messages,
    tool results, then prompts, then system messages; consecutive user messages merge, a text
    meeting a text across the seam gets a newline."""
    ordered: list[dict[str, Any]] = []
    stretch: list[dict[str, Any]] = []
    for m in [*raw, None]:
        if m is None or m["role"] == "assistant":
            ordered += sorted(stretch, key=_kind)
            stretch = []
            if m is not None:
                ordered.append(m)
        else:
            stretch.append(m)
    out: list[dict[str, Any]] = []
    for m in ordered:
        prev = out[-1] if out else None
        if prev and prev["role"] == m["role"] == "user":
            a, b = prev["content"], m["content"]
            if a and b and a[-1].get("type") == "text" and b[0].get("type") == "text":
                a = [*a[:-1], {**a[-1], "text": a[-1]["text"] + "\n"}]
            prev["content"] = [*a, *b]
        elif prev and prev["role"] == m["role"] == "system":
            prev["content"] = prev["content"] + m["content"]
        else:
            out.append({"role": m["role"], "content": list(m["content"])})
    last = next((m for m in reversed(out) if m["role"] != "system"), None)
    if last is not None and last["role"] == "user":  # a prompt without reply
        out.append({"role": "assistant", "content": [text("No response requested.")]})
    return out
