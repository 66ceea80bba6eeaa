"""The pure per-page comparison: sentences, figures, verdicts."""

from __future__ import annotations

from drarena.drift.pages import (
    NewVersion,
    Verdict,
    compare_text,
    figures,
    judge_page,
    sentences,
)

URL = "http://example.org/a.html"
OLD = (
    "Heading of the page\n"
    "The limit is 45 bytes per line, except for the last\n"
    "line. Released on 2023-05-01 for everyone.\n"
    "Nothing else changes here. A closing remark."
)


def version(**kw: object) -> NewVersion:
    base: dict[str, object] = {"url": URL, "final_url": URL, "status": 200, "hops": (f"200 {URL}",)}
    base.update(kw)
    return NewVersion(**base)  # type: ignore[arg-type]


def test_sentences_rejoin_wrapped_lines_and_keep_headings_apart() -> None:
    assert sentences(OLD) == (
        "Heading of the page",
        "The limit is 45 bytes per line, except for the last line.",
        "Released on 2023-05-01 for everyone.",
        "Nothing else changes here.",
        "A closing remark.",
    )


def test_figures_split_dates_from_numbers() -> None:
    numbers, dates = figures(
        "Python 3.11.2 shipped May 3, 2021 to 1,000 users; see 2023-05-01 and sha256 or x2."
    )
    assert numbers == ["3.11.2", "1,000"]
    assert dates == ["May 3, 2021", "2023-05-01"]


def test_changed_number_is_a_changed_sentence_with_the_figures() -> None:
    diff = compare_text(OLD, OLD.replace("45 bytes", "57 bytes"))
    assert diff.added == () and diff.removed == ()
    (change,) = diff.changed
    assert change.old == "The limit is 45 bytes per line, except for the last line."
    assert change.new == "The limit is 57 bytes per line, except for the last line."
    assert (change.numbers_old, change.numbers_new) == (("45",), ("57",))
    assert change.dates_old == change.dates_new == ()
    assert 0.9 < diff.similarity < 1.0


def test_changed_date_is_reported_as_a_date() -> None:
    diff = compare_text(OLD, OLD.replace("2023-05-01", "2024-01-31"))
    (change,) = diff.changed
    assert (change.dates_old, change.dates_new) == (("2023-05-01",), ("2024-01-31",))
    assert change.numbers_old == change.numbers_new == ()


def test_added_and_removed_sentences() -> None:
    new = (
        OLD.replace("Nothing else changes here. ", "")
        + "\nAn entirely new paragraph about something unrelated."
    )
    diff = compare_text(OLD, new)
    assert diff.removed == ("Nothing else changes here.",)
    assert diff.added == ("An entirely new paragraph about something unrelated.",)
    assert diff.changed == ()


def test_whitespace_and_rewrapping_change_nothing() -> None:
    rewrapped = (
        "Heading of the page\n  The limit   is 45 bytes\nper line, except for the "
        "last line.\n\nReleased on 2023-05-01\tfor everyone. Nothing else changes\n"
        "Here. A closing remark."
    )
    # "Here." after a wrap starts upper case: only the whole-text check sees it is the same
    assert compare_text(OLD, OLD.replace(" ", "  ")).same
    assert compare_text(OLD, rewrapped.replace("\nHere", " here")).same
    page = judge_page(URL, "d1", "t", OLD, version(text=OLD.replace("\n", "\n   ")))
    assert page.verdict == Verdict.UNCHANGED and page.reason == "same text"


def test_verdicts_of_judge_page() -> None:
    target = "http://example.org/b.html"
    moved = judge_page(
        URL,
        "d",
        "t",
        OLD,
        version(final_url=target, hops=(f"301 {URL}", f"200 {target}"), text="other"),
    )
    assert moved.verdict == Verdict.REDIRECTED and moved.target == target
    assert moved.reason == f"301 -> 200 to {target}"
    gone = judge_page(URL, "d", "t", OLD, version(status=404, hops=(f"404 {URL}",)))
    assert (gone.verdict, gone.reason) == (Verdict.GONE, "HTTP 404")
    refused = judge_page(
        URL,
        "d",
        "t",
        OLD,
        version(status=0, hops=(), failure="connection_error", detail="Connect call failed"),
    )
    assert refused.verdict == Verdict.GONE and "connection_error" in refused.reason
    robots = judge_page(URL, "d", "t", OLD, version(status=0, failure="robots", detail="no"))
    assert robots.verdict == Verdict.UNCHECKED
    same = judge_page(URL, "d", "t", OLD, version(same_bytes=True))
    assert same.verdict == Verdict.UNCHANGED and same.reason == "same bytes"
    pdf = judge_page(URL, "d", "t", OLD, version(content_type="application/pdf"))
    assert pdf.verdict == Verdict.CHANGED and pdf.removed == sentences(OLD)
    changed = judge_page(URL, "d", "t", OLD, version(text=OLD.replace("45", "46")))
    assert changed.verdict == Verdict.CHANGED
    assert changed.reason.endswith("1 sentence(s) changed, 0 added, 0 removed; figures 45 -> 46")
    assert changed.stale_sentences == {"The limit is 45 bytes per line, except for the last line."}


def test_default_port_is_not_a_redirect() -> None:
    page = judge_page(
        URL, "d", "t", OLD, version(final_url="http://example.org:80/a.html", same_bytes=True)
    )
    assert page.verdict == Verdict.UNCHANGED


def test_rewritten_sentence_is_removed_and_added_not_changed() -> None:
    diff = compare_text("Alpha beta gamma delta.", "Completely different words here now.")
    assert diff.removed == ("Alpha beta gamma delta.",)
    assert diff.added == ("Completely different words here now.",)
    assert diff.similarity == 0.0


def test_moved_sentences_are_not_removed() -> None:
    old = "First point here. Second point there. Third point last."
    new = "Third point last. First point here. A new point. Second point there."
    diff = compare_text(old, new)
    assert (diff.removed, diff.changed) == ((), ())
    assert diff.added == ("A new point.",)
    assert compare_text(old, "Second point there. Third point last. First point here.").same
