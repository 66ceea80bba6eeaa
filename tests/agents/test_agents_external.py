"""External agents: the documented example command agent against the real search server
code, the faults (crash, hang, garbage, missing command), and the HTTP chat adapter through
litellm against a local OpenAI-compatible service."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from agent_helpers import PAGES, MemoryRetrieverForTests
from aiohttp import web
from loopback_servers import start_app

from drarena.agents import sandbox
from drarena.agents.base import Conversation
from drarena.agents.external import CommandAgent, descendants
from drarena.agents.registry import AgentContext, build_agent
from drarena.errors import DrarenaError
from drarena.models.client import ModelClient
from drarena.models.config import ModelRole, ModelsConfig, RetryPolicy
from drarena.models.guard import NetworkGuard
from drarena.search.server import make_mcp

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "command_agent.py"


@pytest.fixture(scope="module")
def search_url() -> Iterator[str]:
    """drarena's search server app (the real Starlette routes) over an in-memory retriever."""
    app = make_mcp(MemoryRetrieverForTests(), "memory").streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "search server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def command_agent(command: list[str], **args: Any) -> Any:
    context = AgentContext(url_checker=set(PAGES).__contains__)
    return build_agent(
        {"kind": "command", "args": {"command": command, **args}}, context, name="ext"
    )


async def test_example_agent_searches_the_frozen_web(search_url: str) -> None:
    agent = command_agent([sys.executable, str(EXAMPLE)], search_url=search_url)
    answer = await agent.answer(Conversation("asyncio coroutines"), (20, 60))
    assert answer.error is None, answer.error
    assert answer.report.startswith("## asyncio coroutines")
    assert [c.url for c in answer.citations] == ["http://site.test/asyncio"]
    assert answer.check.valid == 1 and answer.check.fabricated == 0
    (event,) = answer.trajectory.tool_events()
    assert event.name == "search" and event.urls == ("http://site.test/asyncio",)
    assert json.loads(event.arguments) == {"query": "asyncio coroutines"}


async def test_example_agent_without_a_search_server() -> None:
    answer = await command_agent([sys.executable, str(EXAMPLE)]).answer(
        Conversation("anything"), (1, 10)
    )
    assert answer.error is None and "Nothing found in the archive." in answer.report
    assert answer.citations == ()


async def test_request_format_on_stdin() -> None:
    echo = (
        "import json,sys; r=json.load(sys.stdin); "
        "print(json.dumps({'report': json.dumps(r, sort_keys=True)}))"
    )
    conversation = Conversation("first?").then("answer one", "second?")
    answer = await command_agent([sys.executable, "-c", echo], search_url="http://s.test").answer(
        conversation, (5, 9)
    )
    assert json.loads(answer.report) == {
        "protocol": 1,
        "question": "second?",
        "search_url": "http://s.test",
        "history": [{"question": "first?", "answer": "answer one"}],
        "word_limit": [5, 9],
    }


async def test_a_question_with_a_lone_surrogate_reaches_the_agent_as_u_fffd() -> None:
    """Invalid UTF-8 on a command line arrives as a lone surrogate, which has no UTF-8 bytes:
    encoded before the process starts, as U+FFFD (before, the encode failed after the spawn,
    outside the cleanup, and left the agent running)."""
    echo = "import json,sys; r=json.load(sys.stdin); print(json.dumps({'report': r['question']}))"
    agent = command_agent([sys.executable, "-c", echo])
    answer = await agent.answer(Conversation("caf\udce9?"), (1, 9))
    assert answer.error is None, answer.error
    assert answer.report == "caf\ufffd?"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            "import sys; sys.stderr.write('Traceback: boom'); sys.exit(3)",
            "exited with status 3; stderr: 'Traceback: boom'",
        ),
        ("print('thinking...'); print('the answer is 42')", "stdout is not a JSON answer"),
        ("print(json.dumps({'answer': 'x'}))", "stdout is not a JSON answer (report: Field "),
        ("pass", "stdout is empty"),
    ],
)
async def test_crash_and_garbage_become_recorded_errors(script: str, expected: str) -> None:
    answer = await command_agent([sys.executable, "-c", f"import json\n{script}"]).answer(
        Conversation("q"), (1, 5)
    )
    assert answer.report == "" and answer.error is not None
    assert expected in answer.error
    assert answer.trajectory.steps[0].error == answer.error


