"""Judge prompt choice, one order or two, the checklist ablation (scripted backend: control
flow only)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from judge_helpers import TASK, A, B

from drarena.errors import DrarenaError
from drarena.examiner import templates
from drarena.examiner.judge import JudgeOptions, judge_answers, judge_prompt
from drarena.examiner.judgeparse import judge_schema
from drarena.examiner.verdicts import FailureType, Judgment, Verdict
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, Step, reply


def client(steps: list[Step]) -> tuple[ModelClient, ScriptedBackendForTests]:
    backend = ScriptedBackendForTests(steps)
    config = ModelsConfig(roles={"examiner": {"model": "openai/scripted"}})
    return ModelClient(config, backend=backend), backend


def verdict(v: str, checklist: bool = True) -> str:
    obj: dict[str, object] = {
        "verdict": v,
        "tie_quality": "NA",
        "loser_failure_type": "DEPTH",
        "reasoning": "r",
    }
    if checklist:
        obj |= {"checklist_a": [True, True], "checklist_b": [False, False]}
    return json.dumps(obj)


@pytest.mark.parametrize("name", ["drarena", "checklist-first"])
def test_judging_prompts_describe_fields_and_show_no_copyable_example(name: str) -> None:
    text = templates.load(name)
    assert "{" not in text and "[true" not in text.lower()  # no JSON object or list to copy
    prompt = judge_prompt(TASK, A, B, name)
    assert "checklist_a: a list of exactly 2 booleans" in prompt
    assert prompt.index("Answer A: the csv") < prompt.index("Answer B: no idea")
    assert prompt.count("<<<END ANSWER B>>>") == 1


def test_drarenas_prompt_carries_the_human_preference_criteria() -> None:
    text = templates.load("drarena").lower()
    for phrase in (
        "comprehensiveness, formatting and helpfulness",
        "bold headers, bullet points, tables",
        "bottom line up front",
        "more citations",
        "helpful recovery",
    ):
        assert phrase in text, phrase


def test_the_v1_prompt_is_kept_byte_for_byte_for_old_runs() -> None:
    """Runs recorded before the choice existed hold this hash in run.json (and their cache
    keys hang on these bytes); changing the file would make them unreplayable."""
    assert templates.template_hash("judge") == (
        "sha256:f40642ff6f3dfe88e7f12e809b098519151cea5986e7577919608aca72cafe4c"
    )
    prompt = judge_prompt(TASK, A, B, "judge")
    assert "1. the csv module" in prompt and "2. reader yields lists" in prompt
    with pytest.raises(DrarenaError, match="always shows the checklist"):
        judge_prompt(TASK, A, B, "judge", sees_checklist=False)


def test_no_checklist_for_the_judge_ablation() -> None:
    prompt = judge_prompt(TASK, A, B, "drarena", sees_checklist=False)
    assert "1. the csv module" not in prompt and "reader yields lists" not in prompt
    assert "checklist_a" not in prompt and "CHECKLIST: none is given" in prompt
    schema = judge_schema(0)
    assert "checklist_a" not in schema["properties"]
    jsonschema.validate(json.loads(verdict("TIE", checklist=False)), schema)


async def test_hidden_checklist_round_trip() -> None:
    c, backend = client([reply(verdict("A_BETTER", False)), reply(verdict("B_BETTER", False))])
    pj = await judge_answers(c, "examiner", TASK, A, B, JudgeOptions(sees_checklist=False))
    assert pj.reconciled.verdict == Verdict.A_BETTER
    assert pj.ab is not None and pj.ab.raw.checklist_a == ()
    assert "1. the csv module" not in backend.requests[0]["messages"][0]["content"]


@pytest.mark.parametrize(("swap", "order"), [(False, "AB"), (True, "BA")])
async def test_one_order_judges_once_and_maps_a_swap_back(swap: bool, order: str) -> None:
    c, backend = client([reply(verdict("A_MUCH_BETTER"))])
    pj = await judge_answers(c, "examiner", TASK, A, B, JudgeOptions(orders=1, swap=swap))
    assert len(backend.requests) == 1 and [o.order for o in pj.orders()] == [order]
    prompt = backend.requests[0]["messages"][0]["content"]
    first, second = ("Answer B", "Answer A") if swap else ("Answer A", "Answer B")
    assert prompt.index(first) < prompt.index(second)
    # the judge preferred the answer shown first: our B when swapped
    expected = Verdict.B_MUCH_BETTER if swap else Verdict.A_MUCH_BETTER
    assert pj.reconciled == Judgment(expected, None, FailureType.DEPTH)
    assert (pj.ab is None) == swap and (pj.ba is None) != swap


async def test_a_prompt_file_is_rendered_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    custom = tmp_path / "mine.txt"
    custom.write_text(
        "Q: $question ($word_limit_instruction)\n$checklist\n$answer_a\n$answer_b\n$fields\n",
        encoding="utf-8",
    )
    c, backend = client([reply(verdict("TIE")), reply(verdict("TIE"))])
    await judge_answers(c, "examiner", TASK, A, B, JudgeOptions(prompt=str(custom)))
    assert backend.requests[0]["messages"][0]["content"].startswith("Q: Which module")
    assert templates.used_hashes({"judge": str(custom)}) == {
        str(custom): templates.PromptTemplate(str(custom), custom.read_text()).sha256
    }
    custom.write_text("Q: $question only\n", encoding="utf-8")
    with pytest.raises(DrarenaError, match=r"mine\.txt': missing \[\], unexpected \['answer_a'"):
        judge_prompt(TASK, A, B, str(custom))
    with pytest.raises(DrarenaError, match=r"^prompt file .*nowhere\.txt not found$"):
        templates.resolve(str(tmp_path / "nowhere.txt"))
    with pytest.raises(DrarenaError, match=r"^no prompt template named 'papr' \(shipped: "):
        templates.resolve("papr")


def test_a_prompt_file_over_the_limit_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prompt file is the user's: its size was stat()ed, then it was decoded whole, which a
    FIFO or a file growing in between defeats; now it is read bounded (at most
    MAX_TEMPLATE_BYTES + 1 bytes), a larger one one line naming it."""
    custom = tmp_path / "mine.txt"
    custom.write_text("Q: $question\n" + "padding " * 20, encoding="utf-8")
    real_stat = Path.stat

    def small_stat(path: Path, **kwargs: Any) -> Any:  # as a FIFO or a growing file says
        return real_stat(tmp_path / "empty.txt") if path == custom else real_stat(path, **kwargs)

    (tmp_path / "empty.txt").write_bytes(b"")
    monkeypatch.setattr(Path, "stat", small_stat)
    monkeypatch.setattr(templates, "MAX_TEMPLATE_BYTES", 64)
    with pytest.raises(
        DrarenaError, match=r"mine\.txt: larger than 64 bytes \(a prompt is a few KB\)$"
    ):
        templates.resolve(str(custom))
    (tmp_path / "latin.txt").write_bytes(b"Q: $question \xe9")
    with pytest.raises(DrarenaError, match=r"^prompt file .*latin\.txt cannot be read: 'utf-8'"):
        templates.resolve(str(tmp_path / "latin.txt"))


def test_used_hashes_name_what_a_run_used() -> None:
    used = templates.used_hashes(
        JudgeOptions(prompt="checklist-first", mode="both").template_specs()  # type: ignore[arg-type]
        | {"taskgen": "taskgen"}
    )
    assert set(used) == {"checklist-first", "pointwise", "taskgen"}
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in used.values())
    assert set(templates.used_hashes({"judge": "judge", "taskgen": "taskgen"})) == {
        "judge",
        "taskgen",
    }  # the shape old runs recorded
