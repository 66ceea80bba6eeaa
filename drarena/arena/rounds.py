"""Play one round once its task is known: both agents answer, then the Examiner judges.

Why one function: a tournament match and a drift-run (a frozen run's tasks asked again live)
play rounds the same way, and a rule about what makes a round void (an agent raising, an empty
report, the judge failing) must hold for both. The round's task generation and the walk over
the tree stay with the caller; this is only "answer, then judge".
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Literal

from drarena.agents.base import (
    MODEL_CALL_FAILED,
    Agent,
    Answer,
    CitationCheck,
    Conversation,
    Trajectory,
)
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


def error_answer(name: str, reason: str, answer: Answer | None) -> Answer:
    """What the reference judges for an agent that failed: its error text as the whole
    answer, with no citations (core/agents.py 54-55 answers "Error: No response from API.",
    core/evolvement_loop.py 345 and 349 the exception's text). What the agent did before
    failing (its trajectory, timings, tokens) stays on the record."""
    report = f"Error: {reason}"
    if answer is None:
        return Answer(name, report, (), CitationCheck(), Trajectory(), 0.0, 0.0, 0, 0, error=reason)
    return dataclasses.replace(
        answer, report=report, citations=(), check=CitationCheck(), error=reason
    )


@dataclasses.dataclass(frozen=True, slots=True)
class RoundPlay:
    """The answers (as returned, for timings and conversations; and stable, for the record),
    the judgment, and why the round is void ('' for a played round). `failed`: for each side
    whose error text was judged in place of an answer (failed_answers: judged), why it
    failed; '' for an agent that answered."""

    answers: tuple[Answer | None, Answer | None]
    stable: tuple[Answer | None, Answer | None]
    judgment: PairJudgment | None
    void: str
    failed: tuple[str, str] = ("", "")

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
    failed_answers: Literal["void", "judged"] = "void",
) -> RoundPlay:
    """Both agents answer concurrently (a raising agent is a recorded failure, never a crash),
    then `judge` judges with `call` (its client and role; a tuple of roles is a judge panel,
    `match.judges`, whose majority decides; the evidence judge's grounding). A failed judge
    (any panel member) makes the round void: it never scores as a tie or a win. A failed
    agent does too by default; with `failed_answers="judged"` (the reference's way) its error
    text is judged as its answer instead (error_answer), so it loses the round on it."""
    got = list(
        await asyncio.gather(
            agents[0].answer(conversations[0], word_limit),
            agents[1].answer(conversations[1], word_limit),
            return_exceptions=True,
        )
    )
    failed = ("", "")
    if failed_answers == "judged":
        reasons = [failure(g) for g in got]
        failed = (reasons[0], reasons[1])
        got = [
            error_answer(n, why, g if isinstance(g, Answer) else None) if why else g
            for n, g, why in zip(names, got, reasons, strict=True)
        ]
    answers = tuple(g if isinstance(g, Answer) else None for g in got)
    stable = tuple(None if a is None else stable_answer(a) for a in answers)
    pair = (answers[0], answers[1])
    stable_pair = (stable[0], stable[1])
    problems = [
        f"agent {n} failed: {p}"
        for n, g, substituted in zip(names, got, failed, strict=True)
        if not substituted and (p := failure(g))
    ]
    if problems:
        return RoundPlay(pair, stable_pair, None, "; ".join(problems))
    a, b = pair
    assert a is not None and b is not None
    try:
        judged = await judge.judge(call, task, for_judge(a), for_judge(b))
    except DrarenaError as exc:
        return RoundPlay(pair, stable_pair, None, f"judge failed: {exc}", failed)
    return RoundPlay(pair, stable_pair, judged, "", failed)