async def test_logs_before_the_answer_line_are_tolerated() -> None:
    script = 'print(\'log line\'); print(\'{"report": "ok [1]", "citations": ["http://x.test/"]}\')'
    answer = await command_agent([sys.executable, "-c", script]).answer(Conversation("q"), (1, 5))
    assert answer.report == "ok [1]" and answer.check.fabricated_urls == ("http://x.test/",)


async def test_hanging_agent_is_killed_at_the_time_limit(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    )
    answer = await command_agent([sys.executable, "-c", script], timeout_s=1.5).answer(
        Conversation("q"), (1, 5)
    )
    assert answer.error == "external agent ext: no answer within 1.5 s (killed)"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_missing_command() -> None:
    answer = await command_agent(["/nonexistent/agent-binary"]).answer(Conversation("q"), (1, 5))
    assert answer.error is not None and "No such file" in answer.error


# --- HTTP adapter ---------------------------------------------------------------------------


@pytest.fixture
async def agent_service() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A local OpenAI-compatible agent service: /good answers with references, /broken 500s,
    /empty returns an empty message."""
    seen: list[dict[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        mode = request.match_info["mode"]
        if mode == "broken":
            return web.json_response({"error": {"message": "agent crashed"}}, status=500)
        text = (
            ""
            if mode == "empty"
            else (
                "Asyncio runs coroutines [1]; see also [2].\n\n[1]: http://site.test/asyncio\n"
                "[2]: http://made-up.test/page"
            )
        )
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )

    app = web.Application()
    app.router.add_post("/{mode}/v1/chat/completions", handle)
    runner, port = await start_app(app)
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


def http_agent(base: str, mode: str) -> Any:
    config = ModelsConfig(
        roles={"svc": ModelRole(model="openai/deep-agent", api_base=f"{base}/{mode}/v1")},
        retry=RetryPolicy(max_attempts=1),
    )
    context = AgentContext(client=ModelClient(config), url_checker=set(PAGES).__contains__)
    return build_agent({"kind": "http", "args": {"role": "svc"}}, context, name="svc")


async def test_http_agent_answer_and_citation_check(agent_service: Any) -> None:
    base, seen = agent_service
    conversation = Conversation("first?").then("one", "What is asyncio?")
    answer = await http_agent(base, "good").answer(conversation, (10, 40))
    assert answer.report == "Asyncio runs coroutines [1]; see also [2]."
    assert answer.check.valid == 1 and answer.check.fabricated_urls == ("http://made-up.test/page",)
    assert answer.prompt_tokens == 11 and answer.completion_tokens == 7
    assert [m["role"] for m in seen[0]["messages"]] == ["system", "user", "assistant", "user"]
    assert "tools" not in seen[0]


async def test_http_agent_faults(agent_service: Any) -> None:
    base, _ = agent_service
    broken = await http_agent(base, "broken").answer(Conversation("q"), (1, 5))
    assert broken.error is not None and "agent crashed" in broken.error
    assert broken.report == ""
    empty = await http_agent(base, "empty").answer(Conversation("q"), (1, 5))
    assert empty.error == "empty answer"
    assert empty.trajectory.steps[0].error == "the service returned an empty answer"


# --- hardening: empty command, environment allow-list, output cap ---------------------------


@pytest.mark.parametrize("command", [[], "", "   ", [""]])
def test_empty_command_is_one_line(command: Any) -> None:
    with pytest.raises(DrarenaError, match=r"^agent command: args\.command: .*") as info:
        command_agent(command)
    assert "\n" not in str(info.value)


async def test_parent_environment_stays_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret in drarena's environment reaches the agent only when the config names it."""
    monkeypatch.setenv("DRARENA_TEST_SECRET", "s3cret")
    monkeypatch.setenv("LC_TEST_LOCALE", "kept")
    show = (
        "import json, os; print(json.dumps({'report': json.dumps({k: os.environ.get(k) "
        "for k in ('DRARENA_TEST_SECRET', 'LC_TEST_LOCALE', 'EXTRA', 'DRARENA_SEARCH_URL')}"
        "), 'citations': []})); assert os.environ.get('PATH')"
    )
    seen = await command_agent(
        [sys.executable, "-c", show], env={"EXTRA": "x"}, search_url="http://127.0.0.1:9/"
    ).answer(Conversation("q"), (1, 5))
    assert seen.error is None, seen.error
    assert json.loads(seen.report) == {
        "DRARENA_TEST_SECRET": None,
        "LC_TEST_LOCALE": "kept",
        "EXTRA": "x",
        "DRARENA_SEARCH_URL": "http://127.0.0.1:9/",
    }
    passed = await command_agent(
        [sys.executable, "-c", show], pass_env=["DRARENA_TEST_SECRET"]
    ).answer(Conversation("q"), (1, 5))
    assert json.loads(passed.report)["DRARENA_TEST_SECRET"] == "s3cret"


