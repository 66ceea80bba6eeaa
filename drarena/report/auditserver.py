"""`drarena run audit RUN`: a local server of the annotation pages (drarena.report.auditpage).

Why these guards, as the search server's (drarena.search.server.LoopbackGuard): the server
binds 127.0.0.1 only, and a loopback server is still reachable from the user's own browser,
so a request is answered only when its Host is this server (a loopback name with this port:
DNS rebinding) and its Origin, when a browser sends one, is too (another site's page posting
labels). Beyond those, every request carries the session's token (`t=`, printed with the
URL, compared in constant time): other users of a shared machine reach loopback too. POST
bodies are capped (MAX_BODY_BYTES); the pages are sent with a Content-Security-Policy that
allows the one inline script by its nonce and nothing else from anywhere.

What it writes: only RUN/audit/labels.jsonl, appended (drarena.ledger.audit), one line per
saved label; the run's own files are only read. The sample (drarena.ledger.auditsample) is
a function of the run's log, --n and --seed, so a restarted server shows the same rounds,
and each person resumes at their first unlabelled one.

Routes (all GET but one): `/` who is labelling; `/label?who=NAME` that person's next round;
`POST /label` save a label, then 303 to the next round; `/page?r=ROUND&u=N` the round's
N-th URL (drarena.report.auditpage.round_urls) as the snapshot's extracted text.
"""

from __future__ import annotations

import dataclasses
import hmac
import secrets
import threading
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from drarena.errors import DrarenaError, one_line
from drarena.examiner.verdicts import FailureType, TieQuality, Verdict
from drarena.ledger.audit import (
    LABEL_SCHEMA_VERSION,
    AuditLabel,
    RoundKey,
    append_labels,
    check_label,
    check_name,
    labelled_rounds,
    labels_path,
    latest,
    now,
    read_labels,
)
from drarena.ledger.auditsample import AuditRound, next_round, sample, shown_order
from drarena.ledger.folder import RunDir
from drarena.ledger.records import MatchRecord, RoundRecord
from drarena.report.auditpage import (
    Shown,
    done_page,
    frozen_page,
    message_page,
    round_page,
    round_token,
    round_urls,
    start_page,
)
from drarena.search.server import LOOPBACK_NAMES

HOST = "127.0.0.1"
MAX_BODY_BYTES = 64 << 10  # a label form is a few hundred bytes; a note at most 2,000 chars
DRAIN_BYTES = 1 << 20  # a body over the cap but under this is read and dropped, not cut
REQUEST_TIMEOUT_S = 30.0  # a connection idle this long is dropped (a thread each)
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def signed_from_shown(value: str, shown: str) -> Verdict:
    """A verdict posted in the page's terms (1 = the answer shown first) in the run's A/B
    order: with "BA" shown, answer 1 is the run's B."""
    table = {
        "1_MUCH_BETTER": Verdict.A_MUCH_BETTER,
        "1_BETTER": Verdict.A_BETTER,
        "TIE": Verdict.TIE,
        "2_BETTER": Verdict.B_BETTER,
        "2_MUCH_BETTER": Verdict.B_MUCH_BETTER,
    }
    if value not in table:
        raise ValueError("choose a verdict (keys 1 to 5)")
    verdict = table[value]
    return verdict if shown == "AB" else verdict.swapped()


