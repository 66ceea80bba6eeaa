"""Prompt templates: shipped by name or read from a file, rendered strictly and fingerprinted.

Why strict: a variable missing from a render would silently change what the Examiner is
asked. Why hashed: every run records the name and sha256 of each template it actually used
(`used_hashes`), so a result can be traced to the exact wording, and a replay refuses to run
on other wording. Why by name or file: a user can try another judge prompt without forking
drarena (issue 17); a name is looked up in drarena/examiner/prompts/, anything that looks
like a path (a `/` or a `.txt` ending) is read from that file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import string
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path

from drarena.errors import DrarenaError
from drarena.files import read_bounded

# The slots a run fills with a template, and each slot's default name. The default judge
# prompt is drarena's wording of the paper's criteria (shipped as "paper" before issue 35);
# "paper" is now the reference's own judge prompt (core/examiner.py 122-190), which
# `protocol: paper` selects.
DEFAULT_PROMPTS = {"taskgen": "taskgen", "judge": "drarena"}
# Shipped prompts whose name now names other wording: {old name: (its name now, the sha256
# the old wording had)}. A run whose run.json records the old name with that hash was made
# with the wording now shipped under the new name, and replays with it.
RENAMED_PROMPTS = {
    "paper": (
        "drarena",
        "sha256:6e78f71801d0143965c65eca616f062763d4f0e2aea5636ce4e9a60b7638f142",
    ),
}
# The pointwise grader's prompt has no choice in config (its fields are fixed by the code).
POINTWISE_PROMPT = "pointwise"
# The v1 judge prompt, kept byte for byte so that runs recorded before the judge prompt
# became choosable replay from their cache; its JSON example is the pattern small models copy
# (issue 15), so new runs use "drarena", "paper" or "checklist-first".
LEGACY_JUDGE_PROMPT = "judge"
# A prompt file is the user's (any path), read bounded: read, not stat()ed, since a FIFO or a
# growing file has no size to trust. Why 200,000 bytes: the shipped templates are 1-3 KB, and
# a prompt goes to the model whole with two answers beside it; 200 KB is ~50,000 tokens, past
# the context a judge is given, so no working template is larger.
MAX_TEMPLATE_BYTES = 200_000
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


@dataclasses.dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A template's name (as configured: a shipped name or a file path), text and hash."""

    name: str
    text: str

    @property
    def sha256(self) -> str:
        return "sha256:" + hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def variables(self) -> set[str]:
        template = string.Template(self.text)
        return {
            m.group("named") or m.group("braced")
            for m in template.pattern.finditer(template.template)
            if m.group("named") or m.group("braced")
        }


