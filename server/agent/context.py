"""What the model is told besides the conversation: the system prompt and the user context.

The system prompt carries the environment (working directory, platform, date). Like the CLI
2.1.328, the CLAUDE.md memory and the date are recorded as attachment rows after a new session's
first prompt, so they are part of the conversation the API form rebuilds (and the CLI resumes)."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from server.agent.memory import MemoryFile, load_memory, render_memory

IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."


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

    def instructions_text(self) -> str:
        """The memory as the CLI renders its `instructions` attachment ("" without memory)."""
        memory = render_memory(self.memory)
        return f"<system-reminder>\n{memory}\n</system-reminder>" if memory else ""

    def attachments(self) -> list[dict[str, Any]]:
        """The attachment rows the CLI records after a session's first prompt: the CLAUDE.md
        `instructions` (rendered to the user role) and the `date` (rendered to the system role)."""
        rows: list[dict[str, Any]] = []
        text = self.instructions_text()
        if text:
            files = [{"path": str(f.path), "type": f.kind, "content": f.content.strip()} for f in self.memory]
            rows.append(_attachment({"type": "instructions", "files": files}, text, "user"))
        day = self.today.isoformat()
        rows.append(
            _attachment(
                {"type": "date", "date": day},
                f"<system-reminder>\nToday's date is {day}.\n</system-reminder>",
                "system",
            )
        )
        return rows


def _attachment(body: dict[str, Any], rendered: str, role: str) -> dict[str, Any]:
    return {"type": "attachment", "attachment": body, "rendered": [{"content": rendered}], "renderedRole": role}
