"""What the model is told besides the conversation: the system prompt and the user context.

Like the CLI, the system prompt carries the environment (working directory, platform, date), and
the CLAUDE.md memory and date travel as a `<system-reminder>` block put in front of the first user
message of every request (never recorded in the transcript)."""

from __future__ import annotations

import copy
import platform
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from server.agent.memory import MemoryFile, load_memory, render_memory

IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
CONTEXT_TAIL = (
    "      Claude Code attached this context automatically; it isn't part of the user's message. "
    "It describes the user's own account and workspace, so they don't need it reported back."
)


@dataclass
class TurnContext:
    cwd: Path
    today: date
    memory: list[MemoryFile]
    model: str = ""

    @classmethod
    def load(
        cls,
        cwd: str | Path,
        *,
        model: str = "",
        today: date | None = None,
        home: Path | None = None,
        managed: Path | None = None,
    ) -> TurnContext:
        return cls(Path(cwd), today or date.today(), load_memory(cwd, home=home, managed=managed), model)

    def system_prompt(self, tool_names: list[str]) -> list[dict[str, Any]]:
        tools = ", ".join(tool_names) or "none"
        env = "\n".join(
            [
                "<env>",
                f"Working directory: {self.cwd}",
                f"Is directory a git repo: {'Yes' if (self.cwd / '.git').exists() else 'No'}",
                f"Platform: {platform.system().lower()}",
                f"OS Version: {platform.system()} {platform.release()}",
                f"Today's date: {self.today.isoformat()}",
                "</env>",
            ]
        )
        body = (
            "You are an interactive agent that helps users with software engineering tasks, working "
            "in the user's project through the tools you are given. Every file path you use must be "
            f"inside the working directory. Tools available this turn: {tools}.\n\n"
            "Here is useful information about the environment you are running in:\n" + env
        )
        if self.model:
            body += f"\nYou are powered by the model {self.model}."
        return [{"type": "text", "text": IDENTITY}, {"type": "text", "text": body}]

    def user_context(self) -> str:
        sections = []
        memory = render_memory(self.memory)
        if memory:
            sections.append(f"# claudeMd\n{memory}")
        sections.append(f"# currentDate\nToday's date is {self.today.isoformat()}.")
        return (
            "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
            + "\n".join(sections)
            + "\n\n"
            + CONTEXT_TAIL
            + "\n</system-reminder>\n"
        )


def with_user_context(messages: list[dict[str, Any]], reminder: str) -> list[dict[str, Any]]:
    """A copy of `messages` with `reminder` as a text block in front of the first user message."""
    out = copy.deepcopy(messages)
    for message in out:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        message["content"] = [{"type": "text", "text": reminder}, *blocks]
        break
    return out
