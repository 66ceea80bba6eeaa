from __future__ import annotations

import csv
import io
import json

from drarena.agents.base import Answer, CitationCheck, Trajectory
from drarena.examiner.evolve import MatchScore, Outcome
from drarena.examiner.judge import JudgedOrder, PairJudgment
from drarena.examiner.judgeparse import RawJudgment
from drarena.examiner.taskgen import TaskOutcome
from drarena.examiner.verdicts import FailureType, Judgment, Verdict
from drarena.ledger.leaderboard import build_leaderboard, to_csv, to_json, to_markdown
from drarena.ledger.records import SCHEMA_VERSION, MatchRecord, RoundRecord


def answer(agent: str, fabricated: int = 0) -> Answer:
    return Answer(
        agent=agent,
        report="r",
        citations=(),
        check=CitationCheck(cited=2, valid=2 - fabricated, fabricated=fabricated, checked=True),
        trajectory=Trajectory(),
        wall_s=0.0,
        model_s=0.0,
        prompt_tokens=90,
        completion_tokens=10,
    )


def rnd(a: str, b: str, verdict: Verdict, failure: FailureType) -> RoundRecord:
    j = Judgment(verdict, None, failure)
    raw = RawJudgment(j, (), (), "")
    pj = PairJudgment(JudgedOrder("AB", raw, "k1"), JudgedOrder("BA", raw, "k2"), j)
    return RoundRecord(
        index=0,
        node="n",
        depth=1,
        width=2,
        target_urls=("u",),
        task=TaskOutcome(None, (), ()),
        answer_a=answer(a),
        answer_b=answer(b, fabricated=1),
        judgment=pj,
        score=MatchScore(0, 0, 1, 0),
        transition=None,
    )


def match(
    i: int,
    a: str,
    b: str,
    outcome: Outcome,
    verdict: Verdict,
    failure: FailureType = FailureType.DEPTH,
) -> MatchRecord:
    rounds = () if outcome == Outcome.VOID else (rnd(a, b, verdict, failure),)
    return MatchRecord(
        SCHEMA_VERSION,
        f"m{i}",
        1,
        a,
        b,
        "t",
        0,
        rounds,
        MatchScore(0, 0, len(rounds), 0),
        outcome,
        "void: judge failed" if outcome == Outcome.VOID else "",
    )


MATCHES = [
    match(1, "oracle", "closed", Outcome.A_WINS, Verdict.A_MUCH_BETTER, FailureType.DEPTH),
    match(2, "closed", "oracle", Outcome.B_WINS, Verdict.B_BETTER, FailureType.WIDTH),
    match(3, "rag", "closed", Outcome.TIE, Verdict.TIE),
    match(4, "oracle", "rag", Outcome.VOID, Verdict.TIE),
]


def test_counts_failures_and_void_matches() -> None:
    rows = build_leaderboard(["closed", "oracle", "rag"], MATCHES, resamples=50)
    by = {r.agent: r for r in rows}
    assert rows[0].agent == "oracle"
    assert (by["oracle"].wins, by["oracle"].losses, by["oracle"].void) == (2, 0, 1)
    assert (by["rag"].ties, by["rag"].void) == (1, 1)
    assert by["closed"].lost_rounds == 2
    assert by["closed"].failure_share == {"DEPTH": 0.5, "WIDTH": 0.5, "BOTH": 0.0, "NONE": 0.0}
    # the closed agent was side b in match 1 and side a in match 2: fabricated only as b
    assert by["closed"].fabricated_citations == 2 and by["oracle"].fabricated_citations == 1
    assert by["oracle"].tokens_per_answer == 100.0


def test_renderings_are_stable_and_parse() -> None:
    rows = build_leaderboard(["closed", "oracle", "rag"], MATCHES, resamples=50, seed=3)
    again = build_leaderboard(["rag", "oracle", "closed"], MATCHES, resamples=50, seed=3)
    assert to_json(rows) == to_json(again) and to_csv(rows) == to_csv(again)
    parsed = list(csv.DictReader(io.StringIO(to_csv(rows))))
    assert [p["agent"] for p in parsed] == [r.agent for r in rows]
    assert json.loads(to_json(rows))[0]["agent"] == rows[0].agent
    md = to_markdown(rows)
    assert md.count("\n") == len(rows) + 2 and "| oracle |" in md


def test_match_record_round_trips() -> None:
    for m in MATCHES:
        assert MatchRecord.from_json(m.to_json()) == m
