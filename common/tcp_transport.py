"""A second wire: plain TCP, length-prefixed frames, no I/O thread (issue 27; ``transport = "tcp"``).

ZeroMQ hands every frame to a background I/O thread on each side of a hop, so a hop wakes four threads
(sender's loop and I/O thread, receiver's I/O thread and loop; ``docs/measurements.md``). This transport
writes a frame into the kernel from the sender's loop and reads it in the receiver's, so a hop wakes
one. It offers what :class:`~aviary.common.transport.Transport` offers the runtime and keeps its rules:

- one listening socket per process, on the same ``tcp://host:port`` as in the cluster description; a
  peer is reached by name, over a connection this process makes on the first send to it (each
  direction of a pair has its own connection; frames queue from the first send on, before the
  connection is up, and wait out a peer that is not listening yet, tried again every 0.1 s);
- a connection starts with a hello frame naming its sender (``AVIARY/1 name@address``), as ZeroMQ's
  routing id does: the receiver learns the sender's name, and a controller's address, from it alone
  (:meth:`AddressBook.learn`); a connection whose first frame is no hello is closed and counted
  (``bad-envelope``);
- a frame announced above ``max_frame`` bytes is refused from its 4-byte header, before it is read:
  the connection is closed and counted (``too-large``), the process carries on;
- a lost connection drops what was in flight (as ZeroMQ does); frames sent after it go over a new
  one.

Every descriptor sits in one ``epoll`` set whose own descriptor is :attr:`fd`: the event loop watches
that one, level-triggered, and :meth:`recv` serves the frames of every connection that is ready.

It has no keys yet: a keyed cluster description refuses it (:data:`NO_KEYS`), so its trust is that of
a testbed run with ``--no-keys`` (role checks only; ``docs/security.md``).
"""

from __future__ import annotations

import errno
import select
import socket
import time
from collections import Counter, deque
from collections.abc import Mapping
from typing import Any

from .cluster import ClusterError
from .transport import MAX_FRAME, AddressBook, AddressInUse, FrameTooLarge, UnknownPeer

HELLO = b"AVIARY/1 "
"""The first frame of every connection starts with this, then ``name@address`` (UTF-8)."""
HEADER = 4
"""Each frame is preceded by its length, 4 bytes big-endian."""
RETRY = 0.1
"""Seconds between two tries to reach a peer that refused a connection (ZeroMQ's default)."""
READ = 1 << 18
NO_KEYS = "the tcp transport carries no CurveZMQ keys yet: run it without keys (--no-keys) or use zmq"

_IN = select.EPOLLIN | select.EPOLLRDHUP
_OUT = _IN | select.EPOLLOUT


def _header(n: int) -> bytes:
    return n.to_bytes(HEADER, "big")


class _Link:
    """A connection this process made to a peer, and the frames waiting for it (whole frames with their
    headers; ``offset`` bytes of the first one are already written)."""

    __slots__ = ("address", "offset", "pending", "retry_at", "sock", "up")

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock: socket.socket | None = None
        self.up = False
        self.pending: deque[bytes] = deque()
        self.offset = 0
        self.retry_at = 0.0


