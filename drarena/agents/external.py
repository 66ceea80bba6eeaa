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

Containment (the agent is untrusted code): it gets an allow-listed environment (BASE_ENV,
LC_*, the protocol variables drarena sets, and what the config lists in `env` / `pass_env`),
never drarena's own (API keys live there); stdout is read up to `max_stdout_bytes` and only a
tail of stderr is kept, so a flood cannot grow drarena's memory; the whole process group is
killed when the answer is in, at the time limit, or past the cap. While the frozen-mode guard
is active (drarena.models.guard) and the kernel allows it, the agent runs in a network
namespace with only loopback, bridged to its search and model servers (drarena.agents.sandbox).

The agent never outlives drarena. It runs in a session of its own (a Ctrl-C reaches drarena
only, which then kills it in order), so nothing else stopped it when a tournament or bench
ended without that cleanup (SIGTERM's default action, SIGKILL, a crash): it and what it had
started ran on as orphans. Two guards (drarena.procs) stop them then: Linux's parent-death
signal (SIGKILL) for the agent itself, and a watcher process that kills its whole process
group, as that signal reaches the direct child only and an agent is often a wrapper (`bash
run.sh`, `uv run`; in a namespace, the shim, whose child is the agent). Not covered on
drarena's death: a process the agent started that left its group (setsid, a daemon), which
only the kill at the end of an answer (_stop) finds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import sys
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from drarena.agents import citations as cite
from drarena.agents.base import Answer, Conversation
from drarena.agents.common import (
    Recorder,
    arguments_text,
    check_word_limit,
    conversation_messages,
    tool_event,
)
from drarena.agents.meter import ModelMeter, Usage
from drarena.agents.registry import AgentContext, parse_agent_args
from drarena.errors import DrarenaError
from drarena.models.config import ModelRole
from drarena.models.guard import NetworkGuard, is_loopback
from drarena.models.jsonbytes import without_lone_surrogates
from drarena.procs import die_with_parent, group_guard
from drarena.registry import ComponentSpec

if TYPE_CHECKING:
    from drarena.agents.frozenweb import FrozenWebPlan, WebTrace

PROTOCOL = 1
STDERR_TAIL = 400  # characters of stderr shown in an error
STDERR_KEEP = 1 << 16  # bytes of stderr kept while reading (the tail)
MAX_STDOUT = 4 << 20
CHUNK = 1 << 16
REAP_S = 10.0  # after a kill, how long drarena waits for the pipes to close
MAX_AGENT_TIMEOUT_S = 86_400.0  # a command agent's timeout_s: a day
# What a command agent inherits from drarena's environment besides LC_* (and `pass_env`).
BASE_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PYTHONHASHSEED",
        "PYTHONSAFEPATH",
        "PYTHONNOUSERSITE",
    }
)
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
HOST_NAME = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$|^[0-9A-Fa-f:.]+$"
)


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
    timeout_s: float = Field(
        300.0,
        gt=0,
        le=MAX_AGENT_TIMEOUT_S,
        allow_inf_nan=False,  # `.inf` was accepted: an agent that never answers, never killed
        description="wall time before it is killed (at most a day)",
    )
    cwd: Path | None = Field(None, description="working directory")
    env: dict[str, str] = Field(
        default_factory=dict, description="variables set for the agent (values in config)"
    )
    pass_env: tuple[str, ...] = Field(
        (),
        description="names passed on from drarena's environment (e.g. an API key's "
        "variable); nothing else is, beyond BASE_ENV and LC_*",
    )
    search_url: str | None = Field(None, description="overrides the run's search server URL")
    model_role: str | None = Field(
        None,
        description="models-config role given as DRARENA_MODEL_API_BASE and "
        "DRARENA_MODEL (litellm naming), bridged into the namespace",
    )
    max_stdout_bytes: int = Field(
        MAX_STDOUT, gt=0, le=1 << 30, description="stdout past this kills the agent (an error)"
    )
    web_proxy: bool | None = Field(
        None,
        description="frozen runs: the agent's HTTP and HTTPS go through drarena's frozen-web "
        "proxy (pages from the snapshot, search APIs from search_retriever; HTTP(S)_PROXY and "
        "the CA variables set). null: when mitmproxy is installed (make setup-proxy); true: "
        "required (an answer without it is an error); false: never",
    )
    search_retriever: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(kind="bm25"),
        description="retriever behind the search APIs the proxy emulates (SearXNG, Tavily, "
        "Brave, DuckDuckGo), answered through the run's tool record",
    )
    search_page_chars: int = Field(
        20_000,  # = webproxy.searchapi.RAW_CONTENT_CHARS (a test holds them equal)
        gt=0,
        le=1_000_000,
        description="characters of each page a search API's answer carries whole (Tavily's "
        "raw_content and /extract). Lower it for an agent that reads pages only so and a model "
        "with a short context: Open Deep Research puts five such pages in one prompt",
    )

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: list[str] | str) -> list[str] | str:
        argv = shlex.split(value) if isinstance(value, str) else value
        if not argv or not argv[0].strip():
            raise ValueError("must name a program (an argv list or a command string)")
        return value

    @field_validator("pass_env")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not re.match(ENV_NAME, name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    def argv(self) -> list[str]:
        return shlex.split(self.command) if isinstance(self.command, str) else self.command


def agent_environment(
    parent: Mapping[str, str], args: CommandArgs, protocol: Mapping[str, str]
) -> dict[str, str]:
    """The allow-listed environment of a command agent (pure): BASE_ENV, LC_* and pass_env
    from `parent`, then `args.env`, then the protocol variables drarena sets."""
    keep = BASE_ENV | set(args.pass_env)
    env = {k: v for k, v in parent.items() if k in keep or k.startswith("LC_")}
    return {**env, **args.env, **protocol}


def loopback_port(url: str | None) -> tuple[str, int] | None:
    """(host, port) of a loopback http(s) URL, the ones bridged into the namespace."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    host = parts.hostname or ""
    return (host, port) if is_loopback(host) else None


class OutputCapError(ValueError):
    def __init__(self, cap: int, read: int) -> None:
        super().__init__(f"stdout passed its cap of {cap} bytes ({read} bytes read; killed)")


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    data = bytearray()
    while chunk := await stream.read(min(CHUNK, cap + 1 - len(data))):
        data += chunk
        if len(data) > cap:
            raise OutputCapError(cap, len(data))
    return bytes(data)


async def _read_tail(stream: asyncio.StreamReader, keep: int) -> bytes:
    tail = bytearray()
    while chunk := await stream.read(CHUNK):
        tail += chunk
        if len(tail) > keep:
            del tail[:-keep]
    return bytes(tail)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """Write the request; an agent that does not read it is judged by its exit status."""
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(data)
            await stdin.drain()
    finally:
        stdin.close()


def request_json(
    conversation: Conversation, word_limit: tuple[int, int], search_url: str | None
) -> str:
    return json.dumps(
        {
            "protocol": PROTOCOL,
            "question": conversation.question,
            "history": [{"question": t.question, "answer": t.answer} for t in conversation.history],
            "word_limit": list(word_limit),
            "search_url": search_url,
        },
        ensure_ascii=False,
    )


def parse_reply(stdout: str) -> ExternalReply:
    """The agent's JSON answer; ValueError names what is wrong (never a traceback)."""
    text = stdout.strip()
    if not text:
        raise ValueError("stdout is empty")
    # the protocol's lines end in "\n" (str.splitlines would also break at U+2028, U+0085
    # and others, which JSON allows raw inside a string); a trailing "\r" is JSON whitespace
    candidates = [text, [ln for ln in text.split("\n") if ln.strip()][-1]]
    problem = ""
    for candidate in candidates:
        try:
            return ExternalReply.model_validate_json(candidate)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(root)"
            if len(where) > 80 or not where.isprintable():  # a field name is the agent's text
                where = ascii(where[:80])[1:-1]
            problem = f"{where}: {err['msg']}"
    shown = text if len(text) <= 200 else text[:197] + "..."
    raise ValueError(f"stdout is not a JSON answer ({problem}); it starts {shown!r}")


async def _discard(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and await stream.read(CHUNK):
        pass


def _processes() -> dict[int, int]:
    """pid -> parent pid of every process this user can see (/proc; {} where there is none)."""
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    stat = fh.read()
                parents[int(entry.name)] = int(stat.rsplit(b")", 1)[1].split()[1])
    return parents


def descendants(pid: int) -> set[int]:
    """Every process below `pid` in the process tree, whatever its group or session: a
    grandchild that called setsid() left the agent's group, so killpg missed it."""
    children: dict[int, list[int]] = {}
    for child, parent in _processes().items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def pipe_holders(inodes: set[int]) -> set[int]:
    """Processes (other than this one) with one of the pipes of `inodes` open: what keeps an
    agent's stdout or stderr from closing after it was killed (a daemon it started)."""
    if not inodes:
        return set()
    wanted = {f"pipe:[{inode}]" for inode in inodes}
    found: set[int] = set()
    for pid in _processes():
        if pid == os.getpid():
            continue
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(fd.path) in wanted:
                        found.add(pid)
                        break
    return found


def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _pipe_inodes(process: asyncio.subprocess.Process) -> set[int]:
    """The inodes of the agent's stdout and stderr pipes (this end is enough: one pipe)."""
    inodes: set[int] = set()
    transport: Any = getattr(process, "_transport", None)  # asyncio's, for the pipes' fds
    for fd in (1, 2):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            pipe = transport.get_pipe_transport(fd).get_extra_info("pipe")
            inodes.add(os.fstat(pipe.fileno()).st_ino)
    return inodes


async def _stop(
    process: asyncio.subprocess.Process,
    tasks: list[asyncio.Future[Any]],
    inodes: Collection[int] = (),
) -> None:
    """Kill the agent and everything it started, then reap. Its process group goes first;
    then every process below it in the tree (a grandchild that called setsid() left the
    group: it survived the kill and held the pipes, so a 2 s timeout took 8 s) and any other
    process still holding its stdout or stderr (a daemon that double-forked). The pipes are
    drained (data dropped): asyncio's wait() returns only once they are closed, and a reader
    stopped at the cap leaves stdout paused. Anything still holding a pipe (another user's
    process) is abandoned after REAP_S."""
    family = descendants(process.pid)  # before the kill: the tree still hangs together
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the agent and anything in its group
    _kill_all(family)
    _kill_all(pipe_holders(set(inodes)))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    with contextlib.suppress(TimeoutError, ProcessLookupError):
        await asyncio.wait_for(
            asyncio.gather(_discard(process.stdout), _discard(process.stderr), process.wait()),
            REAP_S,
        )


class CommandAgent:
    """Runs a command once per answer, with a time limit."""

    def __init__(self, name: str, args: CommandArgs, context: AgentContext) -> None:
        self.name = name
        self.args = args
        self._context = context
        self.search_url = args.search_url or context.search_url
        self.protocol_env: dict[str, str] = {}
        self.bridged: list[tuple[str, int]] = []  # loopback services besides the model's
        if self.search_url:
            self.protocol_env["DRARENA_SEARCH_URL"] = self.search_url
        # the model endpoint: the agent reaches it through a meter that counts its tokens
        self.model_base: str | None = None
        if args.model_role is not None:
            model = context.model_client(name).role(args.model_role)
            self.protocol_env["DRARENA_MODEL"] = model.model
            # one base URL in the protocol: a role with several replicas (api_bases) gives
            # its first, which drarena itself also balances calls onto
            self.model_base = next(iter(model.endpoints()), None)
        target = loopback_port(self.search_url)
        if target is not None:
            self.bridged.append(target)
        self._web: FrozenWebPlan | None = None  # made on the first frozen answer

    def web_plan(self) -> FrozenWebPlan:
        if self._web is None:
            from drarena.agents.frozenweb import FrozenWebPlan

            self._web = FrozenWebPlan(
                self._context,
                self.args.web_proxy,
                self.args.search_retriever,
                self.args.search_page_chars,
            )
        return self._web

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        word_limit = check_word_limit(word_limit)
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        payload = request_json(conversation, word_limit, self.search_url)
        started = rec.now()
        from drarena.agents.frozenweb import WebTrace

        trace: WebTrace | None = None
        if NetworkGuard.is_active():  # a frozen run: the web is the snapshot, through the proxy
            trace = WebTrace()
        try:
            stdout, usage = await self._recorded_run(payload, trace)
            reply = parse_reply(stdout)
        except (OSError, ValueError, TimeoutError, DrarenaError) as exc:
            error = f"external agent {self.name}: {exc}"
            self._web_step(rec, trace, started, [])
            rec.step(None, error=error, note=f"command {shlex.join(self.args.argv())}")
            return rec.finish("", [], error=error)
        self._web_step(rec, trace, started, reply.citations)
        rec.prompt_tokens += usage.prompt_tokens
        rec.completion_tokens += usage.completion_tokens
        events = [
            tool_event(
                f"ext-{i}", c.name, arguments_text(c.arguments), started, started, urls=c.urls
            )
            for i, c in enumerate(reply.tool_calls)
        ]
        note = f"command {shlex.join(self.args.argv())}"
        if usage.calls:  # a record from before the meter has none: its note is unchanged
            note += (
                f"; model calls {usage.calls}, tokens {usage.prompt_tokens} in, "
                f"{usage.completion_tokens} out"
                + (f" ({usage.unmetered} calls reported none)" if usage.unmetered else "")
            )
        rec.step(None, events, note=note)
        report, urls = reply.report, reply.citations
        if not urls:
            report, urls = cite.split_references(report)
        return rec.finish(report, urls)

    def _web_step(
        self, rec: Recorder, trace: WebTrace | None, started: float, cited: list[str]
    ) -> None:
        """The proxy's log as one step: a web_fetch / web_search event per request."""
        if trace is not None:
            rec.step(None, trace.events(started, rec.now()), note=trace.summary(cited))

    async def _recorded_run(self, payload: str, trace: WebTrace | None) -> tuple[str, Usage]:
        """`_run` through the run's tool record. Why: a replay must give the same bytes with
        no model and no agent process (the agent's venv, its model server and the proxy may
        all be gone). Recording, a reply stored by an earlier try of this request (a resumed
        run) is reused, a stored failure is tried again, and what the agent printed (or
        why it failed) is stored with the proxy's log; replaying, both are read back and
        nothing starts. The reply keeps the tokens the meter counted (`usage`)."""
        record = self._context.tool_record
        if record is None:
            return await self._run(payload, trace)
        request = {
            "agent": self.name,
            "argv": self.args.argv(),
            "payload": payload,
            "frozen": trace is not None,
        }
        key, stored = record.reply(request)
        if stored is None or ("error" in stored and not record.replaying):
            try:
                stdout, usage = await self._run(payload, trace)
                stored = {"stdout": stdout}
                if usage.calls:
                    stored["usage"] = usage.to_dict()
            except (OSError, ValueError, TimeoutError, DrarenaError) as exc:
                stored = {"error": str(exc)}
            if trace is not None:
                stored["trace"] = trace.to_json()
            record.store_reply(key, request, stored)
        elif trace is not None:
            try:
                trace.restore(stored.get("trace"))
            except ValueError as exc:
                record.damaged(record.where(key, str(exc)))
        if "error" in stored:
            raise DrarenaError(stored["error"])
        try:
            usage = Usage.parse(stored.get("usage"))
        except ValueError as exc:
            record.damaged(record.where(key, str(exc)))
        return str(stored["stdout"]), usage

    async def _run(self, payload: str, trace: WebTrace | None = None) -> tuple[str, Usage]:
        """Run the agent once, its model calls through a meter (their tokens: `Usage`); with a
        `trace` (a frozen run), behind the frozen-web proxy when it is available (trace.note
        says why not), its log left in `trace`."""
        if self.model_base is None:
            return await self._web_run(payload, trace, {}, list(self.bridged)), Usage()
        meter = ModelMeter(self.model_base)
        async with meter.running():
            env = {"DRARENA_MODEL_API_BASE": meter.base}
            targets = [*self.bridged, ("127.0.0.1", meter.port)]
            stdout = await self._web_run(payload, trace, env, targets)
        return stdout, meter.usage

    async def _web_run(
        self,
        payload: str,
        trace: WebTrace | None,
        env: dict[str, str],
        direct: list[tuple[str, int]],
    ) -> str:
        """`direct`: the loopback services the agent reaches without the proxy (bridged into
        its namespace)."""
        if trace is None:
            return await self._isolated(payload, env, direct)
        plan = self.web_plan()
        why = plan.unavailable()
        if why:
            trace.note = why
            return await self._isolated(payload, env, direct)
        from drarena.agents.frozenweb import PROXY_ENV, SEARXNG_ENV
        from drarena.webproxy.searchapi import SEARXNG_HOST

        async with plan.running(trace) as proxy:
            extra = proxy.info.client_env(direct=direct) | {PROXY_ENV: proxy.info.url} | env
            if proxy.frozen.handlers.hosts():
                extra[SEARXNG_ENV] = f"https://{SEARXNG_HOST}"
            return await self._isolated(payload, extra, [*direct, ("127.0.0.1", proxy.info.port)])

    async def _isolated(
        self, payload: str, extra_env: dict[str, str], bridged: list[tuple[str, int]]
    ) -> str:
        env = agent_environment(os.environ, self.args, {**self.protocol_env, **extra_env})
        # In a frozen run (the guard is active) the agent gets a namespace of its own.
        isolation = None
        if NetworkGuard.is_active():
            from drarena.agents import sandbox

            isolation = sandbox.probe()
        if isolation is None or not isolation.available:
            return await self._exchange(self.args.argv(), env, payload)
        hide = isolation.shim_args(self._hidden(env))
        async with sandbox.bridges(bridged) as bridge_args:
            argv = [
                *isolation.prefix,
                sys.executable,
                *sandbox.SHIM,
                *bridge_args,
                *hide,
                "--",
                *self.args.argv(),
            ]
            return await self._exchange(argv, env, payload)

    def _hidden(self, env: Mapping[str, str]) -> list[str]:
        """drarena's folders to hide from the agent (run folder, snapshot, index), less any
        that holds what the agent needs to run: its working folder, its command, Python."""
        import shutil
        import tempfile

        from drarena.agents import sandbox

        command, *rest = self.args.argv()
        found = shutil.which(command, path=env.get("PATH")) if os.sep not in command else command
        cwd = self.args.cwd or Path.cwd()
        keep = [cwd, Path(tempfile.gettempdir()), Path(sys.prefix), Path(sys.executable)]
        for arg in [found or "", *rest]:  # the command, and any argument naming a file
            with contextlib.suppress(OSError, ValueError):
                if arg and len(arg) < 4096 and (cwd / arg).exists():
                    keep.append(cwd / arg)  # an absolute arg stays absolute
        return sandbox.hideable(self._context.private_paths, keep)

    async def _exchange(self, argv: list[str], env: dict[str, str], payload: str) -> str:
        """Run `argv` once with `payload` on stdin: its stdout, or the error. It and its
        group die with drarena (the module docstring says why), and are killed at the end."""
        try:  # before the process starts: a failure here must leave nothing running
            data = payload.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (e.g. a question from a command line)
            data = without_lone_surrogates(payload).encode("utf-8")
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.args.cwd,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent(signal.SIGKILL),  # drarena killed: the agent too
        )
        assert process.stdin and process.stdout and process.stderr
        inodes = _pipe_inodes(process)
        out = asyncio.ensure_future(_read_capped(process.stdout, self.args.max_stdout_bytes))
        err = asyncio.ensure_future(_read_tail(process.stderr, STDERR_KEEP))
        tasks: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(_feed(process.stdin, data)),
            out,
            err,
        ]

        async def exchange() -> tuple[bytes, bytes]:
            await asyncio.gather(*tasks)  # the first failure (a flood) ends the exchange
            await process.wait()
            return out.result(), err.result()

        try:
            async with group_guard(process.pid):  # and anything it started in its group
                stdout, stderr = await asyncio.wait_for(exchange(), self.args.timeout_s)
        except TimeoutError:
            raise TimeoutError(f"no answer within {self.args.timeout_s:g} s (killed)") from None
        finally:  # the agent, anything it left running, or a flood
            await _stop(process, tasks, inodes)
        if process.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
            raise ValueError(f"exited with status {process.returncode}; stderr: {tail!r}")
        return stdout.decode("utf-8", "replace")


class HttpArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field(description="models-config role whose api_base is the agent service")
    allow_hosts: tuple[str, ...] = Field(
        (),
        description="non-loopback hosts its api_base may name in a frozen run (each by "
        "name; frozen mode refuses any other)",
    )

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for host in value:
            if not HOST_NAME.match(host):
                raise ValueError(f"{host!r} is not a host name (no scheme, port or path)")
        return tuple(h.lower() for h in value)


def check_endpoints(
    agents: Iterable[tuple[str, str, Mapping[str, Any]]],
    roles: Mapping[str, ModelRole],
    served: Collection[str],
    frozen: bool,
) -> None:
    """Before a run writes anything: a command agent's `model_role` exists, and in frozen
    mode each `http` agent's endpoint is on loopback or named in its allow_hosts (one line
    naming the field otherwise). `agents`: (name, kind, args); roles in `served` are bound
    to drarena's own model server and pass like every model role."""
    for name, kind, raw in agents:
        if kind == "command":
            wanted = parse_agent_args(CommandArgs, dict(raw), "command").model_role
            if wanted is not None and wanted not in roles:
                raise DrarenaError(
                    f"agents.{name}.args.model_role: no role {wanted!r} in "
                    f"models.roles (have {', '.join(sorted(roles))})"
                )
        if kind != "http" or not frozen:
            continue
        args = parse_agent_args(HttpArgs, dict(raw), "http")
        role = roles.get(args.role)
        if role is None or args.role in served:
            continue  # an unknown role is reported by the role check
        endpoints = role.endpoints()  # api_base, or every replica of api_bases
        if not endpoints:
            raise DrarenaError(
                f"agents.{name}.args.role: role {args.role!r} has no api_base (the provider's "
                "default endpoint); frozen mode needs an api_base on loopback or named in "
                f"agents.{name}.args.allow_hosts"
            )
        field = "api_base" if role.api_bases is None else "api_bases"
        for endpoint in endpoints:
            host = urlsplit(endpoint).hostname or ""
            if not host or (not is_loopback(host) and host.lower() not in args.allow_hosts):
                raise DrarenaError(
                    f"agents.{name}.args.allow_hosts: frozen mode refuses the http agent's "
                    f"endpoint {host or endpoint} (models.roles.{args.role}.{field}); name "
                    "the host there to allow it"
                )


class HttpAgent:
    """An agent service reached like an OpenAI-compatible chat endpoint (one call per
    answer, through the model client so it is cached and replayable like any model)."""

    SYSTEM = (
        "Answer the user's research question with a Markdown report. Cite sources with "
        "[n] markers and list them at the end as lines '[n]: URL'."
    )

    def __init__(self, name: str, args: HttpArgs, context: AgentContext) -> None:
        self.name = name
        self.args = args
        self._context = context
        self._client = context.model_client(name)

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        rec = Recorder(self.name, self._context.clock, self._context.url_checker)
        messages = conversation_messages(self.SYSTEM, conversation, check_word_limit(word_limit))
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


def build_command(*, context: AgentContext, name: str = "command", **args: Any) -> CommandAgent:
    return CommandAgent(name, parse_agent_args(CommandArgs, args, "command"), context)


def build_http(*, context: AgentContext, name: str = "http", **args: Any) -> HttpAgent:
    return HttpAgent(name, parse_agent_args(HttpArgs, args, "http"), context)
