"""Network isolation for command agents: a network namespace with only loopback, bridged to
the loopback services drarena hands the agent (the search server, a model server).

Why: a frozen match is reproducible only if nothing leaves the machine. drarena's in-process
guard (drarena.models.guard) cannot see what a child process does, so a command agent runs
under `unshare --net` (as root; `--map-root-user` where unprivileged user namespaces are
allowed): its only interface is a fresh loopback, so any outside address fails at once with
"network unreachable" and name lookups fail too.

A fresh loopback is not the host's loopback, so the search server on the host's 127.0.0.1
would be out of reach. Unix sockets live in the filesystem and cross network namespaces, so
each service the agent is given is bridged:

  agent -> 127.0.0.1:PORT (inside, the shim)  -> Unix socket  -> drarena -> 127.0.0.1:PORT (host)

drarena listens on one Unix socket per service (in a private temporary folder) and relays
every connection to the host's port; inside the namespace this module's `main` (the shim)
brings `lo` up, listens on the same host and port and relays to the Unix socket, then runs the
agent. The agent therefore uses the URLs it is given unchanged. Only the listed ports are
bridged; nothing else on the host's loopback is reachable.

Where the kernel allows a mount namespace too (and util-linux's `setpriv` is there), drarena's
own files are hidden from the agent: the run folder (the Examiner's questions, checklists and
verdicts of earlier matches, other agents' answers, the model cache), the snapshot (its trees
hold what the questions are made from) and its index (read directly, it would bypass the
recorded searches a replay depends on). The shim mounts an empty read-only tmpfs over each,
then runs the agent with every capability dropped (`setpriv --bounding-set=-all
--no-new-privs`), so it cannot unmount them, nor reach drarena's view through /proc/PID/root.
A path that holds the agent's working folder, its command, Python or the temporary folder
(the bridges' sockets, the proxy's CA) is left visible: hiding it would break the agent.
Everything else is shared: drarena's user and filesystem, Unix sockets in the filesystem
(abstract ones belong to the network namespace and do not cross); docs/agents.md says so.

Where the kernel refuses (no unshare, no privileges, a container without CAP_SYS_ADMIN), the
agent runs on the host network as before and `probe()` says why; the run header records it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import functools
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path

CHUNK = 1 << 16
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
SHIM = ("-m", "drarena.agents.sandbox")
# the agent runs without capabilities: as root in the namespace it could otherwise unmount
# what hides drarena's files, or read them through /proc/<drarena's pid>/root
DROP_CAPS = ("--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--")
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8


@dataclasses.dataclass(frozen=True)
class Isolation:
    """How command agents are isolated on this machine: `prefix` runs a command in a new
    network namespace (empty when the kernel refuses; then `reason` says why); `setpriv`,
    when set, means a mount namespace too, in which drarena's files can be hidden."""

    prefix: tuple[str, ...]
    reason: str = ""
    setpriv: str | None = None

    @property
    def available(self) -> bool:
        return bool(self.prefix)

    @property
    def hides_files(self) -> bool:
        return self.available and self.setpriv is not None

    def describe(self) -> str:
        if not self.available:
            return f"none: {self.reason}"
        return "netns+mountns" if self.hides_files else "netns"

    def shim_args(self, hidden: Sequence[str]) -> list[str]:
        """The shim's options that hide `hidden` (none without a mount namespace)."""
        if not self.hides_files or not hidden:
            return []
        assert self.setpriv is not None
        return ["--setpriv", self.setpriv, *(a for h in hidden for a in ("--hide", h))]


