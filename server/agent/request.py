"""What a turn is asked to do: the prompt, which session, which provider, which tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SessionMode = Literal["auto", "new", "resume", "continue", "fork"]


@dataclass
class TurnRequest:
    prompt: str
    session: str | None = None
    """Session id, `.jsonl` path or exact title to resume (or fork); None with mode auto/new starts one."""
    cwd: str | None = None
    """Working directory; for a resumed session its own cwd is used unless this is given."""
    mode: SessionMode = "auto"
    """auto: resume `session` if given, else new; continue: the latest session of cwd."""
    projects_dir: Path | None = None
    provider: str | None = None
    """anthropic, claude-cli or scripted; None picks one (see providers.choose)."""
    model: str | None = None
    tools: tuple[str, ...] = ()
    """Opt-in tools besides Read/Glob/Grep/LS: any of Bash, Edit, Write, or "all"."""
    max_steps: int = 50
    """Model responses per turn at most (each tool round is one)."""
    base_url: str | None = None
    env: dict[str, str] | None = field(default=None, repr=False)
    """Environment for provider choice and keys (default: os.environ)."""

    @classmethod
    def from_json(cls, params: dict[str, Any]) -> TurnRequest:
        """`sessions/runTurn` params: {sessionId?, prompt, cwd?, provider?, model?, mode?, tools?}."""
        prompt = params.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt is required")
        mode = params.get("mode") or ("resume" if params.get("sessionId") else "new")
        if mode not in ("auto", "new", "resume", "continue", "fork"):
            raise ValueError(f"unknown mode {mode!r}")
        projects = params.get("projectsDir")
        return cls(
            prompt=prompt,
            session=params.get("sessionId") or params.get("path"),
            cwd=params.get("cwd"),
            mode=mode,
            projects_dir=Path(projects) if projects else None,
            provider=params.get("provider"),
            model=params.get("model"),
            tools=tuple(params.get("tools") or ()),
        )
