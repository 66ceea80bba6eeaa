"""The Swiss tournament: plan rounds, play matches concurrently, keep a resumable log.

Resumable by construction: round r's pairing depends only on the seed and the matches of
rounds before r (drarena.arena.swiss.plan_round), every match's generator is seeded by (run
seed, pair, tree), and finished matches are kept one file each. Re-running the same command
recomputes the same plan, skips what is on disk and plays the rest; the canonical log is
rewritten in plan order after each round, so an interrupted and resumed run ends
byte-identical to an uninterrupted one.

Early start: while a round's last matches finish, the next round's certain matches start
(drarena.arena.earlystart: its planner runs beside each round); the matches played and every
record are those of the round-by-round scheduler.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import sys
from collections.abc import Callable, Collection, Mapping, Sequence

from drarena.agents.base import Agent
from drarena.arena.earlystart import EarlyPlan, EarlyStart, Standing
from drarena.arena.match import MatchRunner, MatchSettings, match_rng, match_seed
from drarena.arena.swiss import PlannedMatch, current_ratings, default_rounds, plan_round
from drarena.corpus.records import Doc, Tree
from drarena.corpus.terms import UNIFORM, TermStats
from drarena.corpus.treewalk import Expander, TreeWalker
from drarena.errors import DrarenaError
from drarena.ledger.folder import RunDir
from drarena.ledger.leaderboard import check_agents
from drarena.ledger.rating import settled, warm_up_fits
from drarena.ledger.records import MatchRecord
from drarena.models.client import ModelClient
from drarena.settle import gather_settled


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
    # live mode walks trees over today's pages (drarena.runs.live); None: the snapshot's
    walker_factory: Callable[[Tree, random.Random], TreeWalker] | None = None
    log: Callable[[str], None] = dataclasses.field(
        default=lambda line: print(line, file=sys.stderr, flush=True)
    )
    # start a next-round match once it is certain, while at most this many matches of the
    # round are unfinished (see certain_matches); 0: round by round
    early_start: int = 4
    # import what the first Bradley-Terry fit needs (scipy: ledger.rating.warm_up_fits) in a
    # thread while round 1 plays, instead of at round 1's end with every model server idle
    # (round by round too: 0.3 s of the first round boundary with nothing in flight). False
    # for replays: they end in about a second and skip scipy where every fit is a tie.
    warm_up: bool = True
    # called in the event loop with each early-start plan that ran to the end, before its
    # certain matches start (none found: an empty tuple); progress reporting, and how tests
    # pace scripted matches on the plan instead of on the clock
    on_plan: Callable[[EarlyPlan], None] | None = None
    # the snapshot's term statistics, built on first use, and its pages by URL (grounded
    # tasks and the evidence judge; drarena.arena.match.MatchRunner)
    terms: Callable[[], TermStats] = lambda: UNIFORM
    page_text: Callable[[str], str | None] | None = None

    def n_rounds(self) -> int:
        return self.rounds or default_rounds(len(self.agents))

    async def play(self) -> list[MatchRecord]:
        """Play every round; returns the canonical log.

        Matches run as tasks under one gate of `concurrency` (FIFO: a round's matches are
        queued before any of the next round's). Each round's log is written, in plan order,
        only when all of its matches are done, as the round-by-round scheduler does."""
        self.run.create()
        done = finished_matches(self.run, list(self.agents))
        names = sorted(self.agents)
        tree_ids = sorted(self.trees)
        gate = asyncio.Semaphore(self.concurrency)
        started: dict[str, asyncio.Task[None]] = {}
        log: list[MatchRecord] = []
        byes: list[str] = []
        # the first fit that needs scipy (planning round 2, early or at round 1's end): its
        # import runs beside round 1's matches instead (see warm_up)
        warming: asyncio.Future[None] | None = None
        try:
            for r in range(self.n_rounds()):
                pairing, planned = plan_round(names, tree_ids, r, self.seed, log, byes)
                if pairing.bye:
                    byes.append(pairing.bye)
                ids = {p.match_id for p in planned}
                stray = [m for m, t in started.items() if m.startswith(f"r{r}-") and m not in ids]
                if stray:  # certain_matches guarantees it; checked because records depend on it
                    raise DrarenaError(f"started early but not in round {r + 1}'s plan: {stray}")
                pending = [p for p in planned if p.match_id not in done]
                early = sum(p.match_id in started for p in planned)
                self.log(
                    f"swiss round {r + 1}/{self.n_rounds()}: "
                    + ", ".join(f"{a} vs {b}" for a, b in pairing.pairs)
                    + (f"; bye {pairing.bye}" if pairing.bye else "")
                    + f" ({len(planned) - len(pending)} of {len(planned)} matches on disk"
                    + (f", {early} started early" if early else "")
                    + ")"
                )
                for p in pending:
                    if p.match_id not in started:
                        started[p.match_id] = asyncio.create_task(self._one(p, gate, done))
                if warming is None and self.warm_up and r + 1 < self.n_rounds():
                    warming = asyncio.ensure_future(asyncio.to_thread(warm_up_fits))
                next_round = r + 1 if r + 1 < self.n_rounds() else None
                standing = Standing(names, tree_ids, self.seed, tuple(byes), log)
                await self._finish_round(standing, planned, next_round, gate, started, done)
                log += [done[p.match_id] for p in planned]
                self.run.write_log(log)
        except BaseException:  # interrupted (or a match failed): stop what still runs
            for task in started.values():
                task.cancel()
            await self._settle(started.values())
            raise
        finally:
            if warming is not None:  # a thread: it cannot be cancelled, only waited for
                await asyncio.wait({warming})
                if not warming.cancelled():  # observed; a fit that needs scipy reports it
                    warming.exception()
        return log

    async def _finish_round(
        self,
        standing: Standing,
        planned: list[PlannedMatch],
        next_round: int | None,
        gate: asyncio.Semaphore,
        started: dict[str, asyncio.Task[None]],
        done: dict[str, MatchRecord],
    ) -> None:
        """Wait for round `planned`'s matches; meanwhile start the certain ones of
        `next_round` (drarena.arena.earlystart.EarlyStart plans them beside the matches). A
        failed match raises once every started match has settled, the first of this round by
        plan position (as gather_settled does)."""
        planner = (
            None
            if next_round is None
            else EarlyStart(
                standing,
                next_round,
                planned,
                max_open=self.early_start,
                on_plan=self.on_plan,
            )
        )
        try:
            while True:
                unfinished = [p for p in planned if p.match_id not in done]
                waiting = {
                    started[p.match_id] for p in unfinished if not started[p.match_id].done()
                }
                if planner is not None:
                    for p in planner.take():
                        if p.match_id not in done and p.match_id not in started:
                            started[p.match_id] = asyncio.create_task(self._one(p, gate, done))
                    await planner.replan(done)
                if not waiting:
                    break
                await asyncio.wait(
                    waiting | (planner.running() if planner is not None else set()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
        finally:
            if planner is not None:
                await planner.close()
        for p in planned:  # the first failure by plan position, as gather_settled raises
            task = started.get(p.match_id)
            if task is not None and p.match_id not in done:
                await self._settle(started.values())
                task.result()

    @staticmethod
    async def _settle(tasks: Collection[asyncio.Task[None]]) -> None:
        """Let every started match end (a failure or an interrupt must not leave matches
        running unobserved: their model calls would be missing from the cache)."""
        pending = [t for t in tasks if not t.done()]
        if pending:
            await asyncio.wait(pending)
        for t in tasks:  # observed: the caller raises the failure that counts
            if not t.cancelled():
                t.exception()

    async def _one(
        self, p: PlannedMatch, gate: asyncio.Semaphore, done: dict[str, MatchRecord]
    ) -> None:
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

    async def _play_all(
        self, pending: Sequence[PlannedMatch], done: dict[str, MatchRecord]
    ) -> None:
        gate = asyncio.Semaphore(self.concurrency)
        await gather_settled(*(self._one(p, gate, done) for p in pending))

    async def play_match(self, p: PlannedMatch) -> MatchRecord:
        rng = match_rng(self.seed, p.a, p.b, p.tree)
        walker = (
            self.walker_factory(self.trees[p.tree], rng)
            if self.walker_factory
            else TreeWalker(
                tree=self.trees[p.tree],
                pages=self.pages,
                rng=rng,
                expander=self.expander,
                min_chars=self.settings.content_min_chars,
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
            terms=self.terms,
            page_text=self.page_text,
        )
        record = await runner.run()
        self.run.append_timings(runner.timings)
        return record

    async def place(self, newcomer: str, log: list[MatchRecord]) -> list[MatchRecord]:
        """Enter `newcomer` into a finished tournament without replaying it: it plays
        ceil(log2 n)+1 placement rounds, each against the nearest-rated agent it has not met
        (ties by name), the ratings refit after each. Deterministic, so it resumes too: `log`
        may end with placement rounds of `newcomer` an interrupted add-agent wrote; the plan is
        made again from the matches before them (they must be its first rounds) and goes on
        where it stopped, so the log comes out as an uninterrupted placement's."""
        if newcomer not in self.agents:
            raise DrarenaError(f"{newcomer}: not among the tournament's agents")
        check_agents(list(self.agents), log, str(self.run.log_path))
        before, placed = split_placement(newcomer, log)
        first = max((m.swiss_round for m in before), default=-1) + 1
        self.run.create()
        done = finished_matches(self.run, list(self.agents))
        names = sorted(self.agents)
        log = before
        for i in range(default_rounds(len(names))):
            ratings = current_ratings(names, log)
            met = {m.a if m.b == newcomer else m.b for m in log if newcomer in (m.a, m.b)}
            rivals = [a for a in names if a != newcomer and a not in met]
            if not rivals:
                break
            here = settled(ratings[newcomer])
            rival = min(rivals, key=lambda a: (settled(abs(settled(ratings[a]) - here)), a))
            planned = [
                PlannedMatch(
                    f"r{first + i}-{newcomer}-vs-{rival}-{tree}", first + i, newcomer, rival, tree
                )
                for tree in sorted(self.trees)
            ]
            logged = [m.match_id for m in placed if m.swiss_round == first + i]
            if logged and logged != [p.match_id for p in planned]:
                raise DrarenaError(f"{newcomer} has already played in this run")
            pending = [p for p in planned if p.match_id not in done]
            self.log(
                f"placement round {i + 1}: {newcomer} vs {rival} "
                f"({len(planned) - len(pending)} of {len(planned)} matches on disk)"
            )
            await self._play_all(pending, done)
            log = [*log, *(done[p.match_id] for p in planned)]
            self.run.write_log(log)
        return log


def split_placement(
    newcomer: str, log: Sequence[MatchRecord]
) -> tuple[list[MatchRecord], list[MatchRecord]]:
    """(the tournament's matches, the placement matches of `newcomer` an interrupted add-agent
    already logged after them). Its matches must all come after the others, in later rounds:
    otherwise it is an agent of the tournament itself, and placing it is refused."""
    before = [m for m in log if newcomer not in (m.a, m.b)]
    placed = list(log[len(before) :])
    first = max((m.swiss_round for m in before), default=-1) + 1
    if list(log[: len(before)]) != before or any(m.swiss_round < first for m in placed):
        raise DrarenaError(f"{newcomer} has already played in this run")
    return before, placed


def finished_matches(run: RunDir, agents: Sequence[str]) -> dict[str, MatchRecord]:
    """The run's finished matches (RunDir.finished), each between agents of the tournament: one
    that is not (a record of another tournament, an edited file) is one line naming its file
    rather than a KeyError in the first rating fit."""
    done = run.finished()
    for record in done.values():
        check_agents(agents, [record], str(run.matches_dir / f"{record.match_id}.json"))
    return done
