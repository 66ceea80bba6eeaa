"""One match: two agents, one Information Tree, rounds until one is clearly better.

The loop (DR-Arena's adaptive evolvement, reference core/evolvement_loop.py): start at a
content-rich node at depth >= 1 with width 2; each round the Examiner writes a task from the
reasoning chain and target pages, both agents answer (concurrently, each continuing its own
conversation), the Examiner judges in both orders, points accrue (MUCH_BETTER 2, BETTER 1),
and the transition table moves the walk. A round that cannot be played properly (no valid
task, an agent or the judge failing) is void: it never scores as a tie or a win.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import random
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from drarena.agents.base import Agent, Answer, Conversation, SourcePage
from drarena.arena.rounds import play_round
from drarena.corpus.treewalk import CannotExpand, TreePath, TreeWalker
from drarena.examiner.evolve import (
    MatchScore,
    Move,
    Transition,
    add_round,
    outcome,
    should_stop,
    transition,
    word_limit,
)
from drarena.examiner.taskgen import TaskOutcome, generate_task
from drarena.ledger.records import SCHEMA_VERSION, AnswerTiming, MatchRecord, RoundRecord
from drarena.models.client import ModelClient


class MatchSettings(BaseModel):
    """The `match:` block of a tournament config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rounds: int = Field(3, ge=1, le=20, description="rounds before the match ends anyway")
    gap_to_stop: int = Field(2, ge=1, description="point gap that ends the match early")
    max_void_rounds: int = Field(1, ge=0, description="more void rounds than this void the match")
    start_depth: int = Field(1, ge=1, description="depth of the first round's node")
    start_width: int = Field(2, ge=1, description="target pages in the first round")
    page_budget_chars: int = Field(
        6000, ge=500, description="page text in the task prompt, shared evenly"
    )
    task_attempts: int = Field(2, ge=1, description="tries per task before the node is skipped")
    examiner_role: str = Field("examiner", description="model role of the Examiner")


