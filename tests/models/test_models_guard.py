"""Frozen-mode network guard: stray connections are refused and reported; loopback passes."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import aiohttp
import pytest

from drarena.models.guard import NetworkGuard, NetworkGuardError, endpoint_hosts


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__ or getattr(exc, "reason", None)
    return seen


def test_stray_http_request_by_name_is_refused_and_reported() -> None:
    with (
        NetworkGuard(allowed_hosts={"127.0.0.1"}) as guard,
        pytest.raises(urllib.error.URLError) as info,
    ):
        urllib.request.urlopen("http://example.com/", timeout=5)
    assert any(isinstance(e, NetworkGuardError) for e in _chain(info.value))
    assert guard.violations == ["name lookup of example.com"]


async def test_stray_aiohttp_request_to_an_ip_is_refused_and_reported() -> None:
    with NetworkGuard() as guard:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError) as info:
                await session.get("http://192.0.2.10:8080/page")
    assert any(isinstance(e, NetworkGuardError) for e in _chain(info.value))
    assert guard.violations and "192.0.2.10" in guard.violations[0]


def test_raw_socket_connect_is_refused_and_the_patch_is_undone_on_exit() -> None:
    original = socket.socket.connect
    with NetworkGuard() as guard, socket.socket() as sock, pytest.raises(NetworkGuardError):
        sock.connect(("198.51.100.7", 443))
    assert guard.violations == ["connect to 198.51.100.7:443"]
    assert socket.socket.connect is original and socket.getaddrinfo is not None


def test_datagrams_and_old_style_lookups_are_refused_too() -> None:
    """UDP needs no connect (sendto carries the address), and gethostbyname does not go
    through getaddrinfo: both reach the network unless guarded."""
    originals = (socket.socket.sendto, socket.gethostbyname, socket.gethostbyname_ex)
    with NetworkGuard() as guard, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        with pytest.raises(NetworkGuardError):
            udp.sendto(b"x", ("192.0.2.53", 53))
        with pytest.raises(NetworkGuardError):
            udp.sendto(b"x", 0, ("192.0.2.53", 53))
        with pytest.raises(NetworkGuardError):
            socket.gethostbyname("example.com")
        with pytest.raises(NetworkGuardError):
            socket.gethostbyname_ex("example.com")
        assert udp.sendto(b"x", ("127.0.0.1", 9)) == 1  # loopback still passes
    assert guard.violations == [
        "datagram to 192.0.2.53:53",
        "datagram to 192.0.2.53:53",
        "name lookup of example.com",
        "name lookup of example.com",
    ]
    assert (socket.socket.sendto, socket.gethostbyname, socket.gethostbyname_ex) == originals


async def test_loopback_services_still_work(fault_server) -> None:
    with NetworkGuard() as guard:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{fault_server.api_base('echo')}/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            ) as resp,
        ):
            assert resp.status == 200
    assert guard.violations == []


def test_configured_endpoint_names_pass_to_the_real_resolver() -> None:
    hosts = endpoint_hosts(
        ["http://models.internal.example:8000/v1", None, "http://127.0.0.1:9/v1"]
    )
    assert hosts == {"models.internal.example", "127.0.0.1"}
    with NetworkGuard(hosts) as guard:
        assert guard.allows("MODELS.internal.example") and not guard.allows("example.org")
        # Let through: the real resolver answers (this machine has no DNS, so it fails there).
        with pytest.raises(OSError) as info:
            socket.getaddrinfo("models.internal.example", 8000)
        assert not isinstance(info.value, NetworkGuardError)
    assert guard.violations == []


def test_guards_nest() -> None:
    original = socket.socket.connect
    with NetworkGuard() as outer:
        with NetworkGuard({"a.example"}):
            pass
        assert socket.socket.connect is not original  # outer still active
        with socket.socket() as sock, pytest.raises(NetworkGuardError):
            sock.connect(("203.0.113.1", 80))
    assert socket.socket.connect is original and outer.violations


def test_sendmsg_and_the_c_socket_type_are_refused_too() -> None:
    """Regression (issue 38, item 11): socket.sendmsg was not patched, and calling the C type's
    method (`_socket.socket.connect`) went around the patch; CPython's audit events for
    sockets now back the patch, and nothing is checked once the guard is gone."""
    import _socket

    with NetworkGuard() as guard:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            with pytest.raises(NetworkGuardError):
                udp.sendmsg([b"x"], [], 0, ("192.0.2.53", 53))
            with pytest.raises(NetworkGuardError):
                _socket.socket.sendto(udp, b"x", ("192.0.2.54", 53))
            assert udp.sendmsg([b"x"], [], 0, ("127.0.0.1", 9)) == 1  # loopback passes
        with socket.socket() as sock, pytest.raises(NetworkGuardError):
            _socket.socket.connect(sock, ("198.51.100.8", 443))
        with socket.socket() as sock, pytest.raises(NetworkGuardError):
            _socket.socket.connect_ex(sock, ("198.51.100.9", 443))
        with pytest.raises(NetworkGuardError):
            _socket.getaddrinfo("example.org", 443)
    assert guard.violations == [
        "datagram to 192.0.2.53:53",
        "datagram to 192.0.2.54:53",
        "connect to 198.51.100.8:443",
        "connect to 198.51.100.9:443",
        "name lookup of example.org",
    ]
    with socket.socket() as sock:  # no guard: the hook lets everything through
        sock.setblocking(False)  # (an error number, not NetworkGuardError: not refused)
        assert isinstance(_socket.socket.connect_ex(sock, ("198.51.100.8", 443)), int)
