"""The report views: JSON round trip, terminal table, HTML escaping and splicing."""

from __future__ import annotations

from pathlib import Path

from drarena.drift.pages import PageDiff, SentenceChange, Verdict
from drarena.drift.report import (
    SCHEMA_VERSION,
    DriftReport,
    SnapshotRef,
    count_verdicts,
    drift_section,
    read_json,
    render_page,
    render_table,
    splice_section,
    write_json,
)
from drarena.drift.stale import StaleItem, TaskImpact

EVIL = '<script>alert("x")</script>'


def report() -> DriftReport:
    url = 'http://site.test/"><script>x</script>.html'
    pages = (
        PageDiff(
            url,
            "a",
            EVIL,
            Verdict.CHANGED,
            f"changed {EVIL}",
            similarity=0.5,
            added=(EVIL,),
            removed=(f"old {EVIL}",),
            changed=(SentenceChange(f"was {EVIL}", f"now {EVIL}", 0.7, ("1",), ("2",)),),
        ),
        PageDiff("http://site.test/b.html", "b", "B", Verdict.UNCHANGED, "same bytes"),
    )
    stale = StaleItem(
        "m1",
        0,
        "t",
        "depth",
        0,
        f"item {EVIL}",
        url,
        Verdict.CHANGED,
        "source sentence changed: 1 -> 2",
        (f"was {EVIL}",),
        (f"now {EVIL}",),
    )
    return DriftReport(
        SCHEMA_VERSION,
        "2030-01-01T00:00:00+00:00",
        SnapshotRef("snap", "/s", "f" * 64),
        "live",
        None,
        {"robots": True},
        count_verdicts(pages),
        pages,
        (),
        TaskImpact("run", 1, 1, 3, (stale,), 0, 0),
    )


def test_json_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    write_json(report(), out)
    assert read_json(out) == report()


def test_table_counts_and_drifted_pages_only() -> None:
    table = render_table(report())
    assert table.splitlines()[0] == (
        "drift of snap (ffffffffffff) against live: 2 pages: "
        "0 gone, 0 redirected, 1 changed, 0 unchecked, 1 unchanged"
    )
    assert "b.html" not in table
    assert "stale checklist items: 1 of 3" in table


def test_html_keeps_page_text_inert() -> None:
    page = render_page(report())
    assert "<script" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&quot;&gt;&lt;script&gt;x&lt;/script&gt;.html" in page


def test_splice_adds_once_and_replaces() -> None:
    base = "<html><body><h1>run</h1></body></html>"
    one = splice_section(base, drift_section(report()))
    assert one.count("<section id=drift>") == 1 and one.endswith(
        "</section><!-- drift:end --></body></html>"
    )
    again = splice_section(one, "<!-- drift:begin -->new<!-- drift:end -->")
    assert (
        again == "<html><body><h1>run</h1><!-- drift:begin -->new<!-- drift:end --></body></html>"
    )
