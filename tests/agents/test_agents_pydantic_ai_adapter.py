"""The Pydantic AI adapter's step order (configs/agents/pydantic_ai_agent.py): which tool each
step offers and when the answer is offered. Pure logic; the adapter runs in its own venv."""

from __future__ import annotations

from types import ModuleType

from agent_helpers import load_adapter


def _adapter() -> ModuleType:
    return load_adapter("pydantic_ai_agent.py")


def test_search_then_page_then_answer() -> None:
    allowed = _adapter().allowed
    assert allowed(False, 0, 0, 5) == ("tavily_search", False)
    assert allowed(True, 0, 1, 5) == ("open_page", False)
    assert allowed(True, 1, 2, 5) == ("open_page", True)  # another page, or the answer


def test_the_last_turn_offers_the_answer_alone() -> None:
    allowed = _adapter().allowed
    assert allowed(False, 0, 4, 5) == (None, True)
    assert allowed(True, 2, 4, 5) == (None, True)
