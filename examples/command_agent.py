#!/usr/bin/env python3
"""A minimal drarena command agent: one search on the frozen web, then cite the top pages.

drarena writes a JSON request to stdin and reads a JSON answer from stdout (see README,
"Bring your own agent"). Only the standard library is needed.
"""

import json
import sys
import urllib.parse
import urllib.request

request = json.load(sys.stdin)  # {protocol, question, history, word_limit, search_url}
question, search_url = request["question"], request["search_url"]
hits = []
if search_url:  # the frozen web's search server; never the live web
    query = urllib.parse.urlencode({"q": question, "k": 3})
    with urllib.request.urlopen(f"{search_url}/search?{query}", timeout=30) as response:
        hits = json.load(response)["hits"]
lines = [f"- {h['title']}: {h['snippet'][:300]} [{n}]" for n, h in enumerate(hits, 1)]
report = f"## {question}\n\n" + ("\n".join(lines) or "Nothing found in the archive.")
json.dump(
    {
        "report": report,
        "citations": [h["url"] for h in hits],
        "tool_calls": [
            {"name": "search", "arguments": {"query": question}, "urls": [h["url"] for h in hits]}
        ],
    },
    sys.stdout,
)
