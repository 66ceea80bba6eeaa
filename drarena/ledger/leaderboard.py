"""The leaderboard: ratings plus what explains them, computed from match records alone (pure).

Why from matches.jsonl alone: `drarena run rank RUN` must recompute the same table without any
model, and a replayed run must produce the same bytes. Void matches are excluded from the
ratings and counted on their own, never as ties.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence

from drarena.agents.base import Answer
from drarena.errors import DrarenaError
from drarena.examiner.verdicts import FailureType, Verdict
from drarena.files import write_atomic
from drarena.ledger.folder import RunDir
from drarena.ledger.rating import Game, rate
from drarena.ledger.records import MatchRecord
from drarena.records import Record

FAILURES = tuple(f.value for f in FailureType)


@dataclasses.dataclass(frozen=True, slots=True)
class LeaderboardRow(Record):
    rank: int
    agent: str
    rating: float
    lower: float
    upper: float
    matches: int
    wins: int
    losses: int
    ties: int
    void: int
    avg_rounds: float
    lost_rounds: int
    failure_share: dict[str, float]
    answers: int
    cited: int
    valid_citations: int
    fabricated_citations: int
    tokens_per_answer: float


def games_of(matches: Sequence[MatchRecord]) -> list[Game]:
    return [Game(m.a, m.b, s) for m in matches if (s := m.score_a()) is not None]


def check_agents(
    agents: Sequence[str], matches: Sequence[MatchRecord], where: str = "matches"
) -> None:
    """Every match is between agents of the config (a log from another config is refused
    with one line rather than rated or failing with a KeyError)."""
    known = set(agents)
    for m in matches:
        for side in (m.a, m.b):
            if side not in known:
                raise DrarenaError(
                    f"{where}: match {m.match_id} has agent {side!r:.80}, not "
                    f"in the config's agents ({', '.join(sorted(known))})"
                )


def build_leaderboard(
    agents: Sequence[str], matches: Sequence[MatchRecord], *, resamples: int = 1000, seed: int = 0
) -> list[LeaderboardRow]:
    """Time per answer is not here: it differs on every run, and these files must come out
    byte-identical from a replay. The report and `drarena tournament` show it from
    timings.jsonl."""
    check_agents(agents, matches)
    ratings = {r.agent: r for r in rate(agents, games_of(matches), resamples=resamples, seed=seed)}
    rows = []
    for agent in agents:
        mine = [m for m in matches if agent in (m.a, m.b)]
        decided = [m for m in mine if m.score_a() is not None]
        wins = losses = ties = 0
        for m in decided:
            s = m.score_a() if m.a == agent else 1.0 - (m.score_a() or 0.0)
            wins += s == 1.0
            losses += s == 0.0
            ties += s == 0.5
        failures = dict.fromkeys(FAILURES, 0)
        answers = cited = valid = fabricated = tokens = 0
        for m in mine:
            side_a = m.a == agent
            for rnd in m.rounds:
                answer = rnd.answer_a if side_a else rnd.answer_b
                if answer is not None:
                    answers += 1
                    cited += answer.check.cited
                    valid += answer.check.valid
                    fabricated += answer.check.fabricated
                    tokens += answer.tokens
                if rnd.judgment is None or rnd.void_reason:
                    continue
                verdict = rnd.judgment.reconciled.verdict
                lost = (verdict.signed < 0) if side_a else (verdict.signed > 0)
                if lost and verdict != Verdict.TIE:
                    failures[rnd.judgment.reconciled.loser_failure_type.value] += 1
        lost_rounds = sum(failures.values())
        r = ratings[agent]
        rows.append(
            LeaderboardRow(
                rank=r.rank,
                agent=agent,
                rating=r.rating,
                lower=r.lower,
                upper=r.upper,
                matches=len(mine),
                wins=wins,
                losses=losses,
                ties=ties,
                void=len(mine) - len(decided),
                avg_rounds=round(sum(len(m.rounds) for m in mine) / len(mine), 4) if mine else 0.0,
                lost_rounds=lost_rounds,
                failure_share={
                    k: round(v / lost_rounds, 4) if lost_rounds else 0.0
                    for k, v in failures.items()
                },
                answers=answers,
                cited=cited,
                valid_citations=valid,
                fabricated_citations=fabricated,
                tokens_per_answer=round(tokens / answers, 2) if answers else 0.0,
            )
        )
    return sorted(rows, key=lambda row: (row.rank, -row.rating, row.agent))


@dataclasses.dataclass(frozen=True, slots=True)
class FailedRounds(Record):
    """An agent's rounds that its own failure (it raised, returned no report, or a model
    call failed for good) decided: `voided`, void for it (failed_answers: void, drarena's
    default), and `judged`, its error text judged as its answer (failed_answers: judged, the
    reference's way, under which it loses them)."""

    agent: str
    voided: int
    judged: int


def failed_rounds(agents: Sequence[str], matches: Sequence[MatchRecord]) -> list[FailedRounds]:
    """Per agent, the rounds its failures voided or lost it: a flaky agent that escapes
    losses through void rounds shows here, whichever rule the run played."""
    out = []
    for agent in agents:
        voided = judged = 0
        for m in matches:
            if agent not in (m.a, m.b):
                continue
            for rnd in m.rounds:
                answer = rnd.answer_a if m.a == agent else rnd.answer_b
                if f"agent {agent} failed:" in rnd.void_reason:
                    voided += 1
                elif answer is not None and is_error_answer(answer):
                    judged += 1
        out.append(FailedRounds(agent, voided, judged))
    return out


def is_error_answer(answer: Answer) -> bool:
    """An answer that is an agent's error text, judged in its place (drarena.arena.rounds:
    error_answer)."""
    return answer.error is not None and answer.report == f"Error: {answer.error}"


COLUMNS = (
    "rank",
    "agent",
    "rating",
    "lower",
    "upper",
    "matches",
    "wins",
    "losses",
    "ties",
    "void",
    "avg_rounds",
    "depth_fail",
    "width_fail",
    "both_fail",
    "none_fail",
    "cited",
    "valid_citations",
    "fabricated_citations",
    "tokens_per_answer",
)


def _flat(row: LeaderboardRow) -> dict[str, object]:
    d = row.to_dict()
    share = d.pop("failure_share")
    for key in FAILURES:
        d[f"{key.lower()}_fail"] = share[key]
    return {c: d[c] for c in COLUMNS}


def to_csv(rows: Sequence[LeaderboardRow]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(_flat(row))
    return out.getvalue()


def to_json(rows: Sequence[LeaderboardRow]) -> str:
    return json.dumps([r.to_dict() for r in rows], indent=2, sort_keys=True) + "\n"


def to_markdown(rows: Sequence[LeaderboardRow]) -> str:
    head = (
        "| rank | agent | rating | 95% interval | W-L-T | void | rounds/match | "
        "lost by depth/width/both/none | citations valid/fabricated | tokens/answer |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        f = r.failure_share
        lines.append(
            f"| {r.rank} | {r.agent} | {r.rating:.0f} | {r.lower:.0f} to {r.upper:.0f} | "
            f"{r.wins}-{r.losses}-{r.ties} | {r.void} | {r.avg_rounds:.2f} | "
            f"{f['DEPTH']:.0%}/{f['WIDTH']:.0%}/{f['BOTH']:.0%}/{f['NONE']:.0%} | "
            f"{r.valid_citations}/{r.fabricated_citations} | {r.tokens_per_answer:.0f} |"
        )
    return "\n".join(lines) + "\n"


def write_leaderboard(run: RunDir, rows: Sequence[LeaderboardRow]) -> None:
    """leaderboard.md, .csv and .json of a run folder, each written atomically."""
    write_atomic(run.path / "leaderboard.md", to_markdown(rows))
    write_atomic(run.path / "leaderboard.csv", to_csv(rows))
    write_atomic(run.path / "leaderboard.json", to_json(rows))
