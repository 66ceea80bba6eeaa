"""The extractive task generator: code picks one fact sentence per target page, the model
(here the scripted backend: control flow only) writes one question per fact, and code
refuses questions that do not ask for their fact or state it. Results say nothing about any
model."""

from __future__ import annotations

import dataclasses
import json

from drarena.corpus.records import TreePage
from drarena.corpus.terms import UNIFORM, TermStats
from drarena.examiner import extractive
from drarena.examiner.taskgen import TaskCall, TaskRequest, TaskRules
from drarena.examiner.taskgens import build_taskgen
from drarena.models.client import ModelClient
from drarena.models.config import ModelsConfig
from drarena.models.scripted import ScriptedBackendForTests, reply

ZLIB = (
    "The zlib module provides compression compatible with the gzip file format. "
    "The compressobj function returns a compression object for streams of data that do "
    "not fit in memory at once. The crc32 function computes a running checksum of the "
    "bytes it is given, starting from zero."
)
LZMA = (
    "The lzma module provides classes and functions for compressing data with the LZMA "
    "algorithm. The LZMAFile class opens a compressed file in binary mode for reading or "
    "for writing."
)


def page(pid: str, url: str, text: str, depth: int = 1) -> TreePage:
    return TreePage(id=pid, url=url, title=pid, text=text, depth=depth, relation="root", anchor="")


def request() -> TaskRequest:
    root = page("root", "http://site.test/", "Python library documentation index page.", 0)
    targets = (
        page("first", "http://site.test/p1.html", ZLIB),
        page("second", "http://site.test/p2.html", LZMA),
    )
    return TaskRequest(root=root, chain=(root,), targets=targets, depth=1)


def question(text: str) -> object:
    return reply(text=json.dumps({"question": text}))


def client(steps: list[object]) -> tuple[ModelClient, ScriptedBackendForTests]:
    backend = ScriptedBackendForTests(steps)  # type: ignore[arg-type]
    config = ModelsConfig(roles={"examiner": {"model": "openai/scripted"}})
    return ModelClient(config, backend=backend), backend


def test_pick_nuggets_takes_a_depth_fact_and_one_width_fact_per_page() -> None:
    nuggets = extractive.pick_nuggets(request().targets, UNIFORM)
    assert [g.kind for g in nuggets] == ["depth", "width", "width"]
    assert [g.url for g in nuggets] == [
        "http://site.test/p1.html",
        "http://site.test/p1.html",
        "http://site.test/p2.html",
    ]
    assert len({g.text for g in nuggets}) == 3  # never the same sentence twice


def test_a_question_stating_its_fact_is_refused() -> None:
    fact = extractive.Nugget(LZMA.split(". ")[1] + ".", "http://site.test/p2.html", "width", 1)
    copied = f"Is it true that {fact.text}"
    assert extractive.given_away(copied, fact, UNIFORM)
    asked = "Which class of the lzma module opens compressed files, and in which mode?"
    assert not extractive.given_away(asked, fact, UNIFORM)


def test_substitute_is_the_next_free_sentence_of_the_same_page() -> None:
    targets = request().targets
    nuggets = extractive.pick_nuggets(targets, UNIFORM)
    taken = {g.text for g in nuggets}
    sub = extractive.substitute(targets, nuggets[1], taken, UNIFORM)
    assert sub is not None and sub.url == nuggets[1].url and sub.kind == "width"
    assert sub.text not in taken and sub.text in ZLIB
    every = taken | set(LZMA.replace(". ", ".\n").splitlines())
    assert extractive.substitute(targets, nuggets[2], every, UNIFORM) is None


