"""Record/replay cache: keys, modes, failures never stored, corruption, concurrent writers."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path

import pytest

from drarena.errors import DrarenaError
from drarena.models.backend import TransientModelError
from drarena.models.cache import CallCache, request_key
from drarena.models.client import ModelCallError, ModelClient, ReplayMissError
from drarena.models.config import ModelsConfig, RetryPolicy, Sampling
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.models.types import ToolCall

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def config(path: Path, mode: str, **role: object) -> ModelsConfig:
    spec = {"model": "openai/m", "api_base": "http://127.0.0.1:1/v1", **role}
    return ModelsConfig.model_validate(
        {
            "roles": {"examiner": spec},
            "retry": RetryPolicy(max_attempts=2, base_delay_s=0),
            "cache": {"path": path, "mode": mode},
        }
    )


def test_key_is_canonical_and_covers_what_determines_the_answer() -> None:
    base = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "sampling": {"temperature": 0.0, "max_tokens": 8},
    }
    key = request_key(**base)  # type: ignore[arg-type]
    reordered = {
        "model": "m",
        "messages": [{"content": "hi", "role": "user"}],
        "sampling": {"max_tokens": 8, "temperature": 0.0},
    }
    assert request_key(**reordered) == key  # type: ignore[arg-type]
    changed = [
        {**base, "model": "n"},
        {**base, "messages": [{"role": "user", "content": "hi!"}]},
        {**base, "sampling": {"temperature": 0.7, "max_tokens": 8}},
        {**base, "tools": [{"type": "function"}]},
        {**base, "tool_choice": "required"},
        {**base, "response_format": {"type": "json_object"}},
    ]
    keys = {request_key(**c) for c in changed}  # type: ignore[arg-type]
    assert len(keys) == len(changed) and key not in keys


async def test_timeouts_and_endpoints_are_not_in_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    first = ModelClient(
        config(path, "read-write", timeout_s=5.0), backend=ScriptedBackendForTests([reply("Paris")])
    )
    recorded = await first.complete("examiner", MESSAGES)
    other = config(path, "replay", timeout_s=99.0, api_base="http://10.0.0.1:8000/v1")
    replayed = await ModelClient(other, backend=ScriptedBackendForTests([])).complete(
        "examiner", MESSAGES
    )
    assert replayed.key == recorded.key and replayed.text == "Paris" and replayed.cached


async def test_record_then_replay_makes_zero_calls_and_returns_identical_outputs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite"
    call = ToolCall(id="call-1", name="search", arguments='{"q": "x"}')
    recorder_backend = ScriptedBackendForTests([reply("Paris"), reply("", tool_calls=(call,))])
    recorder = ModelClient(config(path, "read-write"), backend=recorder_backend)
    asked = [MESSAGES, [{"role": "user", "content": "search please"}]]
    recorded = [await recorder.complete("examiner", m) for m in asked]
    again = await recorder.complete("examiner", MESSAGES)  # read-write hit: no new call
    assert again.cached and recorder.model_calls == 2

    replay_backend = ScriptedBackendForTests([])
    replayer = ModelClient(config(path, "replay"), backend=replay_backend)
    replayed = [await replayer.complete("examiner", m) for m in asked]
    assert replayer.model_calls == 0 and replay_backend.requests == []
    assert [r.content for r in replayed] == [r.content for r in recorded]
    assert replayed[1].tool_calls == recorded[1].tool_calls
    (got,) = replayed[1].tool_calls
    assert (got.name, got.arguments) == (call.name, call.arguments)
    assert replayer.usage()["examiner"].cached_calls == 2


async def test_tool_call_ids_come_from_the_request_not_the_server() -> None:
    """Servers draw ids at random; ids derived from the request keep later keys stable."""
    asked = [{"role": "user", "content": "search please"}]
    ids = []
    for server_id in ("chatcmpl-tool-aaa", "chatcmpl-tool-bbb"):
        call = ToolCall(id=server_id, name="search", arguments='{"q": "x"}')
        client = ModelClient(
            config(None, "off"),  # type: ignore[arg-type]  # cache off: no path
            backend=ScriptedBackendForTests([reply("", tool_calls=(call,))]),
        )
        done = await client.complete("examiner", asked)
        ids.append(done.tool_calls[0].id)
    assert ids[0] == ids[1] and ids[0].startswith("call-")


async def test_concurrent_identical_calls_agree_with_what_replay_returns(tmp_path: Path) -> None:
    class Yielding(ScriptedBackendForTests):
        async def complete(self, request):  # both calls are in flight before either ends
            answer = await super().complete(request)
            await asyncio.sleep(0.01 if answer.text == "first" else 0.05)
            return answer

    path = tmp_path / "c.sqlite"
    client = ModelClient(
        config(path, "read-write"), backend=Yielding([reply("first"), reply("second")])
    )
    both = await asyncio.gather(
        client.complete("examiner", MESSAGES), client.complete("examiner", MESSAGES)
    )
    assert client.model_calls == 2  # both missed the cache and called the model
    replayed = await ModelClient(
        config(path, "replay"), backend=ScriptedBackendForTests([])
    ).complete("examiner", MESSAGES)
    assert [c.text for c in both] == [replayed.text] * 2 == ["first"] * 2


async def test_replay_miss_names_the_call(tmp_path: Path) -> None:
    client = ModelClient(
        config(tmp_path / "c.sqlite", "replay"), backend=ScriptedBackendForTests([])
    )
    with pytest.raises(ReplayMissError, match=r"role 'examiner' \(openai/m\).*capital of France"):
        await client.complete("examiner", MESSAGES)
    assert client.model_calls == 0


async def test_failed_calls_are_never_stored(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    failing = ScriptedBackendForTests([TransientModelError("500"), TransientModelError("500")])
    client = ModelClient(config(path, "read-write"), backend=failing)
    with pytest.raises(ModelCallError):
        await client.complete("examiner", MESSAGES)
    assert len(CallCache(path)) == 0
    healthy = ModelClient(
        config(path, "read-write"), backend=ScriptedBackendForTests([reply("Paris")])
    )
    assert (await healthy.complete("examiner", MESSAGES)).text == "Paris"
    assert len(CallCache(path)) == 1


async def test_off_mode_never_touches_the_cache(tmp_path: Path) -> None:
    cfg = ModelsConfig.model_validate({"roles": {"examiner": {"model": "openai/m"}}})
    backend = ScriptedBackendForTests([reply("a"), reply("b")])
    client = ModelClient(cfg, backend=backend)
    assert [(await client.complete("examiner", MESSAGES)).text for _ in range(2)] == ["a", "b"]


def test_corrupt_cache_file_is_reported_not_reset(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not an sqlite database, it is garbage" * 100)
    before = path.read_bytes()
    with pytest.raises(DrarenaError, match=r"c\.sqlite is corrupt or not a drarena cache"):
        CallCache(path)
    assert path.read_bytes() == before


def test_corrupt_entry_is_reported(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")
    cache.put("k" * 64, "m", {}, {"text": "x"})
    cache._db.execute("UPDATE calls SET content='{truncated'")
    with pytest.raises(DrarenaError, match="entry kkkkkkkkkkkkkkkk is corrupt"):
        cache.get("k" * 64)


def _writer(path: str, worker: int, count: int) -> None:
    cache = CallCache(Path(path))
    for i in range(count):
        # every worker writes the shared keys 0..count-1 and its own keys
        cache.put(f"shared-{i}", "m", {}, {"text": f"w{worker}"})
        cache.put(f"own-{worker}-{i}", "m", {}, {"text": f"w{worker}-{i}"})
    cache.close()


def test_concurrent_writers_from_several_processes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    CallCache(path).close()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(path), w, 200)) for w in range(3)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
    assert [p.exitcode for p in workers] == [0, 0, 0]
    cache = CallCache(path)
    assert len(cache) == 200 + 3 * 200
    assert cache.get("own-2-199") == {"text": "w2-199"}
    assert (cache.get("shared-5") or {})["text"] in {"w0", "w1", "w2"}


def test_sampling_override_changes_key() -> None:
    a = Sampling(temperature=0.0).as_params()
    b = Sampling(temperature=0.0, seed=1).as_params()
    assert request_key(model="m", messages=MESSAGES, sampling=a) != request_key(
        model="m", messages=MESSAGES, sampling=b
    )
