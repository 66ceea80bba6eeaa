"""End to end on the real parts: the committed snapshot indexed by Lucene and FAISS, the real
CPU vLLM server (SmolLM2-135M), the real search server and the real WARC citation check.

The model is tiny, and its words differ between CPUs (vLLM's kernels differ on AVX2, AVX-512
and AMX), so these tests check what must hold whatever it says: real searches and opened pages
in the trajectory, replayable cache keys, token accounting, an ending the trajectory explains,
and honest citation checks. Never the content of an answer, nor whether the model managed to
write one.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback_servers import free_port

from drarena.agents.base import Answer, Conversation, SourcePage
from drarena.agents.citations import SnapshotUrlChecker
from drarena.agents.registry import AgentContext, build_agent
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.serve import ServerHandle
from drarena.search.docstore import DocStore

REPO = Path(__file__).resolve().parents[2]
QUESTION = "How do I sort a list of dictionaries by a key in Python?"
WORDS = (10, 25)
SORTING = "http://127.0.0.1:8765/howto/sorting.html"


@pytest.fixture(scope="module")
def checker(pydocs_indexed: tuple[Path, Path]) -> Iterator[SnapshotUrlChecker]:
    check = SnapshotUrlChecker(pydocs_indexed[0])
    yield check
    check.close()


def context(
    server: ServerHandle,
    indexed: tuple[Path, Path],
    checker: SnapshotUrlChecker,
    max_tokens: int = 128,
    search_url: str | None = None,
) -> AgentContext:
    config = ModelsConfig.model_validate(
        {
            "roles": {
                "agent": {
                    "model": server.litellm_model,
                    "api_base": server.api_base,
                    "sampling": {"temperature": 0.0, "max_tokens": max_tokens},
                    "timeout_s": 300,
                }
            },
            "retry": {"max_attempts": 2},
        }
    )
    return AgentContext(
        client=ModelClient(config),
        snapshot_dir=indexed[0],
        index_root=indexed[1],
        url_checker=checker,
        search_url=search_url,
    )


FINISH = {"stop", "length", "tool_calls"}


def assert_sound(answer: Answer) -> None:
    """What holds whatever a 135M model writes: every model call reached the server and is
    recorded with a replayable key, its real token counts and finish reason, and adds up to
    the answer's totals; an answer without a report has an error its trajectory records;
    citations are checked; the record round-trips."""
    steps = answer.trajectory.steps
    assert not [s.error for s in steps if (s.error or "").startswith("model call failed")]
    calls = answer.trajectory.model_calls()
    assert calls and all(
        len(c.key) == 64
        and c.prompt_tokens > 0
        and c.completion_tokens > 0
        and c.finish_reason in FINISH
        and not c.cached
        for c in calls
    ), calls
    assert answer.prompt_tokens == sum(c.prompt_tokens for c in calls)
    assert answer.completion_tokens == sum(c.completion_tokens for c in calls)
    if answer.error is None:
        assert answer.report.strip()
    else:  # the model did not manage an answer: the trajectory says where
        assert any(answer.error in e for e in answer.trajectory.errors()), answer.error
    assert answer.check.checked and answer.check.cited == len({c.url for c in answer.citations})
    assert answer.check.valid + answer.check.fabricated == answer.check.cited
    assert all(c.valid == (c.url not in answer.check.fabricated_urls) for c in answer.citations)
    assert answer.model_s <= answer.wall_s
    assert Answer.from_json(answer.to_json()) == answer


@pytest.mark.model
async def test_react_bm25_searches_opens_and_answers(
    model_server: ServerHandle, pydocs_indexed: tuple[Path, Path], checker: SnapshotUrlChecker
) -> None:
    ctx = context(model_server, pydocs_indexed, checker)
    # seed search on the question, one forced open, then the step limit forces the answer
    agent = build_agent(
        {"kind": "react", "args": {"retriever": {"kind": "bm25"}, "max_steps": 1}}, ctx
    )
    answer = await agent.answer(Conversation(QUESTION), WORDS)
    assert_sound(answer)
    events = answer.trajectory.tool_events()
    search = next(e for e in events if e.name == "search")
    assert search.error is None and search.docids  # real Lucene hits over the snapshot
    docs = DocStore.from_snapshot(pydocs_indexed[0])
    assert all(docs.get(d).url == u for d, u in zip(search.docids, search.urls, strict=True))
    opened = [e for e in events if e.name == "open"]
    assert opened and opened[0].error is None and opened[0].urls[0] in search.urls
    assert answer.limit_hit == "step limit reached: 1 steps"
    assert all(checker(u) for u in search.urls)


@pytest.mark.model
async def test_rag_dense_answers_from_retrieved_pages(
    model_server: ServerHandle, pydocs_indexed: tuple[Path, Path], checker: SnapshotUrlChecker
) -> None:
    ctx = context(model_server, pydocs_indexed, checker)
    agent = build_agent(
        {"kind": "rag", "args": {"retriever": {"kind": "dense"}, "k": 2, "context_chars": 2000}},
        ctx,
    )
    answer = await agent.answer(Conversation(QUESTION), WORDS)
    assert_sound(answer)
    first = answer.trajectory.steps[0]
    assert all(t.error is None for t in first.tools), first.tools
    assert [t.name for t in first.tools] == ["search", "open", "open"], first.tools


@pytest.mark.model
async def test_closed_book_and_oracle(
    model_server: ServerHandle, pydocs_indexed: tuple[Path, Path], checker: SnapshotUrlChecker
) -> None:
    ctx = context(model_server, pydocs_indexed, checker)
    closed = await build_agent({"kind": "closed_book"}, ctx).answer(Conversation(QUESTION), WORDS)
    assert_sound(closed)
    assert len(closed.trajectory.model_calls()) >= 1
    assert not [t for t in closed.trajectory.tool_events() if t.name != "answer"]
    doc = DocStore.from_snapshot(pydocs_indexed[0]).get(SORTING)
    targets = (SourcePage(doc.url, doc.title, doc.contents),)
    oracle = await build_agent({"kind": "oracle", "args": {"context_chars": 2000}}, ctx).answer(
        Conversation(QUESTION, targets=targets), WORDS
    )
    assert_sound(oracle)
    assert oracle.trajectory.steps[0].tools[0].urls == (SORTING,)


@pytest.mark.model
async def test_http_adapter_against_the_model_server(
    model_server: ServerHandle, pydocs_indexed: tuple[Path, Path], checker: SnapshotUrlChecker
) -> None:
    """The vLLM server is itself an OpenAI-compatible chat endpoint: a stand-in service."""
    ctx = context(model_server, pydocs_indexed, checker, max_tokens=48)
    answer = await build_agent({"kind": "http", "args": {"role": "agent"}}, ctx).answer(
        Conversation("Name one Python sorting function.").then("sorted()", "And another?"), WORDS
    )
    assert_sound(answer)


@pytest.fixture(scope="module")
def search_server(pydocs_indexed: tuple[Path, Path]) -> Iterator[str]:
    """`drarena serve-search` (BM25) over the indexed fixture, as a user would run it."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "drarena.cli",
            "serve-search",
            str(pydocs_indexed[0]),
            "--index-root",
            str(pydocs_indexed[1]),
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("drarena serve-search did not come up")
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.slow
async def test_example_command_agent_on_the_frozen_search_server(
    search_server: str, checker: SnapshotUrlChecker
) -> None:
    agent = build_agent(
        {
            "kind": "command",
            "args": {
                "command": [sys.executable, str(REPO / "examples" / "command_agent.py")],
                "timeout_s": 60,
            },
        },
        AgentContext(url_checker=checker, search_url=search_server),
    )
    answer = await agent.answer(Conversation("sorting HOW TO key functions"), WORDS)
    assert answer.error is None
    assert len(answer.citations) == 3
    assert answer.check.checked and answer.check.valid == 3 and answer.check.fabricated == 0
    assert answer.trajectory.tool_events()[0].urls == tuple(c.url for c in answer.citations)


@pytest.mark.slow
async def test_planted_fabricated_citation_is_flagged(checker: SnapshotUrlChecker) -> None:
    planted = "http://127.0.0.1:8765/howto/sorting-secrets.html"
    script = (
        "import json; print(json.dumps({'report': 'Use sorted() [1] or magic [2].', "
        f"'citations': [{SORTING!r}, {planted!r}]}}))"
    )
    agent = build_agent(
        {"kind": "command", "args": {"command": [sys.executable, "-c", script]}},
        AgentContext(url_checker=checker),
    )
    answer = await agent.answer(Conversation(QUESTION), WORDS)
    assert answer.check.cited == 2 and answer.check.valid == 1
    assert answer.check.fabricated == 1 and answer.check.fabricated_urls == (planted,)
    assert [c.valid for c in answer.citations] == [True, False]
