"""HTML for drarena's pages (report.html, drift.html): escaping and the shared style sheet.

Everything that came from a crawled page, an agent or the Examiner passes through `esc`
(html.escape with quotes) before it reaches a page, so an answer containing <script> or an
attribute-breaking quote stays inert text. A base module so that the report and drift pages
share it without either importing the other.
"""

from __future__ import annotations

import html


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


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
