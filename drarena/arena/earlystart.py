"""Early start: the next round's matches that are certain, started before the round ends.

Why: round r+1's pairing needs every result of round r, so a round-by-round scheduler idles the
model servers while a round's last matches finish. When at most `max_open` matches of round r
are unfinished, round r+1 is planned under every outcome they could still have (A wins, tie,
B wins, void: 4^k plans); a match planned under all of them is certain and starts at once.
Since a match's seed, id and inputs do not depend on when it starts, the matches played and
every record are those of the round-by-round scheduler.

certain_matches is the pure rule; EarlyStart runs it for one round of the tournament
(drarena.arena.tournament), in a thread beside the matches.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence

from drarena.arena.swiss import PlannedMatch, Result, plan_round
from drarena.ledger.records import MatchRecord

# every score a match can end with: A wins, tie, B wins, void
OUTCOMES: tuple[float | None, ...] = (1.0, 0.5, 0.0, None)


def certain_matches(
    agents: Sequence[str],
    tree_ids: Sequence[str],
    swiss_round: int,
    seed: int,
    history: Sequence[Result | PlannedMatch],
    byes: Sequence[str],
    *,
    max_open: int = 4,
    stop: threading.Event | None = None,
) -> list[PlannedMatch]:
    """The matches of round `swiss_round` that are planned whatever the unfinished matches in
    `history` end with (pure; `stop`, once set, ends it early with none certain).

    `history` is the log as it will be written, in plan order, with each match not yet finished
    still as its PlannedMatch. Round `swiss_round` is planned under every combination of
    OUTCOMES for those (4^k plans); a match in all of them (same id: same round, agents and
    tree) is certain. More than `max_open` unfinished matches: none is (the plans cost 4^k BT
    fits). The result keeps plan order; with nothing unfinished it is the plan itself.
    `stop` lets the scheduler drop a plan it no longer needs: one fit per combination, so
    4 open matches among 128 agents cost ~0.6 s of CPU, longer than a round's tail."""
    open_at = [i for i, h in enumerate(history) if isinstance(h, PlannedMatch)]
    if len(open_at) > max_open:
        return []
    common: list[PlannedMatch] | None = None
    for combo in itertools.product(OUTCOMES, repeat=len(open_at)):
        if stop is not None and stop.is_set():
            return []
        filled = dict(zip(open_at, combo, strict=True))
        results = [
            Result(h.a, h.b, filled[i]) if isinstance(h, PlannedMatch) else h
            for i, h in enumerate(history)
        ]
        _, planned = plan_round(agents, tree_ids, swiss_round, seed, results, byes)
        if common is None:
            common = planned
        else:
            keep = {p.match_id for p in planned}
            common = [p for p in common if p.match_id in keep]
        if not common:
            break
    return common or []


@dataclasses.dataclass(frozen=True, slots=True)
class EarlyPlan:
    """One early-start plan of `next_round`: the round's matches that were still open when it
    was asked, and the next round's matches it found certain (see certain_matches)."""

    next_round: int
    open: tuple[PlannedMatch, ...]
    certain: tuple[PlannedMatch, ...]


@dataclasses.dataclass(frozen=True)
class Standing:
    """The tournament as the next round's pairing reads it: the agents and trees (sorted),
    the seed, the byes given so far and the log of the rounds before, as the tournament
    wrote it."""

    agents: Sequence[str]
    tree_ids: Sequence[str]
    seed: int
    byes: tuple[str, ...]
    earlier: Sequence[MatchRecord]


class EarlyStart:
    """The early-start planner of one round: which of `next_round`'s matches are certain while
    `planned` (this round's matches) finish, asked in a thread beside them.

    Never in the matches' way: when a match finishes the round is replanned with one open match
    fewer (the older plan stopped), and when the last one finishes the round ends at once, the
    plan still running stopped and dropped (close). (Awaited in line, a 128-agent plan held the
    next round back ~0.6 s.) `standing`: the tournament before this round; `on_plan`: told of
    each plan that ran to the end, before its certain matches start."""

    def __init__(
        self,
        standing: Standing,
        next_round: int,
        planned: Sequence[PlannedMatch],
        *,
        max_open: int,
        on_plan: Callable[[EarlyPlan], None] | None = None,
    ) -> None:
        self.agents = standing.agents
        self.tree_ids = standing.tree_ids
        self.seed = standing.seed
        self.next_round = next_round
        self.byes = standing.byes
        self.earlier = standing.earlier
        self.planned = planned
        self.max_open = max_open
        self.on_plan = on_plan
        self._asked: tuple[PlannedMatch, ...] | None = None
        self._planning: asyncio.Future[list[PlannedMatch]] | None = None
        self._stop = threading.Event()

    def take(self) -> list[PlannedMatch]:
        """What the last plan found certain, once it has ended (on_plan told first); then the
        plan is forgotten. Nothing while it runs, or when none was asked for."""
        planning = self._planning
        if planning is None or not planning.done():
            return []
        found = planning.result()
        if self.on_plan is not None and self._asked is not None:
            self.on_plan(EarlyPlan(self.next_round, self._asked, tuple(found)))
        self._planning = None
        return found

    async def replan(self, done: Mapping[str, MatchRecord]) -> None:
        """Ask for a plan when at most max_open of the round's matches are unfinished and
        their count is not the last plan's. A plan under fewer open matches is 4x cheaper per
        match finished, and what it finds certain includes what the older one would: that
        one is stopped and dropped."""
        unfinished = [p for p in self.planned if p.match_id not in done]
        if not 0 < len(unfinished) <= self.max_open:
            return
        if self._asked is not None and len(unfinished) == len(self._asked):
            return
        if self._planning is not None:
            self._stop.set()
            await asyncio.wait({self._planning})
            self._planning = None
            self._stop = threading.Event()
        self._asked = tuple(unfinished)
        # matches may have finished while the older plan stopped: the history says so
        history: list[Result | PlannedMatch] = [Result.of(m) for m in self.earlier]
        history += [Result.of(done[p.match_id]) if p.match_id in done else p for p in self.planned]
        self._planning = asyncio.ensure_future(
            asyncio.to_thread(
                certain_matches,
                self.agents,
                self.tree_ids,
                self.next_round,
                self.seed,
                history,
                self.byes,
                max_open=self.max_open,
                stop=self._stop,
            )
        )

    def running(self) -> set[asyncio.Future[list[PlannedMatch]]]:
        """The plan in its thread, to wait on beside the matches (none: empty)."""
        return set() if self._planning is None else {self._planning}

    async def close(self) -> None:
        """The round is over (or failed): a plan still running is told to stop, which its
        thread notices within one fit; what it found is not started."""
        self._stop.set()
        if self._planning is not None:
            await asyncio.wait({self._planning})
