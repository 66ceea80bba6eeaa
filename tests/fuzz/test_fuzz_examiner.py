"""Fuzzing the Examiner's readers of model output: the judge's verdict and the generated
task, from the model's raw reply text through JSON parsing, schema validation, repair
retries and the pure parsers (judgeparse.parse_judgment, taskcheck.check_task).

The model here is the scripted backend (control flow only): every reply is the fuzzed text.
Property: `judge_pair` returns a PairJudgment or raises DrarenaError (the model layer's "no
valid JSON after N tries"); `generate_task` always returns a TaskOutcome (a failure is
reported in it, not raised); on schema-valid JSON the pure parsers return their records.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from drarena.corpus.records import TreePage
from drarena.errors import DrarenaError
from drarena.examiner.judge import AnswerForJudge, PairJudgment, judge_pair
from drarena.examiner.judgeparse import (
    JudgeOutputError,
    RawJudgment,
    judge_schema,
    parse_judgment,
)
from drarena.examiner.taskcheck import ChecklistItem, Task, check_task, task_schema
from drarena.examiner.taskgen import (
    TaskCall,
    TaskOutcome,
    TaskRequest,
    TaskRules,
    generate_task,
)
from drarena.models.backend import BackendReply
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply
from drarena.models.structured import complete_tool_call, strict_tool
from drarena.models.types import ToolCall

BASE = "http://127.0.0.1:8765/library/"
ROOT = TreePage("r", BASE + "index.html", "The Library", "root text " * 20, 0, "root", "")
TARGETS = [
    TreePage("t1", BASE + "csv.html", "csv", "csv text " * 40, 1, "subtopic", "csv"),
    TreePage("t2", BASE + "json.html", "json", "json text " * 40, 1, "subtopic", "json"),
]
URLS = [p.url for p in (ROOT, *TARGETS)]
TASK = Task(
    "Which modules read delimited and nested data?",
    "Answer in 100 to 200 words.",
    (100, 200),
    (ChecklistItem("reads CSV", TARGETS[0].url),),
    (ChecklistItem("reads JSON", TARGETS[1].url),),
    "r",
)
A = AnswerForJudge("Answer A [1]", 1, 1, 0)
B = AnswerForJudge("Answer B", 0, 0, 0)


def _client(text: str) -> ModelClient:
    def step(request: Mapping[str, Any]) -> BackendReply:
        return reply(text)

    backend = ScriptedBackendForTests([step] * 20)
    return ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}), backend=backend
    )


VERDICT = {
    "checklist_a": [True, False],
    "checklist_b": [False, True],
    "verdict": "A_BETTER",
    "tie_quality": "NA",
    "loser_failure_type": "DEPTH",
    "reasoning": "because",
}
TASK_JSON = {
    "question": "Which two modules parse text formats?",
    "checklist_depth": [{"item": "csv reads rows", "source": 1}],
    "checklist_width": [{"item": "json reads objects", "source": 2}],
    "rationale": "r",
}

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=20),
        st.sampled_from(["A_MUCH_BETTER", "TIE", "HIGH", "NONE", "DEPTH", "verdict"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=10,
)


def _edited(base: dict[str, Any]) -> st.SearchStrategy[str]:
    """The valid object with fields replaced, removed or added, as JSON text."""

    @st.composite
    def edit(draw: st.DrawFn) -> str:
        obj = dict(base)
        for key in draw(st.lists(st.sampled_from([*base, "extra"]), max_size=3)):
            if draw(st.booleans()):
                obj[key] = draw(JSON_VALUES)
            else:
                obj.pop(key, None)
        return json.dumps(obj)

    return edit()


def _texts(base: dict[str, Any]) -> st.SearchStrategy[str]:
    valid = json.dumps(base)
    return st.one_of(
        st.text(max_size=300),
        JSON_VALUES.map(json.dumps),
        _edited(base),
        st.integers(0, len(valid)).map(lambda n: valid[:n]),  # cut off (a token limit)
        st.tuples(st.text(max_size=20), st.text(max_size=20)).map(lambda t: t[0] + valid + t[1]),
    )  # prose around the JSON


@given(_texts(VERDICT))
@example(json.dumps(VERDICT))
@example("[" * 100_000)  # deeper than the JSON decoder's recursion limit
@example('{"verdict": ' * 50_000)
@example(json.dumps({**VERDICT, "verdict": ["A_BETTER"]}))
def test_judge_reply_text(text: str) -> None:
    try:
        result = asyncio.run(judge_pair(_client(text), "examiner", TASK, A, B))
    except DrarenaError as exc:
        assert "\n" not in str(exc).split("; raw reply:")[0]
        return
    assert isinstance(result, PairJudgment)


@given(_texts(TASK_JSON))
@example(json.dumps(TASK_JSON))
@example("[" * 100_000)
@example(json.dumps({**TASK_JSON, "checklist_depth": [{"item": "x", "source": 10**30}]}))
def test_task_reply_text(text: str) -> None:
    outcome = asyncio.run(
        generate_task(
            TaskCall(_client(text), "examiner"),
            TaskRequest(
                root=ROOT,
                chain=(),
                targets=tuple(TARGETS),
                depth=1,
                earlier_questions=("An earlier question?",),
                tree_urls=tuple(URLS),
            ),
            TaskRules(page_budget_chars=600),
        )
    )
    assert isinstance(outcome, TaskOutcome)
    assert (outcome.task is None) == bool(outcome.error)


def _schema_valid(schema: dict[str, Any], base: dict[str, Any]) -> st.SearchStrategy[Any]:
    validator = Draft202012Validator(schema)
    return _edited(base).map(json.loads).filter(validator.is_valid)


@given(_schema_valid(judge_schema(2), VERDICT))
def test_parse_judgment_on_schema_valid_json(obj: dict[str, Any]) -> None:
    try:
        raw = parse_judgment(obj, ["reads CSV", "reads JSON"])
    except JudgeOutputError:
        return
    assert isinstance(raw, RawJudgment)
    assert len(raw.checklist_a) == len(raw.checklist_b) == 2


@given(_schema_valid(task_schema(3, 2), TASK_JSON))
def test_check_task_on_schema_valid_json(obj: dict[str, Any]) -> None:
    task, reasons = check_task(
        obj,
        sources=URLS,
        forbidden=["csv.html"],
        tree_urls=URLS,
        earlier_questions=[],
        word_limit=(100, 200),
        word_limit_instruction="Answer in 100 to 200 words.",
    )
    assert (task is None) == bool(reasons)


# --- what the fuzzing found, kept as named regression tests ------------------------------------

DEEP = "[" * 100_000  # RecursionError from json.loads before the fix (a traceback, not a retry)


def test_too_deeply_nested_verdict_is_retried_then_one_line() -> None:
    good = json.dumps(VERDICT)
    replies = iter([DEEP, good, good])

    def step(request: Mapping[str, Any]) -> BackendReply:
        return reply(next(replies))

    client = ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}),
        backend=ScriptedBackendForTests([step] * 3),
    )
    result = asyncio.run(judge_pair(client, "examiner", TASK, A, B))
    assert isinstance(result, PairJudgment)  # the deep reply was repaired like bad JSON
    with pytest.raises(DrarenaError, match="nested too deeply"):
        asyncio.run(judge_pair(_client(DEEP), "examiner", TASK, A, B))


def test_too_deeply_nested_tool_arguments_are_a_repair_reason() -> None:
    tool = strict_tool(
        "answer", "answer", {"type": "object", "properties": {"report": {"type": "string"}}}
    )
    call = ToolCall(id="1", name="answer", arguments=DEEP)
    client = ModelClient(
        ModelsConfig(roles={"examiner": {"model": "openai/scripted"}}),
        backend=ScriptedBackendForTests([reply(tool_calls=(call,))] * 3),
    )
    with pytest.raises(DrarenaError, match="nested too deeply"):
        asyncio.run(
            complete_tool_call(client, "examiner", [{"role": "user", "content": "go"}], [tool])
        )