@dataclasses.dataclass
class AuditSession:
    """What one server holds: the run (read once), its sample, the labels (read at start,
    then kept as they are appended), and the snapshot's pages once one is opened."""

    run: Path
    name: str
    log: list[MatchRecord]
    chosen: tuple[AuditRound, ...]
    seed: int
    token: str
    snapshot: Path | None
    labels: list[AuditLabel]
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    _rounds: dict[str, tuple[MatchRecord, RoundRecord]] = dataclasses.field(default_factory=dict)
    _allowed: dict[RoundKey, int] = dataclasses.field(default_factory=dict)
    _docs: Any = None

    def __post_init__(self) -> None:
        self._allowed = labelled_rounds(self.log)
        for m in self.log:
            for r in m.rounds:
                if (m.match_id, r.index) in self._allowed:
                    self._rounds[round_token((m.match_id, r.index))] = (m, r)

    def done_by(self, who: str) -> set[RoundKey]:
        return {(k[1], k[2]) for k in latest(self.labels) if k[0] == who}

    def people(self) -> list[tuple[str, int]]:
        keys = {c.key for c in self.chosen}
        names = sorted({lb.annotator for lb in self.labels})
        return [(n, len(self.done_by(n) & keys)) for n in names]

    def shown(self, who: str, key: RoundKey) -> Shown:
        _, r = self._rounds[round_token(key)]
        assert r.task.task is not None and r.answer_a is not None and r.answer_b is not None
        order = shown_order(self.seed, who, key)
        first, second = (r.answer_a, r.answer_b) if order == "AB" else (r.answer_b, r.answer_a)
        return Shown(round_token(key), r.task.task, first, second, order)

    def label_from_form(self, form: Mapping[str, list[str]]) -> AuditLabel:
        """A posted form as a label in the run's order; ValueError saying what is wrong."""

        def one(name: str) -> str:
            values = form.get(name) or [""]
            return values[-1]

        who = check_name(one("who"))
        found = self._rounds.get(one("r"))
        if found is None:
            raise ValueError("not a round of this run (a page from another audit?)")
        m, r = found
        shown = one("shown")
        if shown not in ("AB", "BA"):
            raise ValueError("the answer order is missing")
        verdict = signed_from_shown(one("verdict"), shown)
        n = self._allowed[(m.match_id, r.index)]
        ticked = {side: set(form.get(side) or []) for side in ("i1", "i2")}
        marks = {side: tuple(str(i) in ticked[side] for i in range(n)) for side in ("i1", "i2")}
        items_a, items_b = (
            (marks["i1"], marks["i2"]) if shown == "AB" else (marks["i2"], marks["i1"])
        )
        tie = one("tie")
        fail = one("fail")
        valid = one("valid")
        if valid not in ("", "yes", "no"):
            raise ValueError("the question is valid: yes, no or not said")
        if verdict == Verdict.TIE:
            quality: TieQuality | None = TieQuality(tie) if tie else TieQuality.HIGH
            failure = FailureType.NONE
        else:
            quality, failure = None, FailureType(fail) if fail else FailureType.NONE
        label = AuditLabel(
            schema_version=LABEL_SCHEMA_VERSION,
            annotator=who,
            time=now(),
            match_id=m.match_id,
            round=r.index,
            shown=shown,
            verdict=verdict,
            tie_quality=quality,
            loser_failure=failure,
            items_a=items_a,
            items_b=items_b,
            question_valid={"": None, "yes": True, "no": False}[valid],
            note=one("note").replace("\r\n", "\n"),
        )
        check_label(label, self._allowed)
        return label

    def save(self, label: AuditLabel) -> None:
        with self.lock:
            append_labels(labels_path(self.run), [label])
            self.labels.append(label)

    def page_text(self, token: str, number: str) -> tuple[str, str, str | None, str]:
        """(url, title, text or None, why not) of a round's numbered URL."""
        found = self._rounds.get(token)
        if found is None or not number.isdigit():
            raise ValueError("no such round or page number")
        _, r = found
        assert r.task.task is not None and r.answer_a is not None and r.answer_b is not None
        urls = round_urls(r.task.task, r.answer_a, r.answer_b)
        if int(number) >= len(urls):
            raise ValueError("no such page number")
        url = urls[int(number)]
        if self.snapshot is None:
            return url, "", None, "no snapshot named (--snapshot FOLDER)"
        with self.lock:
            if self._docs is None:
                from drarena.search.docstore import DocStore

                try:
                    self._docs = DocStore.from_snapshot(self.snapshot)
                except DrarenaError as exc:
                    return url, "", None, f"snapshot {self.snapshot}: {one_line(exc)}"
        try:
            doc = self._docs.get(url)
        except DrarenaError:
            return url, "", None, "not in the snapshot (a fabricated citation?)"
        return url, doc.title, doc.contents, ""


def open_session(
    run_folder: Path, *, n: int, seed: int, snapshot: Path | None, token: str | None = None
) -> AuditSession:
    """Read the run and its labels (a bad one: one line naming the file and line) and draw
    the sample. `snapshot`: where the cited pages are read (default the run config's)."""
    run = RunDir(run_folder)
    header = run.header()
    if header is None:
        raise DrarenaError(f"{run_folder}: no run.json (not a run folder)")
    log = run.read_log()
    labels = read_labels(labels_path(run_folder), labelled_rounds(log))
    chosen = sample(log, n, seed)
    if not chosen:
        raise DrarenaError(
            f"{run.log_path}: no round a person can label (played, judged, with a task "
            "and both answers)"
        )
    config = header.config
    stored = config.get("snapshot")
    if snapshot is None and isinstance(stored, str):
        snapshot = Path(stored)
    return AuditSession(
        run=run_folder,
        name=str(config.get("name") or run_folder.name),
        log=log,
        chosen=chosen,
        seed=seed,
        token=token or secrets.token_urlsafe(16),
        snapshot=snapshot,
        labels=labels,
    )


