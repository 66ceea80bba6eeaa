"""The annotation pages of `drarena run audit` (pure HTML; drarena.report.auditserver serves
them).

Why these rules:
- blind: the agents' names never reach the page, and the answers are "Answer 1" and
  "Answer 2" in an order seeded per person (drarena.ledger.auditsample.shown_order), posted
  back with the label so that the label can be turned into the run's own A/B order;
- inert: every text that came from a crawled page, an agent, the Examiner or a person passes
  through `html_text` (escaped, cut to a cap, controls, ANSI escapes and bidi overrides made
  U+FFFD) and only into element text. Attributes hold only what the server made: the token
  (URL-safe base64), round keys (hex), numbers, and the person's name, which check_name
  allows only letters, digits, spaces and . ' - _ (escaped all the same). Links to pages go
  by number (the round's n-th URL), never by the URL itself;
- one inline script, allowed by its nonce under a Content-Security-Policy that allows
  nothing else (auditserver), for the keyboard shortcuts: 1-5 the verdict, h / l the tie's
  quality, d / w / b / n the loser's failure, v / x the question valid or not, Enter to
  save. The page works without it (radio buttons and a button).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from urllib.parse import quote

from drarena.agents.base import Answer
from drarena.examiner.taskcheck import ChecklistItem, Task
from drarena.htmlpage import CSS, LONG_CAP
from drarena.htmlpage import html_text as esc
from drarena.ledger.audit import MAX_NOTE_CHARS, RoundKey

# (form value, words, key) of the verdicts as shown: "1" is the answer shown first
SHOWN_VERDICTS = (
    ("1_MUCH_BETTER", "Answer 1 much better", "1"),
    ("1_BETTER", "Answer 1 better", "2"),
    ("TIE", "Tie", "3"),
    ("2_BETTER", "Answer 2 better", "4"),
    ("2_MUCH_BETTER", "Answer 2 much better", "5"),
)
TIES = (("HIGH", "high: both good", "h"), ("LOW", "low: both poor", "l"))
FAILURES = (
    ("DEPTH", "depth: wrong subject or logic", "d"),
    ("WIDTH", "width: details missing", "w"),
    ("BOTH", "both", "b"),
    ("NONE", "none", "n"),
)
VALIDITY = (
    ("yes", "valid: answerable from the target pages, names none of them", "v"),
    ("no", "invalid: not answerable, or leaks its target pages", "x"),
)

PAGE_CSS = (
    CSS
    + """
.key{display:inline-block;min-width:1.2em;padding:0 .3em;border:1px solid #999;
border-radius:3px;font:12px ui-monospace,monospace;text-align:center;margin-right:.3em}
fieldset{margin:.6em 0;border:1px solid #ccc} label{margin-right:1em;white-space:nowrap}
.err{color:#a33;font-weight:600} body{padding:0 1em}
textarea{display:block;box-sizing:border-box;width:100%;height:4em}
"""
)

SCRIPT = """
(function () {
  var keys = {};
  document.querySelectorAll('[data-key]').forEach(function (el) {
    keys[el.getAttribute('data-key')] = el;
  });
  var form = document.getElementById('label-form');
  function chosen() { return form.querySelector('input[name=verdict]:checked'); }
  form.addEventListener('submit', function (e) {
    if (!chosen()) {
      e.preventDefault();
      document.getElementById('need').textContent = 'choose a verdict first (keys 1 to 5)';
    }
  });
  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (t && (t.tagName === 'TEXTAREA' || (t.tagName === 'INPUT' && t.type === 'text'))) {
      return;
    }
    if (e.key === 'Enter') {
      e.preventDefault();
      if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
      return;
    }
    var el = keys[e.key.toLowerCase()];
    if (el) { e.preventDefault(); el.checked = true; }
  });
})();
"""


def round_token(key: RoundKey) -> str:
    """A round's name on the page: hex of its (match id, round), so that no match id (text
    from a run folder) is ever put in an attribute."""
    return hashlib.sha256(f"{key[0]}\x1f{key[1]}".encode()).hexdigest()[:20]


def round_urls(task: Task, first: Answer, second: Answer) -> list[str]:
    """The URLs a round's page can open, numbered from 0: the checklist's pages, then each
    answer's citations, each URL once."""
    out: list[str] = []
    items = (*task.checklist_depth, *task.checklist_width)
    for url in (
        [i.source_url for i in items]
        + [c.url for c in first.citations]
        + [c.url for c in second.citations]
    ):
        if url not in out:
            out.append(url)
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class Shown:
    """One round as one person sees it: the task and the answers in the order shown."""

    token: str  # round_token
    task: Task
    first: Answer
    second: Answer
    shown: str  # "AB": the run's A answer is Answer 1