def test_pass_env_names_are_validated() -> None:
    with pytest.raises(DrarenaError, match=r"^agent command: args\.pass_env: .*'A=B' is not"):
        command_agent([sys.executable, "-c", "pass"], pass_env=["A=B"])


async def test_stdout_flood_is_cut_at_the_cap(tmp_path: Path) -> None:
    """64 MiB on stdout: drarena reads 4 MiB + 1 byte, kills the agent, records why."""
    pid_file = tmp_path / "pid"
    flood = (
        f"import os, sys; open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "block = b'x' * (1 << 20)\n"
        "for _ in range(64): sys.stdout.buffer.write(block)\n"
        "sys.stdout.flush()\n"
    )
    answer = await command_agent([sys.executable, "-c", flood]).answer(Conversation("q"), (1, 5))
    assert answer.error == (
        "external agent ext: stdout passed its cap of 4194304 bytes (4194305 bytes read; killed)"
    )
    assert answer.report == "" and answer.trajectory.steps[0].error == answer.error
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_stderr_keeps_a_bounded_tail() -> None:
    noisy = (
        "import sys\nfor i in range(20000): sys.stderr.write(f'log line {i}\\n')\n"
        "sys.stderr.write('the real problem'); sys.exit(2)"
    )
    answer = await command_agent([sys.executable, "-c", noisy], max_stdout_bytes=1000).answer(
        Conversation("q"), (1, 5)
    )
    assert answer.error is not None and answer.error.endswith("the real problem'")
    assert "exited with status 2" in answer.error and len(answer.error) < 600


# --- network namespace (frozen mode) ----------------------------------------------------------

NETNS = sandbox.probe()
needs_netns = pytest.mark.skipif(
    not NETNS.available, reason=f"no network namespace here: {NETNS.reason}"
)
PROBE = """
import errno, json, os, socket, sys, urllib.request
request = json.load(sys.stdin)
out = {"netns": os.readlink("/proc/self/ns/net")}
s = socket.socket()
s.settimeout(20)
try:
    s.connect(("192.0.2.1", 80))  # TEST-NET-1: never routed
    out["public"] = "connected"
except OSError as exc:
    out["public"] = errno.errorcode.get(exc.errno, str(exc))
try:
    socket.getaddrinfo("example.com", 80)
    out["dns"] = "resolved"
except OSError:
    out["dns"] = "failed"
if request["search_url"]:
    with urllib.request.urlopen(request["search_url"] + "/search?q=asyncio&k=1", timeout=20) as r:
        out["search"] = [h["url"] for h in json.load(r)["hits"]]
print(json.dumps({"report": json.dumps(out), "citations": []}))
"""


@needs_netns
async def test_frozen_mode_agent_has_only_loopback_and_the_bridged_search(search_url: str) -> None:
    """Under the frozen-mode guard: a public address is unreachable at once (not a timeout),
    a name lookup fails, and the search server on the host's loopback answers through the
    bridge at its usual URL."""
    agent = command_agent([sys.executable, "-c", PROBE], search_url=search_url)
    with NetworkGuard():
        answer = await agent.answer(Conversation("q"), (1, 5))
    assert answer.error is None, answer.error
    seen = json.loads(answer.report)
    assert seen["netns"] != os.readlink("/proc/self/ns/net")
    assert seen["public"] == "ENETUNREACH"
    assert seen["dns"] == "failed"
    assert seen["search"] == ["http://site.test/asyncio"]


