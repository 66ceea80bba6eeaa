"""URL canonicalization, SURT keys, address policy and safe names."""

from __future__ import annotations

import pytest

from drarena.errors import DrarenaError
from drarena.web.warc.snapshot import canonicalize_url
from drarena.web.warc.urls import is_public_address, other_scheme, safe_file_name, surt


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Docs.Python.ORG:80/a/b.html#frag", "http://docs.python.org/a/b.html"),
        ("https://example.org:443", "https://example.org/"),
        ("https://example.org:8443/x", "https://example.org:8443/x"),
        ("http://example.org/%7euser/%41%2f", "http://example.org/~user/A%2F"),
        ("http://example.org/a b?q=%e2%82%ac", "http://example.org/a%20b?q=%E2%82%AC"),
        ("http://example.org/caf\u00e9", "http://example.org/caf%C3%A9"),
        ("http://example.org?x=1", "http://example.org/?x=1"),
        ("http://EXAMPLE.org./", "http://example.org/"),
        ("http://[::1]:8080/p", "http://[::1]:8080/p"),
    ],
)
def test_canonicalize(raw: str, canonical: str) -> None:
    assert canonicalize_url(raw) == canonical
    assert canonicalize_url(canonical) == canonical  # idempotent


def test_canonicalize_rejects_bad_port_and_credentials() -> None:
    with pytest.raises(ValueError):
        canonicalize_url("http://example.org:99999/")
    with pytest.raises(ValueError):
        canonicalize_url("http://user:pw@example.org/")


def test_surt_keys() -> None:
    assert surt("https://www.Python.org/Doc/?b=2&a=1") == "org,python)/doc/?a=1&b=2"
    assert surt("http://127.0.0.1:8765/library/") == "127.0.0.1:8765)/library/"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("192.168.0.1", False),
        ("169.254.1.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("::ffff:127.0.0.1", False),
        ("0.0.0.0", False),
        ("100.100.100.200", False),  # carrier-grade NAT (a cloud's metadata service)
        ("100.64.0.1", False),
        ("::ffff:100.100.100.200", False),
        ("224.0.0.1", False),
        ("93.184.215.14", True),
        ("2606:4700::1111", True),
    ],
)
def test_public_address(address: str, public: bool) -> None:
    assert is_public_address(address) is public


@pytest.mark.parametrize("name", ["../x", "a/b", ".hidden", "", "a\\b", "x..y"])
def test_unsafe_names_rejected(name: str) -> None:
    with pytest.raises(DrarenaError):
        safe_file_name(name)


def test_safe_name_kept() -> None:
    assert safe_file_name("pydocs-00000.warc.gz") == "pydocs-00000.warc.gz"


@pytest.mark.parametrize(
    ("url", "other"),
    [
        ("https://a.test/x?q=1#frag", "http://a.test/x?q=1"),
        ("http://a.test:80/x", "https://a.test/x"),
        ("https://a.test:443/", "http://a.test/"),
        ("HTTPS://127.0.0.1:8765/p.html", "http://127.0.0.1:8765/p.html"),
        ("ftp://a.test/x", None),
        ("doc-123", None),
        ("http://[::1", None),
    ],
)
def test_other_scheme(url: str, other: str | None) -> None:
    assert other_scheme(url) == other
