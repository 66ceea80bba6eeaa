"""Agreement between two judges on the same rounds: raw agreement and Cohen's kappa (pure).

Why kappa and not only agreement: two judges that both say TIE nearly always agree by chance;
kappa discounts the agreement their label frequencies alone would give. DR-Arena reports
kappa 0.84-0.90 between Examiners on verdicts; `drarena run rejudge` reports the same figure,
on the 5-way verdict, on the verdict collapsed to A / TIE / B, and on the loser's failure type.

Kappa from integer counts: with n rounds, `agree` of them labelled alike, and
S = sum over labels of (count by judge 1) x (count by judge 2),
kappa = (n * agree - S) / (n * n - S). It is undefined (None here, never a made-up 1 or 0)
when n = 0 or when n * n = S, which happens only when both judges gave every round the same
single label: chance alone explains that agreement.

Intervals: percentile bootstrap over rounds (seeded, so a report is reproducible); resamples
whose kappa is undefined are left out, and the interval is None when none is defined.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

from drarena.examiner.verdicts import Verdict
from drarena.records import Record

Pair = tuple[str, str]
T = TypeVar("T")


def collapse(verdict: str) -> str:
    """A verdict as its direction only: A, TIE or B (strength dropped)."""
    signed = Verdict(verdict).signed
    return "A" if signed > 0 else ("B" if signed < 0 else "TIE")


def agreement(pairs: Sequence[Pair]) -> float | None:
    """Share of pairs labelled alike; None for no pairs."""
    if not pairs:
        return None
    return sum(a == b for a, b in pairs) / len(pairs)


def cohen_kappa(pairs: Sequence[Pair]) -> float | None:
    """Cohen's kappa of (judge 1, judge 2) labels; None when undefined (see module doc)."""
    n = len(pairs)
    if n == 0:
        return None
    agree = sum(a == b for a, b in pairs)
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    chance = sum(count * second[label] for label, count in first.items())
    if n * n == chance:
        return None
    return (n * agree - chance) / (n * n - chance)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 1]) of already sorted values."""
    pos = q * (len(sorted_values) - 1)
    low = int(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def bootstrap(
    pairs: Sequence[T],
    stat: Callable[[Sequence[T]], float | None],
    *,
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of `stat` over rounds resampled with replacement (a round is
    a pair of labels, or all the labels of one round for `krippendorff_alpha`)."""
    if not pairs or resamples <= 0:
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        value = stat([pairs[rng.randrange(len(pairs))] for _ in pairs])
        if value is not None:
            values.append(value)
    if not values:
        return None
    values.sort()
    tail = (1.0 - level) / 2.0
    return percentile(values, tail), percentile(values, 1.0 - tail)


def krippendorff_alpha(units: Sequence[Sequence[str]]) -> float | None:
    """Krippendorff's alpha for nominal labels: any number of coders per unit (a round), a
    coder free to skip units. Why alpha and not Fleiss' kappa: people audit different rounds,
    and alpha takes every round with two or more labels as it comes.

    From the coincidence matrix: o[c][k] sums, over units u with m_u >= 2 labels, the ordered
    pairs of labels (c, k) from different coders divided by m_u - 1; n_c is its row sum and
    n the total. alpha = 1 - (n - 1) * D / E, with D the off-diagonal sum of o and E the
    sum over c != k of n_c * n_k. None (undefined) for no pairable unit, or when E is 0: every
    label alike, so chance explains all agreement (as `cohen_kappa`)."""
    o: dict[tuple[str, str], float] = {}
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        counts = Counter(unit)
        for c, nc in counts.items():
            for k, nk in counts.items():
                o[(c, k)] = o.get((c, k), 0.0) + nc * (nk - (c == k)) / (m - 1)
    n_c: dict[str, float] = {}
    for (c, _), value in o.items():
        n_c[c] = n_c.get(c, 0.0) + value
    n = sum(n_c.values())
    if n <= 1:
        return None
    observed = sum(v for (c, k), v in o.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


@dataclasses.dataclass(frozen=True, slots=True)
class Agreement(Record):
    """Two judges on one kind of label: rounds compared, agreement and kappa with intervals,
    and the confusion counts ("label1 -> label2": rounds) for the report."""

    what: str
    n: int
    agreement: float | None
    agreement_ci: tuple[float, float] | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    confusion: dict[str, int]


def measure(what: str, pairs: Sequence[Pair], *, resamples: int, seed: int) -> Agreement:
    """Agreement and kappa of `pairs`, each with a seeded bootstrap 95% interval."""
    confusion = Counter(f"{a} -> {b}" for a, b in pairs)
    return Agreement(
        what,
        len(pairs),
        agreement(pairs),
        bootstrap(pairs, agreement, resamples=resamples, seed=seed),
        cohen_kappa(pairs),
        bootstrap(pairs, cohen_kappa, resamples=resamples, seed=seed),
        dict(sorted(confusion.items())),
    )


def fmt(value: float | None, interval: tuple[float, float] | None) -> str:
    """'0.84 [0.70, 0.95]'; 'n/a' for an undefined value."""
    if value is None:
        return "n/a"
    if interval is None:
        return f"{value:.2f}"
    return f"{value:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"


def to_markdown(rows: Sequence[Agreement]) -> str:
    """One table row per label kind: rounds, agreement and kappa with 95% intervals."""
    lines = [
        "| labels | rounds | agreement [95% CI] | Cohen's kappa [95% CI] |",
        "|---|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.what} | {r.n} | {fmt(r.agreement, r.agreement_ci)} | "
            f"{fmt(r.kappa, r.kappa_ci)} |"
        )
    return "\n".join(lines) + "\n"