@needs_netns
async def test_example_agent_in_the_namespace(search_url: str) -> None:
    agent = command_agent([sys.executable, str(EXAMPLE)], search_url=search_url)
    with NetworkGuard():
        answer = await agent.answer(Conversation("asyncio coroutines"), (20, 60))
    assert answer.error is None, answer.error
    assert [c.url for c in answer.citations] == ["http://site.test/asyncio"]


async def test_without_the_guard_the_agent_shares_the_host_network() -> None:
    """Live mode (no guard): the agent is not moved (it may use the live web)."""
    show = (
        "import json, os; print(json.dumps({'report': "
        "os.readlink('/proc/self/ns/net'), 'citations': []}))"
    )
    answer = await command_agent([sys.executable, "-c", show]).answer(Conversation("q"), (1, 5))
    assert answer.report == os.readlink("/proc/self/ns/net")


@needs_netns
async def test_namespace_agent_killed_at_the_time_limit(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    )
    with NetworkGuard():
        answer = await command_agent([sys.executable, "-c", script], timeout_s=3).answer(
            Conversation("q"), (1, 5)
        )
    assert answer.error == "external agent ext: no answer within 3 s (killed)"
    assert gone_soon(int(pid_file.read_text()))


def gone_soon(pid: int, within_s: float = 30.0) -> bool:
    """SIGKILL went to the whole group; the agent (a grandchild inside the namespace, not
    drarena's child) dies asynchronously, so wait for the kernel, not for a fixed time."""
    deadline = time.monotonic() + within_s
    while not not_running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def not_running(pid: int) -> bool:
    """Gone, or a zombie (killed, waiting for init, which adopted it from the shim)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_isolation_note_for_the_run_header() -> None:
    assert sandbox.isolation_note(True, False) == "none: no command agents"
    assert sandbox.isolation_note(False, True).startswith("none: live mode")
    assert sandbox.isolation_note(True, True) == NETNS.describe()
    assert NETNS.describe() in ("netns", "netns+mountns") or NETNS.describe().startswith("none: ")


def test_hideable_keeps_what_the_agent_needs(tmp_path: Path) -> None:
    """Folders to hide: existing ones, resolved, once each; never one that is or holds the
    agent's working folder, command or the temporary folder."""
    run, snap, tool = tmp_path / "run", tmp_path / "snap", tmp_path / "tools"
    for folder in (run, snap, tool / "bin"):
        folder.mkdir(parents=True)
    (tmp_path / "link").symlink_to(snap)
    private = [run, tmp_path / "link", snap, tmp_path / "missing", tool]
    assert sandbox.hideable(private, [tool / "bin" / "agent"]) == [str(run), str(snap)]
    assert sandbox.hideable(private, [run]) == [str(snap), str(tool)]  # works in the run folder
    assert sandbox.hideable([tmp_path], [snap]) == []  # holds what the agent needs
    assert sandbox.hideable([snap], [tmp_path]) == [str(snap)]  # inside a kept folder: hidden