def _page(title: str, body: str, nonce: str | None = None) -> str:
    script = f"<script nonce={nonce}>{SCRIPT}</script>" if nonce else ""
    return (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
        f"<meta name=referrer content=same-origin><style>{PAGE_CSS}</style></head>"
        f"<body>{body}{script}</body></html>\n"
    )


def _q(value: str) -> str:
    """A value for a URL query in an attribute: percent-encoded, then escaped."""
    return esc(quote(value, safe=""))


def start_page(run_name: str, token: str, people: Sequence[tuple[str, int]], total: int) -> str:
    """Who is labelling: a name field, and the people who have labels, to resume."""
    known = "".join(
        f'<li><a href="/label?t={_q(token)}&amp;who={_q(name)}">{esc(name)}</a>: '
        f"{done} of {total} labelled</li>"
        for name, done in people
    )
    body = (
        f"<h1>Human audit of {esc(run_name)}</h1>"
        f"<p>{total} rounds sampled. Each person labels them on their own; labels go to the "
        "run's audit/labels.jsonl and are never shown to another person.</p>"
        f'<form method=get action="/label"><input type=hidden name=t value="{_q(token)}">'
        "<label>your name <input type=text name=who id=who maxlength=64 required "
        "autofocus></label> <button type=submit>start or resume</button></form>"
        + (f"<h2>Resume</h2><ul>{known}</ul>" if known else "")
    )
    return _page(f"audit: {run_name}", body)


def _item_row(n: int, kind: str, item: ChecklistItem, token: str, rt: str, urls: list[str]) -> str:
    evidence = f"<blockquote class=muted>{esc(item.evidence)}</blockquote>" if item.evidence else ""
    page = urls.index(item.source_url)
    return (
        f"<tr><td class=num>{n + 1}</td><td>{esc(kind)}</td><td>{esc(item.item)}{evidence} "
        f'<a href="/page?t={_q(token)}&amp;r={rt}&amp;u={page}" target=_blank '
        f'rel="noopener noreferrer">its page</a></td>'
        f"<td><input type=checkbox name=i1 value={n} id=i1-{n}></td>"
        f"<td><input type=checkbox name=i2 value={n} id=i2-{n}></td></tr>"
    )


def _answer(label: str, a: Answer, token: str, rt: str, urls: list[str]) -> str:
    cites = "".join(
        f'<li>[{c.n}] <a href="/page?t={_q(token)}&amp;r={rt}&amp;u={urls.index(c.url)}" '
        f'target=_blank rel="noopener noreferrer">{esc(c.url)}</a></li>'
        for c in a.citations
    )
    return (
        f"<div><h3>{esc(label)}</h3><pre>{esc(a.report, LONG_CAP)}</pre>"
        f"<ol class=muted>{cites or '<li>no citations</li>'}</ol></div>"
    )


def _choices(name: str, options: Sequence[tuple[str, str, str]]) -> str:
    return "".join(
        f"<label><input type=radio name={name} value={value} id={name}-{value} "
        f"data-key={key}><span class=key>{key}</span>{esc(words)}</label>"
        for value, words, key in options
    )


