"""The embedded agent loop: one turn, from the prompt to the model's last reply, recorded as the
real CLI records it so `claude --resume` continues it. Synchronous; the LSP server runs it in a
worker thread and cancels it through a CancelToken (or a threading.Event).

    result = run_turn(TurnRequest(prompt="READ notes.md", session=sid),
                      on_event=print, cancel=token)
    result.to_json()  # {sessionId, path, appended, text, usage, ...}
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.agent.cancel import CancelToken, TurnCancelled, as_token
from server.agent.context import TurnContext
from server.agent.cost import cost_state
from server.agent.events import TurnEvent, TurnResult
from server.agent.permissions import Ask, GrantScope, PermissionAsk, SessionGrants
from server.agent.providers.base import ModelProvider, ModelRequest, StepModel
from server.agent.providers.choose import make_provider
from server.agent.request import TurnRequest
from server.agent.session import OpenSession, open_session
from server.agent.tools import Tool, ToolContext, make_tools
from server.agent.tools.base import ToolOutput
from server.agent.tools.runner import ToolCall, run_calls
from storage.apiform import NO_RESPONSE
from storage.jsonline import scrub_surrogates
from storage.models import DEFAULT_MODEL as CLI_DEFAULT_MODEL
from storage.resume import last_model, resume

log = logging.getLogger(__name__)
EventSink = Callable[[TurnEvent], None]
PREVIEW = 2000


def run_turn(
    request: TurnRequest,
    *,
    on_event: EventSink | None = None,
    cancel: CancelToken | threading.Event | None = None,
    provider: ModelProvider | None = None,
    ask: Ask | None = None,
    grants: SessionGrants | None = None,
    grant_key: str | None = None,
) -> TurnResult:
    """Run one turn. Raises ProviderError (no key, bad key, overloaded after retries, network),
    SessionNotFound, or ValueError for a bad request; the prompt stays recorded in those cases.
    With `ask`, every tool is offered and a writer not allowed in `request.tools` (nor granted in
    `grants` for this session's file, or `grant_key` when given (a store's session), in this working
    directory) runs only if `ask` allows it (`server.agent.permissions`)."""
    emit = on_event or (lambda _e: None)
    token = as_token(cancel)
    stop_watch = _watch_event(cancel, token)
    try:
        chosen = provider or make_provider(
            request.provider, model=request.model, env=request.env, base_url=request.base_url
        )
        return chosen.run_turn(
            request,
            steps=lambda model: _run_steps(request, model, emit, token, ask, grants, grant_key),
            on_event=emit,
            cancel=token,
        )
    finally:
        stop_watch()


def _run_steps(
    request: TurnRequest,
    model: StepModel,
    emit: EventSink,
    token: CancelToken,
    ask: Ask | None,
    grants: SessionGrants | None,
    grant_key: str | None = None,
) -> TurnResult:
    """The turn as a sequence of Messages-API steps answered by `model`, recorded here."""
    allowed = make_tools(request.tools)
    tools = make_tools(("all",)) if ask is not None else allowed
    gated = frozenset(tools) - frozenset(allowed)
    session = open_session(request)
    if model.follows_session_model and session.resumed and session.recorder.path.exists():
        # as the CLI does, a resumed session goes on with the model that last answered in it when
        # the CLI still offers it, else with the CLI's default (`storage.models`)
        restored = last_model(session.recorder.path) or CLI_DEFAULT_MODEL
        if restored != model.model:
            model = model.with_model(restored)
    # what the person approves is this session, as its real file (or the store's key) names it, in this folder
    scope = GrantScope(grant_key or os.path.realpath(session.recorder.path), os.path.realpath(session.cwd))
    permits = _Permits(ask, grants or SessionGrants(), gated, scope)
    return _Turn(request, session, model, tools, emit, token, permits).run()


def _watch_event(cancel: object, token: CancelToken) -> Callable[[], None]:
    """A plain threading.Event cannot wake a blocked stream: poll it and cancel the token."""
    if not isinstance(cancel, threading.Event):
        return lambda: None
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            if cancel.is_set():
                token.cancel()
                return

    threading.Thread(target=watch, name="turn-cancel-watch", daemon=True).start()
    return done.set


@dataclass
class _Permits:
    ask: Ask | None
    grants: SessionGrants
    gated: frozenset[str]
    """Tools offered that need the person's yes first."""
    scope: GrantScope
    """What an "allow for the session" answer is remembered for (and looked up by)."""


