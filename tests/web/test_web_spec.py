"""Crawl spec validation: unknown keys and bad values fail as one line naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from drarena.errors import DrarenaError
from drarena.web.crawling.spec import CrawlSpec, load_spec


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


def test_seeds_file_adds_its_urls_to_the_seeds(tmp_path: Path) -> None:
    """A `seeds_file` beside the spec: its URLs follow `seeds`, canonicalized; blank lines
    and comments skipped; the spec as loaded holds the seeds themselves."""
    urls = [f"http://Example.org/p{i}" for i in range(150_000)]  # past YAML's value cap
    (tmp_path / "seeds.txt").write_text("# start here\n\n" + "\n".join(urls) + "\n")
    spec = tmp_path / "s.yaml"
    spec.write_text("name: big\nseeds: [http://example.org/]\nseeds_file: seeds.txt\n")
    loaded = load_spec(spec)
    assert len(loaded.seeds) == 150_001
    assert loaded.seeds[:2] == ("http://example.org/", "http://example.org/p0")
    assert "seeds_file" not in loaded.model_dump()
    spec.write_text("name: big\nseeds_file: seeds.txt\n")  # seeds may come from the file alone
    assert len(load_spec(spec).seeds) == 150_000


@pytest.mark.parametrize(
    ("content", "field", "error"),
    [
        (b"http://a.org/\nftp://b.org/\n", "seeds.txt", "seeds.txt:2: 'ftp://b.org/': only http"),
        (b"http://a.org/\n\xff\n", "seeds.txt", "seeds.txt:2: not UTF-8"),
        (b"http://a.org/" + b"x" * 9000, "seeds.txt", "seeds.txt:1: a URL over 8192 characters"),
        (b"", "missing.txt", "missing.txt: cannot read (No such file"),
        (b"", "[1]", "field seeds_file: must be a file name"),
    ],
)
def test_a_bad_seeds_file_is_one_line_naming_file_and_line(
    tmp_path: Path, content: bytes, field: str, error: str
) -> None:
    (tmp_path / "seeds.txt").write_bytes(content)
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: x\nseeds_file: {field}\n")
    with pytest.raises(DrarenaError) as err:
        load_spec(spec)
    assert error in str(err.value) and "\n" not in str(err.value)
