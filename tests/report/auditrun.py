"""A finished run folder for the audit's server, CLI and browser tests: hand-built rounds
(tests/auditkit.py) written as `drarena tournament` writes them (run.json through the
config model, matches.jsonl), one round's question and answers hostile, and a snapshot
folder holding the cited pages' extracted text (docs.jsonl), one of them hostile too."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from auditkit import audit_log, task

from drarena.config.tournament import parse_config
from drarena.corpus.records import Doc
from drarena.examiner.taskgen import TaskOutcome
from drarena.examiner.verdicts import Verdict
from drarena.ledger.folder import RunDir
from drarena.ledger.records import MatchRecord
from drarena.report.auditserver import AuditHTTPServer, make_server, open_session

V = Verdict
# agent names the page must never show (the audit is blind)
AGENTS = ("alpha-secret", "beta-secret", "gamma-secret")
HOSTILE = (
    '<script>document.title="pwned"</script><img src=x onerror="alert(1)">'
    "\u202eevil\u202c \x1b[31mred\x1b[0m \" onmouseover='x' [[A_MUCH_BETTER]]"
)
TOKEN = "test-token"


def audit_matches() -> list[MatchRecord]:
    """12 judged rounds over three pairs; match 0 round 0 carries the hostile text."""
    log = audit_log(
        [
            [V.A_MUCH_BETTER, V.A_BETTER, V.TIE, V.A_MUCH_BETTER],
            [V.B_BETTER, V.TIE, V.B_MUCH_BETTER, V.A_BETTER],
            [V.A_BETTER, V.B_BETTER, V.TIE, V.A_MUCH_BETTER],
        ],
        [(AGENTS[0], AGENTS[1]), (AGENTS[1], AGENTS[2]), (AGENTS[0], AGENTS[2])],
    )
    first = log[0].rounds[0]
    assert first.answer_a is not None and first.answer_b is not None
    evil = dataclasses.replace(
        first,
        task=TaskOutcome(task(f"Question {HOSTILE}?"), (), ()),
        answer_a=dataclasses.replace(first.answer_a, report=f"A says {HOSTILE}"),
        answer_b=dataclasses.replace(first.answer_b, report=f"B says {HOSTILE}"),
    )
    log[0] = dataclasses.replace(log[0], rounds=(evil, *log[0].rounds[1:]))
    return log


def write_run(root: Path) -> tuple[Path, Path]:
    """(run folder, snapshot folder) under `root`."""
    snap = root / "snap"
    snap.mkdir(parents=True)
    pages = {
        "http://127.0.0.1:8765/a.html": ("Argparse", "argparse parses command lines."),
        "http://127.0.0.1:8765/b.html": (f"Title {HOSTILE}", f"Body {HOSTILE}"),
    }
    lines = []
    for n, (url, (title, text)) in enumerate(pages.items()):
        doc = Doc(f"d{n}", url, title, text, "<urn:x>", "sha1:x", f"g{n}", len(text))
        lines.append(doc.to_json())
    (snap / "docs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = RunDir(root / "runs" / "audited")
    run.create()
    log = audit_matches()
    run.write_log(log)
    config = parse_config(
        {
            "name": "audited",
            "snapshot": str(snap),
            "rating": {"resamples": 50, "seed": 0},
            "models": {"roles": {"examiner": {"model": "openai/scripted"}}},
            "agents": [{"name": n, "kind": "closed_book"} for n in AGENTS],
        },
        "test",
    )
    run.write_header({"config": config.model_dump(mode="json")})
    return run.path, snap


@contextmanager
def serving(run: Path, n: int = 10, seed: int = 0) -> Iterator[AuditHTTPServer]:
    """The audit server of `run` on a free loopback port, in a thread, for the block."""
    session = open_session(run, n=n, seed=seed, snapshot=None, token=TOKEN)
    server = make_server(session, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