@cache
def shipped_names() -> tuple[str, ...]:
    """The templates shipped in drarena/examiner/prompts/, by name. Listed once a process
    (they are package files, as `load` reads them once): every judge and task call resolves
    its template by name, and listing the folder each time cost ~1.5 ms a call."""
    folder = resources.files("drarena.examiner") / "prompts"
    return tuple(sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt")))


def is_path(spec: str) -> bool:
    return "/" in spec or "\\" in spec or spec.endswith(".txt")


@cache
def load(name: str) -> str:
    """A shipped template's text, by name."""
    if not _NAME.match(name):
        raise DrarenaError(f"prompt template {name!r} not found in drarena/examiner/prompts/")
    try:
        return (resources.files("drarena.examiner") / "prompts" / f"{name}.txt").read_text(
            encoding="utf-8"
        )
    except FileNotFoundError:
        raise DrarenaError(
            f"prompt template {name!r} not found in drarena/examiner/prompts/"
        ) from None


# The variables each slot's renderer fills (taskgen.generate_task, judge.judge_prompt; the
# v1 judge template has its own, and is shipped): a template must use exactly these.
SLOT_VARIABLES = {
    "taskgen": frozenset(
        {
            "root_topic",
            "reasoning_chain",
            "target_pages",
            "width",
            "n_sources",
            "earlier_questions",
        }
    ),
    "judge": frozenset(
        {"question", "word_limit_instruction", "answer_a", "answer_b", "checklist", "fields"}
    ),
}
# A judge template in the reference's shape (the shipped "paper"): the reference shows only
# the word maximum (`max_words`, core/examiner.py 129), writes its output fields itself
# (no `fields`: no per-item booleans, no length cap on the reasoning) and is answered in the
# reference's own values ("[[A_BETTER]]", "DEEP", "N/A"; drarena.examiner.judgeparse).
# The reference Examiner's system prompt, sent before each of its task and judge prompts
# (core/examiner.py 13, 16); drarena sends it with reference-style judge prompts.
REFERENCE_SYSTEM_PROMPT = "You are an expert AI Benchmark Creator & Judge."
REFERENCE_JUDGE_VARIABLES = frozenset(
    {"question", "max_words", "checklist", "answer_a", "answer_b"}
)


def reference_style(template: PromptTemplate) -> bool:
    """Whether a judge template is in the reference's shape (REFERENCE_JUDGE_VARIABLES)."""
    return template.variables() == REFERENCE_JUDGE_VARIABLES


def check_spec(spec: str, slot: str | None = None) -> str:
    """Config-time check of a name or path (a pydantic validator: the config error line
    names the field). A file for a `slot` must use exactly that slot's variables: a typo
    ($questoin) found here costs nothing, found at the first judging it voided every round
    after both agents had answered."""
    try:
        template = resolve(spec)
    except DrarenaError as exc:
        raise ValueError(str(exc)) from None
    if slot is not None and is_path(spec):
        wanted = SLOT_VARIABLES[slot]
        if slot == "judge" and reference_style(template):
            return spec
        missing, extra = (
            sorted(wanted - template.variables()),
            sorted(template.variables() - wanted),
        )
        if missing or extra:
            raise ValueError(
                f"prompt file {spec}: a {slot} template uses exactly "
                f"${', $'.join(sorted(wanted))}; missing {missing}, unknown {extra}"
            )
    return spec


def resolve(spec: str) -> PromptTemplate:
    """A shipped name or a file path (relative to the current folder) to its template."""
    if not is_path(spec):
        if spec not in shipped_names():
            raise DrarenaError(
                f"no prompt template named {spec!r} (shipped: {', '.join(shipped_names())}; "
                "a file path needs a '/' or a .txt ending)"
            )
        return PromptTemplate(spec, load(spec))
    path = Path(spec)
    try:
        raw = read_bounded(
            path,
            MAX_TEMPLATE_BYTES,
            "a prompt is a few KB",
            what="prompt file",
            missing=f"prompt file {spec} not found",
        )
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DrarenaError(f"prompt file {spec} cannot be read: {exc}") from None
    return PromptTemplate(spec, text)


def template_hash(name: str) -> str:
    return resolve(name).sha256


def used_hashes(specs: Mapping[str, str] | None = None) -> dict[str, str]:
    """{template name or path: sha256} of the templates a run uses: `specs` maps each slot
    (taskgen, judge, and pointwise when pointwise grading runs) to its name or path. Runs
    recorded before the choice existed hold {"taskgen": ..., "judge": ...}: the same shape."""
    chosen = dict(DEFAULT_PROMPTS) if specs is None else dict(specs)
    return {spec: template_hash(spec) for spec in sorted(chosen.values())}


def template_hashes() -> dict[str, str]:
    """The default templates' hashes (a run records `used_hashes` of its own choice)."""
    return used_hashes()


def render_template(template: PromptTemplate, **values: object) -> str:
    """Substitute $names; a missing or unused variable is an error."""
    wanted = template.variables()
    missing = sorted(wanted - set(values))
    extra = sorted(set(values) - wanted)
    if missing or extra:
        raise DrarenaError(
            f"prompt template {template.name!r}: missing {missing}, unexpected {extra}"
        )
    try:
        return string.Template(template.text).substitute({k: str(v) for k, v in values.items()})
    except ValueError as exc:  # a stray '$' in a user's file
        raise DrarenaError(f"prompt template {template.name!r}: {exc}") from None


def render(name: str, **values: object) -> str:
    """Render a shipped template by name, or a template file by path."""
    return render_template(resolve(name), **values)
