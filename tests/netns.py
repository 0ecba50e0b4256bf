"""Hosts on networks of their own: a Linux network namespace per host, joined to this one by a
veth pair, with the services reached only through that pair.

PostgreSQL, Redis and the S3 server listen on 127.0.0.1, which a namespace cannot reach (its
loopback is its own). Each namespace's end of the pair is ``10.X.N.2``, this side's ``10.X.N.1``;
on ``10.X.N.1`` a small TCP relay in this process forwards each service's port to 127.0.0.1,
so a host sees the services at its gateway and nothing else of this machine: no shared
loopback, no shared disk (each host has its own folder), and this process reaches a web host
at ``10.X.N.2`` as a client on another machine would.

Needs root and iproute2 (``ip netns``); ``unavailable()`` says why not, for a developer's
machine. CI runs as root.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import socketserver
import subprocess
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

#: Addresses 10.<SUBNET>.<n>.0/24, one /24 per host; the second octet from this process's id,
#: so two test sessions on one machine use different subnets.
SUBNET = 100 + os.getpid() % 100


def unavailable() -> str | None:
    """Why hosts cannot have namespaces here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` (iproute2)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class _Relay(socketserver.BaseRequestHandler):
    """One connection from a namespace, piped to the same port on 127.0.0.1."""

    def handle(self) -> None:
        try:
            with socket.create_connection(("127.0.0.1", self.server.target_port)) as upstream:
                self._pipe({self.request: upstream, upstream: self.request})
        except OSError:  # a host killed mid-connection: its peer just sees the end
            return

    def _pipe(self, ends: dict[socket.socket, socket.socket]) -> None:
        while not self.server.stopping.is_set():
            readable, _, _ = select.select(list(ends), [], [], 0.5)
            for sock in readable:
                data = sock.recv(65536)
                if not data:
                    return
                ends[sock].sendall(data)


class _RelayServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], target_port: int) -> None:
        self.target_port = target_port
        self.stopping = threading.Event()
        super().__init__(address, _Relay)


@dataclass
class Namespace:
    """A host's network: ``address`` is the host's own, ``gateway`` where it finds services."""

    name: str
    address: str
    gateway: str
    relays: list[_RelayServer] = field(default_factory=list)

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this namespace (``ip netns exec`` execs it: same pid)."""
        return ["ip", "netns", "exec", self.name, *argv]

    def url(self, url: str) -> str:
        """``url`` (a service on 127.0.0.1 or localhost) as this host reaches it."""
        parts = urlsplit(url)
        if parts.hostname not in {"127.0.0.1", "localhost"}:
            raise ValueError(f"{url} is not a service on this machine's loopback")
        netloc = parts.netloc.replace(parts.hostname, self.gateway, 1)
        return urlunsplit(parts._replace(netloc=netloc))


def _relay(namespace: Namespace, port: int) -> _RelayServer:
    server = _RelayServer((namespace.gateway, port), port)
    threading.Thread(target=server.serve_forever, name=f"relay-{port}", daemon=True).start()
    namespace.relays.append(server)
    return server


@contextmanager
def _namespace(index: int, ports: list[int]):
    name = f"gw{os.getpid()}-{index}"
    outside, inside = f"gw{os.getpid() % 100000}o{index}", f"gw{os.getpid() % 100000}i{index}"
    net = f"10.{SUBNET}.{index}"
    namespace = Namespace(name, f"{net}.2", f"{net}.1")
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", name)
        _ip("addr", "add", f"{net}.1/24", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("-n", name, "addr", "add", f"{net}.2/24", "dev", inside)
        _ip("-n", name, "link", "set", inside, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        for port in ports:
            _relay(namespace, port)
        yield namespace
    finally:
        for relay in namespace.relays:
            relay.stopping.set()
            relay.shutdown()
            relay.server_close()
        # Deleting the namespace deletes its end of the pair, and with it this end.
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", outside], capture_output=True)


@contextmanager
def namespaces(names: list[str], service_urls: list[str]):
    """A namespace per name, each reaching the services at ``service_urls`` (on this machine's
    loopback) through its gateway: yields ``{name: Namespace}``."""
    ports = sorted({urlsplit(url).port for url in service_urls})
    with ExitStack() as stack:
        yield {
            name: stack.enter_context(_namespace(index, ports))
            for index, name in enumerate(names, start=1)
        }