def match_seed(run_seed: int, a: str, b: str, tree: str) -> int:
    """The match's generator seed, from the run seed, the pair and the tree."""
    digest = hashlib.sha256(f"{run_seed}\x1f{a}\x1f{b}\x1f{tree}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclasses.dataclass
class MatchRunner:
    """Plays one match; the walker holds a fresh copy of the tree and the match's rng."""

    match_id: str
    swiss_round: int
    a: str
    b: str
    agent_a: Agent
    agent_b: Agent
    walker: TreeWalker
    client: ModelClient
    settings: MatchSettings
    seed: int
    on_round: Callable[[RoundRecord], None] | None = None
    timings: list[AnswerTiming] = dataclasses.field(default_factory=list)

    async def run(self) -> MatchRecord:
        s = self.settings
        score = MatchScore(0, 0, 0, 0)
        rounds: list[RoundRecord] = []
        earlier: list[str] = []
        conv: dict[str, Conversation | None] = {"a": None, "b": None}
        last: dict[str, str] = {"a": "", "b": ""}
        width = s.start_width
        try:
            path: TreePath = self.walker.start(s.start_depth)
        except CannotExpand as exc:
            return self._record((), score, f"no starting node: {exc}")
        while True:
            index = len(rounds)
            depth = len(path) - 1
            rec, played = await self._play_round(index, path, depth, width, earlier, conv, last)
            verdict = (
                None
                if rec.void_reason or rec.judgment is None
                else (rec.judgment.reconciled.verdict)
            )
            score = add_round(score, verdict)
            stop = should_stop(
                score,
                max_rounds=s.max_rounds,
                gap_to_stop=s.gap_to_stop,
                max_void_rounds=s.max_void_rounds,
            )
            move: Transition | None = None
            if not stop:
                path, width, move = self._move(rec, path, depth, width)
            if rec.task.task is not None:
                earlier.append(rec.task.task.question)
            if played is not None:  # only a played round continues the conversations
                for side, (conversation, answer) in zip(("a", "b"), played, strict=True):
                    conv[side] = conversation
                    last[side] = answer.report
            rec = dataclasses.replace(rec, score=score, transition=move)
            rounds.append(rec)
            if self.on_round is not None:
                self.on_round(rec)
            if stop:
                break
        void = ""
        if score.rounds_void > s.max_void_rounds or score.rounds_scored == 0:
            reasons = "; ".join(r.void_reason for r in rounds if r.void_reason)
            void = f"{score.rounds_void} void round(s): {reasons}"
        return self._record(tuple(rounds), score, void)

    def _record(self, rounds: tuple[RoundRecord, ...], score: MatchScore, void: str) -> MatchRecord:
        return MatchRecord(
            SCHEMA_VERSION,
            self.match_id,
            self.swiss_round,
            self.a,
            self.b,
            self.walker.tree.id,
            self.seed,
            rounds,
            score,
            outcome(score, max_void_rounds=self.settings.max_void_rounds),
            void,
        )

    def _move(
        self, rec: RoundRecord, path: TreePath, depth: int, width: int
    ) -> tuple[TreePath, int, Transition]:
        """Apply the transition table; a void round moves deeper to fresh pages (asking the
        same node again would replay the same failure from the cache)."""
        if rec.judgment is None or rec.void_reason:
            planned = Transition(Move.DEEPEN, depth + 1, width)
        else:
            planned = transition(rec.judgment.reconciled, depth, width)
        new_path, move = path, planned.move
        try:
            if planned.move in (Move.DEEPEN, Move.DEEPEN_WIDEN):
                new_path = self.walker.descend(path)
            elif planned.move == Move.BACKTRACK_NARROW:
                new_path = self.walker.backtrack(path, self.settings.start_depth)
        except CannotExpand:
            if rec.void_reason:  # the same node again would replay the same failure
                with contextlib.suppress(CannotExpand):
                    new_path, move = self.walker.start(self.settings.start_depth), Move.RESTART
            # otherwise the tree ends here: stay, and let the width change do the work
        return new_path, planned.width, Transition(move, len(new_path) - 1, planned.width)

    async def _play_round(
        self,
        index: int,
        path: TreePath,
        depth: int,
        width: int,
        earlier: list[str],
        conv: dict[str, Conversation | None],
        last: dict[str, str],
    ) -> tuple[RoundRecord, list[tuple[Conversation, Answer]] | None]:
        """The round's record, and for a played round each side's new conversation and
        answer (the caller commits them; a void round leaves the conversations as they were).
        """
        node = path[-1]
        empty_task = TaskOutcome(None, (), ())

        def void(
            reason: str,
            task: TaskOutcome = empty_task,
            urls: tuple[str, ...] = (),
            a: Answer | None = None,
            b: Answer | None = None,
        ) -> RoundRecord:
            return RoundRecord(
                index,
                node,
                depth,
                width,
                urls,
                task,
                a,
                b,
                None,
                MatchScore(0, 0, 0, 0),
                None,
                void_reason=reason,
            )

        try:  # in live mode a page may be gone
            root = self.walker.page(self.walker.tree.root)
            chain = self.walker.chain(path)
        except CannotExpand as exc:
            return void(f"targets: {exc}"), None
        try:
            targets = self.walker.targets(path, width)
        except CannotExpand as exc:
            if width <= 2:
                return void(f"targets: {exc}"), None
            width = max(2, exc.available + 1)
            try:
                targets = self.walker.targets(path, width)
            except CannotExpand as again:
                return void(f"targets: {again}"), None
        urls = tuple(t.url for t in targets)
        tree_urls = [n.url for n in self.walker.tree.nodes]
        task_out = await generate_task(
            self.client,
            self.settings.examiner_role,
            root=root,
            chain=chain,
            targets=targets,
            depth=depth,
            earlier_questions=earlier,
            tree_urls=tree_urls,
            page_budget_chars=self.settings.page_budget_chars,
            max_attempts=self.settings.task_attempts,
        )
        task = task_out.task
        if task is None:
            return void(f"task: {task_out.error}", task_out, urls), None
        sources = tuple(SourcePage(t.url, t.title, t.text) for t in targets)
        convs = []
        for side in ("a", "b"):
            current = conv[side]
            convs.append(
                Conversation(task.question, targets=sources)
                if current is None
                else dataclasses.replace(current.then(last[side], task.question), targets=sources)
            )
        limits = word_limit(width, depth)
        play = await play_round(
            task,
            (self.a, self.b),
            (self.agent_a, self.agent_b),
            (convs[0], convs[1]),
            limits,
            self.client,
            self.settings.examiner_role,
        )
        for name, ans in zip((self.a, self.b), play.answers, strict=True):
            if ans is not None:
                self.timings.append(
                    AnswerTiming(self.match_id, index, name, ans.wall_s, ans.model_s)
                )
        a_ans, b_ans = play.stable
        if not play.played:
            return void(play.void, task_out, urls, a_ans, b_ans), None
        first, second = play.answers
        assert first is not None and second is not None
        rec = RoundRecord(
            index,
            node,
            depth,
            width,
            urls,
            task_out,
            a_ans,
            b_ans,
            play.judgment,
            MatchScore(0, 0, 0, 0),
            None,
        )
        return rec, [(convs[0], first), (convs[1], second)]


def match_rng(run_seed: int, a: str, b: str, tree: str) -> random.Random:
    return random.Random(match_seed(run_seed, a, b, tree))
