"""Crawl spec validation: unknown keys and bad values fail as one line naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.errors import DrarenaError
from drarena.web.spec import CrawlSpec, load_spec


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(DrarenaError) as info:
        load_spec(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_default_corpus_spec_loads(repo_root: Path) -> None:
    spec = load_spec(repo_root / "corpus" / "pydocs.yaml")
    assert spec.name == "pydocs"
    assert spec.allow_private_addresses is True
    assert spec.local_site is not None and spec.local_site.port == 8765
    assert all(seed.startswith("http://127.0.0.1:8765/") for seed in spec.seeds)


def test_defaults_are_polite() -> None:
    spec = CrawlSpec(name="x", seeds=("https://example.org",))
    assert spec.robots is True
    assert spec.allow_private_addresses is False
    assert spec.seeds == ("https://example.org/",)
    assert spec.allowed_hosts() == ("example.org",)


def test_unknown_key_names_file_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nseeds: [http://a.example/]\nmax_page: 3\n")
    message = error_of(path)
    assert str(path) in message and "max_page" in message and "unknown key" in message


def test_unknown_nested_key(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "name: x\nseeds: [http://a/]\nscope: {host: [a]}\n"))
    assert "scope.host" in message and "unknown key" in message


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\nseeds: [http://a/]\nmax_pages: 0\n", "max_pages"),
        ("name: x\nseeds: [http://a/]\nmax_depth: -1\n", "max_depth"),
        ("name: x\nseeds: [http://a/]\nper_host_concurrency: many\n", "per_host_concurrency"),
        ("name: x\nseeds: [ftp://a/file]\n", "seeds"),
        ("name: x\nseeds: []\n", "seeds"),
        ("name: ../../etc\nseeds: [http://a/]\n", "name"),
        ("name: x\nseeds: [http://a/]\nscope: {exclude: ['(unclosed']}\n", "scope.exclude"),
        (
            "name: x\nseeds: [http://a/]\nlocal_site: {root: /tmp, host: 10.0.0.1}\n",
            "local_site.host",
        ),
        ("seeds: [http://a/]\n", "name"),
    ],
)
def test_bad_values_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    message = error_of(write(tmp_path, text))
    assert f"field {field}:" in message


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    assert "not found" in error_of(tmp_path / "nope.yaml")
    assert "not valid YAML" in error_of(write(tmp_path, "name: [unclosed\n"))
    assert "mapping" in error_of(write(tmp_path, "- just\n- a list\n"))
