"""A judge kind, `cited`: the answer with more citations found in the frozen web wins (a
tie on equal counts). No model call; an example of a judging rule as a plugin, not a good
judge (docs/extending.md, "A judge kind")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.examiner.judge import AnswerForJudge, PairJudgment
from drarena.examiner.judges import JudgeCall
from drarena.examiner.taskcheck import Task
from drarena.examiner.verdicts import FailureType, Judgment, TieQuality, Verdict
from drarena.registry import ComponentSpec, parse_args


class CitedArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    margin: int = Field(2, ge=1, description="a lead of this many valid citations is MUCH_BETTER")


class CitedJudge:
    uses_model = False

    def __init__(self, args: CitedArgs) -> None:
        self.args = args

    @property
    def spec(self) -> ComponentSpec:
        return ComponentSpec(kind="cited", args=self.args.model_dump())

    def template_specs(self) -> dict[str, str]:
        return {}

    async def judge(
        self, call: JudgeCall, task: Task, a: AnswerForJudge, b: AnswerForJudge
    ) -> PairJudgment:
        lead = a.valid - b.valid
        if lead == 0:
            verdict = Judgment(Verdict.TIE, TieQuality.HIGH, FailureType.NONE)
        else:
            strength = 2 if abs(lead) >= self.args.margin else 1
            verdict = Judgment(
                Verdict.from_signed(strength if lead > 0 else -strength), None, FailureType.WIDTH
            )
        return PairJudgment(None, None, verdict)


def build(**args: Any) -> CitedJudge:
    return CitedJudge(parse_args(CitedArgs, args, "judge cited"))
