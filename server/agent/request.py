"""What a turn is asked to do: the prompt, which session, which provider, which tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from server.params import str_param
from storage.errors import InvalidArgument

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
    """anthropic or claude-cli; None picks one (see providers.choose)."""
    model: str | None = None
    tools: tuple[str, ...] = ()
    """Opt-in tools besides Read/Glob/Grep/LS: any of Bash, Edit, Write, or "all"."""
    max_steps: int = 50
    """Model responses per turn at most (each tool round is one)."""
    base_url: str | None = None
    ask_permission: bool = False
    """Offer Bash/Edit/Write too, asking the person before each one not in `tools` runs."""
    env: dict[str, str] | None = field(default=None, repr=False)
    """Environment for provider choice and keys (default: os.environ)."""

    @classmethod
    def from_json(cls, params: dict[str, Any]) -> TurnRequest:
        """`sessions/runTurn` params: {prompt, sessionId? | path?, cwd?, mode?, provider?, model?, tools?,
        maxSteps?, store?} (`store`: see `SessionRequests.store_turn_target`). A wrong one raises
        `InvalidArgument` naming the field."""
        known = {
            "prompt",
            "sessionId",
            "path",
            "cwd",
            "mode",
            "provider",
            "model",
            "tools",
            "maxSteps",
            "projectsDir",
            "workDoneToken",
            "askPermission",
            "store",
        }
        unknown = sorted(set(params) - known)
        if unknown:
            raise InvalidArgument(f"unknown parameter {unknown[0]!r}")
        prompt = str_param(params, "prompt", required=True)
        if not prompt or not prompt.strip():
            raise InvalidArgument("parameter 'prompt' must not be blank")
        session = str_param(params, "sessionId")
        path = str_param(params, "path")
        if session is not None and path is not None:
            raise InvalidArgument("give 'sessionId' or 'path', not both")
        mode = str_param(params, "mode") or ("resume" if session or path else "new")
        if mode not in ("auto", "new", "resume", "continue", "fork"):
            raise InvalidArgument(f"parameter 'mode' must be one of new, resume, continue, fork (got {mode!r})")
        tools = params.get("tools")
        if tools is None:
            tools = []
        if not isinstance(tools, list) or not all(isinstance(t, str) and t in OPT_IN_TOOLS for t in tools):
            raise InvalidArgument(f"parameter 'tools' must be a list of {', '.join(OPT_IN_TOOLS)}")
        ask = params.get("askPermission", False)
        if not isinstance(ask, bool):
            raise InvalidArgument("parameter 'askPermission' must be true or false")
        steps = params.get("maxSteps", 50)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 500:
            raise InvalidArgument("parameter 'maxSteps' must be an integer from 1 to 500")
        return cls(
            prompt=prompt,
            session=session or path,
            cwd=str_param(params, "cwd"),
            mode=mode,  # type: ignore[arg-type]  # checked against SessionMode just above
            provider=str_param(params, "provider"),
            model=str_param(params, "model"),
            tools=tuple(tools),
            max_steps=steps,
            ask_permission=ask,
        )


OPT_IN_TOOLS = ("Bash", "Edit", "Write", "all")