class _Turn:
    def __init__(
        self,
        request: TurnRequest,
        session: OpenSession,
        provider: StepModel,
        tools: dict[str, Tool],
        emit: EventSink,
        cancel: CancelToken,
        permits: _Permits,
    ) -> None:
        self.request = request
        self.permits = permits
        self.denied = False
        self.session = session
        self.rec = session.recorder
        self.provider = provider
        self.tools = tools
        self.emit = emit
        self.cancel = cancel
        self.context = TurnContext.load(session.cwd, model=provider.model)
        self.tool_ctx = ToolContext(session.cwd, cancel=self.cancel)
        self.result = TurnResult(self.rec.session_id, str(self.rec.path), provider=provider.name, model=provider.model)
        self.texts: list[str] = []
        self.api_ms = 0
        self.tool_ms = 0

    def run(self) -> TurnResult:
        start = time.time()
        self.emit(
            TurnEvent(
                "session",
                {
                    "sessionId": self.rec.session_id,
                    "path": str(self.rec.path),
                    "resumed": self.session.resumed,
                    "forkedFrom": self.session.forked_from,
                    "cwd": str(self.session.cwd),
                },
            )
        )
        try:
            self.result.appended.append(self.rec.record_prompt(self.request.prompt))
            if not self.session.resumed:
                self.result.appended += self.rec.record_entries(self.context.attachments())
            self._steps(self._conversation())
        except TurnCancelled:
            self._interrupted(for_tool_use=False)
        finally:
            self.rec.set_cost_state(
                cost_state(
                    self.provider.model,
                    self.result.usage,
                    start_ms=int(start * 1000),
                    duration_ms=int((time.time() - start) * 1000),
                    api_ms=self.api_ms,
                    tool_ms=self.tool_ms,
                )
            )
            self.rec.close()
        self.result.text = "\n\n".join(t for t in self.texts if t)
        self.emit(TurnEvent("done", self.result.to_json()))
        return self.result

    def _conversation(self) -> list[dict[str, Any]]:
        """What the CLI would send now: the API form of the file's chain, which ends in our prompt
        (without the "No response requested." the form adds to a chain that ends in a prompt)."""
        self.rec.flush()
        messages = resume(self.rec.path, leaf_uuid=self.rec.cursor).messages
        if messages and messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": NO_RESPONSE}]}:
            messages.pop()
        return messages

    def _steps(self, messages: list[dict[str, Any]]) -> None:
        system = self.context.system_prompt(list(self.tools))
        schemas = [t.schema() for t in self.tools.values()]
        for _ in range(self.request.max_steps):
            self.cancel.check()
            # what the last step recorded is written before the model is asked again: a write refused (the file
            # moved, made read-only, written by another process) ends the turn here, not after more tool calls
            self.rec.flush()
            began = time.monotonic()
            response = self.provider.stream(
                ModelRequest(system, messages, schemas, self.rec.session_id),
                on_text=lambda t: self.emit(TurnEvent("text", {"text": t})),
                cancel=self.cancel,
                on_retry=lambda n, err: self.emit(TurnEvent("retry", {"attempt": n, "error": err})),
            )
            self.api_ms += int((time.monotonic() - began) * 1000)
            # valid JSON may carry a lone surrogate (`"\ud800"`) no request can encode: as the transcript records it,
            # with U+FFFD, it is sent back, and its tools run with that (before, the next request raised)
            message: dict[str, Any] = scrub_surrogates(response.message)
            self.result.usage.add(message.get("usage"))
            if not response.complete:
                finished = [b for b in message["content"] if b.get("type") != "tool_use"]
                if finished:
                    self._record_response({**message, "content": finished})
                self._interrupted(for_tool_use=False)
                return
            self._record_response(message)
            self.result.stop_reason = message.get("stop_reason")
            messages.append({"role": "assistant", "content": message["content"]})
            calls = [
                ToolCall(b["id"], b["name"], b.get("input") or {})
                for b in message["content"]
                if b.get("type") == "tool_use"
            ]
            if not calls:
                return
            # the calls are written before any of them runs, as the CLI writes them: a tool that makes the file
            # unwritable (or kills this process) leaves its call recorded, and one whose call cannot be written
            # never runs
            self.rec.flush()
            results = self._run_tools(calls)
            if self.cancel.cancelled or self.denied:
                return
            messages.append({"role": "user", "content": results})
        self.texts.append(f"(stopped after {self.request.max_steps} model responses)")

    def _record_response(self, message: dict[str, Any]) -> None:
        self.result.appended += self.rec.record_assistant(message)
        text = "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
        self.texts.append(text)

    def _permitted(self, calls: list[ToolCall]) -> list[ToolCall]:
        """The calls that may run: those before the first one the person denies (all if none)."""
        p = self.permits
        sid = self.rec.session_id
        for n, call in enumerate(calls):
            if call.name not in p.gated or p.grants.allowed(p.scope, call.name) or p.ask is None:
                continue
            try:
                decision = p.ask(PermissionAsk(sid, call.name, call.id, call.input, str(self.session.cwd)))
            except TurnCancelled:
                decision = "deny"
            except Exception:  # noqa: BLE001 - no answer is a denial
                log.warning("asking permission for %s failed; denied", call.name, exc_info=True)
                decision = "deny"
            if self.cancel.cancelled:
                # the turn was cancelled while the person was asked: it ends as any cancel does (`_run_tools` runs
                # none of the calls, rejects the unanswered and records the interruption), whatever the answer
                self.emit(TurnEvent("permission", {"id": call.id, "name": call.name, "decision": "cancelled"}))
                return calls[:n]
            self.emit(TurnEvent("permission", {"id": call.id, "name": call.name, "decision": decision}))
            if decision == "allowSession":
                p.grants.grant(p.scope, call.name)
            elif decision != "allow":
                self.denied = True
                return calls[:n]
        return calls

    def _run_tools(self, calls: list[ToolCall]) -> list[dict[str, Any]]:
        for call in calls:
            self.emit(TurnEvent("tool_call", {"id": call.id, "name": call.name, "input": call.input}))
        asked = calls
        calls = self._permitted(calls)

        def reported(call: ToolCall, out: ToolOutput) -> None:
            self.emit(
                TurnEvent(
                    "tool_result",
                    {"id": call.id, "name": call.name, "isError": out.is_error, "content": out.content[:PREVIEW]},
                )
            )

        began = time.monotonic()
        outputs = run_calls(
            calls, self.tools, self.tool_ctx, should_stop=lambda: self.cancel.cancelled, on_result=reported
        )
        self.tool_ms += int((time.monotonic() - began) * 1000)
        done = [c for c in calls if c.id in outputs]
        blocks = [_result_block(c, outputs[c.id]) for c in done]
        if blocks:
            extras = [outputs[c.id].extra if outputs[c.id].extra is not None else outputs[c.id].content for c in done]
            self.result.appended += self.rec.record_tool_results(blocks, tool_use_results=extras)
        if self.denied:  # as the CLI records a "No": the rest rejected, then the interruption
            self._interrupted(for_tool_use=True)
            self.result.cancelled = False
            self.result.stop_reason = "denied"
        elif self.cancel.cancelled:
            self._interrupted(for_tool_use=len(done) < len(asked))
        return blocks

    def _interrupted(self, *, for_tool_use: bool) -> None:
        self.result.cancelled = True
        self.result.stop_reason = "cancelled"
        self.result.appended.append(self.rec.record_interruption(for_tool_use=for_tool_use))


def _result_block(call: ToolCall, out: ToolOutput) -> dict[str, Any]:
    block: dict[str, Any] = {"tool_use_id": call.id, "type": "tool_result", "content": out.content}
    if out.is_error:
        block["is_error"] = True
    return block
