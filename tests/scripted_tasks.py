"""Checklist items a scripted Examiner can write that their pages support (control-flow
tests only; nothing here says what a model writes).

Why: tasks are grounded by default (drarena.examiner.grounding drops an item its page does not
support), so a scripted task generator that wrote "entity 1" would have every task rejected.
Each item here is the first words of its SOURCE page's text, read from the task prompt."""

from __future__ import annotations

import re

_SOURCE = re.compile(r"<<<BEGIN SOURCE (\d+)>>>\n(.*?)\n<<<END SOURCE \1>>>", re.S)


def source_texts(prompt: str) -> dict[int, str]:
    """SOURCE number -> the page text the prompt quotes (after its header lines)."""
    out = {}
    for number, block in _SOURCE.findall(prompt):
        _, _, text = block.partition("\n\n")
        out[int(number)] = text
    return out


def page_item(prompt: str, number: int, words: int = 8, tag: str = "") -> str:
    """An item its page supports: the first `words` words of SOURCE `number` (`tag`, a word
    the page lacks, appended: it does not move the support under the threshold)."""
    text = " ".join(source_texts(prompt).get(number, "").split()[:words])
    return f"{text} {tag}".strip() or f"item {number}"