class _Inbound:
    """A connection a peer made to this process: bytes read and not yet framed, and its sender once its
    hello came."""

    __slots__ = ("buf", "sender", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.sender: str | None = None


def _sockaddr(address: str, passive: bool = False) -> tuple[int, Any]:
    """The family and socket address of ``tcp://host:port`` (``*`` binds every interface)."""
    rest = address.partition("://")[2] or address
    host, _, port = rest.rpartition(":")
    host = host.strip("[]")
    if host == "*":
        host = "0.0.0.0"
    family, _, _, _, sockaddr = socket.getaddrinfo(
        host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE if passive else 0
    )[0]
    return family, sockaddr


class TcpTransport(AddressBook):
    """One process's listening socket and connections (see the module's docstring)."""

    def __init__(
        self, name: str, bind: str, advertise: str, peers: Mapping[str, str], *, max_frame: int = MAX_FRAME
    ) -> None:
        if getattr(peers, "public", None):
            raise ClusterError(NO_KEYS)
        super().__init__(name, peers)
        self.curve = None
        self.max_frame = max_frame
        self.dropped: Counter[str] = Counter()
        self._hello = HELLO + f"{name}@{advertise}".encode()
        self._links: dict[str, _Link] = {}
        self._fds: dict[int, _Link | _Inbound] = {}
        self._ready: deque[tuple[str, bytes]] = deque()
        self._due: set[_Link] = set()
        """Links with frames waiting and no connection: dialled again once their ``retry_at`` passes."""
        self._retrying = False
        self._epoll = select.epoll()
        self._listener = self._listen(bind)
        self._listen_fd = self._listener.fileno()
        self._epoll.register(self._listen_fd, select.EPOLLIN)
        host, port = self._listener.getsockname()[:2]
        self.bound = f"tcp://{'[' + host + ']' if ':' in host else host}:{port}"
        self.warn_unkeyed(self.bound)

    @staticmethod
    def _listen(bind: str, patience: float = 2.0) -> socket.socket:
        family, sockaddr = _sockaddr(bind, passive=True)
        deadline = time.monotonic() + patience
        while True:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(sockaddr)
            except OSError as exc:
                sock.close()
                if exc.errno != errno.EADDRINUSE:
                    raise
                if time.monotonic() > deadline:
                    raise AddressInUse(f"cannot listen on {bind}: another process holds it") from None
                time.sleep(0.01)
                continue
            sock.listen(1024)
            sock.setblocking(False)
            return sock

    @property
    def fd(self) -> int:
        return self._epoll.fileno()

    def counts(self) -> Counter[str]:
        return Counter(self.dropped)

    def readable(self) -> bool:
        return bool(self._ready) or bool(self._epoll.poll(0))

    # --- sending -----------------------------------------------------------------------------------
    def send(self, to: str, frame: bytes) -> None:
        if len(frame) > self.max_frame:
            raise FrameTooLarge(f"a frame of {len(frame)} bytes is above the limit of {self.max_frame}")
        link = self._links.get(to)
        if link is None:
            address = self.peers.get(to)
            if address is None:
                raise UnknownPeer(to)
            link = self._links[to] = _Link(address)
        data = _header(len(frame)) + frame
        if link.up and not link.pending:
            try:
                n = link.sock.send(data)  # type: ignore[union-attr]
            except BlockingIOError:
                n = 0
            except OSError:
                self._lost(link)
                link.pending.append(data)
                self._dial(link)
                return
            if n == len(data):
                return
            link.pending.append(data)
            link.offset = n
            self._epoll.modify(link.sock.fileno(), _OUT)  # type: ignore[union-attr]
            return
        link.pending.append(data)
        if link.sock is None:
            self._dial(link)

    def _dial(self, link: _Link) -> None:
        """Start a connection to ``link``'s peer (unless a refusal was too recent: a retry is due)."""
        now = time.monotonic()
        if now < link.retry_at:
            self._due.add(link)
            self._retry_later()
            return
        self._due.discard(link)
        family, sockaddr = _sockaddr(link.address)
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        code = sock.connect_ex(sockaddr)
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            link.retry_at = now + RETRY
            self._due.add(link)
            self._retry_later()
            return
        link.sock = sock
        link.up = False
        link.offset = 0
        link.pending.appendleft(_header(len(self._hello)) + self._hello)
        self._fds[sock.fileno()] = link
        self._epoll.register(sock.fileno(), _OUT)

    def _retry_later(self) -> None:
        """Dial again the links whose peer refused, in :data:`RETRY` seconds (on the running event loop;
        without one, at the next send or receive)."""
        if self._retrying:
            return
        try:
            import asyncio

            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._retrying = True
        loop.call_later(RETRY, self._redial)

    def _redial(self) -> None:
        self._retrying = False
        self._redial_due()

    def _redial_due(self) -> None:
        now = time.monotonic()
        for link in list(self._due):
            if link.sock is not None or not link.pending:
                self._due.discard(link)
            elif now >= link.retry_at:
                self._dial(link)
        if self._due:
            self._retry_later()

    def _lost(self, link: _Link) -> None:
        """Forget ``link``'s connection; a frame half written on it is dropped with it, as are the hello
        and the frames it carried (the next connection sends its own hello)."""
        sock = link.sock
        if sock is not None:
            self._fds.pop(sock.fileno(), None)
            self._epoll.unregister(sock.fileno())
            sock.close()
        if not link.up and link.pending:
            link.pending.popleft()  # the hello this connection never finished sending
        elif link.offset and link.pending:
            link.pending.popleft()
        link.sock, link.up, link.offset = None, False, 0
        link.retry_at = time.monotonic() + RETRY

    def _flush(self, link: _Link) -> None:
        sock = link.sock
        assert sock is not None
        pending = link.pending
        while pending:
            first = pending[0]
            try:
                n = sock.send(memoryview(first)[link.offset :] if link.offset else first)
            except BlockingIOError:
                return
            except OSError:
                self._lost(link)
                if pending:
                    self._dial(link)
                return
            if n < len(first) - link.offset:
                link.offset += n
                return
            pending.popleft()
            link.offset = 0
        self._epoll.modify(sock.fileno(), _IN)

    # --- receiving ---------------------------------------------------------------------------------
    def recv(self) -> tuple[str, bytes] | None:
        """One (sender, frame) or None when nothing is waiting."""
        ready = self._ready
        while not ready:
            events = self._epoll.poll(0)
            if not events:
                if self._due and not self._retrying:
                    self._redial_due()  # no event loop to call back: dial what is due now
                return None
            for fd, mask in events:
                self._event(fd, mask)
        return ready.popleft()

    def _event(self, fd: int, mask: int) -> None:
        if fd == self._listen_fd:
            self._accept()
            return
        conn = self._fds.get(fd)
        if conn is None:
            return
        if isinstance(conn, _Inbound):
            self._read(conn)
            return
        if not conn.up:
            if conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):  # type: ignore[union-attr]
                self._lost(conn)
                self._dial(conn)  # refused: due again in RETRY seconds
                return
            conn.up = True
        if mask & (select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLHUP | select.EPOLLERR):
            self._lost(conn)  # the peer sends nothing on this connection: it closed
            if conn.pending:
                self._dial(conn)
            return
        self._flush(conn)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors, a connection reset before it was accepted
                self.dropped["accept-failed"] += 1
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._fds[sock.fileno()] = _Inbound(sock)
            self._epoll.register(sock.fileno(), _IN)

    def _read(self, conn: _Inbound) -> None:
        try:
            data = conn.sock.recv(READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)
            return
        buf = conn.buf
        buf += data
        at, end = 0, len(buf)
        while end - at >= HEADER:
            n = int.from_bytes(buf[at : at + HEADER], "big")
            if n > self.max_frame:
                self.dropped["too-large"] += 1
                self._close(conn)
                return
            if end - at - HEADER < n:
                break
            frame = bytes(buf[at + HEADER : at + HEADER + n])
            at += HEADER + n
            if conn.sender is None:
                if not frame.startswith(HELLO):
                    self.dropped["bad-envelope"] += 1
                    self._close(conn)
                    return
                conn.sender = self.learn(frame[len(HELLO) :])
                continue
            self._ready.append((conn.sender, frame))
        del buf[:at]

    def _close(self, conn: _Inbound) -> None:
        self._fds.pop(conn.sock.fileno(), None)
        self._epoll.unregister(conn.sock.fileno())
        conn.sock.close()

    def forget(self, name: str) -> None:
        """A controller came back under a new address: the next send to it dials that one."""
        link = self._links.pop(name, None)
        if link is not None and link.sock is not None:
            self._fds.pop(link.sock.fileno(), None)
            self._epoll.unregister(link.sock.fileno())
            link.sock.close()

    def close(self, linger: int | None = None) -> None:
        """Close every connection (once; again is harmless), first writing what waits for up to ``linger``
        ms (None: 1 s, as the ZeroMQ socket; 0: drop it, as a killed process would)."""
        if self._epoll.closed:
            return
        deadline = time.monotonic() + (1.0 if linger is None else linger / 1000)
        while any(link.pending and link.sock is not None for link in self._links.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for fd, mask in self._epoll.poll(min(left, 0.05)):
                conn = self._fds.get(fd)
                if isinstance(conn, _Link):
                    self._event(fd, mask)
        for conn in list(self._fds.values()):
            if conn.sock is not None:
                conn.sock.close()
        self._fds.clear()
        self._listener.close()
        self._epoll.close()
