"""`drarena ask`: argument checks (one clear line each, before any model starts) and the
printed form of an answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.agents.base import (
    Answer,
    Citation,
    CitationCheck,
    ModelCall,
    Step,
    ToolEvent,
    Trajectory,
)
from drarena.agents.commands import agent_spec, parse_words
from drarena.agents.show import format_answer
from drarena.cli import main
from drarena.errors import DrarenaError

SNAPSHOT = str(Path(__file__).resolve().parents[2] / "snapshots" / "pydocs")


def test_parse_words_and_agent_spec() -> None:
    assert parse_words("100-200") == (100, 200)
    assert parse_words(" 5 - 5 ") == (5, 5)
    for bad in ("200-100", "0-10", "many", "10"):
        with pytest.raises(DrarenaError, match="--words"):
            parse_words(bad)
    assert agent_spec("react", "dense", 4) == {
        "kind": "react",
        "args": {"role": "agent", "retriever": {"kind": "dense"}, "max_steps": 4},
    }
    assert agent_spec("closed_book", "dense", 4) == {
        "kind": "closed_book",
        "args": {"role": "agent"},
    }


def test_live_agent_spec_builds_the_live_retriever(tmp_path: Path) -> None:
    from drarena.search.base import build_retriever
    from drarena.search.live import LiveRetriever

    spec = agent_spec("rag", "live", 4, "http://127.0.0.1:9/", True)
    retriever_spec = spec["args"]["retriever"]
    assert retriever_spec["args"]["provider"] == {
        "kind": "searxng",
        "args": {"url": "http://127.0.0.1:9/"},
    }
    retriever = build_retriever(retriever_spec, tmp_path, tmp_path)
    try:
        assert isinstance(retriever, LiveRetriever)
        assert retriever.web.settings.allow_private_addresses is True
    finally:
        retriever.close()  # type: ignore[attr-defined]  # the live retriever's own


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agent", "oracle"], "--agent oracle needs the round's target pages"),
        (["--target", "http://x/"], "--target is for --agent oracle only"),
        (["--words", "9-1"], "--words '9-1'"),
        (["--max-tokens", "0"], "--max-tokens 0"),
    ],
)
def test_ask_rejects_bad_arguments_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["agent", "ask", SNAPSHOT, "question", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("drarena: error: ") and message in err
    assert err.count("\n") == 1


def test_ask_names_a_missing_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "/nonexistent/snap", "q"]) == 2
    assert "snapshot /nonexistent/snap: no such folder" in capsys.readouterr().err


def test_format_answer_shows_report_citations_and_trajectory() -> None:
    answer = Answer(
        agent="react",
        report="Use sorted() [1] and magic [2].",
        citations=(
            Citation(1, "http://a.test/sorting", True, True),
            Citation(2, "http://made.up/x", True, False),
        ),
        check=CitationCheck(2, 1, 1, 0, True, ("http://made.up/x",)),
        trajectory=Trajectory(
            (
                Step(
                    0,
                    None,
                    (
                        ToolEvent(
                            "s", "search", '{"query": "sort"}', ("d1",), ("http://a.test/sorting",)
                        ),
                    ),
                    note="seed search",
                ),
                Step(
                    1,
                    ModelCall("f" * 64, 900, 40, 12.5, False, "tool_calls"),
                    (
                        ToolEvent(
                            "o",
                            "open",
                            '{"url": "http://a.test/nope"}',
                            error="cannot open http://a.test/nope: unknown",
                        ),
                    ),
                ),
            )
        ),
        wall_s=13.0,
        model_s=12.5,
        prompt_tokens=900,
        completion_tokens=40,
        limit_hit="step limit reached: 1 steps",
    )
    text = format_answer(answer)
    assert "[1] http://a.test/sorting  ok" in text
    assert "[2] http://made.up/x  FABRICATED" in text
    assert "cited 2, valid 1, fabricated 1, unresolved markers 0" in text
    assert "step 0: no model call [seed search]" in text
    assert "search(query='sort') -> 1 url(s) http://a.test/sorting" in text
    assert "step 1: model 900+40 tok 12.5s key ffffffffffff" in text
    assert "open(url='http://a.test/nope') -> ERROR cannot open" in text
    assert "limit hit: step limit reached: 1 steps" in text
