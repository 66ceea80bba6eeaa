"""Frozen-mode network guard: refuse and report any connection off the allowed list.

Why: a frozen tournament is reproducible only if nothing reaches the live web. While the guard
is active, socket connects and name lookups are checked: loopback, Unix sockets and the
configured model endpoints pass; anything else raises NetworkGuardError (an OSError, so HTTP
libraries fail the request as a connection error) and is recorded in `violations`.
The patch is process-wide (socket.socket.connect, connect_ex, sendto, sendmsg and the name
lookups); behind it, an audit hook (sys.addaudithook) checks CPython's own socket.connect,
socket.sendto, socket.sendmsg and name-lookup events, so code that calls the C socket type
directly (`_socket.socket.connect(sock, addr)`) or a method the patch does not cover is
refused alike. Audit hooks cannot be removed: it is installed once and does nothing while no
guard is active.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Any, ClassVar
from urllib.parse import urlsplit

log = logging.getLogger("drarena.models")


class NetworkGuardError(ConnectionRefusedError):
    """A connection the frozen-mode guard refused."""


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address literal (no name lookup)."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def endpoint_hosts(api_bases: Iterable[str | None]) -> set[str]:
    """Host names of the configured model endpoints (`http://host:port/v1` -> host)."""
    return {urlsplit(base).hostname or "" for base in api_bases if base} - {""}


class NetworkGuard:
    """Context manager; nests safely (only the outermost exit restores the socket module)."""

    _lock = threading.Lock()
    _active: ClassVar[list[NetworkGuard]] = []
    _originals: ClassVar[dict[str, Any]] = {}

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self._allowed_ips: set[str] = set()
        self.violations: list[str] = []

    def allows(self, host: str) -> bool:
        host = host.lower()
        return is_loopback(host) or host in self.allowed_hosts or host in self._allowed_ips

    def _refuse(self, what: str) -> NetworkGuardError:
        message = f"frozen mode: network access refused: {what}"
        self.violations.append(what)
        log.error(message)
        return NetworkGuardError(message)

    def __enter__(self) -> NetworkGuard:
        with NetworkGuard._lock:
            if not NetworkGuard._active:
                NetworkGuard._install()
            NetworkGuard._active.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with NetworkGuard._lock:
            NetworkGuard._active.remove(self)
            if not NetworkGuard._active:
                NetworkGuard._uninstall()

    @classmethod
    def is_active(cls) -> bool:
        """Whether a guard is in force (a frozen run): command agents then get their own
        network namespace (drarena.agents.sandbox), the guard's reach beyond this process."""
        return bool(cls._active)

    @classmethod
    def _current(cls) -> NetworkGuard | None:
        return cls._active[-1] if cls._active else None

    @classmethod
    def _install(cls) -> None:
        global _AUDITING
        if not _AUDITING:
            sys.addaudithook(_audit)
            _AUDITING = True
        cls._originals = {
            "connect": socket.socket.connect,
            "connect_ex": socket.socket.connect_ex,
            "sendto": socket.socket.sendto,
            "sendmsg": socket.socket.sendmsg,
            "getaddrinfo": socket.getaddrinfo,
            "gethostbyname": socket.gethostbyname,
            "gethostbyname_ex": socket.gethostbyname_ex,
        }
        sock, lookups = cls._socket_patches(), cls._lookup_patches()
        socket.socket.connect = sock["connect"]  # type: ignore[method-assign]
        socket.socket.connect_ex = sock["connect_ex"]  # type: ignore[method-assign]
        socket.socket.sendto = sock["sendto"]  # type: ignore[method-assign]
        socket.socket.sendmsg = sock["sendmsg"]  # type: ignore[method-assign]
        socket.getaddrinfo = lookups["getaddrinfo"]
        socket.gethostbyname = lookups["gethostbyname"]
        socket.gethostbyname_ex = lookups["gethostbyname_ex"]

    @classmethod
    def _socket_patches(cls) -> dict[str, Any]:
        """socket.socket's connect, connect_ex, sendto and sendmsg, each refusing an address
        the current guard does not allow before calling the original (`_originals`)."""
        real_connect = cls._originals["connect"]
        real_connect_ex = cls._originals["connect_ex"]
        real_sendto = cls._originals["sendto"]
        real_sendmsg = cls._originals["sendmsg"]

        def check(sock: socket.socket, address: Any, what: str = "connect to") -> None:
            guard = cls._current()
            if guard is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
                return
            host = str(address[0])
            if not guard.allows(host):
                raise guard._refuse(f"{what} {host}:{address[1]}")

        def connect(self: socket.socket, address: Any) -> None:
            check(self, address)
            real_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            check(self, address)
            result: int = real_connect_ex(self, address)
            return result

        def sendto(self: socket.socket, data: Any, *args: Any) -> int:
            # a datagram to an address needs no connect (UDP): (data, address) or
            # (data, flags, address)
            check(self, args[-1], "datagram to")
            result: int = real_sendto(self, data, *args)
            return result

        def sendmsg(self: socket.socket, buffers: Any, *args: Any) -> int:
            # (buffers[, ancdata[, flags[, address]]]): an address sends without a connect
            if len(args) >= 3 and args[2] is not None:
                check(self, args[2], "datagram to")
            result: int = real_sendmsg(self, buffers, *args)
            return result

        return {
            "connect": connect,
            "connect_ex": connect_ex,
            "sendto": sendto,
            "sendmsg": sendmsg,
        }

    @classmethod
    def _lookup_patches(cls) -> dict[str, Any]:
        """socket's getaddrinfo, gethostbyname and gethostbyname_ex, each refusing a name
        the current guard does not allow before calling the original (`_originals`); the
        addresses an allowed name resolves to become allowed too."""
        real_getaddrinfo = cls._originals["getaddrinfo"]
        real_gethostbyname = cls._originals["gethostbyname"]
        real_gethostbyname_ex = cls._originals["gethostbyname_ex"]

        def lookup(name: str) -> None:
            guard = cls._current()
            if guard is not None and not guard.allows(name):
                raise guard._refuse(f"name lookup of {name}")

        def gethostbyname(name: str) -> str:
            lookup(name)
            address: str = real_gethostbyname(name)
            return address

        def gethostbyname_ex(name: str) -> Any:
            lookup(name)
            return real_gethostbyname_ex(name)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            guard = cls._current()
            name = host.decode() if isinstance(host, bytes) else host
            if guard is None or name is None or guard.allows(str(name)):
                infos = real_getaddrinfo(host, *args, **kwargs)
                if guard is not None and name is not None:
                    # Addresses of an allowed endpoint become allowed too.
                    guard._allowed_ips.update(str(info[4][0]) for info in infos)
                return infos
            raise guard._refuse(f"name lookup of {name}")

        return {
            "getaddrinfo": getaddrinfo,
            "gethostbyname": gethostbyname,
            "gethostbyname_ex": gethostbyname_ex,
        }

    @classmethod
    def _uninstall(cls) -> None:
        socket.socket.connect = cls._originals["connect"]  # type: ignore[method-assign]
        socket.socket.connect_ex = cls._originals["connect_ex"]  # type: ignore[method-assign]
        socket.socket.sendto = cls._originals["sendto"]  # type: ignore[method-assign]
        socket.socket.sendmsg = cls._originals["sendmsg"]  # type: ignore[method-assign]
        socket.getaddrinfo = cls._originals["getaddrinfo"]
        socket.gethostbyname = cls._originals["gethostbyname"]
        socket.gethostbyname_ex = cls._originals["gethostbyname_ex"]


_AUDITING = False
_ADDRESSED = {"socket.connect": "connect to", "socket.sendto": "datagram to"}
_ADDRESSED["socket.sendmsg"] = "datagram to"
_LOOKUPS = ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """CPython's audit events for sockets, checked against the active guard (the backstop of
    the patched methods: the C socket type cannot be patched). Cheap when no guard is active:
    every audited event in the process passes through here."""
    if not NetworkGuard._active or not event.startswith("socket."):
        return
    guard = NetworkGuard._current()
    if guard is None:
        return
    what = _ADDRESSED.get(event)
    if what is not None:
        sock, address = args[0], args[1]
        if address is None or getattr(sock, "family", None) not in (
            socket.AF_INET,
            socket.AF_INET6,
        ):
            return
        host = str(address[0])
        if not guard.allows(host):
            raise guard._refuse(f"{what} {host}:{address[1]}")
    elif event in _LOOKUPS and args and args[0] is not None:
        name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
        if not guard.allows(name):
            raise guard._refuse(f"name lookup of {name}")