class AuditHandler(BaseHTTPRequestHandler):
    """One request (module doc); `server.session` and `server.port` set by make_server."""

    server: AuditHTTPServer
    timeout = REQUEST_TIMEOUT_S
    protocol_version = "HTTP/1.1"
    server_version = "drarena-audit"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL and saved labels, not every request."""

    def _send(self, status: int, body: str, nonce: str = "", where: str = "") -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", CSP.format(nonce=nonce or "none"))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "same-origin")  # no-referrer makes Origin null
        self.send_header("Cache-Control", "no-store")
        if where:
            self.send_header("Location", where)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _refuse(self, status: HTTPStatus, why: str) -> None:
        self._send(status, message_page(f"{status.value} {status.phrase}", why))

    def _guard(self) -> dict[str, list[str]] | None:
        """The query, when Host, Origin and token are this server's; else refused."""
        port = self.server.port
        hosts = {f"{name}:{port}" for name in LOOPBACK_NAMES}
        host = (self.headers.get("Host") or "").lower()
        if host not in hosts:
            self._refuse(
                HTTPStatus.MISDIRECTED_REQUEST,
                f"Host {host[:80]!r} is not this server ({HOST}:{port}); requests for "
                "other names are refused (DNS rebinding)",
            )
            return None
        origin = self.headers.get("Origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in hosts}:
            self._refuse(
                HTTPStatus.FORBIDDEN,
                f"Origin {origin[:80]!r} is not this server; pages of other sites may not use it",
            )
            return None
        query = parse_qs(urlsplit(self.path).query, max_num_fields=20)
        given = (query.get("t") or [""])[-1]
        if not hmac.compare_digest(given.encode(), self.server.session.token.encode()):
            self._refuse(
                HTTPStatus.FORBIDDEN,
                "missing or wrong token: open the URL `drarena run audit` printed",
            )
            return None
        return query

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        query = self._guard()
        if query is None:
            return
        session = self.server.session
        path = urlsplit(self.path).path
        if path == "/":
            self._send(
                HTTPStatus.OK,
                start_page(session.name, session.token, session.people(), len(session.chosen)),
            )
        elif path == "/label":
            self._next(query)
        elif path == "/page":
            try:
                url, title, text, why = session.page_text(
                    (query.get("r") or [""])[-1], (query.get("u") or [""])[-1]
                )
            except ValueError as exc:
                self._refuse(HTTPStatus.NOT_FOUND, str(exc))
                return
            self._send(HTTPStatus.OK, frozen_page(url, title, text, why))
        else:
            self._refuse(HTTPStatus.NOT_FOUND, "no such page")

    def _next(self, query: Mapping[str, list[str]], error: str = "") -> None:
        session = self.server.session
        try:
            who = check_name((query.get("who") or [""])[-1])
        except ValueError as exc:
            self._refuse(HTTPStatus.BAD_REQUEST, str(exc))
            return
        with session.lock:
            todo, done = next_round(session.chosen, session.done_by(who))
        total = len(session.chosen)
        if todo is None:
            self._send(HTTPStatus.OK, done_page(session.name, who, session.token, total))
            return
        nonce = secrets.token_urlsafe(12)
        shown = session.shown(who, todo.key)
        page = round_page(session.name, who, session.token, shown, done, total, nonce, error)
        self._send(HTTPStatus.BAD_REQUEST if error else HTTPStatus.OK, page, nonce)

    def do_POST(self) -> None:
        if self._guard() is None:
            return
        if urlsplit(self.path).path != "/label":
            self._refuse(HTTPStatus.NOT_FOUND, "no such page")
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._refuse(HTTPStatus.LENGTH_REQUIRED, "a label is posted with its length")
            return
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True
            if int(length) <= DRAIN_BYTES:  # read, so the client sees the answer, not a reset
                self.rfile.read(int(length))
            self._refuse(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"request body over {MAX_BODY_BYTES} bytes"
            )
            return
        raw = self.rfile.read(int(length))
        try:
            form = parse_qs(raw.decode("utf-8"), max_num_fields=300, strict_parsing=False)
        except (UnicodeDecodeError, ValueError):
            self._refuse(HTTPStatus.BAD_REQUEST, "the form is not UTF-8 text")
            return
        session = self.server.session
        try:
            label = session.label_from_form(form)
        except ValueError as exc:
            who = (form.get("who") or [""])[-1]
            self._next({"who": [who]}, f"not saved: {one_line(exc)}")
            return
        session.save(label)
        self.server.saved(label)
        where = f"/label?t={quote(session.token)}&who={quote(label.annotator)}"
        self._send(HTTPStatus.SEE_OTHER, message_page("saved", "saved"), where=where)


class AuditHTTPServer(ThreadingHTTPServer):
    """The threading server with its session; `port` is the port bound."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, session: AuditSession, port: int, say: Any = None) -> None:
        self.session = session
        self.say = say
        super().__init__((HOST, port), AuditHandler)
        self.port = self.server_address[1]

    def saved(self, label: AuditLabel) -> None:
        if self.say is not None:
            self.say(f"saved: {label.annotator}, {label.match_id} round {label.round + 1}")

    def url(self) -> str:
        return f"http://{HOST}:{self.port}/?t={quote(self.session.token)}"


def make_server(session: AuditSession, port: int = 0, say: Any = None) -> AuditHTTPServer:
    """The server bound to 127.0.0.1:`port` (0: any free port); a port in use is one line."""
    try:
        return AuditHTTPServer(session, port, say)
    except OSError as exc:
        raise DrarenaError(f"{HOST}:{port}: cannot listen ({exc.strerror or exc})") from None
