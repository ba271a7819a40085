"""What every transport shares, and what a process needs of its address before it has a transport:
the address book of its peers (:class:`AddressBook`), the limit on a frame, the errors a send or a bind
raises, and whether an address is loopback or free to bind. Nothing here imports ZeroMQ, so a process
of a plain-TCP testbed (:mod:`.tcp_transport`) never loads it."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import logging
import os
import socket
import time
from collections.abc import Mapping

from .cluster import Peers

log = logging.getLogger("aviary.transport")

MAX_FRAME = int(os.environ.get("AVIARY_MAX_FRAME", 64 << 20))
"""The largest frame a process reads, in bytes (64 MiB; ``$AVIARY_MAX_FRAME`` overrides it). The
largest legitimate frames: a ``SubmitJob`` of 100,000 tasks is 0.9 MB (the bundled Google sample's
largest job, 4,953 tasks, 45 kB); a central scheduler's ``Stats`` carries its task log, ~65 bytes a
task, so 64 MiB holds a million finished tasks."""


def raise_open_files() -> None:
    """Lift this process's limit of open descriptors to the hard one: each peer takes one or two (a
    scheduler of a 1,000-node testbed ~2,000; the soft limit is often 1,024)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class UnknownPeer(KeyError):
    """A send to a name with no known address."""


class AddressInUse(OSError):
    """The process's own address is taken by another process."""


class FrameTooLarge(ValueError):
    """A frame above the limit every process reads: it would be refused, so it is not sent."""


def is_loopback(address: str) -> bool:
    """Whether ``address`` (``tcp://host:port`` or a host) is on loopback only (``*`` and ``0.0.0.0``
    are not: they bind every interface)."""
    host = address.partition("://")[2] or address
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.startswith("[") else host
    host = host.strip("[]")
    if host in ("", "*"):
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {str(a[4][0]) for a in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)


def bind_problem(host: str, port: int, patience: float = 2.0) -> str | None:
    """Why a process could not listen on ``host:port`` (another process holds it, the address is not
    this machine's), in a few words; None if it could. A launcher asks before it starts processes that
    would die of it. A port held is tried again for ``patience`` seconds, as :func:`_bind` does (a
    socket of this process just closed may linger); ZeroMQ sets ``SO_REUSEADDR`` too, so a port in
    TIME_WAIT is no problem."""
    deadline = time.monotonic() + patience
    while (problem := _bind_once(host, port)) == IN_USE and time.monotonic() < deadline:
        time.sleep(0.05)
    return problem


IN_USE = "another process holds it"


def _bind_once(host: str, port: int) -> str | None:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            "0.0.0.0" if host == "*" else host, port, type=socket.SOCK_STREAM
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        return f"unknown address ({getattr(exc, 'strerror', None) or exc})"
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return IN_USE
            if exc.errno == errno.EADDRNOTAVAIL:
                return "not an address of this machine"
            return exc.strerror or str(exc)
    return None


class AddressBook:
    """What every transport knows of its peers: their addresses by name (``peers``: the cluster's
    address book, :meth:`Cluster.addresses`, which also says who may send ``Shutdown`` and carries the
    keys; a plain mapping means no keys), their roles, and what a connection's id teaches it."""

    MAX_LEARNED = 1024
    """Peers learned from connection ids (not in the cluster description) kept at most."""

    def __init__(self, name: str, peers: Mapping[str, str]) -> None:
        if "@" in name or ">" in name or "#" in name:
            raise ValueError(f"process name {name!r} may not contain '@', '>' or '#'")
        self.name = name
        self.peers = dict(peers)
        self.known = frozenset(peers)
        self.controllers: frozenset[str] = getattr(peers, "controllers", Peers.controllers)
        """Who may send ``Shutdown``: the cluster's frontend and the launchers' ``control``."""
        self.roles: dict[str, str] = dict(getattr(peers, "roles", {}))
        """Each name's role in the cluster description (empty for a plain mapping: no role checks)."""

    def learn(self, rid: bytes) -> str:
        """The name a connection's id ``name@address[#nonce]`` claims. Its address is noted only for a
        name missing from the description: any, up to a bound, in a plain address book; else only a
        controller's (``control``), whose newest connection wins (:meth:`forget` the old link)."""
        name, address = self._parse(rid)
        if address and name not in self.known:
            if not self.roles:
                if name not in self.peers and len(self.peers) - len(self.known) < self.MAX_LEARNED:
                    self.peers[name] = address
            elif name in self.controllers and self.peers.get(name) != address:
                self.peers[name] = address
                self.forget(name)
        return name

    def forget(self, name: str) -> None:
        """Drop the link to ``name``: the next send reaches it at its address anew."""

    @staticmethod
    def _parse(rid: bytes) -> tuple[str, str]:
        """The name and address a connection id ``name@address#incarnation`` claims."""
        name, _, rest = rid.decode(errors="replace").partition("@")
        address = rest.rpartition("#")[0] if "#" in rest else rest
        return name, address if address.startswith(("tcp://", "ipc://")) else ""

    def warn_unkeyed(self, bound: str) -> None:
        if not is_loopback(bound):
            log.warning(
                "%s: listening on %s without keys: anyone who can reach it can drive the testbed "
                "(make keys with 'aviary keys CLUSTER.toml')",
                self.name,
                bound,
            )
