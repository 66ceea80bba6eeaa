"""Relation typing rules (pure)."""

from __future__ import annotations

from drarena.corpus.records import RELATIONS
from drarena.corpus.relations import classify_relation, url_relation

S = "http://site/docs/library/os.html"


def test_url_hierarchy() -> None:
    assert url_relation(S, "http://site/docs/library/index.html") == "broader"
    assert url_relation(S, "http://site/docs/index.html") == "broader"
    assert url_relation(S, "http://site/docs/glossary.html") == ""  # shallower, not an index
    assert (
        url_relation("http://site/docs/library/", "http://site/docs/library/os.html") == "subtopic"
    )
    assert url_relation("http://site/guide.html", "http://site/guide/install.html") == "subtopic"
    assert url_relation(S, "http://other/docs/library/index.html") == ""
    assert url_relation(S, S) == ""


def test_rules_in_order() -> None:
    def rel(target: str, anchor: str, context: str = "", **kw: object) -> str:
        return classify_relation(S, target, anchor, context, **kw)  # type: ignore[arg-type]

    t = "http://site/docs/library/glob.html"
    assert rel(t, "glob", hint="see_also") == "see_also"
    assert rel(t, "glob", "See also the glob module.") == "see_also"
    assert rel(t, "Sorting examples") == "example"
    assert rel("http://site/docs/howto/sorting.html", "Sorting") == "example"
    assert rel(t, "glob", hint="example") == "example"
    assert rel(t, "Next: glob") == "sequel"
    assert rel("http://site/docs/library/index.html", "The Library") == "broader"
    assert rel(t, "glob — Unix style pathname pattern expansion", in_list=True) == "subtopic"
    assert rel(t, "glob.glob()") == "reference"
    assert rel(t, "PathLike") == "reference"
    assert rel(t, "pattern", fragment="term-pattern") == "reference"
    assert rel(t, "globbing", "Files can be matched by globbing patterns.") == "mentions"
    # "for example" in the context does not make an example link.
    assert rel(t, "globbing", "for example, globbing patterns") == "mentions"


def test_relations_are_the_documented_set() -> None:
    assert RELATIONS == (
        "see_also",
        "example",
        "sequel",
        "broader",
        "subtopic",
        "reference",
        "mentions",
    )