def _try(exe: str, flags: tuple[str, ...], options: list[str]) -> str:
    """Run the shim's self-test under `unshare FLAGS`: "" when it passed, else why not."""
    try:
        done = subprocess.run(
            [exe, *flags, sys.executable, *SHIM, *options, "--probe"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return ""
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:200] if lines else f"exit status {done.returncode}"


@functools.cache
def probe() -> Isolation:
    """Try `unshare --net --mount` (root), then with `--map-root-user` (user namespaces), each
    running the shim's self-test (bring lo up, bind 127.0.0.1, hide a folder holding a file,
    run a command without capabilities); then the same without `--mount` (the network only).
    Cached per process."""
    exe = shutil.which("unshare")
    if exe is None:
        return Isolation((), "unshare not found (util-linux)")
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        with tempfile.TemporaryDirectory(prefix="drarena-probe-") as folder:
            Path(folder, "visible").write_bytes(b"")
            hide = ["--setpriv", setpriv, "--hide", folder]
            for user in ((), ("--map-root-user",)):
                if not _try(exe, ("--net", "--mount", *user), hide):
                    return Isolation((exe, "--net", "--mount", *user), setpriv=setpriv)
    problem = ""
    for user in ((), ("--map-root-user",)):
        problem = _try(exe, ("--net", *user), [])
        if not problem:
            return Isolation((exe, "--net", *user))
    return Isolation((), f"the kernel refused a network namespace ({problem})")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def hideable(private: Iterable[Path], keep: Iterable[Path]) -> list[str]:
    """The folders of `private` to hide: existing ones, resolved, each once, and none that is
    or holds a path in `keep` (the agent's working folder, its command, Python, the temporary
    folder), which the agent needs."""
    kept = [k.resolve() for k in keep]
    out: list[str] = []
    for p in private:
        folder = p.resolve()
        if not folder.is_dir() or any(_inside(k, folder) for k in kept):
            continue
        if str(folder) not in out:
            out.append(str(folder))
    return out


def isolation_note(offline: bool, command_agents: bool) -> str:
    """The run header's `agent_isolation`: what confines the command agents of a run."""
    if not command_agents:
        return "none: no command agents"
    if not offline:
        return "none: live mode (command agents use the host network)"
    return probe().describe()


# --- outside: drarena's end of each bridge ----------------------------------------------------


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def _relay(
    host: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection(host, port)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    finally:
        for w in (writer, up_writer):
            w.close()


@contextlib.asynccontextmanager
async def bridges(targets: Sequence[tuple[str, int]]) -> AsyncIterator[list[str]]:
    """One Unix socket per (host, port) of the host's loopback, relayed there; yields the
    shim's `--bridge HOST:PORT=SOCKET` arguments. Closed (and the folder removed) on exit."""
    folder = tempfile.mkdtemp(prefix="drarena-netns-")
    servers: list[asyncio.AbstractServer] = []
    tasks: set[asyncio.Task[None]] = set()

    def handler(host: str, port: int) -> object:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:
                tasks.add(task)
            try:
                await _relay(host, port, reader, writer)
            except asyncio.CancelledError:
                # the bridges are closing under an open connection (the agent ended or timed
                # out): end here, not as a cancelled task, whose result Python 3.11's stream
                # callback reads and logs as an "Exception in callback" traceback
                writer.close()
            finally:
                if task is not None:
                    tasks.discard(task)

        return handle

    try:
        args = []
        for n, (host, port) in enumerate(targets):
            path = os.path.join(folder, f"{n}.sock")
            servers.append(
                await asyncio.start_unix_server(
                    handler(host, port),  # type: ignore[arg-type]
                    path=path,
                )
            )
            args += ["--bridge", f"{host}:{port}={path}"]
        yield args
    finally:
        for server in servers:
            server.close()
        for task in list(tasks):
            task.cancel()
        shutil.rmtree(folder, ignore_errors=True)


# --- inside: the shim -------------------------------------------------------------------------


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _copy(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(CHUNK):
            target.sendall(chunk)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        conn, _ = listener.accept()
        outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            outside.connect(path)
        except OSError:
            conn.close()
            outside.close()
            continue
        for a, b in ((conn, outside), (outside, conn)):
            threading.Thread(target=_copy, args=(a, b), daemon=True).start()


def _listen(host: str, port: int, taken: set[tuple[str, int]]) -> list[socket.socket]:
    """Listeners on `host`:`port` inside the namespace, skipping addresses in `taken` (and
    adding those it binds): `localhost:8000` and `127.0.0.1:8000` given for the search and
    the model server name one address, which the first bridge then serves."""
    hosts = ["127.0.0.1", "::1"] if host == "localhost" else [host.strip("[]")]
    listeners = []
    for h in hosts:
        if (h, port) in taken:
            continue
        family = socket.AF_INET6 if ":" in h else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((h, port))
        except OSError:
            s.close()
            if h == "::1" and host == "localhost":
                continue  # no IPv6 in this kernel: 127.0.0.1 serves localhost
            raise
        s.listen(64)
        listeners.append(s)
        taken.add((h, port))
    return listeners


def _hide(folder: str) -> None:
    """An empty read-only tmpfs over `folder` (in this mount namespace only: unshare made
    every mount private, so the host never sees it)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    if libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", flags, b"mode=000,size=4k") != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot hide {folder}: {os.strerror(err)}")


def main(argv: list[str]) -> int:
    """`python -m drarena.agents.sandbox [--bridge HOST:PORT=SOCKET ...] [--setpriv EXE
    --hide FOLDER ...] (--probe | -- CMD...)`, run inside the new namespace by drarena."""
    _loopback_up()
    probing = argv[-1:] == ["--probe"]
    if probing:
        options, command = argv[:-1], [sys.executable, "-c", "pass"]
    else:
        split = argv.index("--")
        options, command = argv[:split], argv[split + 1 :]
    taken: set[tuple[str, int]] = set()
    hidden: list[str] = []
    setpriv: str | None = None
    for flag, spec in zip(options[::2], options[1::2], strict=True):
        if flag == "--hide":
            hidden.append(spec)
        elif flag == "--setpriv":
            setpriv = spec
        elif flag == "--bridge":
            address, path = spec.split("=", 1)
            host, port = address.rsplit(":", 1)
            for listener in _listen(host, int(port), taken):
                threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
        else:
            raise SystemExit(f"sandbox: unknown option {flag}")
    if probing:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
    if hidden:
        if setpriv is None:  # hidden but unmountable: the agent must not run at all
            raise SystemExit("sandbox: --hide needs --setpriv")
        try:
            for folder in hidden:
                _hide(folder)
        except OSError as exc:  # the agent never runs with drarena's files in view
            print(f"sandbox: {exc.strerror}", file=sys.stderr)
            return 126
        if probing and any(os.scandir(hidden[0])):
            raise SystemExit(f"sandbox: {hidden[0]} still shows its files")
        command = [setpriv, *DROP_CAPS, *command]
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"sandbox: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
