"""Frozen against live verdicts and ratings for `drarena drift run` (pure, no I/O).

Why these measures: a frozen web ages; what matters to a user is whether the ageing changes
who wins. Per round: did the same side win (same), did the win change sides (flipped), did a
tie become a win or a win a tie. Per tournament: do the two leaderboards order the agents
alike (Spearman and Kendall rank correlation of the ratings), and which agents moved (rank
and rating deltas). A void round or match on either side is counted apart, never compared.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from enum import StrEnum

from drarena.examiner.evolve import Outcome
from drarena.examiner.verdicts import Verdict
from drarena.ledger.leaderboard import LeaderboardRow
from drarena.ledger.records import MatchRecord
from drarena.records import Record

DRIFT_RUN_SCHEMA_VERSION = 1


class Change(StrEnum):
    SAME = "same"
    FLIPPED = "flipped"
    TIE_TO_WIN = "tie->win"
    WIN_TO_TIE = "win->tie"
    VOID = "void"


def round_winner(verdict: Verdict | None) -> str | None:
    """'a', 'b' or 'tie'; None for a void round."""
    if verdict is None:
        return None
    return "a" if verdict.signed > 0 else "b" if verdict.signed < 0 else "tie"


def match_winner(outcome: Outcome) -> str | None:
    return {Outcome.A_WINS: "a", Outcome.B_WINS: "b", Outcome.TIE: "tie"}.get(outcome)


def change(frozen: str | None, live: str | None) -> Change:
    """How the winner moved from the frozen to the live side ('a', 'b', 'tie' or None)."""
    if frozen is None or live is None:
        return Change.VOID
    if frozen == live:
        return Change.SAME
    if frozen == "tie":
        return Change.TIE_TO_WIN
    if live == "tie":
        return Change.WIN_TO_TIE
    return Change.FLIPPED


@dataclasses.dataclass(frozen=True, slots=True)
class RoundDrift(Record):
    match_id: str
    round: int
    a: str
    b: str
    question: str
    frozen: str  # reconciled verdict, "" for a void round
    live: str
    change: Change
    live_void_reason: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class MatchDrift(Record):
    match_id: str
    a: str
    b: str
    tree: str
    frozen: Outcome
    live: Outcome
    change: Change


@dataclasses.dataclass(frozen=True, slots=True)
class AgentMove(Record):
    """Positions are places in the leaderboard's order (1 = top); ranks are the
    leaderboard's ranks, which respect the confidence intervals (agents that cannot be told
    apart share one). Deltas > 0: the agent stands higher live than frozen."""

    agent: str
    frozen_position: int
    live_position: int
    position_delta: int
    frozen_rank: int
    live_rank: int
    rank_delta: int
    frozen_rating: float
    live_rating: float
    rating_delta: float


@dataclasses.dataclass(frozen=True, slots=True)
class DriftSummary(Record):
    rounds: int
    compared: int
    counts: dict[str, int]  # per Change value, over all rounds
    agreement: float | None  # same / compared
    match_counts: dict[str, int]
    spearman: float | None  # rank correlation of the ratings; None when undefined
    kendall: float | None
    moved: tuple[str, ...]  # agents whose position changed, by name


@dataclasses.dataclass(frozen=True, slots=True)
class DriftRunReport(Record):
    schema_version: int
    run: str
    provider: dict[str, object]
    summary: DriftSummary
    rounds: tuple[RoundDrift, ...]
    matches: tuple[MatchDrift, ...]
    agents: tuple[AgentMove, ...]


def compare_rounds(frozen: Sequence[MatchRecord], live: Sequence[MatchRecord]) -> list[RoundDrift]:
    """Rounds matched by (match id, round index); a frozen round with no task (never
    asked) has no live counterpart and is skipped."""
    by_id = {m.match_id: m for m in live}
    out = []
    for fm in frozen:
        lm = by_id.get(fm.match_id)
        live_rounds = {r.index: r for r in lm.rounds} if lm is not None else {}
        for fr in fm.rounds:
            if fr.task.task is None:
                continue
            lr = live_rounds.get(fr.index)
            fv = None if fr.void_reason or fr.judgment is None else fr.judgment.reconciled.verdict
            lv = (
                None
                if lr is None or lr.void_reason or lr.judgment is None
                else (lr.judgment.reconciled.verdict)
            )
            out.append(
                RoundDrift(
                    fm.match_id,
                    fr.index,
                    fm.a,
                    fm.b,
                    fr.task.task.question,
                    fv.value if fv else "",
                    lv.value if lv else "",
                    change(round_winner(fv), round_winner(lv)),
                    "not asked" if lr is None else lr.void_reason,
                )
            )
    return out


def compare_matches(frozen: Sequence[MatchRecord], live: Sequence[MatchRecord]) -> list[MatchDrift]:
    by_id = {m.match_id: m for m in live}
    out = []
    for fm in frozen:
        lm = by_id.get(fm.match_id)
        lo = lm.outcome if lm is not None else Outcome.VOID
        out.append(
            MatchDrift(
                fm.match_id,
                fm.a,
                fm.b,
                fm.tree,
                fm.outcome,
                lo,
                change(match_winner(fm.outcome), match_winner(lo)),
            )
        )
    return out


def rank_correlation(
    frozen: Mapping[str, float], live: Mapping[str, float]
) -> tuple[float | None, float | None]:
    """Spearman's rho and Kendall's tau(-b) of the two ratings over the agents both rate;
    None when undefined (fewer than two agents, or one side rates them all alike)."""
    from scipy.stats import kendalltau, spearmanr

    agents = sorted(set(frozen) & set(live))
    x = [frozen[a] for a in agents]
    y = [live[a] for a in agents]
    if len(agents) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None, None
    rho = float(spearmanr(x, y).statistic)
    tau = float(kendalltau(x, y).statistic)
    return (None if math.isnan(rho) else round(rho, 6), None if math.isnan(tau) else round(tau, 6))


def agent_moves(
    frozen: Sequence[LeaderboardRow], live: Sequence[LeaderboardRow]
) -> list[AgentMove]:
    """Per agent both leaderboards hold, by name; rows are taken in the order given (the
    leaderboard's: rank, then rating, then name)."""
    f = {r.agent: (i, r) for i, r in enumerate(frozen, 1)}
    lv = {r.agent: (i, r) for i, r in enumerate(live, 1)}
    out = []
    for a in sorted(set(f) & set(lv)):
        (fp, fr), (lp, lr) = f[a], lv[a]
        out.append(
            AgentMove(
                a,
                fp,
                lp,
                fp - lp,
                fr.rank,
                lr.rank,
                fr.rank - lr.rank,
                fr.rating,
                lr.rating,
                round(lr.rating - fr.rating, 4),
            )
        )
    return out


def _counts(changes: Sequence[Change]) -> dict[str, int]:
    return {c.value: sum(1 for x in changes if x == c) for c in Change}


def build_report(
    run: str,
    provider: Mapping[str, object],
    frozen: Sequence[MatchRecord],
    live: Sequence[MatchRecord],
    frozen_rows: Sequence[LeaderboardRow],
    live_rows: Sequence[LeaderboardRow],
) -> DriftRunReport:
    rounds = compare_rounds(frozen, live)
    matches = compare_matches(frozen, live)
    moves = agent_moves(frozen_rows, live_rows)
    compared = [r for r in rounds if r.change != Change.VOID]
    rho, tau = rank_correlation(
        {r.agent: r.rating for r in frozen_rows}, {r.agent: r.rating for r in live_rows}
    )
    summary = DriftSummary(
        rounds=len(rounds),
        compared=len(compared),
        counts=_counts([r.change for r in rounds]),
        agreement=(
            round(sum(r.change == Change.SAME for r in compared) / len(compared), 6)
            if compared
            else None
        ),
        match_counts=_counts([m.change for m in matches]),
        spearman=rho,
        kendall=tau,
        moved=tuple(m.agent for m in moves if m.position_delta != 0),
    )
    return DriftRunReport(
        DRIFT_RUN_SCHEMA_VERSION,
        run,
        dict(provider),
        summary,
        tuple(rounds),
        tuple(matches),
        tuple(moves),
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def to_markdown(report: DriftRunReport) -> str:
    """Tables for the terminal and drift-run.md: summary, agents, then every round."""
    s = report.summary
    lines = [
        f"# drift-run: {report.run} (frozen vs live)",
        "",
        f"rounds compared: {s.compared} of {s.rounds}; "
        + ", ".join(f"{k} {v}" for k, v in s.counts.items())
        + f"; agreement {_num(s.agreement)}",
        "matches: " + ", ".join(f"{k} {v}" for k, v in s.match_counts.items()),
        f"rank correlation of ratings: Spearman {_num(s.spearman)}, Kendall {_num(s.kendall)}",
        "moved: " + (", ".join(s.moved) if s.moved else "none"),
        "",
        "| agent | frozen | live | moved | frozen rank | live rank | frozen rating | "
        "live rating | rating delta |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in sorted(report.agents, key=lambda m: (m.live_position, m.agent)):
        lines.append(
            f"| {m.agent} | {m.frozen_position} | {m.live_position} | "
            f"{m.position_delta:+d} | {m.frozen_rank} | {m.live_rank} | "
            f"{m.frozen_rating:.1f} | {m.live_rating:.1f} | {m.rating_delta:+.1f} |"
        )
    lines += [
        "",
        "| match | round | A | B | frozen | live | change |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report.rounds:
        lines.append(
            f"| {r.match_id} | {r.round + 1} | {r.a} | {r.b} | {r.frozen or 'void'} "
            f"| {r.live or 'void'} | {r.change.value} |"
        )
    return "\n".join(lines) + "\n"
