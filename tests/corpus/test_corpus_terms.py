"""Words, sentences and term statistics (drarena.corpus.terms): pure."""

from __future__ import annotations

from drarena.corpus.terms import (
    TermStats,
    content_stems,
    function_share,
    hard_tokens,
    normalised,
    sentences,
    shingles,
    stem,
)

# docs.jsonl keeps the HTML source's hard line breaks (this is the cgi page's start)
PAGE = (
    "cgi — Common Gateway Interface support\n"
    "Source code: Lib/cgi.py\n"
    "Deprecated since version 3.11, will be removed in version 3.13: The cgi module is "
    "deprecated\n(see PEP 594 for details and alternatives).\n"
    "The FieldStorage class can typically be replaced with\n"
    "urllib.parse.parse_qsl() for GET and HEAD requests,\n"
    "and the email.message module or\n"
    "multipart for POST and PUT.\n"
    "Introduction\n"
    "A CGI script is invoked by an HTTP server, e.g. the Apache server. It runs once.\n"
)


def test_sentences_follow_punctuation_not_line_breaks() -> None:
    """A heading is a block of its own (and, one word, no sentence); a sentence wrapped
    over four lines at its inline links is one sentence; "e.g. the" does not end one."""
    assert sentences(PAGE) == [
        "cgi — Common Gateway Interface support",
        "Source code: Lib/cgi.py",
        "Deprecated since version 3.11, will be removed in version 3.13: The cgi module is "
        "deprecated (see PEP 594 for details and alternatives).",
        "The FieldStorage class can typically be replaced with urllib.parse.parse_qsl() for "
        "GET and HEAD requests, and the email.message module or multipart for POST and PUT.",
        "A CGI script is invoked by an HTTP server, e.g. the Apache server.",
        "It runs once.",
    ]


def test_stems_meet_across_inflections() -> None:
    assert stem("raises") == stem("raised") == stem("raising")
    assert stem("removal") == stem("removed")
    assert stem("cgi") == "cgi" and stem("parse_qsl") == "parse_qsl" and stem("3.11") == "3.11"


def test_content_stems_drop_function_words_and_bare_numbers() -> None:
    assert content_stems("The value of this variable is 0 in 3.11") == ["valu", "variabl"]


def test_hard_tokens_are_numbers_versions_and_identifiers() -> None:
    got = hard_tokens("Use urllib.parse.parse_qsl() since 3.11 (PEP 594); see FieldStorage.")
    assert {"urllib.parse.parse_qsl", "3.11", "594", "fieldstorage"} <= got
    assert "since" not in got and "use" not in got


def test_function_share_tells_prose_from_a_keyword_list() -> None:
    assert function_share("The default value of this variable is zero, so there is no cap.") > 0.4
    assert function_share("maxlen default value zero request size unlimited POST") == 0.0
    assert function_share("[1] 3.11 [2]") == 0.0  # no alphabetic words


def test_normalised_ignores_case_punctuation_and_breaks() -> None:
    assert normalised("The CGI\nmodule—is   deprecated.") == "the cgi module is deprecated"


def test_shingles_are_runs_of_words() -> None:
    assert shingles("a b c", 2) == [("a", "b"), ("b", "c")]
    assert shingles("a b", 3) == []


def test_weights_favour_rare_terms_and_are_integers() -> None:
    terms = TermStats.build(["python module cgi", "python module json", "python os"])
    assert terms.docs == 3
    assert terms.weight("cgi") > terms.weight("modul") > terms.weight("python") >= 1
    assert terms.weight("never-seen") > terms.weight("cgi")
    assert isinstance(terms.weight("cgi"), int)
