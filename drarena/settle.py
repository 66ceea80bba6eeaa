"""Concurrent calls that fail the same way live and in replay.

`asyncio.gather` raises the first exception *in time* and leaves its siblings running
unobserved. In a run, a sibling's model calls that were still in flight when the first one
failed are never stored in the call cache; in its replay, where cached calls return at once
and in another order, a sibling can reach its unstored call first and the replay stops on a
cache miss instead of failing as the run did (seen: both judge orders of a round ran out of
JSON repairs, the AB order failed first, BA's last repair was never stored). Waiting for every
call and raising the first failure *by position* makes the failure a function of the cached
answers only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def gather_settled(*aws: Awaitable[T]) -> list[T]:
    """Await all of `aws` concurrently to the end; then raise the first exception in argument
    order, or return the results in argument order. Cancelling the caller cancels them all."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if not isinstance(r, BaseException)]
