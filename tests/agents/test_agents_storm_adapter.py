"""The STORM adapter (configs/agents/storm_agent.py): its answer read from the files STORM
writes, and the local encoder folder it puts under the name STORM loads. Pure logic and
sentence-transformers' own loading; STORM itself runs in its own venv (6 GB)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from agent_helpers import load_adapter


def _adapter() -> ModuleType:
    return load_adapter("storm_agent.py")


def _storm_output(out: Path, polished: bool) -> Path:
    folder = out / "How_do_I_read_JSON?"
    folder.mkdir(parents=True)
    (folder / "storm_gen_article.txt").write_text("# Draft\nDraft [1].", encoding="utf-8")
    if polished:
        (folder / "storm_gen_article_polished.txt").write_text("Lead [2] [1].", encoding="utf-8")
    index = {"https://h/b.html": 2, "https://h/a.html": 1, "file:///etc/passwd": 3}
    (folder / "url_to_info.json").write_text(
        json.dumps({"url_to_unified_index": index, "url_to_info": {}}), encoding="utf-8"
    )
    return folder


def test_polished_article_and_urls_in_marker_order(tmp_path: Path) -> None:
    _storm_output(tmp_path, polished=True)
    text, urls = _adapter().article(tmp_path)
    assert text == "Lead [2] [1]."
    assert urls == ["https://h/a.html", "https://h/b.html"]  # [1], [2]; no file: URL


def test_draft_article_when_polishing_is_off(tmp_path: Path) -> None:
    _storm_output(tmp_path, polished=False)
    text, urls = _adapter().article(tmp_path)
    assert text.startswith("# Draft") and urls == ["https://h/a.html", "https://h/b.html"]


@pytest.mark.slow  # loads the encoder
def test_the_encoder_name_storm_loads_is_a_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sentence_transformers import SentenceTransformer

    adapter = _adapter()
    adapter.encoder_link(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub lookup would fail here, not download
    encoder = SentenceTransformer(adapter.ENCODER_NAME, device="cpu")
    assert encoder.encode(["json.dumps"]).shape == (1, 384)


def test_the_outline_grammar_starts_with_the_topic_line_storm_compares_against() -> None:
    """STORM's outline parser shifts every level when the first line is the topic; the grammar
    makes that line come first always, as a GBNF literal (quotes escaped), sections under it."""
    grammar = _adapter().outline_grammar('How do I parse "command-line" options_here?')
    root = next(line for line in grammar.splitlines() if line.startswith("root ::="))
    literal = root.split('"# " ', 1)[1].split(' "\\n"', 1)[0]
    assert json.loads(literal) == 'How do I parse "command-line" options here?'
    # '##' sections only: STORM's clean_up_outline cuts a '### External links' to a bare '#'
    assert 'section ::= "## " title' in grammar and "###" not in grammar


def test_a_topic_with_a_hash_gets_hash_sections_it_can_never_equal() -> None:
    adapter = _adapter()
    for topic in ("C# or Java?", "", "two\nlines"):
        assert adapter.outline_grammar(topic) == adapter.HASH_TOPIC_GRAMMAR


def test_the_outline_grammar_allows_as_many_sections_as_asked() -> None:
    adapter = _adapter()
    wants = {1: "section", 2: "section section?", 4: "section section? section? section?"}
    for sections, want in wants.items():
        grammar = adapter.outline_grammar("Topic", sections)
        root = next(line for line in grammar.splitlines() if line.startswith("root ::="))
        assert root == 'root ::= "# " "Topic" "\\n" ' + want, root


def test_the_length_budget_keeps_the_answer_under_the_judges_length_guard() -> None:
    """STORM's answer is the lead plus one text per section, each cut at its max_tokens; the
    budget for a 300-word limit stays under the guard's 600 words (at 1.3 tokens a word)."""
    budget = _adapter().length_budget
    for high in (100, 250, 300, 1000):
        for sections in (1, 2, 4):
            section, lead = budget(high, sections)
            total = section * sections + lead
            assert total / 1.3 <= 1.5 * high + 1, (high, sections, total)
            assert 0.18 * total <= lead <= 0.22 * total + 1
    assert budget(250, 2) == (195, 98)
    assert min(budget(0, 0)) >= 1  # never a max_tokens of 0
