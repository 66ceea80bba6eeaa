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
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from drarena.agents.base import Agent, Answer, Conversation, SourcePage, Turn
from drarena.arena.rounds import play_round
from drarena.corpus.records import TreePage
from drarena.corpus.terms import UNIFORM, TermStats
from drarena.corpus.treewalk import CannotExpand, TreePath, TreeWalker
from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.evidence import Grounding
from drarena.examiner.evolve import (
    MIN_WIDTH,
    MatchScore,
    Move,
    Transition,
    add_round,
    match_void,
    outcome,
    should_stop,
    transition,
    word_limit,
)
from drarena.examiner.judge import JudgeMode, JudgeOptions, PairJudgment
from drarena.examiner.judges import Judge, JudgeCall, build_judge, reads_evidence
from drarena.examiner.taskgen import TaskCall, TaskOutcome, TaskRequest, TaskRules
from drarena.examiner.taskgens import TaskGenerator, build_taskgen
from drarena.ledger.records import SCHEMA_VERSION, AnswerTiming, MatchRecord, RoundRecord
from drarena.models.client import ModelClient
from drarena.registry import ComponentSpec


class MatchSettings(BaseModel):
    """The `match:` block of a tournament config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rounds: int = Field(
        10, ge=1, le=20, description="rounds before the match ends anyway (the paper: 10)"
    )
    gap_to_stop: int = Field(2, ge=1, description="point gap that ends the match early")
    max_void_rounds: int | None = Field(
        1,
        ge=0,
        description="more void rounds than this void the match; null: no limit (the "
        "reference skips a failed round and plays on, core/evolvement_loop.py 323-326, 355-357)",
    )
    start_depth: int = Field(1, ge=1, description="depth of the first round's node")
    start_width: int = Field(2, ge=1, description="target pages in the first round")
    page_chars: int | None = Field(
        15000,
        ge=200,
        description="characters of each page's text in the task prompt; null: the whole "
        "page, as the reference does (core/examiner.py 29-30 put each node's whole `content` "
        "in the prompt). 15000 is drarena's bound on a prompt, not a figure of the paper",
    )
    page_budget_chars: int | None = Field(
        None,
        ge=500,
        description="optional cap on all page text in the task prompt, shared evenly (a "
        "third to the reasoning chain), on top of page_chars; the key's meaning before "
        "page_chars existed, so older configs keep their prompts; null: no cap",
    )
    task_attempts: int = Field(2, ge=1, description="tries per task before the node is skipped")
    content_min_chars: int = Field(
        500,
        ge=1,
        description="characters of text a page needs to be a start node, a child to "
        "descend to, a sibling target or an expansion (CONTENT_RICH_CHARS); the reference "
        "asks for more than 20 (core/evolvement_loop.py 106, 259): 21",
    )
    judge_order: Literal["round", "tree"] = Field(
        "round",
        description="with judge_orders 1, which answer the judge sees first: round (the "
        "order alternates every round of a match, from the match seed's parity) or tree (the "
        "reference, tournament_cli.py 200-204: one order for the whole match, the pairing's "
        "second agent first on a tree whose id ends in an odd number)",
    )
    backtrack_to_root: bool = Field(
        False,
        description="a LOW tie at the starting depth backtracks to the root with both "
        "conversations cleared, the root then its own only target and a LOW tie there resets "
        "W to 2 (the reference: core/evolvement_loop.py 36, 45, 244-255, 378-383); false: "
        "the walk never goes above start_depth",
    )
    agent_instruction: Literal["drarena", "paper"] = Field(
        "drarena",
        description="what built-in agents are told after the question: drarena ('Write a "
        "Markdown report of L to H words') or paper (the reference's rules, core/agents.py "
        "25-42: the answer first, no filler, the word limit on the body only, [n] markers and "
        "a '## References' list); external command agents get the question and word limit "
        "as before",
    )
    failed_answers: Literal["void", "judged"] = Field(
        "void",
        description="an agent that raises or returns no report: void (the round is void and "
        "scores nothing) or judged (the reference, core/agents.py 54-55 and "
        "core/evolvement_loop.py 342-349: its answer is the error text, judged against the "
        "other answer, and its conversation is not extended)",
    )
    examiner_role: str = Field("examiner", description="model role of the Examiner")
    taskgen_role: str = Field(
        "taskgen",
        description="model role that writes tasks; a tournament config without a role of "
        "this name derives it from examiner_role at temperature 0.7 (the paper's)",
    )
    judge_role: str = Field(
        "judge",
        description="model role that judges; a tournament config without a role of this "
        "name derives it from examiner_role at temperature 0.1 (the paper's)",
    )
    judges: tuple[str, ...] | None = Field(
        None,
        description="a judge panel: model roles (each in models.roles) that each judge every "
        "round with the same judging settings, concurrently; the round's verdict is their "
        "majority (more than half; otherwise the median of the signed verdicts, see "
        "docs/tournaments.md), every member's judgment is kept in the round's record and the "
        "report shows their pairwise agreement (percent and Cohen's kappa). At least 2 "
        "distinct roles; an odd number (3, 5) avoids split panels. judge_role is not used "
        "for rounds when set. null: one judge, judge_role",
    )
    cut_history_on_backtrack: bool = Field(
        True,
        description="a backtrack drops the conversation turns both agents played below the "
        "node it returns to (the reference); false: conversations keep every turn",
    )
    leaf_fallback_widen: bool = Field(
        True,
        description="a DEPTH loss at a node with no deeper child widens instead (W+1, the "
        "reference); false: the walk stays with W unchanged",
    )
    checklist_max_items: int | None = Field(
        None,
        ge=1,
        description="ceiling on each checklist's length; null: depth items <= W and width "
        "items <= 2W, so every target can be checked at any W (the paper sets no cap)",
    )
    task_text_caps: bool = Field(
        True,
        description="the task model's question, checklist items and rationale are capped at "
        "400, 160 and 300 characters (JSON Schema); false: no caps, as the reference "
        "(set by protocol: paper)",
    )
    forbid_entity_names: bool = Field(
        True,
        description="task validation also rejects a question naming a target's entity (a "
        "title's one-word first segment such as a module name, or the URL's file name), not "
        "only its whole title, URL or host; false: the older, looser check (runs recorded "
        "before it replay with false)",
    )
    word_limit_root_counted: bool = Field(
        True,
        description="the word limit's D counts the root, as the reference does; false: D is "
        "the node's depth (20 words fewer; drarena before issue 16, kept so its runs replay)",
    )
    chain_ancestors: int | None = Field(
        2,
        ge=0,
        description="ancestors of the current node shown to task generation as its "
        "reasoning chain, nearest last (the reference: the last two, path[-3:-1]); 0: the "
        "paper's 'No Logic Chain' ablation; null: every ancestor from the root",
    )
    flat_context: bool = Field(
        False,
        description="ablation (paper 4.3): task generation sees the target pages only, "
        "with no reasoning chain and no link relations",
    )
    first_round_only: bool = Field(
        False,
        description="ablation (paper 4.3, Table 6): a match ends after its first scored round",
    )
    # judging before judges were components (drarena/examiner/judges.py): the LLM judge's
    # settings, read when `judge` is not written
    judge_prompt: str = Field(
        templates.DEFAULT_PROMPTS["judge"],
        description="pairwise judge prompt: a name shipped in drarena/examiner/prompts/ "
        "(paper: the paper's human-preference criteria; checklist-first: checklist before "
        "style) or a file path (a '/' or a .txt ending); its sha256 goes into run.json",
    )
    taskgen_prompt: str = Field(
        templates.DEFAULT_PROMPTS["taskgen"],
        description="task generation prompt: a shipped name or a file path, as judge_prompt",
    )
    judge_mode: JudgeMode = Field(
        JudgeMode.PAIRWISE,
        description="pairwise (the paper: both answers in one prompt), pointwise (each "
        "answer graded alone per checklist item, a quote verified by code; a deviation) or "
        "both (pointwise decides coverage, pairwise breaks its ties on presentation)",
    )
    judge_orders: Literal[1, 2] = Field(
        2,
        description="2: judge both orders and reconcile; 1: the paper's single judgment, A/B "
        "swapped on alternate rounds of a match (first order from the match seed)",
    )
    judge_sees_checklist: bool = Field(
        True, description="false: the paper's ablation, no checklist shown to the pairwise judge"
    )

    judge: ComponentSpec | None = Field(
        None,
        description="the judge {kind, args} (drarena.examiner.judges): evidence (code "
        "grades each answer against the checklist's page evidence, no model call), hybrid "
        "(an LLM judge decides, args.llm; the evidence judge grades alongside), pairwise, "
        "pointwise, both, or a plugin's kind. Not written: hybrid, its LLM judge from "
        "judge_mode, judge_prompt, judge_orders and judge_sees_checklist; run.json records "
        "the resolved spec with every threshold",
    )
    taskgen: ComponentSpec | None = Field(
        None,
        description="the task generator {kind, args} (drarena.examiner.taskgens): llm (the "
        "Examiner writes question and checklists; args.ground ties each item to its page's "
        "passage and drops unsupported ones) or extractive (code picks the facts, the model "
        "writes the question). Not written: llm with taskgen_prompt, grounded",
    )

    @field_validator("judge_prompt", "taskgen_prompt")
    @classmethod
    def _prompt_exists(cls, spec: str, info: ValidationInfo) -> str:
        return templates.check_spec(spec, str(info.field_name).removesuffix("_prompt"))

    @field_validator("judges")
    @classmethod
    def _panel(cls, judges: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if judges is None:
            return None
        if len(judges) < 2:
            raise ValueError("a judge panel needs at least 2 roles (null: one judge)")
        repeated = sorted({j for j in judges if judges.count(j) > 1})
        if repeated:  # the same role twice would repeat the same cached calls
            raise ValueError(f"judge roles must be distinct, repeated: {', '.join(repeated)}")
        return judges

    @field_validator("judge")
    @classmethod
    def _judge(cls, spec: ComponentSpec | None) -> ComponentSpec | None:
        """Built once here, so a bad kind or arg is a config error naming `match.judge`, and
        stored resolved: every default the judge fills goes into run.json."""
        if spec is None:
            return None
        try:
            return build_judge(spec).spec
        except DrarenaError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("taskgen")
    @classmethod
    def _taskgen(cls, spec: ComponentSpec | None) -> ComponentSpec | None:
        if spec is None:
            return None
        try:
            return build_taskgen(spec).spec
        except DrarenaError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _panel_judges(self) -> MatchSettings:
        if self.judges is not None and not self.judging().uses_model:
            raise ValueError(
                f"match.judges: a judge panel needs a judge that calls a model; "
                f"{self.judge_spec().kind} does not"
            )
        return self

    def llm_judge_spec(self) -> ComponentSpec:
        """The LLM judge of the flat fields (judge_mode, judge_prompt, judge_orders,
        judge_sees_checklist)."""
        return ComponentSpec(
            kind=self.judge_mode.value,
            args={
                "prompt": self.judge_prompt,
                "orders": self.judge_orders,
                "sees_checklist": self.judge_sees_checklist,
            },
        )

    def judge_spec(self) -> ComponentSpec:
        """The judge: `judge` as written (resolved), else the flat fields' LLM judge."""
        return self.judge if self.judge is not None else self.llm_judge_spec()

    def judging(self) -> Judge:
        return build_judge(self.judge_spec())

    def taskgen_spec(self) -> ComponentSpec:
        if self.taskgen is not None:
            return self.taskgen
        return ComponentSpec(kind="llm", args={"prompt": self.taskgen_prompt, "ground": False})

    def task_generator(self) -> TaskGenerator:
        return build_taskgen(self.taskgen_spec())

    def task_rules(self) -> TaskRules:
        return TaskRules(
            page_chars=self.page_chars,
            page_budget_chars=self.page_budget_chars,
            max_attempts=self.task_attempts,
            checklist_max_items=self.checklist_max_items,
            text_caps=self.task_text_caps,
            relations=not self.flat_context,
            root_counted=self.word_limit_root_counted,
            forbid_entity_names=self.forbid_entity_names,
        )

    def judge_swap(self, seed: int, round_index: int, tree: str = "") -> bool:
        """With one order, whether round `round_index` of the match with `seed` on `tree`
        shows B's answer first. `judge_order: round`: the order alternates every round,
        starting from the seed's parity, so each agent is shown first in half the rounds
        (+-1) whatever the pairing or tree count. `tree`: the reference's rule, one order per
        match, swapped on a tree whose number is odd (tree_number)."""
        if self.judge_order == "tree":
            return tree_number(tree) % 2 == 1
        return (seed + round_index) % 2 == 1

    def judge_options(self, seed: int, round_index: int, tree: str = "") -> JudgeOptions:
        """The flat fields' LLM judging of one round (drift-run and rejudge of runs
        recorded before judges were components)."""
        return JudgeOptions(
            prompt=self.judge_prompt,
            mode=self.judge_mode,
            orders=self.judge_orders,
            sees_checklist=self.judge_sees_checklist,
            swap=self.judge_orders == 1 and self.judge_swap(seed, round_index, tree),
        )

    def template_specs(self) -> dict[str, str]:
        """The prompt templates a run with these settings uses, by slot."""
        return {**self.task_generator().template_specs(), **self.judging().template_specs()}


