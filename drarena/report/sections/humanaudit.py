"""report.html's "Human audit" section: people's labels (RUN/audit/labels.jsonl) against the
Examiner's verdicts, and against each other (drarena.ledger.humanaudit).

Why in the report: the leaderboard is only as good as its judge, and the people who read a
run's rounds are the judge's judge; a reader sees next to the ratings how often they agreed,
how much of that chance explains, and can open the rounds where they did not (links to the
match viewer below, by position only: no untrusted text reaches an attribute). Same rules
as drarena.report.html: every name passes through `esc`.
"""

from __future__ import annotations

from drarena.htmlpage import html_text as esc
from drarena.ledger.agreement import Agreement, fmt
from drarena.ledger.audit import labelled_rounds, labels_path, read_labels
from drarena.ledger.humanaudit import HumanAudit, human_audit
from drarena.report.section import ReportRun


def _row(label: str, a: Agreement) -> str:
    return (
        f"<tr><td>{esc(label)}</td><td>{esc(a.what)}</td><td class=num>{a.n}</td>"
        f"<td>{esc(fmt(a.agreement, a.agreement_ci))}</td>"
        f"<td>{esc(fmt(a.kappa, a.kappa_ci))}</td></tr>"
    )


def human_audit_section(h: HumanAudit) -> str:
    judges = "".join(_row(j.judge, a) for j in h.judges for a in (j.verdict, j.direction))
    items = "".join(_row("people", a) for a in h.items)
    between = (
        "<table><tr><th>labels</th><th>rounds</th><th>Krippendorff's alpha [95% CI]</th></tr>"
        + "".join(
            f"<tr><td>{esc(b.what)}</td><td class=num>{b.rounds}</td>"
            f"<td>{esc(fmt(b.alpha, b.alpha_ci))}</td></tr>"
            for b in h.between_people
        )
        + "</table>"
        if h.between_people
        else "<p class=muted>no round was labelled by two or more people</p>"
    )
    invalid = (
        f"{h.questions_invalid} of {h.questions_rated} labels ({h.invalid_share:.0%}) found "
        "the question invalid (not answerable from its target pages, or leaking them)"
        if h.invalid_share is not None
        else "no label said whether the question was valid"
    )
    rows = "".join(
        f'<li><a href="#m{d.match_index}r{d.round}">{esc(d.match_id)} round {d.round + 1}</a> '
        f"({esc(d.a)} vs {esc(d.b)}): Examiner {esc(d.examiner)}, people "
        f"{esc(', '.join(d.people))} <span class=muted>(mean distance {d.distance:.1f})"
        "</span></li>"
        for d in h.disagreements
    )
    return (
        f"<h2>Human audit ({h.labels} labels of {h.rounds} rounds by "
        f"{len(h.annotators)} {'person' if len(h.annotators) == 1 else 'people'})</h2>"
        f"<p class=muted>people: {esc(', '.join(h.annotators))}. Each person's latest label "
        "of a round against each judge's verdict of it (<code>drarena run audit</code>); "
        "agreement and Cohen's kappa with 95% bootstrap intervals, n in labels</p>"
        "<table><tr><th>judge</th><th>labels</th><th>n</th><th>agreement [95% CI]</th>"
        f"<th>Cohen's kappa [95% CI]</th></tr>{judges}</table>"
        "<h3>Between people</h3>"
        f"{between}"
        "<h3>Checklist items (people against the judge's marks, per item and answer)</h3>"
        + (
            "<table><tr><th></th><th>judge</th><th>n</th><th>agreement [95% CI]</th>"
            f"<th>Cohen's kappa [95% CI]</th></tr>{items}</table>"
            if items
            else "<p class=muted>no item marks to compare</p>"
        )
        + f"<h3>Questions</h3><p>{esc(invalid)}</p>"
        f"<h3>Strongest disagreements ({len(h.disagreements)})</h3>"
        f"<ul>{rows or '<li>none</li>'}</ul>"
    )


class HumanAuditSection:
    name = "human_audit"

    def compute(self, run: ReportRun) -> HumanAudit | None:
        """People's labels of the run (RUN/audit/labels.jsonl; a damaged file is one line
        naming it); None when no one labelled a round."""
        if run.folder is None:
            return None
        labels = read_labels(labels_path(run.folder.path), labelled_rounds(run.matches))
        if not labels:
            return None
        return human_audit(run.matches, labels, resamples=run.resamples, seed=run.seed)

    def render(self, figures: HumanAudit) -> str:
        return human_audit_section(figures)
