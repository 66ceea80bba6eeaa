"""Agents written elsewhere: a command (JSON over stdin/stdout) or an HTTP chat service.

Why adapters: any agent can compete if it speaks one small format. Whatever it does wrong
(crash, hang, garbage on stdout, an HTTP error) becomes an Answer with the error recorded in
its trajectory; a match never crashes on a misbehaving contestant.

Command exchange (protocol 1): stdin gets one JSON object
  {"protocol": 1, "question": str, "history": [{"question": str, "answer": str}, ...],
   "word_limit": [low, high], "search_url": str | null}
and stdout must hold one JSON object (the last non-empty line is used if stdout has logs):
  {"report": str, "citations": [url, ...], "tool_calls": [{"name", "arguments", "urls"}]}
where citations[n-1] is the URL of marker [n], and tool_calls (optional) is shown in the
trajectory. Anything else goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from drarena.agents import citations as cite
from drarena.agents.base import Answer, Conversation
from drarena.agents.common import (
    Recorder,
    arguments_text,
    check_word_limit,
    conversation_messages,
    tool_event,
)
from drarena.agents.registry import AgentContext, parse_agent_args
from drarena.errors import DrarenaError

PROTOCOL = 1
STDERR_TAIL = 400


class ExternalToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    urls: list[str] = Field(default_factory=list)


class ExternalReply(BaseModel):
    """What a command agent prints on stdout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    report: str
    citations: list[str] = Field(default_factory=list)
    tool_calls: list[ExternalToolCall] = Field(default_factory=list)


class CommandArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] | str = Field(description="argv list, or a shell-quoted string")
    timeout_s: float = Field(300.0, gt=0, description="wall time before it is killed")
    cwd: Path | None = Field(None, description="working directory")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment")
    search_url: str | None = Field(None, description="overrides the run's search server URL")

    def argv(self) -> list[str]:
        return shlex.split(self.command) if isinstance(self.command, str) else self.command


def request_json(conversation: Conversation, word_limit: tuple[int, int],
                 search_url: str | None) -> str:
    return json.dumps({
        "protocol": PROTOCOL, "question": conversation.question,
        "history": [{"question": t.question, "answer": t.answer} for t in conversation.history],
        "word_limit": list(word_limit), "search_url": search_url,
    }, ensure_ascii=False)


def parse_reply(stdout: str) -> ExternalReply:
    """The agent's JSON answer; ValueError names what is wrong (never a traceback)."""
    text = stdout.strip()
    if not text:
        raise ValueError("stdout is empty")
    candidates = [text, [ln for ln in text.splitlines() if ln.strip()][-1]]
    problem = ""
    for candidate in candidates:
        try:
            return ExternalReply.model_validate_json(candidate)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(root)"
            problem = f"{where}: {err['msg']}"
    shown = text if len(text) <= 200 else text[:197] + "..."
    raise ValueError(f"stdout is not a JSON answer ({problem}); it starts {shown!r}")


async def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # the agent and anything it started
    with contextlib.suppress(ProcessLookupError):
        await process.wait()


class CommandAgent:
    """Runs a command once per answer, with a time limit."""

    def __init__(self, name: str, args: CommandArgs, context: AgentContext) -> None:
        self.name = name
        self.args = args
        self._context = context
        self.search_url = args.search_url or context.search_url

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        word_limit = check_word_limit(word_limit)
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        payload = request_json(conversation, word_limit, self.search_url)
        started = rec.now()
        try:
            stdout = await self._run(payload)
            reply = parse_reply(stdout)
        except (OSError, ValueError, TimeoutError) as exc:
            error = f"external agent {self.name}: {exc}"
            rec.step(None, error=error, note=f"command {shlex.join(self.args.argv())}")
            return rec.finish("", [], error=error)
        events = [tool_event(f"ext-{i}", c.name, arguments_text(c.arguments), started, started,
                             urls=c.urls) for i, c in enumerate(reply.tool_calls)]
        rec.step(None, events, note=f"command {shlex.join(self.args.argv())}")
        report, urls = reply.report, reply.citations
        if not urls:
            report, urls = cite.split_references(report)
        return rec.finish(report, urls)

    async def _run(self, payload: str) -> str:
        env = {**os.environ, **self.args.env}
        process = await asyncio.create_subprocess_exec(
            *self.args.argv(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=self.args.cwd, env=env, start_new_session=True)
        try:
            stdout, stderr = await asyncio.wait_for(
                process.communicate(payload.encode("utf-8")), self.args.timeout_s)
        except TimeoutError:
            await _kill(process)
            raise TimeoutError(f"no answer within {self.args.timeout_s:g} s (killed)") from None
        except BaseException:
            await _kill(process)
            raise
        if process.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
            raise ValueError(f"exited with status {process.returncode}; stderr: {tail!r}")
        return stdout.decode("utf-8", "replace")


class HttpArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field(description="models-config role whose api_base is the agent service")


class HttpAgent:
    """An agent service reached like an OpenAI-compatible chat endpoint (one call per
    answer, through the model client so it is cached and replayable like any model)."""

    SYSTEM = ("Answer the user's research question with a Markdown report. Cite sources with "
              "[n] markers and list them at the end as lines '[n]: URL'.")

    def __init__(self, name: str, args: HttpArgs, context: AgentContext) -> None:
        self.name = name
        self.args = args
        self._context = context
        self._client = context.model_client(name)

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        messages = conversation_messages(self.SYSTEM, conversation,
                                         check_word_limit(word_limit))
        started = rec.now()
        try:
            completion = await self._client.complete(self.args.role, messages)
        except DrarenaError as exc:
            rec.failed_call(started)
            error = f"agent service {self.name}: {exc}"
            rec.step(None, error=error)
            return rec.finish("", [], error=error)
        model = rec.model(completion)
        text = completion.text.strip()
        rec.step(model, error=None if text else "the service returned an empty answer")
        report, urls = cite.split_references(text)
        return rec.finish(report, urls, error=None if text else "empty answer")


def build_command(*, context: AgentContext, name: str = "command",
                  **args: Any) -> CommandAgent:
    return CommandAgent(name, parse_agent_args(CommandArgs, args, "command"), context)


def build_http(*, context: AgentContext, name: str = "http", **args: Any) -> HttpAgent:
    return HttpAgent(name, parse_agent_args(HttpArgs, args, "http"), context)