def tree_number(tree: str) -> int:
    """The number a tree id ends in (tree_0007: 7, tree-003: 3), 0 when it ends in none: the
    reference's `int(tree_id.split('_')[-1])`, 0 when that fails (tournament_cli.py 199-201),
    made to read drarena's `tree-NNN` ids too."""
    digits = re.search(r"(\d+)$", tree)
    return int(digits.group(1)) if digits else 0


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
    # the snapshot's term statistics (grounded tasks, the evidence judge), asked for on first
    # use; and any snapshot page's text by URL (the evidence judge's citation check)
    terms: Callable[[], TermStats] = lambda: UNIFORM
    page_text: Callable[[str], str | None] | None = None

    async def run(self) -> MatchRecord:
        s = self.settings
        score = MatchScore(0, 0, 0, 0)
        rounds: list[RoundRecord] = []
        earlier: list[str] = []
        asked_at: list[str] = []  # the node of each earlier question
        conv: dict[str, Conversation | None] = {"a": None, "b": None}
        last: dict[str, str] = {"a": "", "b": ""}
        # turns played when each descend happened (the reference's history snapshots); with
        # backtrack_to_root it starts as the reference's [0], so a backtrack from the start
        # node clears both conversations
        marks: list[int] = [0] if s.backtrack_to_root else []
        width = s.start_width
        try:
            path: TreePath = self.walker.start(s.start_depth)
        except CannotExpand as exc:
            return self._record((), score, f"no starting node: {exc}")
        while True:
            index = len(rounds)
            depth = len(path) - 1
            rec, played = await self._play_round(
                index, path, depth, width, (earlier, asked_at.count(path[-1])), conv, last
            )
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
            ) or (s.first_round_only and score.rounds_scored >= 1)
            if rec.task.task is not None:
                earlier.append(rec.task.task.question)
                asked_at.append(rec.node)
            if played is not None:  # only a played round continues the conversations
                for side, turn in zip(("a", "b"), played, strict=True):
                    if turn is not None:  # None: the agent failed; its error text was judged
                        conv[side], last[side] = turn
            move: Transition | None = None
            if not stop:
                new_path, width, move = self._move(rec, path, depth, width)
                move = self._follow_walk(path, new_path, move, marks, conv, last)
                path = new_path
            rec = dataclasses.replace(rec, score=score, transition=move)
            rounds.append(rec)
            if self.on_round is not None:
                self.on_round(rec)
            if stop:
                break
        void = ""
        if match_void(score, s.max_void_rounds):
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
        same node again would replay the same failure from the cache). A DEPTH loss at a
        node with no deeper child widens instead, as the reference's `_advance_tree` failing
        does (`leaf_fallback_widen`)."""
        if rec.judgment is None or rec.void_reason:
            planned = Transition(Move.DEEPEN, depth + 1, width)
        else:
            planned = transition(rec.judgment.reconciled, depth, width)
        new_path, move, new_width = path, planned.move, planned.width
        try:
            if planned.move in (Move.DEEPEN, Move.DEEPEN_WIDEN):
                new_path = self.walker.descend(path)
            elif planned.move == Move.BACKTRACK_NARROW and self.settings.backtrack_to_root:
                new_path = self.walker.backtrack(path, 0)
                if len(path) == 1:  # at the root already: W back to 2 (reference 381-382)
                    new_width = MIN_WIDTH
            elif planned.move == Move.BACKTRACK_NARROW:
                new_path = self.walker.backtrack(path, self.settings.start_depth)
        except CannotExpand:
            if rec.void_reason:  # the same node again would replay the same failure
                with contextlib.suppress(CannotExpand):
                    new_path, move = self.walker.start(self.settings.start_depth), Move.RESTART
            elif planned.move == Move.DEEPEN and self.settings.leaf_fallback_widen:
                move, new_width = Move.WIDEN, width + 1
            # otherwise the tree ends here: stay, and let the width change do the work
        return new_path, new_width, Transition(move, len(new_path) - 1, new_width)

    def _follow_walk(
        self,
        old: TreePath,
        new: TreePath,
        move: Transition,
        marks: list[int],
        conv: dict[str, Conversation | None],
        last: dict[str, str],
    ) -> Transition:
        """The reference's history snapshots: each descend remembers how many turns the
        conversations had; a backtrack cuts both back to that many (the turns asked below
        the node the walk returns to are dropped, as `_backtrack` does). The transition
        records the turns kept when it cut."""
        if move.move == Move.RESTART:
            marks[:] = [0] if self.settings.backtrack_to_root else []
        elif len(new) > len(old):
            marks.append(conversation_turns(conv["a"]))
        elif len(new) < len(old) and marks:
            keep = marks.pop()
            if self.settings.cut_history_on_backtrack:
                for side in ("a", "b"):
                    conv[side], last[side] = cut_conversation(conv[side], last[side], keep)
                return dataclasses.replace(move, history_turns=keep)
        return move

    def _grounding(self, judge: Judge, pages: Sequence[TreePage]) -> Grounding:
        return grounding_for(judge, {p.url: p.text for p in pages}, self.terms, self.page_text)

    def _role(self, name: str) -> str:
        """A stage's model role. A tournament config always has it (derived from the
        Examiner when not written); a hand-made ModelsConfig without it (a plugin's test)
        uses the Examiner's role as it is."""
        return name if name in self.client.config.roles else self.settings.examiner_role

    async def _play_round(
        self,
        index: int,
        path: TreePath,
        depth: int,
        width: int,
        asked: tuple[list[str], int],
        conv: dict[str, Conversation | None],
        last: dict[str, str],
    ) -> tuple[RoundRecord, list[tuple[Conversation, str] | None] | None]:
        """The round's record, and for a played round each side's new conversation and
        answer's report (the caller commits them; a void round leaves the conversations as
        they were, and so does a side whose error text was judged: None). `asked`: the
        match's earlier questions (a repeat is refused) and how many were asked at this
        node (the extractive generator then takes later facts; at a new node, the first).
        """
        earlier, revisits = asked
        at = _RoundAt(index, path[-1], depth, width)
        found = self._round_pages(path, width)
        if isinstance(found, str):
            return at.record(void_reason=f"targets: {found}"), None
        root, chain, targets, width = found
        at = dataclasses.replace(at, width=width)
        urls = tuple(t.url for t in targets)
        task_out = await self._make_task((root, chain, targets), depth, (earlier, revisits))
        task = task_out.task
        if task is None:
            return at.record(urls, task_out, void_reason=f"task: {task_out.error}"), None
        sources = tuple(SourcePage(t.url, t.title, t.text) for t in targets)
        s = self.settings
        convs = []
        for side in ("a", "b"):
            current = conv[side]
            convs.append(
                Conversation(task.question, targets=sources, instruction=s.agent_instruction)
                if current is None
                else dataclasses.replace(current.then(last[side], task.question), targets=sources)
            )
        limits = word_limit(at.width, depth, root_counted=s.word_limit_root_counted)
        judge = s.judging()
        play = await play_round(
            task,
            (self.a, self.b),
            (self.agent_a, self.agent_b),
            (convs[0], convs[1]),
            limits,
            judge,
            JudgeCall(
                self.client,
                s.judges or self._role(s.judge_role),
                s.judge_swap(self.seed, index, self.walker.tree.id),
                self._grounding(judge, (*chain, *targets)),
            ),
            s.failed_answers,
        )
        for name, ans in zip((self.a, self.b), play.answers, strict=True):
            if ans is not None:
                self.timings.append(
                    AnswerTiming(self.match_id, index, name, ans.wall_s, ans.model_s)
                )
        if not play.played:
            return at.record(urls, task_out, play.stable, void_reason=play.void), None
        first, second = play.answers
        assert first is not None and second is not None
        rec = at.record(urls, task_out, play.stable, play.judgment)
        # an agent whose error text was judged keeps its conversation as it was (the
        # reference extends a history only after a successful call, evolvement_loop.py 344)
        return rec, [
            None if why else (c, ans.report)
            for c, ans, why in zip(convs, (first, second), play.failed, strict=True)
        ]

    def _round_pages(
        self, path: TreePath, width: int
    ) -> tuple[TreePage, tuple[TreePage, ...], tuple[TreePage, ...], int] | str:
        """The tree's root page, the chain to the node, the round's target pages and their
        width, or why there are none (in live mode a page may be gone). A node with fewer
        children than `width` asks for as many as it has (at least 2: the width the round
        then has); the root (reached only by backtrack_to_root) is its own
        only target, as the reference's aggregation pool at the root is
        (core/evolvement_loop.py 174-175)."""
        try:
            root = self.walker.page(self.walker.tree.root)
            chain = self.walker.chain(path)
        except CannotExpand as exc:
            return str(exc)
        try:
            targets = (
                (self.walker.page(path[0]),) if len(path) == 1 else self.walker.targets(path, width)
            )
        except CannotExpand as exc:
            if width <= 2:
                return str(exc)
            width = max(2, exc.available + 1)
            try:
                targets = self.walker.targets(path, width)
            except CannotExpand as again:
                return str(again)
        return root, chain, targets, width

    async def _make_task(
        self,
        pages: tuple[TreePage, tuple[TreePage, ...], tuple[TreePage, ...]],
        depth: int,
        asked: tuple[list[str], int],
    ) -> TaskOutcome:
        """The round's task from the match's task generator: the chain as the settings show
        it (none for the flat-context ablation), the term statistics only for a generator
        that reads them (building them is the snapshot's whole text). `pages`: the tree's
        root, the chain and the targets (_round_pages); `asked`: as _play_round's."""
        root, chain, targets = pages
        earlier, revisits = asked
        s = self.settings
        shown = () if s.flat_context else shown_chain(chain, s.chain_ancestors)
        request = TaskRequest(
            root,
            shown,
            targets,
            depth,
            tuple(earlier),
            tuple(n.url for n in self.walker.tree.nodes),
            revisits=revisits,
        )
        taskgen = s.task_generator()
        needs_terms = taskgen.spec.kind == "extractive" or taskgen.spec.args.get("ground")
        call = TaskCall(
            self.client, self._role(s.taskgen_role), self.terms() if needs_terms else UNIFORM
        )
        return await taskgen.generate(call, request, s.task_rules())


NO_TASK = TaskOutcome(None, (), ())  # a round void before its task was asked for


@dataclasses.dataclass(frozen=True)
class _RoundAt:
    """Where a round is played: its index, the node, its depth, and its width (the targets
    asked for, fewer where the node has fewer children)."""

    index: int
    node: str
    depth: int
    width: int

    def record(
        self,
        urls: tuple[str, ...] = (),
        task: TaskOutcome = NO_TASK,
        answers: tuple[Answer | None, Answer | None] = (None, None),
        judgment: PairJudgment | None = None,
        *,
        void_reason: str = "",
    ) -> RoundRecord:
        """The round's record, its score zero (MatchRunner.run sets the running score)."""
        return RoundRecord(
            index=self.index,
            node=self.node,
            depth=self.depth,
            width=self.width,
            target_urls=urls,
            task=task,
            answer_a=answers[0],
            answer_b=answers[1],
            judgment=judgment,
            score=MatchScore(0, 0, 0, 0),
            transition=None,
            void_reason=void_reason,
        )


def grounding_for(
    judge: Judge,
    pages: Mapping[str, str],
    terms: Callable[[], TermStats],
    page_text: Callable[[str], str | None] | None,
) -> Grounding:
    """What the evidence judge reads in one round (the round's pages by URL, the snapshot's
    term statistics and page lookup); nothing for a judge that grades no evidence (the
    statistics are then never built: a replay of an LLM-judged run stays fast)."""
    if not reads_evidence(judge):
        return Grounding()
    return Grounding(terms(), dict(pages), page_text)


def shown_chain(chain: tuple[TreePage, ...], ancestors: int | None) -> tuple[TreePage, ...]:
    """The reasoning chain task generation sees: the last `ancestors` (None: all)."""
    if ancestors is None:
        return chain
    return chain[max(0, len(chain) - ancestors) :] if ancestors else ()


def conversation_turns(conv: Conversation | None) -> int:
    """Turns played in a conversation: its earlier turns and the current one."""
    return 0 if conv is None else len(conv.history) + 1


def cut_conversation(
    conv: Conversation | None, last: str, keep: int
) -> tuple[Conversation | None, str]:
    """The conversation (and the answer to its current question) as they were after the
    first `keep` turns; `keep` 0 is no conversation yet."""
    if conv is None or keep >= conversation_turns(conv):
        return conv, last
    if keep <= 0:
        return None, ""
    turns = (*conv.history, Turn(conv.question, last))
    kept = turns[keep - 1]
    return (
        Conversation(kept.question, turns[: keep - 1], conv.targets, conv.instruction),
        kept.answer,
    )


def match_rng(run_seed: int, a: str, b: str, tree: str) -> random.Random:
    return random.Random(match_seed(run_seed, a, b, tree))
