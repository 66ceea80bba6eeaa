"""Fuzzing the readers of user-written YAML: crawl specs (`drarena snapshot SPEC`) and
tournament configs (`drarena tournament CONFIG`).

Property: `load_spec` / `load_config` return a typed spec or config, or raise DrarenaError
(one line naming the file); what they return can be used as the commands use it next (dumped
to JSON for the manifest or run header, its scope compiled, its components checked) without
another exception and within bounded memory.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fuzz_inputs import text_mutated
from hypothesis import example, given
from hypothesis import strategies as st

from drarena.config.tournament import TournamentConfig, load_config
from drarena.errors import DrarenaError
from drarena.runs.session import check_components, config_digest
from drarena.web.crawling.crawl import Scope
from drarena.web.crawling.spec import CrawlSpec, load_spec

REPO = Path(__file__).resolve().parents[2]
SPEC_TEXT = (REPO / "corpus" / "pydocs.yaml").read_text(encoding="utf-8")
CONFIG_TEXT = (REPO / "configs" / "demo.yaml").read_text(encoding="utf-8")
LIVE_TEXT = (REPO / "configs" / "live-demo.yaml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp) / "input.yaml"


def _spec(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        spec = load_spec(path)
    except DrarenaError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(spec, CrawlSpec)
    json.dumps(spec.model_dump(mode="json"), sort_keys=True)  # the manifest's spec
    Scope(spec).allows(spec.seeds[0])  # what the crawler compiles and asks first
    assert spec.allowed_hosts()


def _config(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        config = load_config(path)
    except DrarenaError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(config, TournamentConfig)
    assert config_digest(config).startswith("sha256:")  # the run header's JSON
    try:
        check_components(config)
    except DrarenaError as exc:
        assert "\n" not in str(exc)


# Values a user (or a mangled file) may put anywhere in the YAML.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**66), 2**66),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            ".inf",
            "-.inf",
            ".nan",
            "2020-13-45",
            "0x1F",
            "1e999",
            "~",
            "[]",
            "{}",
            "http://[::1",
            "ftp://x/",
            "http://127.0.0.1:8765/",
            "(",
            "*",
            "a" * 300,
            "../../etc",
            "-o APT::x=1",
            "served",
            "bm25",
            "react",
            "-1",
        ]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(data: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every key path in a loaded YAML document (where a field value can be replaced)."""
    out = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            out += _paths(value, (*prefix, index))
    return out


def _replace(data: object, path: tuple[object, ...], value: object) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {**data, head: _replace(data[head], rest, value)}
    assert isinstance(data, list) and isinstance(head, int)
    return [*data[:head], _replace(data[head], rest, value), *data[head + 1 :]]


def field_edits(text: str) -> st.SearchStrategy[bytes]:
    """The valid file with one to three fields replaced (or keys added) by fuzzed values."""
    base = yaml.safe_load(text)

    @st.composite
    def edited(draw: st.DrawFn) -> bytes:
        data: object = base
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(_paths(data)))
            holder = _at(data, path[:-1]) if path else None
            if path and isinstance(holder, dict) and draw(st.booleans()):  # add a key
                data = _replace(
                    data, path[:-1], {**holder, draw(st.text(max_size=10)): draw(VALUES)}
                )
            else:
                data = _replace(data, path, draw(VALUES))
        return yaml.safe_dump(data, allow_unicode=True).encode()

    return edited()


def _at(data: object, path: tuple[object, ...]) -> object:
    for key in path:
        try:
            data = data[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return None
    return data


@given(st.binary(max_size=2048))
@example(b"\xff\xfe: 1")
@example(b"name: x\nseeds: [a: 2020-13-45]")
@example(b"[" * 5000)
def test_spec_random_bytes(scratch: Path, data: bytes) -> None:
    _spec(scratch, data)


@given(st.one_of(text_mutated(SPEC_TEXT, 6), field_edits(SPEC_TEXT)))
def test_spec_mutated(scratch: Path, data: bytes) -> None:
    _spec(scratch, data)


@given(st.binary(max_size=2048))
@example(b"\xc3(")
@example(b"name: x\nseed: 2020-02-30\n")
def test_config_random_bytes(scratch: Path, data: bytes) -> None:
    _config(scratch, data)


@given(st.one_of(text_mutated(CONFIG_TEXT, 6), field_edits(CONFIG_TEXT), field_edits(LIVE_TEXT)))
def test_config_mutated(scratch: Path, data: bytes) -> None:
    _config(scratch, data)


# --- what the fuzzing found, kept as named regression tests ------------------------------------

LAUGHS = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))


@pytest.mark.parametrize(
    ("where", "text"),
    [
        # an alias inside itself: loaded as a cyclic dict; the run header's json.dumps then
        # raised ValueError (circular reference) after the config had been accepted
        ("config", CONFIG_TEXT + "live:\n  web: &w {again: *w}\n"),
        # "billion laughs": 9 aliases of 9 aliases ... (a 400-byte file, 387 million strings
        # once expanded): accepted, then json.dumps for the run header ran out of memory
        ("config", CONFIG_TEXT + "live:\n  web:\n    l0: &l0 x\n" + LAUGHS.replace("  l", "    l")),
        ("spec", SPEC_TEXT.replace("robots: true", "robots: &r [*r]")),
    ],
)
def test_yaml_alias_bombs_are_refused(scratch: Path, where: str, text: str) -> None:
    scratch.write_text(text, encoding="utf-8")
    with pytest.raises(DrarenaError, match="alias") as err:
        (load_config if where == "config" else load_spec)(scratch)
    assert "\n" not in str(err.value)


def test_aliases_of_ordinary_size_still_load(scratch: Path) -> None:
    """A shared sampling block, as a user writes one, is fine."""
    text = CONFIG_TEXT.replace(
        "      sampling: {temperature: 0.0, max_tokens: 512, seed: 0}",
        "      sampling: &s {temperature: 0.0, max_tokens: 512, seed: 0}",
    )
    text = text.replace(
        "      sampling: {temperature: 0.0, max_tokens: 384, seed: 0}", "      sampling: *s"
    )
    scratch.write_text(text, encoding="utf-8")
    config = load_config(scratch)
    assert config.models.roles["agent"].sampling == config.models.roles["examiner"].sampling


@pytest.mark.parametrize("where", ["spec", "config"])
def test_a_key_with_a_line_break_is_named_on_one_line(scratch: Path, where: str) -> None:
    """Found by `make fuzz`: an unknown key holding a line break ("? '\\n\\n  '") was put into
    the error as is, so the one-line error ran over three lines."""
    text = SPEC_TEXT if where == "spec" else CONFIG_TEXT
    scratch.write_text("? '\n\n  x'\n: null\n" + text, encoding="utf-8")
    with pytest.raises(DrarenaError) as err:
        (load_spec if where == "spec" else load_config)(scratch)
    assert "\n" not in str(err.value) and "x" in str(err.value)
