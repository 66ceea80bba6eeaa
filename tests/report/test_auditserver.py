"""`drarena run audit`'s server over HTTP, no browser (drarena.report.auditserver): the
loopback guards and token, a label posted and found in labels.jsonl in the run's order,
resuming per person, hostile text inert, cited pages from the snapshot, refusals that save
nothing."""

from __future__ import annotations

import http.client
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from auditrun import AGENTS, HOSTILE, TOKEN, serving, write_run

from drarena.ledger.audit import labels_path, read_labels
from drarena.report.auditpage import round_token
from drarena.report.auditserver import AuditHTTPServer


def request(
    server: AuditHTTPServer,
    method: str,
    path: str,
    body: str = "",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        sent = {"Host": f"127.0.0.1:{server.port}"} | (headers or {})
        if method == "POST":
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body.encode("utf-8") if body else None, headers=sent)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read().decode("utf-8")
    finally:
        conn.close()


def form_of(page: str) -> dict[str, str]:
    """The hidden fields of a round page (who, r, shown)."""
    return dict(re.findall(r'<input type=hidden name=(\w+) value="?([^" >]*)"?>', page))


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path)[0]


def test_the_guards(run: Path) -> None:
    with serving(run) as server:
        ok = f"/?t={TOKEN}"
        status, headers, page = request(server, "GET", ok)
        assert status == 200 and "your name" in page
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert request(server, "GET", "/")[0] == 403  # no token
        assert request(server, "GET", "/?t=wrong")[0] == 403
        assert request(server, "GET", ok, headers={"Host": "evil.test"})[0] == 421
        assert request(server, "GET", ok, headers={"Host": f"localhost:{server.port}"})[0] == 200
        evil = {"Origin": "http://evil.test"}
        assert request(server, "GET", ok, headers=evil)[0] == 403
        body = urlencode({"who": "ann", "verdict": "TIE"})
        assert request(server, "POST", f"/label?t={TOKEN}", body, evil)[0] == 403
        assert request(server, "GET", f"/nope?t={TOKEN}")[0] == 404
    assert not labels_path(run).exists()


def test_a_label_is_saved_in_the_runs_order_and_the_person_resumes(run: Path) -> None:
    with serving(run, n=10) as server:
        status, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
        assert status == 200 and "0 of 10 labelled" in page
        assert not any(name in page for name in AGENTS)  # blind
        fields = form_of(page)
        assert fields["who"] == "ann" and fields["shown"] in ("AB", "BA")
        chosen = [("verdict", "1_MUCH_BETTER"), ("fail", "WIDTH"), ("i1", "0"), ("i1", "2")]
        chosen += [("i2", "1"), ("valid", "no"), ("note", "first <b>")]
        body = urlencode([*fields.items(), *chosen])
        status, headers, _ = request(
            server,
            "POST",
            f"/label?t={TOKEN}",
            body,
            {"Origin": f"http://127.0.0.1:{server.port}"},
        )
        assert status == 303 and headers["Location"] == f"/label?t={TOKEN}&who=ann"
        (saved,) = read_labels(labels_path(run))
        assert saved.annotator == "ann" and saved.shown == fields["shown"]
        assert round_token(saved.key) == fields["r"]
        ab = fields["shown"] == "AB"
        assert saved.verdict.value == ("A_MUCH_BETTER" if ab else "B_MUCH_BETTER")
        mine, theirs = (True, False, True), (False, True, False)
        assert (saved.items_a, saved.items_b) == ((mine, theirs) if ab else (theirs, mine))
        assert saved.loser_failure.value == "WIDTH" and saved.question_valid is False
        assert saved.note == "first <b>" and saved.source == "page"
        _, _, again = request(server, "GET", f"/label?t={TOKEN}&who=ann")
        assert "1 of 10 labelled" in again and form_of(again)["r"] != fields["r"]
        _, _, other = request(server, "GET", f"/label?t={TOKEN}&who=bob")
        assert "0 of 10 labelled" in other
    with serving(run, n=10) as server:  # a restarted server: the same sample, resumed
        _, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
        assert "1 of 10 labelled" in page and form_of(page)["r"] == form_of(again)["r"]
        _, _, start = request(server, "GET", f"/?t={TOKEN}")
        assert "ann</a>: 1 of 10 labelled" in start


