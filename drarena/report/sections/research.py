"""report.html's research per answer: for each agent, what its answers did on the frozen web
(searches, pages opened in the snapshot and out of it), what they cited (valid or not), and
what they cost (tokens, seconds). Why: a rating says who won, not whether an agent researched;
a real agent that never searched, or cited pages it never opened, shows here (issue 37).

What counts, from each answer's trajectory: a search is a `search` event (drarena's agents) or
a `web_search` one (the frozen-web proxy's log of a command agent); a page opened is an `open`
or `web_fetch` event, in the snapshot when it returned its URL with no error, out of it when it
failed (the proxy's "not in snapshot", a refused fetch, a page the index lacks). A page a
search API's answer carried whole (Tavily's raw_content or /extract) is a `web_fetch` event
too, with `via` naming the API (agents.frozenweb): the agent read it. Seconds come
from timings.jsonl (not part of the replayed record, so a replay's differ)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from drarena.agents.base import Answer
from drarena.htmlpage import html_text as esc
from drarena.ledger.records import MatchRecord
from drarena.report.section import ReportRun

SEARCH_EVENTS = frozenset({"search", "web_search"})
PAGE_EVENTS = frozenset({"open", "web_fetch"})


@dataclasses.dataclass(frozen=True, slots=True)
class ResearchRow:
    """One agent's totals over its recorded answers (means are per answer)."""

    agent: str
    answers: int
    searches: int
    pages_in: int
    pages_out: int
    valid_citations: int
    other_citations: int
    tokens: int
    seconds: float | None  # mean wall seconds per answer; None without timings

    def per_answer(self, total: int) -> float:
        return total / self.answers if self.answers else 0.0


def answer_counts(answer: Answer) -> tuple[int, int, int]:
    """(searches, pages opened in the snapshot, pages that failed) of one answer."""
    searches = pages_in = pages_out = 0
    for event in answer.trajectory.tool_events():
        if event.name in SEARCH_EVENTS:
            searches += 1
        elif event.name in PAGE_EVENTS:
            if event.error is None and event.urls:
                pages_in += 1
            else:
                pages_out += 1
    return searches, pages_in, pages_out


def research_rows(
    agents: Sequence[str],
    matches: Sequence[MatchRecord],
    seconds: Mapping[str, Sequence[float]],
) -> list[ResearchRow]:
    """One row per agent of `agents`, in that order, over every answer the matches record."""
    rows = []
    for agent in agents:
        answers = searches = pages_in = pages_out = valid = other = tokens = 0
        for m in matches:
            if agent not in (m.a, m.b):
                continue
            for rnd in m.rounds:
                answer = rnd.answer_a if m.a == agent else rnd.answer_b
                if answer is None:
                    continue
                answers += 1
                s, p_in, p_out = answer_counts(answer)
                searches, pages_in, pages_out = searches + s, pages_in + p_in, pages_out + p_out
                valid += answer.check.valid
                other += answer.check.cited - answer.check.valid
                tokens += answer.tokens
        timed = seconds.get(agent) or ()
        mean = sum(timed) / len(timed) if timed else None
        rows.append(
            ResearchRow(agent, answers, searches, pages_in, pages_out, valid, other, tokens, mean)
        )
    return rows


class ResearchSection:
    name = "research"

    def compute(self, run: ReportRun) -> list[ResearchRow]:
        return research_rows(run.agents, run.matches, run.seconds)

    def render(self, figures: list[ResearchRow]) -> str:
        def cell(row: ResearchRow, total: int) -> str:
            return f"<td class=num>{row.per_answer(total):.2f}</td>"

        body = "".join(
            f"<tr><td>{esc(r.agent)}</td><td class=num>{r.answers}</td>"
            + cell(r, r.searches)
            + cell(r, r.pages_in)
            + cell(r, r.pages_out)
            + cell(r, r.valid_citations)
            + cell(r, r.other_citations)
            + f"<td class=num>{r.per_answer(r.tokens):.0f}</td>"
            + (f"<td class=num>{r.seconds:.1f}</td>" if r.seconds is not None else "<td>-</td>")
            + "</tr>"
            for r in figures
        )
        return (
            "<h2>Research per answer</h2><table><tr><th>agent</th><th>answers</th>"
            "<th>searches</th><th>pages opened in the snapshot</th><th>pages that failed "
            "(not in the snapshot, refused)</th><th>valid citations</th><th>citations not "
            "valid</th><th>tokens</th><th>seconds (this run)</th></tr>"
            f"{body}</table>"
        )
