"""The Swiss tournament: plan rounds, play matches concurrently, keep a resumable log.

Resumable by construction: round r's pairing depends only on the seed and the matches of
rounds before r, every match's generator is seeded by (run seed, pair, tree), and finished
matches are kept one file each. Re-running the same command recomputes the same plan, skips
what is on disk and plays the rest; the canonical log is rewritten in plan order after each
round, so an interrupted and resumed run ends byte-identical to an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import random
import sys
from collections.abc import Callable, Mapping, Sequence

from drarena.agents.base import Agent
from drarena.arena.match import MatchRunner, MatchSettings, match_rng, match_seed
from drarena.arena.swiss import Pairing, default_rounds, pair_round
from drarena.corpus.records import Doc, Tree
from drarena.corpus.treewalk import Expander, TreeWalker
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.ledger.rating import Game, fit_strengths, to_elo
from drarena.ledger.records import MatchRecord
from drarena.models.client import ModelClient
from drarena.records import Record
from drarena.settle import gather_settled


@dataclasses.dataclass(frozen=True, slots=True)
class PlannedMatch(Record):
    match_id: str
    swiss_round: int
    a: str
    b: str
    tree: str


def round_rng(seed: int, swiss_round: int, salt: str = "swiss") -> random.Random:
    digest = hashlib.sha256(f"{seed}\x1f{salt}\x1f{swiss_round}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def games(records: Sequence[MatchRecord]) -> list[Game]:
    return [Game(m.a, m.b, s) for m in records if (s := m.score_a()) is not None]


def current_ratings(agents: Sequence[str], records: Sequence[MatchRecord]) -> dict[str, float]:
    elo = to_elo(fit_strengths(list(agents), games(records)))
    return {a: float(r) for a, r in zip(agents, elo, strict=True)}


def plan_round(
    agents: Sequence[str],
    tree_ids: Sequence[str],
    swiss_round: int,
    seed: int,
    earlier: Sequence[MatchRecord],
    byes: Sequence[str],
) -> tuple[Pairing, list[PlannedMatch]]:
    """Round `swiss_round` (0-based): pure function of the seed and earlier matches."""
    agents = sorted(agents)
    ratings = None if swiss_round == 0 else current_ratings(agents, earlier)
    played = {frozenset((m.a, m.b)) for m in earlier}
    pairing = pair_round(agents, ratings, played, set(byes), round_rng(seed, swiss_round))
    planned = [
        PlannedMatch(f"r{swiss_round}-{a}-vs-{b}-{tree}", swiss_round, a, b, tree)
        for a, b in pairing.pairs
        for tree in tree_ids
    ]
    return pairing, planned


@dataclasses.dataclass
class Tournament:
    """Plays a planned tournament into a run folder (see drarena.ledger.folder)."""

    run: RunDir
    seed: int
    agents: Mapping[str, Agent]
    trees: Mapping[str, Tree]
    pages: Mapping[str, Doc]
    client: ModelClient
    settings: MatchSettings
    rounds: int | None = None
    concurrency: int = 2
    expander: Expander | None = None
    # live mode walks trees over today's pages (drarena.arena.live); None: the snapshot's
    walker_factory: Callable[[Tree, random.Random], TreeWalker] | None = None
    log: Callable[[str], None] = dataclasses.field(
        default=lambda line: print(line, file=sys.stderr, flush=True)
    )

    def n_rounds(self) -> int:
        return self.rounds or default_rounds(len(self.agents))

    async def play(self) -> list[MatchRecord]:
        """Play every round; returns the canonical log."""
        self.run.create()
        done = self.run.finished()
        names = sorted(self.agents)
        tree_ids = sorted(self.trees)
        log: list[MatchRecord] = []
        byes: list[str] = []
        for r in range(self.n_rounds()):
            pairing, planned = plan_round(names, tree_ids, r, self.seed, log, byes)
            if pairing.bye:
                byes.append(pairing.bye)
            pending = [p for p in planned if p.match_id not in done]
            self.log(
                f"swiss round {r + 1}/{self.n_rounds()}: "
                + ", ".join(f"{a} vs {b}" for a, b in pairing.pairs)
                + (f"; bye {pairing.bye}" if pairing.bye else "")
                + f" ({len(planned) - len(pending)} of {len(planned)} matches on disk)"
            )
            await self._play_all(pending, done)
            log += [done[p.match_id] for p in planned]
            self.run.write_log(log)
        return log

    async def _play_all(
        self, pending: Sequence[PlannedMatch], done: dict[str, MatchRecord]
    ) -> None:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(p: PlannedMatch) -> None:
            async with gate:
                record = await self.play_match(p)
            self.run.save_match(record)
            done[p.match_id] = record
            self.log(
                f"  {p.match_id}: {record.outcome.value} "
                f"{record.score.points_a}-{record.score.points_b} in "
                f"{len(record.rounds)} round(s)"
                + (f" [void: {record.void_reason[:120]}]" if record.void_reason else "")
            )

        await gather_settled(*(one(p) for p in pending))

    async def play_match(self, p: PlannedMatch) -> MatchRecord:
        rng = match_rng(self.seed, p.a, p.b, p.tree)
        walker = (
            self.walker_factory(self.trees[p.tree], rng)
            if self.walker_factory
            else TreeWalker(
                tree=self.trees[p.tree], pages=self.pages, rng=rng, expander=self.expander
            )
        )
        runner = MatchRunner(
            p.match_id,
            p.swiss_round,
            p.a,
            p.b,
            self.agents[p.a],
            self.agents[p.b],
            walker,
            self.client,
            self.settings,
            match_seed(self.seed, p.a, p.b, p.tree),
        )
        record = await runner.run()
        self.run.append_timings(runner.timings)
        return record

    async def place(self, newcomer: str, log: list[MatchRecord]) -> list[MatchRecord]:
        """Enter `newcomer` into a finished tournament without replaying it: it plays
        ceil(log2 n)+1 placement rounds, each against the nearest-rated agent it has not met
        (ties by name), the ratings refit after each. Deterministic, so it resumes too."""
        if newcomer not in self.agents:
            raise DrarenaError(f"{newcomer}: not among the tournament's agents")
        if any(newcomer in (m.a, m.b) for m in log):
            raise DrarenaError(f"{newcomer} has already played in this run")
        self.run.create()
        done = self.run.finished()
        names = sorted(self.agents)
        first = max((m.swiss_round for m in log), default=-1) + 1
        for i in range(default_rounds(len(names))):
            ratings = current_ratings(names, log)
            met = {m.a if m.b == newcomer else m.b for m in log if newcomer in (m.a, m.b)}
            rivals = [a for a in names if a != newcomer and a not in met]
            if not rivals:
                break
            rival = min(rivals, key=lambda a: (abs(ratings[a] - ratings[newcomer]), a))
            planned = [
                PlannedMatch(
                    f"r{first + i}-{newcomer}-vs-{rival}-{tree}", first + i, newcomer, rival, tree
                )
                for tree in sorted(self.trees)
            ]
            pending = [p for p in planned if p.match_id not in done]
            self.log(
                f"placement round {i + 1}: {newcomer} vs {rival} "
                f"({len(planned) - len(pending)} of {len(planned)} matches on disk)"
            )
            await self._play_all(pending, done)
            log = [*log, *(done[p.match_id] for p in planned)]
            self.run.write_log(log)
        return log
