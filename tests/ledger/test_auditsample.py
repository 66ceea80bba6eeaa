"""The audit's sample (drarena.ledger.auditsample): stratified by verdict, pair and depth,
seeded, stable, resumable per person."""

from __future__ import annotations

import dataclasses
from collections import Counter

from auditkit import audit_log

from drarena.examiner.verdicts import Verdict
from drarena.ledger.auditsample import candidates, next_round, sample, shown_order, stratum

V = Verdict
# 3 pairs; pair (x, y) has 8 "A much better" rounds and one tie: a plain random sample of 4
# would likely miss the tie, the stratified one cannot
LOG = audit_log(
    [[V.A_MUCH_BETTER] * 8 + [V.TIE], [V.B_BETTER, V.B_BETTER], [V.A_BETTER]],
    [("x", "y"), ("y", "z"), ("x", "z")],
)


def test_strata_orient_the_verdict_to_the_sorted_pair() -> None:
    assert stratum("x", "y", 2, V.A_BETTER) == "A_BETTER | x vs y | depth 2"
    assert stratum("y", "x", 2, V.B_BETTER) == "A_BETTER | x vs y | depth 2"


def test_every_stratum_before_any_second_round() -> None:
    every = candidates(LOG)
    assert len(every) == 12 and len({c.stratum for c in every}) == 12  # depth differs
    chosen = sample(LOG, 5, seed=1)
    assert len(chosen) == 5 and len({c.key for c in chosen}) == 5
    # fewer strata: all one depth. 4 strata (x-y much better, x-y tie, y-z, x-z)
    flat = [
        dataclasses.replace(m, rounds=tuple(dataclasses.replace(r, depth=1) for r in m.rounds))
        for m in LOG
    ]
    four = sample(flat, 4, seed=7)
    assert len({c.stratum for c in four}) == 4
    assert Counter(c.verdict for c in four)[V.TIE] == 1
    assert len(sample(flat, 100, seed=7)) == 12  # no round twice, none left out


def test_the_same_seed_gives_the_same_sample_and_another_seed_another() -> None:
    assert sample(LOG, 6, seed=3) == sample(LOG, 6, seed=3)
    assert [c.key for c in sample(LOG, 12, seed=3)] != [c.key for c in sample(LOG, 12, seed=4)]
    assert sample(LOG, 0, seed=3) == ()
    # a smaller n is a prefix of a larger one: raising --n later keeps what was labelled
    assert sample(LOG, 12, seed=3)[:6] == sample(LOG, 6, seed=3)


def test_void_or_taskless_rounds_are_not_sampled() -> None:
    first = LOG[0]
    void = dataclasses.replace(first.rounds[0], void_reason="void: judge failed")
    log = [dataclasses.replace(first, rounds=(void, *first.rounds[1:])), *LOG[1:]]
    assert (first.match_id, 0) not in {c.key for c in sample(log, 100, seed=0)}


def test_resuming_skips_what_a_person_labelled() -> None:
    chosen = sample(LOG, 4, seed=0)
    todo, done = next_round(chosen, set())
    assert todo == chosen[0] and done == 0
    todo, done = next_round(chosen, {chosen[0].key, chosen[2].key})
    assert todo == chosen[1] and done == 2
    todo, done = next_round(chosen, {c.key for c in chosen})
    assert todo is None and done == 4


def test_answer_order_is_per_person_seeded_and_mixed() -> None:
    keys = [c.key for c in candidates(LOG)]
    ann = [shown_order(0, "ann", k) for k in keys]
    assert ann == [shown_order(0, "ann", k) for k in keys]
    assert set(ann) == {"AB", "BA"}
    assert ann != [shown_order(0, "bob", k) for k in keys]