async def test_a_fact_refused_on_every_try_is_replaced_by_its_page_next_fact() -> None:
    """Issue 33's demo voided 2 of 4 matches: one fact whose every question stated it. With
    `substitutes: 1` that fact's page gives its next sentence and the task is made; with 0
    the task fails as before."""
    req = request()
    nuggets = extractive.pick_nuggets(req.targets, UNIFORM)
    sub = extractive.substitute(req.targets, nuggets[1], {g.text for g in nuggets}, UNIFORM)
    assert sub is not None

    def half(text: str) -> str:
        """A question naming half its fact's words: it asks for it without stating it."""
        words = text.rstrip(".").split()
        return "What about " + " ".join(words[: len(words) // 2]) + "?"

    def answer_for(prompt: str) -> str:
        """A question per fact: the second fact's only by copying it."""
        if nuggets[1].text in prompt:
            return f"Is it true that {nuggets[1].text}"
        fact = next(g.text for g in (*nuggets, sub) if g is not None and g.text in prompt)
        return half(fact)

    def step(request: object) -> object:
        prompt = json.dumps(request)
        return reply(text=json.dumps({"question": answer_for(prompt)}))

    rules = TaskRules(max_attempts=2, forbid_entity_names=False)
    for substitutes, made in ((1, True), (0, False)):
        model, _ = client([step] * 8)
        gen = build_taskgen({"kind": "extractive", "args": {"substitutes": substitutes}})
        outcome = await gen.generate(TaskCall(model, "examiner"), req, rules)
        assert (outcome.task is not None) == made, outcome.error
        if made:
            assert outcome.task is not None
            items = [i.item for i in outcome.task.checklist_width]
            assert sub.text in items and nuggets[1].text not in items
            assert f"(2) {half(sub.text)}" in outcome.task.question
            assert len(outcome.attempts) == 5  # 1 + 2 refused + 1 (substitute) + 1
        else:
            assert "fact 2" in (outcome.error or "") and "copies the fact" in outcome.error


def test_a_question_sharing_only_a_common_word_with_its_fact_does_not_ask_about_it() -> None:
    """Issue 33's demo: a fact about decryption got a question about temporary files that
    shared only "Python" with it; the question must state ASKED_MIN of its fact's weight."""
    fact = extractive.Nugget(
        "Decryption is extremely slow as it is implemented in native Python rather than C.",
        "http://site.test/p1.html",
        "depth",
        1,
    )
    # a snapshot of Python pages: "python" on every page, the fact's other words on few
    terms = TermStats.build(["python"] * 300 + [fact.text] * 3)
    off = "What is the name of the Python function that makes temporary files and folders?"
    on = "Why is decryption slow in this module?"
    assert not extractive.asks_about(off, fact, [], terms)
    assert extractive.asks_about(on, fact, [], terms)
    assert extractive.asks_about(off, fact, [], UNIFORM)  # unweighted, "python" is enough


BISECT = (
    "bisect — Array bisection algorithm\n"
    "This module provides support for maintaining a list in sorted order without having to "
    "sort the list after each insertion."
)


def identity_request() -> TaskRequest:
    root = page("root", "http://site.test/", "Python library documentation index page.", 0)
    targets = (
        page("node", "http://site.test/bisect.html", BISECT),
        page("first", "http://site.test/p1.html", ZLIB),
        page("second", "http://site.test/p2.html", LZMA),
    )
    return TaskRequest(root=root, chain=(root,), targets=targets, depth=1)


def test_identity_is_the_heading_name_asked_by_its_description() -> None:
    """The paper's masked depth entity: the node's name from its heading line, the
    description what the question is written from; pages without such a heading (or with a
    name the leak check cannot keep out) have none."""
    node = identity_request().targets[0]
    got = extractive.identity(node)
    assert got is not None and got.answer == "bisect" and got.kind == "depth"
    assert got.text == "bisect — Array bisection algorithm"
    assert got.asked == "Array bisection algorithm"
    for text in (
        ZLIB,  # no heading
        "os — Miscellaneous operating system interfaces\nText.",  # name under 4 characters
        "Chapter 5. Packaging System — Tools and Fundamental Principles\nText.",  # no name
        "bisect — the bisect module\nThe bisect module bisects.",  # every description names it
        "bisect — Bisection\nText.",  # a description too short to describe
    ):
        assert extractive.identity(page("x", "http://site.test/x.html", text)) is None


def test_a_heading_that_names_its_subject_describes_it_by_the_lead() -> None:
    """ "gzip — Support for gzip files" says the name: the lead's first describing sentence
    that does not is asked from instead; the heading stays the evidence."""
    text = (
        "gzip — Support for gzip files\nSource code: Lib/gzip.py\n"
        "This module provides a simple interface to compress and decompress files just like "
        "the GNU programs would."
    )
    got = extractive.identity(page("g", "http://site.test/gzip.html", text))
    assert got is not None and got.answer == "gzip"
    assert got.text == "gzip — Support for gzip files"
    assert got.asked.startswith("This module provides a simple interface")


def test_a_subject_named_everywhere_is_described_with_its_name_masked() -> None:
    """logging's heading and lead all say "logging": the first describing lead sentence is
    asked from with those words masked; a source link or version note never describes."""
    text = (
        "logging — Logging facility for Python\nSource code: Lib/logging/__init__.py\n"
        "This module defines functions and classes which implement a flexible event logging "
        "system for applications and libraries."
    )
    got = extractive.identity(page("l", "http://site.test/logging.html", text))
    assert got is not None and got.answer == "logging"
    assert got.asked == (
        "This module defines functions and classes which implement a flexible event ... "
        "system for applications and libraries."
    )
    assert not extractive.names_in(got.asked, "logging")


def test_a_question_pointing_at_its_prompt_is_refused() -> None:
    """The 1.5B model wrote "the name of the thing described in the text": the agent is
    shown no text. Ordinary uses of the words pass."""
    fact = extractive.Nugget("The textwrap module wraps the text of paragraphs.", "u", "width", 1)
    for question in (
        "What is the name of the thing described in the text about paragraphs?",
        "What does the fact say about wrapping paragraphs?",
        "Which module matches this description of wrapping paragraphs?",
        "What notation do the arguments shown above use for wrapping paragraphs?",
    ):
        reasons = extractive.check_part(question, fact, [], forbidden=[], terms=UNIFORM)
        assert any("make sense on its own" in r for r in reasons), question
    fine = "How does the module wrap the text of paragraphs, and what is it called?"
    assert not any(
        "make sense on its own" in r
        for r in extractive.check_part(fine, fact, [], forbidden=[], terms=UNIFORM)
    )


def test_identity_nuggets_take_width_from_the_siblings_only() -> None:
    targets = identity_request().targets
    nuggets = extractive.pick_nuggets(targets, UNIFORM, by_identity=True)
    assert [(g.kind, g.url) for g in nuggets] == [
        ("depth", "http://site.test/bisect.html"),
        ("width", "http://site.test/p1.html"),
        ("width", "http://site.test/p2.html"),
    ]
    # a later question of the match, or identity off: sentences as before
    assert not any(g.answer for g in extractive.pick_nuggets(targets, UNIFORM, 1, by_identity=True))
    assert not any(g.answer for g in extractive.pick_nuggets(targets, UNIFORM))


def test_no_part_may_say_the_hidden_name() -> None:
    """A part that names the node (or shares a stem with its name) gives the depth item
    away, whichever fact it asks about."""
    named = extractive.identity(identity_request().targets[0])
    assert named is not None
    fine = "Which module offers an array bisection algorithm?"
    told = "What does the bisect module's array bisection algorithm keep sorted?"
    stem = "How do you bisect a sorted list without sorting it again?"
    assert not extractive.check_part(fine, named, [], forbidden=[], terms=UNIFORM, hidden="bisect")
    for question in (told, stem):
        reasons = extractive.check_part(
            question, named, [], forbidden=[], terms=UNIFORM, hidden="bisect"
        )
        assert "the question says the name the task asks for: bisect" in reasons


async def test_an_identity_task_checks_the_name_and_cites_the_heading() -> None:
    """Scripted backend (control flow only): the identity part is written from the
    description alone, and its checklist item is the name with the heading as evidence."""
    req = identity_request()
    nuggets = extractive.pick_nuggets(req.targets, UNIFORM, by_identity=True)
    prompts: list[str] = []

    def step(request: object) -> object:
        prompt = json.dumps(request)
        prompts.append(prompt)
        if "Array bisection algorithm" in prompt:
            return reply(
                text=json.dumps({"question": "Which module gives an array bisection algorithm?"})
            )
        fact = next(g.text for g in nuggets[1:] if g.text in prompt)
        words = fact.rstrip(".").split()
        return reply(
            text=json.dumps({"question": "What about " + " ".join(words[: len(words) // 2]) + "?"})
        )

    model, _ = client([step] * 3)
    gen = build_taskgen({"kind": "extractive", "args": {"identity": True}})
    assert gen.template_specs() == {
        "taskgen": "taskgen-extractive",
        "taskgen_identity": "taskgen-identity",
    }
    outcome = await gen.generate(
        TaskCall(model, "examiner"), req, TaskRules(forbid_entity_names=False)
    )
    assert outcome.task is not None, outcome.error
    (depth,) = outcome.task.checklist_depth
    assert (depth.item, depth.evidence) == ("bisect", "bisect — Array bisection algorithm")
    assert [i.source_url for i in outcome.task.checklist_width] == [
        "http://site.test/p1.html",
        "http://site.test/p2.html",
    ]
    identity_prompt = next(p for p in prompts if "Array bisection algorithm" in p)
    assert "bisect —" not in identity_prompt  # the heading's name is never shown
    assert "bisect" in identity_prompt  # ... but listed among the names never to write


async def test_revisits_not_earlier_questions_decide_which_facts_are_asked() -> None:
    """A match's later rounds take later facts (revisits None: every earlier question
    counts); examiner-check's tasks are each at a new node (revisits 0): the first facts,
    identity included, whatever was asked before elsewhere."""
    base = identity_request()
    asked: list[str] = []

    def step(request: object) -> object:
        prompt = json.dumps(request)
        asked.append(prompt)
        return reply(
            text=json.dumps({"question": "Which module offers an array bisection algorithm?"})
        )

    gen = build_taskgen({"kind": "extractive", "args": {"identity": True}})
    for revisits, identity_asked in ((0, True), (None, False)):
        asked.clear()
        model, _ = client([step] * 3)
        req = dataclasses.replace(base, earlier_questions=("Elsewhere?",), revisits=revisits)
        await gen.generate(TaskCall(model, "examiner"), req, TaskRules(max_attempts=1))
        assert any("Array bisection algorithm" in p for p in asked) == identity_asked


async def test_an_identity_always_named_gives_way_to_a_sentence_that_may_name_it() -> None:
    """Scripted backend (control flow only): the identity's question names the module on
    every try, so a sentence of its page takes its place, and that question may say the
    name (it is no longer the answer)."""
    node = page(
        "node",
        "http://site.test/bisect.html",
        "bisect — Array bisection algorithm\nThe bisect module keeps a list in sorted order "
        "without sorting the list again after each insertion.",
    )
    req = dataclasses.replace(identity_request(), targets=(node, *identity_request().targets[1:]))
    others = extractive.pick_nuggets(req.targets, UNIFORM, by_identity=True)[1:]

    def step(request: object) -> object:
        prompt = json.dumps(request)
        if "Array bisection algorithm" in prompt:
            text = "Which bisect module offers an array bisection algorithm?"
        elif "keeps a list in sorted order" in prompt:
            text = "What does the bisect module do to a list?"
        else:
            fact = next(g.text for g in others if g.text in prompt)
            words = fact.rstrip(".").split()
            text = "What about " + " ".join(words[: len(words) // 2]) + "?"
        return reply(text=json.dumps({"question": text}))

    model, _ = client([step] * 6)
    gen = build_taskgen({"kind": "extractive", "args": {"identity": True}})
    outcome = await gen.generate(
        TaskCall(model, "examiner"), req, TaskRules(max_attempts=2, forbid_entity_names=False)
    )
    assert outcome.task is not None, outcome.error
    (depth,) = outcome.task.checklist_depth
    assert depth.item.startswith("The bisect module keeps a list")
    assert "(1) What does the bisect module do to a list?" in outcome.task.question


def test_a_fact_is_one_clause_not_two_joined_by_a_semicolon() -> None:
    joined = (
        "Internally, those three types of queues use locks to temporarily block competing "
        "threads; however, they are not designed to handle reentrancy within a thread."
    )
    first, second = extractive.clauses(joined)
    assert first.endswith("competing threads.") and second.startswith("however,")
    assert extractive.clauses("One plain sentence without a semicolon.") == [
        "One plain sentence without a semicolon."
    ]
    # the page's nugget is the first clause; the second leans on it and is no candidate
    found = extractive.candidates(page("q", "http://docs.test/queue.html", joined), UNIFORM)
    assert [n.text for n in found] == [first]
