"""Rounds people labelled (`drarena run audit`) as known-answer pairs for the next
examiner-check (`drarena examiner-check SNAPSHOT --labels RUN`).

Why: pairs known by construction test what code can degrade; rounds people judged test what
real agents write. A team that audits its runs builds its own calibration set from them, and
checks the next Examiner (another model, prompt or judge kind) against it before it ranks.
A round becomes a pair only when every person who labelled it gave the same direction (A, B
or a tie; each person's latest label counts): where people disagree, no verdict is known.
Above the arena because the judge must see an answer as a round does (rounds.for_judge).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from drarena.arena.rounds import for_judge
from drarena.errors import DrarenaError
from drarena.ledger.agreement import collapse
from drarena.ledger.audit import AuditLabel, labelled_rounds, labels_path, latest, read_labels
from drarena.ledger.folder import RunDir
from drarena.ledger.records import MatchRecord
from drarena.validity.check import HumanPair


def pairs_from_labels(log: list[MatchRecord], labels: list[AuditLabel]) -> list[HumanPair]:
    """The labelled rounds of `log` that people agree on, as pairs (log order)."""
    by_round: dict[tuple[str, int], list[AuditLabel]] = defaultdict(list)
    for lb in latest(labels).values():
        by_round[lb.key].append(lb)
    out = []
    for m in log:
        for r in m.rounds:
            group = by_round.get((m.match_id, r.index))
            task = r.task.task
            if not group or task is None or r.answer_a is None or r.answer_b is None:
                continue
            directions = {collapse(lb.verdict.value) for lb in group}
            if len(directions) != 1:
                continue
            (direction,) = directions
            a, b = for_judge(r.answer_a), for_judge(r.answer_b)
            ref, other = (b, a) if direction == "B" else (a, b)
            out.append(
                HumanPair(m.match_id, r.index, task, ref, other, direction == "TIE", len(group))
            )
    return out


def human_pairs(run_folder: Path) -> list[HumanPair]:
    """The pairs of a run folder's labels; a run without any is one line saying so."""
    run = RunDir(run_folder)
    log = run.read_log()
    labels = read_labels(labels_path(run_folder), labelled_rounds(log))
    if not labels:
        raise DrarenaError(
            f"--labels {run_folder}: no labels ({labels_path(run_folder)}); label rounds with "
            "`drarena run audit` first"
        )
    return pairs_from_labels(log, labels)
