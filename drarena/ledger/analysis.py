"""The DR-Arena paper's analyses of a run, computed from matches.jsonl (pure, except the lazy
price-map lookup in `litellm_prices`).

Why: a drarena leaderboard is only comparable with the paper's when the same diagnostics sit
next to it: how often the judge said "much better", "better" or tie (paper, Figure 7: Better
49.9%, Much Better 32.8%); whether close pairs need more rounds (Figure 5: Pearson r = -0.61
between the Elo gap and the rounds a pair needed); why rounds were lost (Figure 7, ties
counted too); how deep and wide the trees were when the verdict came (Figure 8); what the
answers cost; and how often the judge agreed with itself when the answers swapped places.

Definitions (the report and `drarena run rank --json` show these numbers, nothing else):
- a *judged round* is a round with a judgment and no void reason;
- verdict shares and failure shares are over judged rounds, from the reconciled verdict;
- rounds per pair: the mean number of rounds played (void ones included) over the pair's
  decided matches, against the absolute difference of the two agents' raw ratings;
- depth and width reached: those of the match's last judged round (the verdict's);
- position consistency: of the rounds judged in both orders, the share whose second order,
  mapped back, gave the same verdict (exact) and the same direction (A, tie or B).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from drarena.examiner.verdicts import FailureType, TieQuality, Verdict
from drarena.ledger.header import RunHeader
from drarena.ledger.records import AnswerTiming, MatchRecord, RoundRecord
from drarena.records import Record

VERDICT_KINDS = ("much_better", "better", "tie_high", "tie_low")
FAILURE_KINDS = (*(f.value for f in FailureType), "TIE")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "0.0.0.0", "[::1]")


@dataclasses.dataclass(frozen=True, slots=True)
class Price(Record):
    """US dollars per token (litellm's price map) for one model."""

    model: str
    input_per_token: float
    output_per_token: float


@dataclasses.dataclass(frozen=True, slots=True)
class PairRounds(Record):
    a: str
    b: str
    matches: int
    mean_rounds: float
    rating_gap: float


@dataclasses.dataclass(frozen=True, slots=True)
class AgentCost(Record):
    """Tokens of one agent's answers; `cost_usd` only for a model in the price map, else the
    model and wall seconds of its answers from timings.jsonl (None when none were recorded)."""

    agent: str
    model: str
    answers: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    model_seconds: float | None
    wall_seconds: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class MatchCost(Record):
    match_id: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    model_seconds: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class Analyses(Record):
    judged_rounds: int
    verdict_counts: dict[str, int]
    verdict_shares: dict[str, float]
    failure_counts: dict[str, int]
    failure_shares: dict[str, float]
    pairs: tuple[PairRounds, ...]
    rounds_gap_pearson_r: float | None
    rounds_gap_p_value: float | None
    depth_histogram: dict[str, int]
    width_histogram: dict[str, int]
    match_costs: tuple[MatchCost, ...]
    agent_costs: tuple[AgentCost, ...]
    both_orders_rounds: int
    position_agree_exact: float | None
    position_agree_direction: float | None


def judged(rnd: RoundRecord) -> bool:
    return rnd.judgment is not None and not rnd.void_reason


def verdict_kind(verdict: Verdict, tie_quality: TieQuality | None) -> str:
    """much_better / better / tie_high / tie_low. A tie without a stated quality counts as
    high, as in the reference and drarena's reconciliation (drarena.examiner.verdicts)."""
    if verdict == Verdict.TIE:
        return "tie_low" if tie_quality == TieQuality.LOW else "tie_high"
    return "much_better" if abs(verdict.signed) == 2 else "better"


def _shares(counts: Mapping[str, int], total: int) -> dict[str, float]:
    return {k: round(v / total, 4) if total else 0.0 for k, v in counts.items()}


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """(r, two-sided p) or None when undefined (fewer than 3 points or a constant side)."""
    if len(x) != len(y) or len(x) < 3:
        return None
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((v - mx) ** 2 for v in x)
    syy = sum((v - my) ** 2 for v in y)
    if sxx <= 0 or syy <= 0:
        return None
    r = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / math.sqrt(sxx * syy)
    r = max(-1.0, min(1.0, r))
    if abs(r) == 1.0:
        return r, 0.0
    from scipy.stats import t as student_t

    stat = r * math.sqrt((n - 2) / (1.0 - r * r))
    p = float(2.0 * student_t.sf(abs(stat), n - 2))
    return r, p


def pair_rounds(matches: Sequence[MatchRecord], ratings: Mapping[str, float]) -> list[PairRounds]:
    """Mean rounds played per unordered pair over its decided matches, with the rating gap."""
    by_pair: dict[tuple[str, str], list[int]] = {}
    for m in matches:
        if m.score_a() is None:
            continue
        key = (m.a, m.b) if m.a <= m.b else (m.b, m.a)
        by_pair.setdefault(key, []).append(len(m.rounds))
    return [
        PairRounds(
            a,
            b,
            len(rounds),
            round(sum(rounds) / len(rounds), 4),
            round(abs(ratings[a] - ratings[b]), 4),
        )
        for (a, b), rounds in sorted(by_pair.items())
        if a in ratings and b in ratings
    ]


def _histogram(values: Iterable[int]) -> dict[str, int]:
    counts: dict[int, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return {str(k): counts[k] for k in sorted(counts)}


def _cost(price: Price | None, prompt: int, completion: int) -> float | None:
    if price is None:
        return None
    return round(prompt * price.input_per_token + completion * price.output_per_token, 6)


def analyse(
    matches: Sequence[MatchRecord],
    ratings: Mapping[str, float],
    *,
    models: Mapping[str, str] | None = None,
    prices: Mapping[str, Price | None] | None = None,
    timings: Sequence[AnswerTiming] = (),
) -> Analyses:
    """Every analysis of the module docstring. `ratings`: raw rating per agent; `models`:
    agent -> model name (for the cost table); `prices`: agent -> Price, None for a model not
    in the price map (a self-hosted or served one: its cost is shown as seconds)."""
    models = models or {}
    prices = prices or {}
    j = _judged_rounds(matches)
    total = sum(j.verdicts.values())
    pairs = pair_rounds(matches, ratings)
    corr = pearson([p.rating_gap for p in pairs], [p.mean_rounds for p in pairs])

    seconds: dict[tuple[str, str], tuple[float, float]] = {}
    for t in timings:
        model_s, wall_s = seconds.get((t.match_id, t.agent), (0.0, 0.0))
        seconds[(t.match_id, t.agent)] = (model_s + t.model_s, wall_s + t.wall_s)
    match_costs, agent_tokens = _match_costs(matches, prices, seconds)
    agent_costs = _agent_costs(agent_tokens, seconds, models, prices)
    both = j.both
    return Analyses(
        judged_rounds=total,
        verdict_counts=j.verdicts,
        verdict_shares=_shares(j.verdicts, total),
        failure_counts=j.failures,
        failure_shares=_shares(j.failures, total),
        pairs=tuple(pairs),
        rounds_gap_pearson_r=None if corr is None else round(corr[0], 4),
        rounds_gap_p_value=None if corr is None else round(corr[1], 4),
        depth_histogram=_histogram(j.depths),
        width_histogram=_histogram(j.widths),
        match_costs=tuple(match_costs),
        agent_costs=tuple(agent_costs),
        both_orders_rounds=both,
        position_agree_exact=round(j.exact / both, 4) if both else None,
        position_agree_direction=round(j.direction / both, 4) if both else None,
    )


@dataclasses.dataclass
class _JudgedRounds:
    """Tallies over the judged rounds: verdict kinds, failure types, the rounds judged in
    both orders and how often the two orders agreed (exactly, in direction), and each
    match's last judged round's depth and width."""

    verdicts: dict[str, int]
    failures: dict[str, int]
    both: int = 0
    exact: int = 0
    direction: int = 0
    depths: list[int] = dataclasses.field(default_factory=list)
    widths: list[int] = dataclasses.field(default_factory=list)


def _judged_rounds(matches: Sequence[MatchRecord]) -> _JudgedRounds:
    out = _JudgedRounds(dict.fromkeys(VERDICT_KINDS, 0), dict.fromkeys(FAILURE_KINDS, 0))
    for m in matches:
        last: RoundRecord | None = None
        for rnd in m.rounds:
            if not judged(rnd) or rnd.judgment is None:
                continue
            last = rnd
            rec = rnd.judgment.reconciled
            out.verdicts[verdict_kind(rec.verdict, rec.tie_quality)] += 1
            out.failures["TIE" if rec.verdict == Verdict.TIE else rec.loser_failure_type.value] += 1
            ab, ba = rnd.judgment.ab, rnd.judgment.ba
            if ab is not None and ba is not None:
                out.both += 1
                v1 = ab.raw.judgment.verdict.signed
                v2 = -ba.raw.judgment.verdict.signed  # the BA order mapped back to (A, B)
                out.exact += v1 == v2
                out.direction += (v1 > 0) - (v1 < 0) == (v2 > 0) - (v2 < 0)
        if last is not None:
            out.depths.append(last.depth)
            out.widths.append(last.width)
    return out


def _match_costs(
    matches: Sequence[MatchRecord],
    prices: Mapping[str, Price | None],
    seconds: Mapping[tuple[str, str], tuple[float, float]],
) -> tuple[list[MatchCost], dict[str, list[int]]]:
    """Each match's tokens, cost (None when a side's model has no price) and model seconds
    (None when a side's are unknown); and per agent [answers, prompt, completion tokens]."""
    agent_tokens: dict[str, list[int]] = {}
    match_costs = []
    for m in matches:
        mp = mc = 0
        cost: float | None = 0.0
        msec: float | None = 0.0
        for side, agent in (("a", m.a), ("b", m.b)):
            tok = agent_tokens.setdefault(agent, [0, 0, 0])
            p = c = 0
            for rnd in m.rounds:
                answer = rnd.answer_a if side == "a" else rnd.answer_b
                if answer is not None:
                    tok[0] += 1
                    p += answer.prompt_tokens
                    c += answer.completion_tokens
            tok[1] += p
            tok[2] += c
            mp += p
            mc += c
            side_cost = _cost(prices.get(agent), p, c)
            cost = None if cost is None or side_cost is None else cost + side_cost
            side_s = seconds.get((m.match_id, agent))
            msec = None if msec is None or side_s is None else msec + side_s[0]
        match_costs.append(
            MatchCost(
                m.match_id,
                mp,
                mc,
                None if cost is None else round(cost, 6),
                None if msec is None else round(msec, 3),
            )
        )
    return match_costs, agent_tokens


def _agent_costs(
    agent_tokens: Mapping[str, list[int]],
    seconds: Mapping[tuple[str, str], tuple[float, float]],
    models: Mapping[str, str],
    prices: Mapping[str, Price | None],
) -> list[AgentCost]:
    """Per agent, by name: its answers, tokens, cost and model and wall seconds."""
    agent_costs = []
    for agent in sorted(agent_tokens):
        answers, p, c = agent_tokens[agent]
        mine = [s for (_, a), s in seconds.items() if a == agent]
        agent_costs.append(
            AgentCost(
                agent=agent,
                model=models.get(agent, ""),
                answers=answers,
                prompt_tokens=p,
                completion_tokens=c,
                cost_usd=_cost(prices.get(agent), p, c),
                model_seconds=round(sum(s[0] for s in mine), 3) if mine else None,
                wall_seconds=round(sum(s[1] for s in mine), 3) if mine else None,
            )
        )
    return agent_costs


def agent_models(header: RunHeader | None) -> dict[str, str]:
    """agent -> the model its role was bound to in run.json ('' for an agent with no model
    role, e.g. an external command agent). A local api_base marks the model as served."""
    if header is None:
        return {}
    config: dict[str, Any] = header.config
    bound: dict[str, Any] = header.bound_role_dicts()
    roles = (config.get("models") or {}).get("roles") or {}
    out: dict[str, str] = {}
    for spec in config.get("agents") or []:
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            continue
        role = (spec.get("args") or {}).get("role", "agent")
        entry = bound.get(role) or roles.get(role) or {}
        model = str(entry.get("model") or "")
        base = str(entry.get("api_base") or "")
        if model and any(host in base for host in LOCAL_HOSTS):
            model = f"{model} (served at {base})"
        out[spec["name"]] = model
    return out


def litellm_prices(models: Mapping[str, str]) -> dict[str, Price | None]:
    """agent -> Price from litellm's bundled price map (never fetched: the local copy, as the
    model backend uses), None for a served, local or unlisted model."""
    names = {m for m in models.values() if m and m != "served" and "(served at" not in m}
    table: Mapping[str, Any] = {}
    if names:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        table = litellm.model_cost
    found: dict[str, Price | None] = {}
    for name in names:
        entry = table.get(name) or table.get(name.split("/", 1)[-1])
        ok = isinstance(entry, Mapping) and isinstance(
            entry.get("input_cost_per_token"), int | float
        )
        found[name] = (
            Price(
                name,
                float(entry["input_cost_per_token"]),
                float(entry.get("output_cost_per_token") or 0.0),
            )
            if ok and entry is not None
            else None
        )
    return {agent: found.get(model) for agent, model in models.items()}