def test_every_round_labelled_is_the_end(run: Path) -> None:
    with serving(run, n=3) as server:
        for _ in range(3):
            _, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
            body = urlencode([*form_of(page).items(), ("verdict", "TIE"), ("tie", "LOW")])
            assert request(server, "POST", f"/label?t={TOKEN}", body)[0] == 303
        _, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
        assert "all 3 sampled rounds labelled" in page
    labels = read_labels(labels_path(run))
    assert len({lb.key for lb in labels}) == 3
    assert all(lb.verdict.value == "TIE" and lb.tie_quality is not None for lb in labels)


def test_refusals_save_nothing(run: Path) -> None:
    with serving(run) as server:
        _, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
        fields = form_of(page)
        status, _, again = request(server, "POST", f"/label?t={TOKEN}", urlencode(fields))
        assert status == 400 and "not saved: choose a verdict" in again
        bad = [
            fields | {"verdict": "TIE", "r": "0" * 20},  # not a round of the run
            fields | {"verdict": "TIE", "who": "<script>"},  # not a name
            fields | {"verdict": "TIE", "shown": "XY"},
            fields | {"verdict": "1_BETTER", "fail": "SPITE"},
            fields | {"verdict": "TIE", "note": "n" * 2001},
        ]
        for form in bad:
            status, _, _ = request(server, "POST", f"/label?t={TOKEN}", urlencode(form))
            assert status == 400
        huge = "note=" + "x" * (65 << 10)
        assert request(server, "POST", f"/label?t={TOKEN}", huge)[0] == 413
        assert request(server, "GET", f"/label?t={TOKEN}&who=%3Cb%3E")[0] == 400
    assert not labels_path(run).exists()


def test_hostile_text_is_inert(run: Path) -> None:
    """The round with hostile question and answers, wherever the sample puts it."""
    with serving(run, n=12) as server:
        for _ in range(12):
            _, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
            if "pwned" in page:
                break
            body = urlencode([*form_of(page).items(), ("verdict", "TIE")])
            request(server, "POST", f"/label?t={TOKEN}", body)
        assert "pwned" in page
        assert page.count("<script") == 1 and "<script nonce=" in page  # ours alone
        assert "<img" not in page and "onmouseover='x'" not in page
        assert "\u202e" not in page and "\x1b" not in page
        assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page
        # the cited pages open as the snapshot's text, inert too; by number only
        links = re.findall(r'href="(/page\?[^"]+)"', page)
        shape = r"/page\?t=[\w-]+&amp;r=[0-9a-f]+&amp;u=\d"
        assert links and all(re.fullmatch(shape, x) for x in links)
        seen = [request(server, "GET", x.replace("&amp;", "&"))[2] for x in set(links)]
        hostile_page = next(p for p in seen if "Body " in p)
        assert "<script" not in hostile_page and "&lt;script&gt;" in hostile_page
        assert "argparse parses command lines." in "".join(seen)
        r = form_of(page)["r"]
        assert request(server, "GET", f"/page?t={TOKEN}&r={r}&u=99")[0] == 404
    assert HOSTILE not in page


def test_a_citation_outside_the_snapshot_says_so(run: Path, tmp_path: Path) -> None:
    with serving(run) as server:
        server.session.snapshot = tmp_path / "gone"
        _, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
        first = re.findall(r'href="(/page\?[^"]+)"', page)[0].replace("&amp;", "&")
        status, _, shown = request(server, "GET", first)
        assert status == 200 and "docs.jsonl is missing" in shown


def test_the_committed_recorded_run_can_be_audited(tmp_path: Path) -> None:
    """Its two judged rounds (real SmolLM2 tasks and answers) are the whole sample; the
    run folder is copied, as labels go into it."""
    import shutil

    run = tmp_path / "recorded-run"
    shutil.copytree(Path(__file__).parents[1] / "arena" / "fixtures" / "recorded-run", run)
    with serving(run, n=10) as server:
        assert len(server.session.chosen) == 2
        for n in range(2):
            status, _, page = request(server, "GET", f"/label?t={TOKEN}&who=ann")
            assert status == 200 and f"{n} of 2 labelled" in page
            body = urlencode([*form_of(page).items(), ("verdict", "2_BETTER")])
            assert request(server, "POST", f"/label?t={TOKEN}", body)[0] == 303
    assert len(read_labels(labels_path(run))) == 2
