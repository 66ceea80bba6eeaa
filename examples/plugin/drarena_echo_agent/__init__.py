"""An example third-party agent kind for drarena: `echo` restates the question.

It needs no model, so it shows the whole extension contract and nothing else: a factory
`build(context, name=..., **args)` that validates its args with a pydantic model (an unknown or
bad arg is one line naming the field) and returns an object with
`async answer(conversation, word_limit) -> Answer`.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from drarena.agents.base import Answer, CitationCheck, Conversation, Trajectory
from drarena.agents.registry import AgentContext, parse_agent_args


class EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prefix: str = Field("You asked:", max_length=200, description="text before the question")


class EchoAgent:
    def __init__(self, name: str, args: EchoArgs) -> None:
        self.name, self.args = name, args

    async def answer(self, conversation: Conversation, word_limit: tuple[int, int]) -> Answer:
        started = time.monotonic()
        report = f"{self.args.prefix} {conversation.question}"
        return Answer(
            agent=self.name,
            report=report,
            citations=(),
            check=CitationCheck(),
            trajectory=Trajectory(),
            wall_s=time.monotonic() - started,
            model_s=0.0,
            prompt_tokens=0,
            completion_tokens=0,
        )


def build(context: AgentContext, name: str = "echo", **args: Any) -> EchoAgent:
    return EchoAgent(name, parse_agent_args(EchoArgs, args, "echo"))
