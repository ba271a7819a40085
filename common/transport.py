"""One ZeroMQ ROUTER socket per process, peers reached by name (DESIGN §3).

The socket binds the process's own address and connects, on first use, to each peer it sends to,
naming that outgoing pipe ``name>secret`` (``CONNECT_ROUTING_ID``; the secret is this socket's own,
never sent), so frames queue from the first send on, before the TCP handshake completes. Each
connection a process makes presents the routing id ``name@address#nonce``, with a nonce of its own
(random, never used for another connection): the receiver learns the sender's name, and for the
launcher's ``control``, which the cluster description does not list, the address to answer. Each
direction of a pair has its own connection.

Routing ids are never handed over (no ``ROUTER_HANDOVER``): a connection claiming an id in use is
ignored, so a stranger cannot take over a peer's link by reusing its id (with handover, it could), and
cannot claim an outgoing pipe's id before it is connected (ZeroMQ aborts the process on that clash:
the secret prevents it). Nor can it claim a process's id before that process connects (issue 26:
doing so once locked a node out of the schedulers for a whole run): the id a process will present to
a peer exists only when it connects, and what a stranger who connects to the process learns (the id of
its listening socket) is never presented anywhere. A peer that restarts under the same name and
address (a second replay's frontend, a restarted node monitor) reconnects under new nonces, so it never
collides with its old connection, which may still be closing.

A process learns an address from a routing id only for a controller missing from its description
(``control``): it never connects to an address a stranger names, so it tells no stranger anything.

Frames above ``max_frame`` bytes (``MAXMSGSIZE``, default :data:`MAX_FRAME`) are refused by ZeroMQ
from their header, before they are read: the sender is disconnected, this process carries on.

With keys (:mod:`aviary.common.keys`) the socket is a CURVE server and a CURVE client of each peer: only
the cluster's keys get through the handshake, traffic is encrypted, and a sender's name is the process
its key belongs to (the frame's ``User-Id``), not the routing id it claims. Without keys, a process
binding a non-loopback address warns once that anyone who reaches it can drive the testbed.

High-water marks are off: a message is never dropped for lack of queue space.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

import zmq

from .addresses import MAX_FRAME, AddressBook, AddressInUse, FrameTooLarge, UnknownPeer
from .cluster import Peers
from .keys import Curve
from .zmq_keys import Gate, Watch

log = logging.getLogger("aviary.transport")


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


_send: Any = zmq.backend.Socket.send
_recv: Any = zmq.backend.Socket.recv
_get: Any = zmq.backend.Socket.get
"""pyzmq's own calls, below its Python layer: ``send_multipart`` and ``recv_multipart`` cost 8 µs a
frame in that layer (its flags are Python ``enum``s), these 2 (a scheduler multicasting an Eagle update to
1,000 nodes spent most of its time there)."""
_MORE, _NOBLOCK = int(zmq.SNDMORE | zmq.NOBLOCK), int(zmq.NOBLOCK)
_EVENTS, _RCVMORE, _POLLIN = int(zmq.EVENTS), int(zmq.RCVMORE), int(zmq.POLLIN)


class Transport(AddressBook):
    """One process's ZeroMQ socket (see the module's docstring)."""

    def __init__(
        self, name: str, bind: str, advertise: str, peers: Mapping[str, str], *, max_frame: int = MAX_FRAME
    ) -> None:
        super().__init__(name, peers)
        self.curve = Curve.of(name, peers) if isinstance(peers, Peers) else None
        self.max_frame = max_frame
        self.ctx: zmq.Context[Any] = zmq.Context.instance()
        self._secret = secrets.token_hex(8)
        self._domain = f"aviary/{name}/{secrets.token_hex(4)}"
        self._me = f"{name}@{advertise}#"
        sock = self.ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTING_ID, self._routing_id())
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.ROUTER_HANDOVER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, max_frame)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.LINGER, 1000)
        sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
        if self.curve is not None:
            self.curve.serve(sock, self._domain)
        try:
            _bind(sock, bind)
        except BaseException:
            if self.curve is not None:
                self.curve.close(sock, self._domain)
            raise
        self.sock = sock
        self._senders: dict[bytes, str] = {}
        self._outgoing: dict[bytes, str] = {}
        self._ids: dict[str, bytes] = {}
        self.dropped: Counter[str] = Counter()
        self._monitor: zmq.Socket[Any] | None = None
        if self.curve is not None:
            self._monitor = Watch.watch(sock, name, self.dropped)
        self.bound = self._bound(bind)
        if self.curve is None:
            self.warn_unkeyed(self.bound)

    def _bound(self, bind: str) -> str:
        """The address actually bound (ZeroMQ's last endpoint: ``*`` shown as ``0.0.0.0``)."""
        try:
            last = self.sock.getsockopt(zmq.LAST_ENDPOINT)
        except zmq.ZMQError:
            return bind
        return last.decode() if isinstance(last, bytes) and last else bind

    def counts(self) -> Counter[str]:
        """Frames and connections dropped, by kind (``unknown-key``: refused at the CURVE handshake)."""
        counts = Counter(self.dropped)
        if self.curve is not None:
            refused = Gate.of(self.ctx).refused[self._domain]
            if refused:
                counts["unknown-key"] = refused
        return counts

    @property
    def fd(self) -> int:
        return self.sock.getsockopt(zmq.FD)

    def readable(self) -> bool:
        return bool(_get(self.sock, _EVENTS) & _POLLIN)

    def flush(self) -> None:
        """Nothing waits here: ZeroMQ's I/O thread writes each frame as it is sent."""

    def hold(self) -> None:
        """Nothing to hold: ZeroMQ's I/O thread already writes what queued up for a peer in one go."""

    def release(self) -> None:
        """See :meth:`hold`."""

    def connected(self) -> bool:
        """The connections :meth:`connect` started are up: ZeroMQ's handshakes take no time to speak of."""
        return True

    def connect(self, names: list[str]) -> None:
        """Connect to ``names`` now, before anything is sent to them (ZeroMQ makes the connections and
        their handshakes in its I/O thread); a name without an address or a key is left alone."""
        for name in names:
            if name not in self._ids:
                with contextlib.suppress(UnknownPeer):
                    self._connect(name)

    def send(self, to: str, frame: bytes) -> None:
        if len(frame) > self.max_frame:
            raise FrameTooLarge(f"a frame of {len(frame)} bytes is above the limit of {self.max_frame}")
        rid = self._ids.get(to)
        if rid is None:
            rid = self._connect(to)
        _send(self.sock, rid, _MORE)
        _send(self.sock, frame, _NOBLOCK)

    def _connect(self, to: str) -> bytes:
        address = self.peers.get(to)
        if address is None:
            raise UnknownPeer(to)
        if self.curve is not None and not self.curve.client(self.sock, to):
            raise UnknownPeer(to)
        rid = f"{to}>{self._secret}.{len(self._outgoing)}".encode()
        self.sock.setsockopt(zmq.ROUTING_ID, self._routing_id())
        self.sock.setsockopt(zmq.CONNECT_ROUTING_ID, rid)
        self.sock.connect(address)
        self._ids[to] = rid
        self._outgoing[rid] = to
        return rid

    def recv(self) -> tuple[str, bytes] | None:
        """One (sender, frame) or None when nothing is waiting. Malformed envelopes, and with keys
        frames whose sender is not authenticated, are dropped."""
        sock, copy = self.sock, self.curve is None
        keyed = not copy
        while True:
            if not _get(sock, _EVENTS) & _POLLIN:
                return None
            try:
                parts = [_recv(sock, _NOBLOCK, copy)]
                while _get(sock, _RCVMORE):
                    parts.append(_recv(sock, _NOBLOCK, copy))
            except zmq.Again:
                return None
            if len(parts) != 2:
                self.dropped["bad-envelope"] += 1
                continue
            if keyed:
                rid, frame = parts[0].bytes, parts[1]
                sender = self._user(rid, frame)
                if sender is None:
                    self.dropped["unauthenticated"] += 1
                    continue
                return sender, frame.bytes
            rid, frame = parts
            sender = self._senders.get(rid)
            if sender is None:
                sender = self._learn(rid)
            return sender, frame

    def _user(self, rid: bytes, frame: zmq.Frame) -> str | None:
        """With keys: the process whose key the frame came in under (learning its address from the
        routing id when the description has none: ``control``); a frame on a connection this socket
        made comes from the peer it connected to (whose key the handshake checked)."""
        try:
            user = frame.get("User-Id")
        except zmq.ZMQError:
            user = None
        if not user:
            return self._outgoing.get(rid)
        name = str(user)
        if name not in self.peers:
            claimed, address = self._parse(rid)
            if claimed == name and address:
                self.peers[name] = address
        return name

    def _routing_id(self) -> bytes:
        """The id the next connection presents: this process's name and address, and a new nonce."""
        return f"{self._me}{secrets.token_hex(8)}".encode()

    def _learn(self, rid: bytes) -> str:
        name = self._outgoing[rid] if rid in self._outgoing else self.learn(rid)
        if len(self._senders) >= 4 * self.MAX_LEARNED:
            self._senders.clear()  # ids of connections long gone: parsing again is cheap
        self._senders[rid] = name
        return name

    def forget(self, name: str) -> None:
        self._ids.pop(name, None)

    def close(self, linger: int | None = None) -> None:
        """Close the socket (once; again is harmless): ``linger`` ms to flush what is queued (None: the
        socket's 1 s; 0: drop it, as a killed process would)."""
        if self.sock.closed:
            return
        if self._monitor is not None:
            Watch.unwatch(self.sock, self._monitor)
        self.sock.close(linger)
        if self.curve is not None:
            self.curve.close(self.sock, self._domain)
