"""Request encoding: a model call's cache key and HTTP body, json.dumps against jsonbytes.

Every call the model client makes encodes its request twice: sorted, for the cache key
(sha256 over canonical JSON), and again as the body the direct path posts. The 64 task prompts
of a 128-agent Swiss round (~30 KB of quoted pages each) are prepared one after another while
the model servers wait (bench/bench_cluster.py), so this is per-call CPU on the critical path.

Builds three requests shaped like the tournament's own from the committed snapshot's pages
(a task prompt quoting three pages, a judgment quoting one, an agent's answer with its tool),
then, interleaved in one process, times for each:
  before: json.dumps canonical text -> sha256 (the key), json.dumps body (aiohttp's `json=`);
  now:    models.cache.request_key and models.jsonbytes.request_body (what the client runs);
checks the two keys are the same hash, and prints microseconds per call and the ratio.

    .venv/bin/python bench/bench_json.py [--repeat 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cluster import ROOT, prepared

from drarena.corpus.extract import load_docs
from drarena.models import jsonbytes
from drarena.models.cache import request_key
from drarena.models.direct import body_of
from drarena.quoting import quote_block

SAMPLING = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 1024, "seed": 1}
TASK_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": 400},
        "checklist_depth": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "checklist_width": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["question", "checklist_depth", "checklist_width"],
    "additionalProperties": False,
}
ANSWER_TOOL = {
    "type": "function",
    "function": {
        "name": "answer",
        "description": "Give the final answer.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


def requests(snapshot: Path) -> dict[str, dict[str, Any]]:
    """Requests shaped like a task, a judgment and an agent answer, with real page text."""
    docs = sorted((d for d in load_docs(snapshot) if d.is_content), key=lambda d: -len(d.contents))
    pages = [d for d in docs if 8_000 <= len(d.contents) <= 12_000][:3] or docs[:3]

    def quoted(chosen: list[Any]) -> str:
        return "\n\n".join(
            quote_block(f"SOURCE {i}", f"title: {d.title}\nurl: {d.url}\n\n{d.contents}")
            for i, d in enumerate(chosen, 1)
        )

    def request(content: str, **extra: Any) -> dict[str, Any]:
        return {
            "model": "openai/examiner",
            "messages": [{"role": "user", "content": content}],
            **SAMPLING,
            "api_base": "http://127.0.0.1:1/v1",
            **extra,
        }

    fmt = {"type": "json_schema", "json_schema": {"name": "task", "schema": TASK_SCHEMA}}
    return {
        "task": request(
            "Write a question from these sources.\n\n" + quoted(pages), **{"response_format": fmt}
        ),
        "judgment": request(
            "Judge the two answers.\n\n" + quoted(pages[:1])[:4000], **{"response_format": fmt}
        ),
        "answer": {
            **request("What does the module do?"),
            "messages": [
                {"role": "system", "content": "You are a research agent. Answer with the tool."},
                {"role": "user", "content": "What does the module do?"},
            ],
            "tools": [ANSWER_TOOL],
            "tool_choice": "required",
        },
    }


def before(req: dict[str, Any]) -> tuple[str, bytes]:
    payload = {
        "v": "1",
        "model": req["model"],
        "messages": list(req["messages"]),
        "tools": list(req["tools"]) if req.get("tools") else None,
        "tool_choice": req.get("tool_choice"),
        "response_format": req.get("response_format"),
        "sampling": dict(SAMPLING),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return key, json.dumps(body_of(req)).encode("utf-8")


def now(req: dict[str, Any]) -> tuple[str, bytes]:
    key = request_key(
        model=req["model"],
        messages=req["messages"],
        sampling=SAMPLING,
        tools=req.get("tools"),
        tool_choice=req.get("tool_choice"),
        response_format=req.get("response_format"),
    )
    return key, jsonbytes.request_body(body_of(req))


def timed(fn: Any, req: dict[str, Any], repeat: int) -> float:
    """Microseconds a call, the best of 5 blocks (the least disturbed by other work)."""
    best = float("inf")
    for _ in range(5):
        jsonbytes._recent.clear()  # each call starts without the last call's literals
        start = time.perf_counter()
        for _ in range(repeat):
            jsonbytes._recent.clear()
            fn(req)
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000, help="calls per timed block")
    parser.add_argument("--snapshot", type=Path, default=ROOT / "snapshots" / "pydocs")
    args = parser.parse_args()
    reqs = requests(prepared(args.snapshot))
    print(f"bench_json: load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'request':9s} {'chars':>7s} {'before us':>10s} {'now us':>8s} {'ratio':>6s}  key")
    for name, req in reqs.items():
        same = before(req)[0] == now(req)[0]
        if json.loads(before(req)[1]) != json.loads(now(req)[1]):
            raise SystemExit(f"{name}: the bodies differ")
        slow, fast = timed(before, req, args.repeat), timed(now, req, args.repeat)
        chars = sum(len(m["content"]) for m in req["messages"])
        print(
            f"{name:9s} {chars:7d} {slow:10.1f} {fast:8.1f} {slow / fast:5.2f}x  "
            + ("same" if same else "DIFFERENT")
        )
        if not same:
            raise SystemExit(f"{name}: the cache key changed")


if __name__ == "__main__":
    main()
