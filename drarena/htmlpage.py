"""HTML for drarena's pages (report.html, drift.html): escaping and the shared style sheet.

Everything that came from a crawled page, an agent or the Examiner passes through
`html_text` (cut to a cap, unshowable characters replaced, then `esc`: html.escape with
quotes) before it reaches a page, so an answer containing <script> or an attribute-breaking
quote stays inert text and a 4 MB answer does not make a 4 MB page. A base module so that
the report and drift pages share it without either importing the other.
"""

from __future__ import annotations

import html
import re


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


# Display caps of untrusted text on a page (the run folder and drift.json keep it whole): a
# name, URL, reason or sentence; an answer or a judge's reasoning
TEXT_CAP = 2_000
LONG_CAP = 50_000
# Characters that have no business on a page: C0 and C1 controls but tab and newlines (parse
# errors in HTML), lone surrogates (no UTF-8 for them: writing the page failed) and the bidi
# embeddings, overrides and isolates (they reorder the text after them, drarena's own words
# too, so a URL could put "(fabricated)" where it reads otherwise)
_UNSHOWABLE = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
)


def html_text(value: object, limit: int = TEXT_CAP) -> str:
    """`value` as inert HTML text: cut to `limit` characters (with a note of how many more),
    unshowable characters made U+FFFD, then escaped with quotes (`esc`). What report.html
    and drift.html show of untrusted text (answers, pages, names, URLs)."""
    text = str(value)
    if len(text) > limit:
        text = f"{text[:limit]}... [{len(text) - limit} more characters]"
    return esc(_UNSHOWABLE.sub("\ufffd", text))


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1,h2{font-weight:600} table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3} .num{text-align:right} .void{color:#a33}
details{margin:.3em 0} summary{cursor:pointer} .pair{display:flex;gap:1em}
.pair>div{flex:1;min-width:0;border:1px solid #ddd;padding:.5em;background:#fafafa}
pre{white-space:pre-wrap;word-wrap:break-word;font:12px/1.4 ui-monospace,monospace}
.muted{color:#777} svg text{font:11px sans-serif}
"""
