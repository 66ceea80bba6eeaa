"""report.html's research-per-answer section (drarena.report.sections.research): what each
agent's answers searched, opened and cited, from the recorded trajectories."""

from __future__ import annotations

import dataclasses

from matchkit import answer, judgment, match, round_

from drarena.agents.base import Answer, CitationCheck, Step, ToolEvent, Trajectory
from drarena.examiner.evolve import Outcome
from drarena.examiner.verdicts import Verdict
from drarena.report.sections.research import ResearchSection, answer_counts, research_rows


def researched(agent: str, *events: ToolEvent, cited: int = 0, valid: int = 0) -> Answer:
    base = answer(agent)
    return dataclasses.replace(
        base,
        trajectory=Trajectory((Step(0, None, tools=events),)),
        check=CitationCheck(cited=cited, valid=valid, checked=True),
    )


SEARCH = ToolEvent("s", "web_search", "{}", urls=("https://d/a", "https://d/b"))
PAGE = ToolEvent("p", "web_fetch", "{}", urls=("https://d/a",))
MISSING = ToolEvent("m", "web_fetch", "{}", error="not in snapshot")
OPEN = ToolEvent("o", "open", "{}", urls=("https://d/b",))
OPEN_FAILED = ToolEvent("f", "open", "{}", error="no such page")
OTHER = ToolEvent("x", "visit_webpage", "{}", urls=("https://d/c",))  # an agent's own name


def test_an_answers_searches_and_pages_in_and_out_of_the_snapshot() -> None:
    real = researched("real", SEARCH, PAGE, MISSING, OTHER)
    assert answer_counts(real) == (1, 1, 1)
    react = researched("react", ToolEvent("s", "search", "{}"), OPEN, OPEN_FAILED)
    assert answer_counts(react) == (1, 1, 1)
    assert answer_counts(answer("closed")) == (0, 0, 0)


def test_rows_add_up_each_agents_answers_on_either_side() -> None:
    pj = judgment(Verdict.A_MUCH_BETTER)
    first = round_(1, researched("real", SEARCH, PAGE, cited=3, valid=2), answer("closed"), pj)
    second = round_(2, researched("real", SEARCH, MISSING, cited=1, valid=1), None, None)
    other = round_(1, answer("closed"), researched("real", SEARCH, SEARCH, PAGE), pj)
    matches = [
        match("m1", "real", "closed", Outcome.A_WINS, (first, second)),
        match("m2", "closed", "real", Outcome.B_WINS, (other,)),
    ]
    rows = research_rows(["closed", "real"], matches, {"real": [10.0, 20.0, 30.0]})
    closed, real = rows
    assert (closed.agent, closed.answers, closed.searches, closed.pages_in) == ("closed", 2, 0, 0)
    assert closed.seconds is None
    assert (real.answers, real.searches, real.pages_in, real.pages_out) == (3, 4, 2, 1)
    assert (real.valid_citations, real.other_citations) == (3, 1)
    assert real.tokens == 3 * 100 and real.seconds == 20.0
    assert real.per_answer(real.searches) == 4 / 3


def test_the_table_escapes_agent_names_and_marks_missing_timings() -> None:
    rows = research_rows(["<b>x</b>"], [], {})
    html = ResearchSection().render(rows)
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert "<td>-</td>" in html and "Research per answer" in html
