"""Play one round once its task is known: both agents answer, then the Examiner judges.

Why one function: a tournament match and a drift-run (a frozen run's tasks asked again live)
play rounds the same way, and a rule about what makes a round void (an agent raising, an empty
report, the judge failing) must hold for both. The round's task generation and the walk over
the tree stay with the caller; this is only "answer, then judge".
"""

from __future__ import annotations

import asyncio
import dataclasses

from drarena.agents.base import MODEL_CALL_FAILED, Agent, Answer, Conversation
from drarena.errors import DrarenaError
from drarena.examiner.judge import AnswerForJudge, PairJudgment
from drarena.examiner.judges import Judge, JudgeCall
from drarena.examiner.taskcheck import Task


def stable_answer(answer: Answer) -> Answer:
    """The answer without what differs between a run and its replay (timings, cache hits)."""
    steps = tuple(
        dataclasses.replace(
            s,
            model=None
            if s.model is None
            else dataclasses.replace(s.model, latency_s=0.0, cached=False),
            tools=tuple(dataclasses.replace(t, latency_s=0.0) for t in s.tools),
        )
        for s in answer.trajectory.steps
    )
    return dataclasses.replace(
        answer,
        wall_s=0.0,
        model_s=0.0,
        trajectory=dataclasses.replace(answer.trajectory, steps=steps),
    )


def for_judge(answer: Answer) -> AnswerForJudge:
    """What the Examiner sees of an answer: the report, its citation counts and the cited
    URLs (the evidence judge checks them)."""
    return AnswerForJudge(
        answer.report,
        answer.check.cited,
        answer.check.valid,
        answer.check.fabricated,
        tuple(answer.cited_urls()),
    )


def failure(answer: Answer | BaseException) -> str:
    """Why an answer cannot be judged ('' when it can)."""
    if isinstance(answer, BaseException):
        return f"{type(answer).__name__}: {answer}"
    if not answer.report.strip():
        return answer.error or "empty report"
    if answer.model_call_failed:  # an outage: never scored, whatever report was salvaged
        return answer.error or MODEL_CALL_FAILED
    return ""


@dataclasses.dataclass(frozen=True, slots=True)
class RoundPlay:
    """The answers (as returned, for timings and conversations; and stable, for the record),
    the judgment, and why the round is void ('' for a played round)."""

    answers: tuple[Answer | None, Answer | None]
    stable: tuple[Answer | None, Answer | None]
    judgment: PairJudgment | None
    void: str

    @property
    def played(self) -> bool:
        return not self.void and self.judgment is not None


async def play_round(
    task: Task,
    names: tuple[str, str],
    agents: tuple[Agent, Agent],
    conversations: tuple[Conversation, Conversation],
    word_limit: tuple[int, int],
    judge: Judge,
    call: JudgeCall,
) -> RoundPlay:
    """Both agents answer concurrently (a raising agent is a recorded failure, never a crash),
    then `judge` judges with `call` (its client and role; a tuple of roles is a judge panel,
    `match.judges`, whose majority decides; the evidence judge's grounding). A failed agent
    or judge (any panel member) makes the round void: it never scores as a tie or a win."""
    got = await asyncio.gather(
        agents[0].answer(conversations[0], word_limit),
        agents[1].answer(conversations[1], word_limit),
        return_exceptions=True,
    )
    answers = tuple(g if isinstance(g, Answer) else None for g in got)
    stable = tuple(None if a is None else stable_answer(a) for a in answers)
    pair = (answers[0], answers[1])
    stable_pair = (stable[0], stable[1])
    problems = [
        f"agent {n} failed: {p}" for n, g in zip(names, got, strict=True) if (p := failure(g))
    ]
    if problems:
        return RoundPlay(pair, stable_pair, None, "; ".join(problems))
    a, b = pair
    assert a is not None and b is not None
    try:
        judged = await judge.judge(call, task, for_judge(a), for_judge(b))
    except DrarenaError as exc:
        return RoundPlay(pair, stable_pair, None, f"judge failed: {exc}")
    return RoundPlay(pair, stable_pair, judged, "")