def round_page(
    run_name: str,
    who: str,
    token: str,
    r: Shown,
    done: int,
    total: int,
    nonce: str,
    error: str = "",
) -> str:
    """The page of one round for one person (module doc)."""
    task = r.task
    urls = round_urls(task, r.first, r.second)
    listed = [("depth", i) for i in task.checklist_depth]
    listed += [("width", i) for i in task.checklist_width]
    rows = "".join(
        _item_row(n, kind, item, token, r.token, urls) for n, (kind, item) in enumerate(listed)
    )
    body = (
        f"<h1>Human audit of {esc(run_name)}</h1>"
        f"<p>{esc(who)}: <progress value={done} max={total}></progress> "
        f"<span id=progress>{done} of {total} labelled</span>; round {done + 1} of {total}. "
        f'<a href="/?t={_q(token)}">change person</a></p>'
        + (f"<p class=err>{esc(error)}</p>" if error else "")
        + f"<h2>Question</h2><p id=question>{esc(task.question)}</p>"
        f"<p class=muted>{esc(task.word_limit_instruction)}</p>"
        f'<form id=label-form method=post action="/label?t={_q(token)}">'
        f'<input type=hidden name=who value="{esc(who)}">'
        f"<input type=hidden name=r value={r.token}>"
        f"<input type=hidden name=shown value={r.shown}>"
        "<h2>Checklist</h2><p class=muted>tick the items each answer satisfies</p>"
        "<table><tr><th>#</th><th>kind</th><th>item, evidence and page</th>"
        f"<th>Answer 1</th><th>Answer 2</th></tr>{rows}</table>"
        f'<div class="pair">{_answer("Answer 1", r.first, token, r.token, urls)}'
        f"{_answer('Answer 2', r.second, token, r.token, urls)}</div>"
        f"<fieldset><legend>Which answer is better?</legend>"
        f"{_choices('verdict', SHOWN_VERDICTS)}<span id=need class=err></span></fieldset>"
        f"<fieldset><legend>For a tie: its quality</legend>{_choices('tie', TIES)}</fieldset>"
        "<fieldset><legend>For a winner: why the loser lost</legend>"
        f"{_choices('fail', FAILURES)}</fieldset>"
        "<fieldset><legend>The question itself</legend>"
        f"{_choices('valid', VALIDITY)}</fieldset>"
        f"<label>note <textarea name=note maxlength={MAX_NOTE_CHARS}></textarea></label>"
        "<p><button type=submit id=save><span class=key>Enter</span>save and next</button></p>"
        "</form>"
    )
    return _page(f"audit: {run_name}", body, nonce)


def done_page(run_name: str, who: str, token: str, total: int) -> str:
    body = (
        f"<h1>Human audit of {esc(run_name)}</h1>"
        f"<p id=done>{esc(who)}: all {total} sampled rounds labelled. Thank you.</p>"
        "<p>The figures are in report.html once <code>drarena run rank RUN</code> has run.</p>"
        f'<p><a href="/?t={_q(token)}">another person</a></p>'
    )
    return _page(f"audit: {run_name}", body)


def frozen_page(url: str, title: str, text: str | None, why: str = "") -> str:
    """A cited page as the snapshot holds it (its extracted text), or why it cannot be
    shown."""
    shown = (
        f"<h1>{esc(title or url)}</h1><p class=muted>{esc(url)} (frozen)</p>"
        f"<pre>{esc(text, LONG_CAP)}</pre>"
        if text is not None
        else f"<h1>{esc(url)}</h1><p class=err>{esc(why)}</p>"
    )
    return _page(f"page: {url[:200]}", shown)


def message_page(title: str, message: str) -> str:
    return _page(title, f"<h1>{esc(title)}</h1><p class=err>{esc(message)}</p>")
