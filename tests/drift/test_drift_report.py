"""The report views: JSON round trip, terminal table, HTML escaping and splicing."""

from __future__ import annotations

from pathlib import Path

import pytest

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
from drarena.errors import DrarenaError

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


def _with(name: str = "snap", item: str = "i", sentence: str = "s") -> DriftReport:
    base = report()
    page = PageDiff(
        "http://site.test/c.html", "c", "C", Verdict.CHANGED, "r", added=(sentence,) * 300
    )
    stale = StaleItem(
        "m1", 0, "t", "depth", 0, item, page.url, Verdict.CHANGED, "r", (sentence,), ()
    )
    assert base.tasks is not None
    return DriftReport(
        base.schema_version,
        base.created,
        SnapshotRef(name, "/s", "f" * 64),
        base.against,
        SnapshotRef(name, "/t", "e" * 64),
        base.options,
        count_verdicts((*base.pages, page)),
        (*base.pages, page),
        base.trees,
        TaskImpact("run", 1, 1, 3, (stale,), 0, 0),
    )


def test_a_lone_surrogate_is_written_to_drift_json_as_its_escape(tmp_path: Path) -> None:
    """A checklist item read from a run's "\\ud800" escape has no UTF-8: write_json failed
    with UnicodeEncodeError (leaving d.json.tmp); it is written as the escape it came as."""
    out = tmp_path / "d.json"
    value = _with(item="x\ud800y")
    write_json(value, out)
    assert "x\\ud800y" in out.read_text(encoding="utf-8")
    assert read_json(out) == value and [p.name for p in tmp_path.iterdir()] == ["d.json"]


def test_snapshot_names_never_reach_the_terminal_as_commands() -> None:
    """A manifest's name is any text: its escape sequences reached the terminal in the
    table's first line, and a lone surrogate made printing it fail."""
    table = render_table(_with(name="\x1b]0;TITLE\x07\x1b[31mRED\ud800\u202e"))
    assert "\x1b" not in table and "\x07" not in table and "\u202e" not in table
    assert "?]0;TITLE??[31mRED??" in table.splitlines()[0]
    table.encode("utf-8")


def test_page_text_is_cut_and_made_showable() -> None:
    """drift.html: a page's sentence of a MB went in whole, a lone surrogate made the page
    unwritable; each text is cut at TEXT_CAP, each list of sentences at LIST_CAP."""
    from drarena.drift.report import LIST_CAP
    from drarena.htmlpage import TEXT_CAP

    page = render_page(_with(sentence="\ud800" + "<b>" * 2**20))
    page.encode("utf-8")
    assert f"... [{3 * 2**20 + 1 - TEXT_CAP} more characters]" in page
    assert f"and {300 - LIST_CAP} more (drift.json has them all)" in page
    assert len(page) < 2_000_000


def test_a_drift_json_over_the_limit_is_refused_having_read_that_much(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_json read the whole file, whatever its size (a re-render of the run's report
    reads it); it reads MAX_TEXT_BYTES at most, as the run's other files are read."""
    from drarena.ledger import folder

    monkeypatch.setattr(folder, "MAX_TEXT_BYTES", 1000)
    out = tmp_path / "drift.json"
    write_json(report(), out)
    assert out.stat().st_size > 1000
    with pytest.raises(DrarenaError, match=r"drift.json: larger than 1000 bytes"):
        read_json(out)


def test_a_drift_page_is_known_by_how_it_opens(tmp_path: Path) -> None:
    """`drift --json OUT.json` replaces OUT.html only if drift wrote it: a page of its own
    (any snapshot name, escaped) opens with PAGE_START; a run's report.html does not."""
    from drarena.drift.commands import _drift_page

    ours, theirs = tmp_path / "d.html", tmp_path / "report.html"
    ours.write_text(render_page(_with(name='<x y="1">')), encoding="utf-8")
    theirs.write_text("<!DOCTYPE html><html><title>drarena report</title>", encoding="utf-8")
    assert _drift_page(ours) and not _drift_page(theirs)
    assert not _drift_page(tmp_path / "missing.html")


def test_splice_after_a_stray_end_marker_settles_on_one_section() -> None:
    """A hand-edited report.html whose end marker comes before its begin marker got one more
    drift section on every run; the end is now looked for after the begin."""
    page = "<body><!-- drift:end --><h1>run</h1><!-- drift:begin -->old</body>"
    once = splice_section(page, "<!-- drift:begin -->a<!-- drift:end -->")
    twice = splice_section(once, "<!-- drift:begin -->b<!-- drift:end -->")
    thrice = splice_section(twice, "<!-- drift:begin -->c<!-- drift:end -->")
    assert twice.count("drift:begin") == thrice.count("drift:begin") == 1
    assert (
        thrice
        == "<body><!-- drift:end --><h1>run</h1><!-- drift:begin -->c<!-- drift:end --></body>"
    )
