"""Prompt templates shipped as package data, rendered strictly and fingerprinted.

Why strict: a variable missing from a render would silently change what the Examiner is
asked. Why hashed: every run records the hash of every template it used, so a result can be
traced to the exact wording.
"""

from __future__ import annotations

import hashlib
import string
from functools import cache
from importlib import resources

from drarena.errors import DrarenaError

TEMPLATE_NAMES = ("taskgen", "judge")


@cache
def load(name: str) -> str:
    try:
        return (resources.files("drarena.examiner") / "prompts" / f"{name}.txt").read_text(
            encoding="utf-8"
        )
    except FileNotFoundError:
        raise DrarenaError(
            f"prompt template {name!r} not found in drarena/examiner/prompts/"
        ) from None


def template_hash(name: str) -> str:
    return "sha256:" + hashlib.sha256(load(name).encode("utf-8")).hexdigest()


def template_hashes() -> dict[str, str]:
    return {name: template_hash(name) for name in TEMPLATE_NAMES}


def render(name: str, **values: object) -> str:
    """Substitute $names; a missing or unused variable is an error."""
    template = string.Template(load(name))
    wanted = {
        m.group("named") or m.group("braced")
        for m in template.pattern.finditer(template.template)
        if m.group("named") or m.group("braced")
    }
    missing = sorted(wanted - set(values))
    extra = sorted(set(values) - wanted)
    if missing or extra:
        raise DrarenaError(f"prompt template {name!r}: missing {missing}, unexpected {extra}")
    return template.substitute({k: str(v) for k, v in values.items()})