def test_without_setpriv_the_sandbox_isolates_the_network_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mount namespace hides files only if the agent then runs without capabilities (else
    it could unmount them): without setpriv, the probe settles for the network."""
    which = sandbox.shutil.which
    monkeypatch.setattr(
        sandbox.shutil, "which", lambda name: None if name == "setpriv" else which(name)
    )
    found = sandbox.probe.__wrapped__()
    assert not found.hides_files
    assert found.describe() == ("netns" if NETNS.available else found.describe())
    assert found.shim_args(["/somewhere"]) == []


@pytest.mark.skipif(not NETNS.hides_files, reason=f"no mount namespace here: {NETNS.describe()}")
def test_the_shim_fails_closed_when_it_cannot_hide(tmp_path: Path) -> None:
    """A folder the shim cannot hide (here: gone by the time it mounts) stops the agent before
    it runs, with one line on stderr."""
    marker = tmp_path / "ran"
    argv = [*NETNS.prefix, sys.executable, *sandbox.SHIM]
    argv += NETNS.shim_args([str(tmp_path / "gone")])
    argv += ["--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
    assert done.returncode == 126
    gone = tmp_path / "gone"
    assert done.stderr.decode().strip().splitlines() == [
        f"sandbox: cannot hide {gone}: No such file or directory"
    ]
    assert not marker.exists()


# --- http agents in frozen mode ---------------------------------------------------------------


def frozen_config(api_base: str | list[str] | None, **args: Any) -> Any:
    from drarena.config.tournament import parse_config

    role: dict[str, Any] = {"model": "openai/deep-agent"}
    if isinstance(api_base, list):
        role["api_bases"] = api_base
    elif api_base is not None:
        role["api_base"] = api_base
    return parse_config(
        {
            "name": "t",
            "snapshot": "snapshots/pydocs",
            "models": {
                "roles": {
                    "examiner": {"model": "served"},
                    "agent": {"model": "served"},
                    "svc": role,
                }
            },
            "agents": [
                {"name": "a", "kind": "oracle"},
                {"name": "deep", "kind": "http", "args": {"role": "svc", **args}},
            ],
        },
        "t.yaml",
    )


def test_frozen_mode_refuses_a_remote_http_agent_unless_named() -> None:
    from drarena.runs.session import check_components

    with pytest.raises(DrarenaError) as info:
        check_components(frozen_config("http://agents.example.com:8000/v1"))
    assert str(info.value) == (
        "agents.deep.args.allow_hosts: frozen mode refuses the http agent's endpoint "
        "agents.example.com (models.roles.svc.api_base); name the host there to allow it"
    )
    check_components(
        frozen_config("http://agents.example.com:8000/v1", allow_hosts=["Agents.Example.com"])
    )
    check_components(frozen_config("http://127.0.0.1:8000/v1"))
    check_components(frozen_config("http://agents.example.com/v1").as_live())
    with pytest.raises(
        DrarenaError,
        match=r"^agents\.deep\.args\.role: role 'svc' has no "
        r"api_base",
    ):
        check_components(frozen_config(None))


def test_frozen_mode_checks_every_replica_of_an_http_agents_role() -> None:
    """A role with several replicas (api_bases) has no api_base: every replica's host is
    checked as api_base's is (before, such a role was refused as having no endpoint)."""
    from drarena.runs.session import check_components

    check_components(frozen_config(["http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]))
    remote = ["http://127.0.0.1:8001/v1", "http://gpu2.example.com:8000/v1"]
    with pytest.raises(DrarenaError) as info:
        check_components(frozen_config(remote))
    assert str(info.value) == (
        "agents.deep.args.allow_hosts: frozen mode refuses the http agent's endpoint "
        "gpu2.example.com (models.roles.svc.api_bases); name the host there to allow it"
    )
    check_components(frozen_config(remote, allow_hosts=["gpu2.example.com"]))


def test_a_command_agents_model_role_with_replicas_gives_the_first_to_its_meter() -> None:
    """The first replica is what the agent's model meter relays to (the meter's own port is
    what the agent is given and what is bridged: test_model_role_is_bridged_into_the_namespace)."""
    config = ModelsConfig(
        roles={
            "svc": ModelRole(
                model="openai/m", api_bases=("http://127.0.0.1:8101/v1", "http://127.0.0.1:8102/v1")
            )
        }
    )
    context = AgentContext(client=ModelClient(config))
    agent = build_agent(
        {"kind": "command", "args": {"command": ["true"], "model_role": "svc"}}, context
    )
    assert isinstance(agent, CommandAgent)
    assert agent.model_base == "http://127.0.0.1:8101/v1"
    assert agent.protocol_env["DRARENA_MODEL"] == "openai/m" and agent.bridged == []


def test_unknown_model_role_of_a_command_agent_is_one_line() -> None:
    from drarena.config.tournament import parse_config
    from drarena.runs.session import check_components

    config = parse_config(
        {
            "name": "t",
            "snapshot": "snapshots/pydocs",
            "models": {"roles": {"examiner": {"model": "served"}, "agent": {"model": "served"}}},
            "agents": [
                {"name": "a", "kind": "oracle"},
                {
                    "name": "ext",
                    "kind": "command",
                    "args": {"command": ["true"], "model_role": "critic"},
                },
            ],
        },
        "t.yaml",
    )
    with pytest.raises(DrarenaError) as info:
        check_components(config)
    assert str(info.value) == (
        "agents.ext.args.model_role: no role 'critic' in models.roles (have agent, examiner, "
        "judge, taskgen)"
    )


def test_allow_hosts_are_host_names() -> None:
    from drarena.runs.session import check_components

    with pytest.raises(
        DrarenaError,
        match=r"^agents\.deep \(http\): args\.allow_hosts: "
        r".*not a host name",
    ):
        check_components(frozen_config("http://a.test/v1", allow_hosts=["http://a.test/"]))


CHAT = """
import json, os, sys, urllib.request
json.load(sys.stdin)
body = json.dumps({"model": os.environ["DRARENA_MODEL"].removeprefix("openai/"),
                   "messages": [{"role": "user", "content": "q"}]}).encode()
url = os.environ["DRARENA_MODEL_API_BASE"] + "/chat/completions"
request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
with urllib.request.urlopen(request, timeout=20) as response:
    text = json.load(response)["choices"][0]["message"]["content"]
print(json.dumps({"report": text, "citations": []}))
"""


@needs_netns
async def test_model_role_is_bridged_into_the_namespace(agent_service: Any) -> None:
    """`model_role`: the role's loopback endpoint reaches the agent as DRARENA_MODEL_API_BASE
    and answers through its own bridge (the search URL is not the only port)."""
    base, seen = agent_service
    config = ModelsConfig(
        roles={"svc": ModelRole(model="openai/deep-agent", api_base=f"{base}/good/v1")}
    )
    context = AgentContext(client=ModelClient(config), url_checker=set(PAGES).__contains__)
    agent = build_agent(
        {"kind": "command", "args": {"command": [sys.executable, "-c", CHAT], "model_role": "svc"}},
        context,
        name="ext",
    )
    with NetworkGuard():
        answer = await agent.answer(Conversation("q"), (1, 5))
    assert answer.error is None, answer.error
    assert answer.report.startswith("Asyncio runs coroutines [1]")
    assert [body["model"] for body in seen] == ["deep-agent"]
    assert (answer.prompt_tokens, answer.completion_tokens) == (11, 7)  # counted by its meter


@needs_netns
async def test_one_port_under_two_loopback_names_is_bridged_once(agent_service: Any) -> None:
    """The search URL says `localhost:P` and the model endpoint `127.0.0.1:P`: both bridges
    named one address inside the namespace, and the shim died with EADDRINUSE before the
    agent started. The first bridge now serves it, and the agent reaches the model."""
    base, seen = agent_service
    config = ModelsConfig(
        roles={"svc": ModelRole(model="openai/deep-agent", api_base=f"{base}/good/v1")}
    )
    context = AgentContext(client=ModelClient(config), url_checker=set(PAGES).__contains__)
    args = {
        "command": [sys.executable, "-c", CHAT],
        "model_role": "svc",
        "search_url": base.replace("127.0.0.1", "localhost"),
    }
    agent = build_agent({"kind": "command", "args": args}, context, name="ext")
    with NetworkGuard():
        answer = await agent.answer(Conversation("q"), (1, 5))
    assert answer.error is None, answer.error
    assert answer.report.startswith("Asyncio runs coroutines [1]")
    assert [body["model"] for body in seen] == ["deep-agent"]


async def test_without_a_namespace_the_agent_falls_back_and_the_header_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the kernel refuses a namespace (simulated: no unshare on PATH), a frozen-mode
    agent still runs, on the host network with the allow-listed environment, and the note
    for run.json names the reason."""
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox, "probe", sandbox.probe.__wrapped__)  # not the cached answer
    assert sandbox.isolation_note(True, True) == "none: unshare not found (util-linux)"
    monkeypatch.setenv("DRARENA_TEST_SECRET", "s3cret")
    show = (
        "import json, os; print(json.dumps({'report': json.dumps([os.readlink("
        "'/proc/self/ns/net'), os.environ.get('DRARENA_TEST_SECRET')]), 'citations': []}))"
    )
    with NetworkGuard():
        answer = await command_agent([sys.executable, "-c", show]).answer(Conversation("q"), (1, 5))
    assert json.loads(answer.report) == [os.readlink("/proc/self/ns/net"), None]


async def test_a_grandchild_that_left_the_group_is_killed_with_the_agent(tmp_path: Path) -> None:
    """Regression (issue 38, item 11): killpg missed a grandchild that called setsid(), which
    survived the kill and held the agent's pipes (a 2 s time limit took 8 s). Every process
    below the agent, and any still holding its pipes, is now killed with it."""
    pid_file = tmp_path / "pid"
    daemon = (
        f"import os, time; os.setsid(); open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
        "time.sleep(120)"
    )
    script = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', {daemon!r}]); time.sleep(120)"
    )
    answer = await command_agent([sys.executable, "-c", script], timeout_s=2).answer(
        Conversation("q"), (1, 5)
    )
    assert answer.error == "external agent ext: no answer within 2 s (killed)"
    assert gone_soon(int(pid_file.read_text()))


async def test_a_daemon_that_double_forked_and_holds_the_pipes_is_killed(tmp_path: Path) -> None:
    """Its parent exits at once (it is nobody's descendant then): it is found by the pipe it
    holds."""
    pid_file = tmp_path / "pid"
    daemon = (
        "import os, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    script = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', {daemon!r}]).wait(); time.sleep(120)"
    )
    answer = await command_agent([sys.executable, "-c", script], timeout_s=2).answer(
        Conversation("q"), (1, 5)
    )
    assert answer.error == "external agent ext: no answer within 2 s (killed)"
    assert gone_soon(int(pid_file.read_text()))


# A tournament's process in small: it runs one command agent (argv[3:]) and waits. argv[1]:
# which guards to keep ("both"; "deathsig": no group watcher; "watcher": no prctl), so each is
# tested alone too; argv[2]: "netns" runs it under the frozen-mode guard (in the namespace).
PARENT = """
import asyncio, contextlib, sys
from drarena import procs
from drarena.agents import external
from drarena.agents.base import Conversation
from drarena.agents.registry import AgentContext, build_agent
from drarena.models.guard import NetworkGuard

if sys.argv[1] == "watcher":
    procs.load_prctl = lambda: None
elif sys.argv[1] == "deathsig":
    @contextlib.asynccontextmanager
    async def no_watcher(pgid):
        yield
    external.group_guard = no_watcher
spec = {"kind": "command", "args": {"command": sys.argv[3:], "timeout_s": 300}}
agent = build_agent(spec, AgentContext(), name="ext")
with NetworkGuard() if sys.argv[2] == "netns" else contextlib.nullcontext():
    asyncio.run(agent.answer(Conversation("q"), (1, 5)))
"""
# The agent: a wrapper (as `bash run.sh` or `uv run` is) whose child, in its group, does the
# work; it writes "agent-pid child-pid" once both run.
WRAPPER = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="follows the processes through /proc")
@pytest.mark.parametrize(
    ("guards", "where"),
    [
        ("both", "host"),
        pytest.param("both", "netns", marks=needs_netns),
        ("watcher", "host"),
        ("deathsig", "host"),
    ],
    ids=["both", "both-netns", "watcher-only", "deathsig-only"],
)
def test_the_agent_dies_with_the_process_that_started_it(
    tmp_path: Path, guards: str, where: str
) -> None:
    """A tournament or bench killed with SIGKILL (or SIGTERM's default action: no cleanup
    runs) took its agent down with it only since the agent's parent-death signal and group
    watcher (drarena.procs); before, the agent and its children, in a session of their own,
    ran on as orphans. The parent-death signal alone reaches the agent only, not its child
    (deathsig-only); under the frozen-mode guard the agent runs below the namespace shim."""
    pids = tmp_path / "pids"
    agent = [sys.executable, "-c", WRAPPER, str(pids)]
    log = (tmp_path / "parent.log").open("wb")
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, guards, where, *agent], stdout=log, stderr=log
    )
    started: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not pids.exists() and parent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pids.exists(), (tmp_path / "parent.log").read_text()
        started = [int(pid) for pid in pids.read_text().split()]
        # alive, and below the parent, before the kill: the test cannot pass vacuously
        assert not any(not_running(pid) for pid in started)
        assert set(started) <= descendants(parent.pid)
        parent.kill()
        parent.wait()
        expected = started[:1] if guards == "deathsig" else started
        deadline = time.monotonic() + 10
        while not all(not_running(pid) for pid in expected) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in expected if not not_running(pid)] == []
    finally:
        log.close()
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
