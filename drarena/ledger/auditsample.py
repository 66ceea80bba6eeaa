"""Which rounds a human audit shows, and in which order (pure).

Why stratified: in a typical run most rounds are "much better" for the stronger agent, and
a plain random sample of 30 rounds may hold no tie and no round of a close pair, which are
where a judge goes wrong. The rounds a person can label (drarena.ledger.audit.
labelled_rounds) are grouped into strata by verdict, agent pair and round depth, and the
sample takes one round from each stratum in turn (round robin), so that rare verdicts, every
pair and every depth are seen before any stratum gives a second round.

Why hashes and not a random generator: the order inside a stratum, the order of the strata
and each person's answer order are SHA-256 of (seed, what is ordered), so the same seed
gives the same sample on every machine and Python, a round keeps its place when other rounds
are added, and a person who comes back sees the same order (resumable). The verdict of a
stratum is oriented to the pair's sorted names, so "x much better than y" is one stratum
whichever side x played.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Sequence

from drarena.examiner.verdicts import Verdict
from drarena.ledger.audit import RoundKey, labelled_rounds
from drarena.ledger.records import MatchRecord
from drarena.records import Record


@dataclasses.dataclass(frozen=True, slots=True)
class AuditRound(Record):
    """One round of the sample: where it is, and its stratum."""

    match_id: str
    round: int
    a: str
    b: str
    depth: int
    verdict: Verdict
    stratum: str

    @property
    def key(self) -> RoundKey:
        return (self.match_id, self.round)


def _hash(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()


def stratum(a: str, b: str, depth: int, verdict: Verdict) -> str:
    """'<verdict> | <x> vs <y> | depth <d>', the verdict seen from the first of the sorted
    names x, y."""
    x, y = sorted((a, b))
    oriented = verdict if (x, y) == (a, b) else verdict.swapped()
    return f"{oriented.value} | {x} vs {y} | depth {depth}"


def candidates(log: Sequence[MatchRecord]) -> list[AuditRound]:
    """Every round a person can label, in log order."""
    allowed = labelled_rounds(log)
    out = []
    for m in log:
        for r in m.rounds:
            if (m.match_id, r.index) not in allowed or r.judgment is None:
                continue
            verdict = r.judgment.reconciled.verdict
            where = stratum(m.a, m.b, r.depth, verdict)
            out.append(AuditRound(m.match_id, r.index, m.a, m.b, r.depth, verdict, where))
    return out


def sample(log: Sequence[MatchRecord], n: int, seed: int) -> tuple[AuditRound, ...]:
    """Up to `n` rounds, stratified and seeded (module doc): round robin over the strata
    (strata in hash order), each stratum in hash order."""
    groups: dict[str, list[AuditRound]] = {}
    for c in candidates(log):
        groups.setdefault(c.stratum, []).append(c)
    queues = [
        sorted(rounds, key=lambda r: _hash(seed, "round", r.match_id, r.round))
        for _, rounds in sorted(groups.items(), key=lambda kv: _hash(seed, "stratum", kv[0]))
    ]
    out: list[AuditRound] = []
    depth = 0
    while len(out) < n and any(depth < len(q) for q in queues):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return tuple(out[: max(n, 0)])


def shown_order(seed: int, annotator: str, key: RoundKey) -> str:
    """ "AB" or "BA": the order one person sees a round's answers in (seeded, per person)."""
    return "AB" if int(_hash(seed, "order", annotator, key[0], key[1])[:8], 16) % 2 == 0 else "BA"


def next_round(
    chosen: Sequence[AuditRound], done: Collection[RoundKey]
) -> tuple[AuditRound | None, int]:
    """The first round of the sample a person has not labelled (`done`), and how many of
    the sample they have."""
    labelled = sum(1 for r in chosen if r.key in done)
    todo = next((r for r in chosen if r.key not in done), None)
    return todo, labelled
