"""One ZeroMQ ROUTER socket per process, peers reached by name (DESIGN §3).

The socket binds the process's own address and connects, on first use, to each peer it sends to,
naming that outgoing pipe with the peer's name (``CONNECT_ROUTING_ID``), so frames queue from the
first send on, before the TCP handshake completes. A process's own routing id is ``name@address``:
whoever receives from it learns how to answer even a peer missing from its cluster description (a
second frontend, say). Incoming pipes carry that ``name@address`` id, which never clashes with the
outgoing pipes, named by bare names, so each direction of a pair has its own connection.

A peer that restarts under the same name and address (a second replay's frontend, a restarted node
monitor) reconnects with the same ``name@address`` id while its old connection may still be closing:
``ROUTER_HANDOVER`` hands the id to the new connection (without it ZeroMQ ignores the newcomer for good,
and the replay never sees its ``Register``).

High-water marks are off: a message is never dropped for lack of queue space.
"""

from __future__ import annotations

import errno
import socket
import time
from collections import Counter
from typing import Any

import zmq


class UnknownPeer(KeyError):
    """A send to a name with no known address."""


class AddressInUse(OSError):
    """The process's own address is taken by another process."""


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


def _bind(sock: zmq.Socket, address: str, patience: float = 2.0) -> None:
    """Bind, waiting up to ``patience`` seconds for a socket of this process that was just closed on
    the same address to let go of it (ZeroMQ closes sockets in its background thread)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            sock.bind(address)
            return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EADDRINUSE:
                sock.close(linger=0)
                raise
            if time.monotonic() > deadline:
                sock.close(linger=0)
                raise AddressInUse(f"cannot listen on {address}: another process holds it") from None
            time.sleep(0.01)


class Transport:
    def __init__(self, name: str, bind: str, advertise: str, peers: dict[str, str]) -> None:
        if "@" in name:
            raise ValueError(f"process name {name!r} may not contain '@'")
        self.name = name
        self.peers = dict(peers)
        self.ctx: zmq.Context[Any] = zmq.Context.instance()
        sock = self.ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTING_ID, f"{name}@{advertise}".encode())
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.LINGER, 1000)
        sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
        _bind(sock, bind)
        self.sock = sock
        self._connected: set[str] = set()
        self._senders: dict[bytes, str] = {}
        self._ids: dict[str, bytes] = {}
        self.dropped: Counter[str] = Counter()

    @property
    def fd(self) -> int:
        return self.sock.getsockopt(zmq.FD)

    def readable(self) -> bool:
        return bool(self.sock.getsockopt(zmq.EVENTS) & zmq.POLLIN)

    def send(self, to: str, frame: bytes) -> None:
        rid = self._ids.get(to)
        if rid is None:
            rid = self._connect(to)
        self.sock.send_multipart((rid, frame), zmq.NOBLOCK)

    def _connect(self, to: str) -> bytes:
        address = self.peers.get(to)
        if address is None:
            raise UnknownPeer(to)
        rid = to.encode()
        self.sock.setsockopt(zmq.CONNECT_ROUTING_ID, rid)
        self.sock.connect(address)
        self._ids[to] = rid
        return rid

    def recv(self) -> tuple[str, bytes] | None:
        """One (sender, frame) or None when nothing is waiting. Malformed envelopes are dropped."""
        while True:
            try:
                parts = self.sock.recv_multipart(zmq.NOBLOCK, copy=True)
            except zmq.Again:
                return None
            if len(parts) != 2:
                self.dropped["bad-envelope"] += 1
                continue
            rid, frame = parts
            sender = self._senders.get(rid)
            if sender is None:
                sender = self._learn(rid)
            return sender, frame

    def _learn(self, rid: bytes) -> str:
        text = rid.decode(errors="replace")
        name, _, address = text.partition("@")
        if address and name not in self.peers and address.startswith(("tcp://", "ipc://")):
            self.peers[name] = address
        self._senders[rid] = name
        return name

    def close(self) -> None:
        self.sock.close()
