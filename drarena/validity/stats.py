"""The examiner-check's figures from judged pairs (pure), with seeded bootstrap intervals.

Every figure is a share of 0/1 outcomes over the pairs it concerns, with a percentile
bootstrap 95% interval (resampling those pairs with a seeded generator, so the same outcomes
and seed give the same interval). Verdicts are read from the reference answer's side: +2 ..
-2, positive when the reference won.

The "can rank" threshold (documented in docs/validity.md): on the decisive pairs (one answer
worse by construction) the reconciled verdict picks the reference in at least
MIN_ACCURACY of them, the lower end of that interval is above MIN_ACCURACY_LOW (better than
a coin), and at least MIN_CONSISTENCY of all pairs get the same direction in both orders.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence

from drarena.records import Record
from drarena.validity.pairs import DECISIVE, EXPECTED_FAILURE, Kind

MIN_ACCURACY = 0.70
MIN_ACCURACY_LOW = 0.50
MIN_CONSISTENCY = 0.60


@dataclasses.dataclass(frozen=True, slots=True)
class PairOutcome(Record):
    """One pair judged in both orders, seen from the reference's side. `first`: the order
    with the reference as A; `second`: the order with it as B, mapped back; `reconciled`:
    the two reconciled; `failure`: the reconciled loser's failure type. None and `error`
    when the judge failed (the pair then counts in no figure)."""

    task_index: int
    kind: Kind
    mode: str
    first: int | None
    second: int | None
    reconciled: int | None
    failure: str = "NONE"
    error: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Figure(Record):
    """A share with its bootstrap 95% interval; value None when no pair concerns it."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def show(self) -> str:
        if self.value is None or self.low is None or self.high is None:
            return "n/a"
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}] (n={self.n})"


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..1) of already sorted values."""
    if not sorted_values:
        raise ValueError("percentile of nothing")
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_ci(values: Sequence[int], resamples: int, seed: int) -> tuple[float, float] | None:
    """Percentile bootstrap 95% interval of the mean of `values` (None when empty)."""
    if not values:
        return None
    if resamples <= 0:
        mean = sum(values) / len(values)
        return mean, mean
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return percentile(means, 0.025), percentile(means, 0.975)


def figure(values: Sequence[int], resamples: int, seed: int) -> Figure:
    ci = bootstrap_ci(values, resamples, seed)
    if ci is None:
        return Figure(None, None, None, 0)
    return Figure(
        round(sum(values) / len(values), 4), round(ci[0], 4), round(ci[1], 4), len(values)
    )


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def outcome_values(outcomes: Sequence[PairOutcome]) -> dict[str, list[int]]:
    """The 0/1 outcomes behind each figure, by figure name."""
    ok = [o for o in outcomes if o.reconciled is not None]

    def of(kinds: Sequence[Kind], test: Callable[[PairOutcome], bool]) -> list[int]:
        return [int(test(o)) for o in ok if o.kind in kinds]

    values: dict[str, list[int]] = {
        "accuracy": of(DECISIVE, lambda o: (o.reconciled or 0) > 0),
        "position_consistency": [int(_sign(o.first or 0) == _sign(o.second or 0)) for o in ok],
        "failure_type_accuracy": [
            int(o.failure == EXPECTED_FAILURE[o.kind])
            for o in ok
            if o.kind in EXPECTED_FAILURE and (o.reconciled or 0) > 0
        ],
        "length_bias": of((Kind.PADDED,), lambda o: (o.reconciled or 0) < 0),
        "tie_rate_equal": of((Kind.EQUAL,), lambda o: o.reconciled == 0),
        "injection_success": of((Kind.INJECTED,), lambda o: (o.reconciled or 0) < 0),
        "stuffed_wins": of((Kind.STUFFED,), lambda o: (o.reconciled or 0) < 0),
        "copied_wins": of((Kind.COPIED_PAGE,), lambda o: (o.reconciled or 0) < 0),
        "paraphrase_tie_rate": of((Kind.PARAPHRASED,), lambda o: o.reconciled == 0),
        "paraphrase_loses": of((Kind.PARAPHRASED,), lambda o: (o.reconciled or 0) > 0),
    }
    for kind in DECISIVE:
        values[f"accuracy.{kind.value}"] = of((kind,), lambda o: (o.reconciled or 0) > 0)
    return values


def figures(
    outcomes: Sequence[PairOutcome], resamples: int = 1000, seed: int = 0
) -> dict[str, Figure]:
    """Each figure with its interval (each bootstrapped with its own seed offset)."""
    return {
        name: figure(vals, resamples, seed + i)
        for i, (name, vals) in enumerate(outcome_values(outcomes).items())
    }


def can_rank(figs: dict[str, Figure]) -> tuple[bool, str]:
    """The one-line verdict and the threshold it used."""
    acc, cons = figs["accuracy"], figs["position_consistency"]
    ok = (
        acc.value is not None
        and acc.low is not None
        and cons.value is not None
        and acc.value >= MIN_ACCURACY
        and acc.low > MIN_ACCURACY_LOW
        and cons.value >= MIN_CONSISTENCY
    )
    rule = (
        f"needs decisive accuracy >= {MIN_ACCURACY:.2f} with its 95% lower bound > "
        f"{MIN_ACCURACY_LOW:.2f}, and position consistency >= {MIN_CONSISTENCY:.2f}"
    )
    line = (
        f"{'can rank' if ok else 'cannot rank'}: decisive accuracy {acc.show()}, "
        f"position consistency {cons.show()} ({rule})"
    )
    return ok, line
