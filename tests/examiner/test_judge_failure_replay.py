"""A judge call that fails for good fails the same way in replay (scripted backend: control
flow only). Both orders run concurrently; when one order runs out of JSON repairs while the
other is still calling, the run must wait for the other so that every call it made is in the
cache, and must raise the failure of the first order by position, not by time: a replay
(cached calls return at once, in another order) then raises the same error instead of
stopping on a cache miss. The test makes the BA order fail first in time."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from judge_helpers import TASK, A, B

from drarena.errors import DrarenaError
from drarena.examiner.judge import judge_answers
from drarena.models.backend import BackendReply, TransientModelError
from drarena.models.client import ModelClient, ReplayMissError
from drarena.models.config import ModelsConfig
from drarena.models.scripted import reply
from drarena.settle import gather_settled


class BadJsonSlowForOneOrderForTests:
    """Every reply is broken JSON; a request whose first shown answer is A (order AB) waits
    before answering, so the BA order uses up its repairs first."""

    def __init__(self) -> None:
        self.calls = 0

    def is_retriable(self, exc: BaseException) -> bool:
        return isinstance(exc, TransientModelError)

    async def complete(self, request: Mapping[str, Any]) -> BackendReply:
        self.calls += 1
        first = request["messages"][0]["content"]
        if first.index("Answer A: the csv") < first.index("Answer B: no idea"):
            await asyncio.sleep(0.05)
        return reply('{"verdict": [')


def client(tmp_path: Path, mode: str, backend: Any) -> ModelClient:
    config = ModelsConfig.model_validate(
        {
            "roles": {"examiner": {"model": "openai/scripted"}},
            "cache": {"path": str(tmp_path / "cache.sqlite"), "mode": mode},
        }
    )
    return ModelClient(config, backend=backend)


def test_a_failed_judgment_replays_as_the_same_failure(tmp_path: Path) -> None:
    backend = BadJsonSlowForOneOrderForTests()
    live = client(tmp_path, "read-write", backend)
    with pytest.raises(DrarenaError) as ran:
        asyncio.run(judge_answers(live, "examiner", TASK, A, B))
    assert backend.calls == 6  # both orders: a call and two repairs each, all finished

    again = client(tmp_path, "replay", BadJsonSlowForOneOrderForTests())
    with pytest.raises(DrarenaError) as replayed:
        asyncio.run(judge_answers(again, "examiner", TASK, A, B))
    assert not isinstance(replayed.value, ReplayMissError), replayed.value
    assert str(replayed.value) == str(ran.value)
    assert again.model_calls == 0 and again.replay_misses == []


def test_gather_settled_waits_for_all_and_raises_by_position() -> None:
    finished: list[str] = []

    async def late_failure() -> int:
        await asyncio.sleep(0.05)
        finished.append("late")
        raise ValueError("first by position")

    async def early_failure() -> int:
        finished.append("early")
        raise KeyError("first in time")

    async def fine() -> int:
        await asyncio.sleep(0.02)
        finished.append("fine")
        return 3

    with pytest.raises(ValueError, match="first by position"):
        asyncio.run(gather_settled(late_failure(), early_failure(), fine()))
    assert sorted(finished) == ["early", "fine", "late"]

    async def two() -> list[int]:
        return await gather_settled(fine(), fine())

    assert asyncio.run(two()) == [3, 3]
