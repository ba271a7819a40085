"""A second wire: plain TCP, length-prefixed frames, no I/O thread (issue 27; ``transport = "tcp"``).

ZeroMQ hands every frame to a background I/O thread on each side of a hop, so a hop wakes four threads
(sender's loop and I/O thread, receiver's I/O thread and loop; ``docs/measurements.md``). This transport
writes a frame into the kernel from the sender's loop and reads it in the receiver's, so a hop wakes
one. It offers what :class:`~aviary.common.transport.Transport` offers the runtime and keeps its rules:

- one listening socket per process, on the same ``tcp://host:port`` as in the cluster description; a
  peer is reached by name, over a connection this process makes on the first send to it (each
  direction of a pair has its own connection; frames queue from the first send on, before the
  connection is up, and wait out a peer that is not listening yet, tried again every 0.1 s);
- a connection opens with a greeting that names its sender ``name@address``, as ZeroMQ's routing id
  does: without keys the receiver takes that name, and learns a controller's address from it
  (:meth:`AddressBook.learn`); a connection whose greeting is missing or wrong is closed and counted
  (``bad-envelope``);
- a frame announced above ``max_frame`` bytes is refused from its 4-byte length, before it is read:
  the connection is closed and counted (``too-large``), the process carries on;
- frames that wait (the connection is not up yet, or the kernel's buffer is full) go in one write, and
  so do the frames sent while the runtime works through what it read (:meth:`TcpTransport.hold`): a
  busy process makes one write per peer for a batch of frames, not one each (at a central scheduler
  pushing 13,000 tasks a second, half its time was its one ``send`` a task);
- a lost connection drops the frames it was writing (as ZeroMQ drops what is in flight); the frames
  still waiting go over a new one.

With keys (the cluster's CurveZMQ key pairs, which are X25519 keys) the greeting is the first message
of a Noise ``IK`` handshake (``Noise_IK_25519_ChaChaPoly_SHA256``, the ``noiseprotocol`` package): the
connecting process knows the peer's public key from the description and sends its own, encrypted; the
peer admits it only if that key is one of the cluster's (else ``unknown-key``), answers with the second
message, and from then on every frame is encrypted and authenticated with keys that both ephemeral keys
went into (so a recorded connection cannot be replayed). The sender a process sees is the owner of the
key, whatever name the greeting claims; a frame that fails authentication closes its connection
(``unauthenticated``). Frames are sealed in pieces of at most 65,535 bytes, Noise's message limit.

Every descriptor sits in one ``epoll`` set whose own descriptor is :attr:`fd`: the event loop watches
that one, level-triggered, and :meth:`recv` serves the frames of every connection that is ready.
"""

from __future__ import annotations

import asyncio
import errno
import select
import socket
import time
from collections import Counter, deque
from collections.abc import Mapping
from typing import Any

from .addresses import MAX_FRAME, AddressBook, AddressInUse, FrameTooLarge, UnknownPeer
from .cluster import Peers
from .keys import Curve, z85_decode

HELLO = b"AVIARY/1 "
"""Without keys, the greeting: this, then ``name@address`` (UTF-8)."""
NOISE = b"Noise_IK_25519_ChaChaPoly_SHA256"
PROLOGUE = b"aviary/1"
PIECE = 65535 - 16
"""The most plaintext one Noise message seals (its limit, less the 16-byte tag)."""
HEADER = 4
"""Each frame is preceded by its length, 4 bytes big-endian."""
RETRY = 0.1
"""Seconds between two tries to reach a peer that refused a connection (ZeroMQ's default)."""
READ = 1 << 18
"""Bytes read at most per ``recv``, into :data:`_INBOX` (``sock.recv(n)`` would allocate ``n`` bytes each
time: with 256 KiB, an ``mmap`` and page faults per frame)."""
_INBOX = memoryview(bytearray(READ))
"""The one read buffer of the process, shared by its transports (a pack's run on one thread, and what is
read is copied out at once)."""
GREETING = 1024
"""The longest first frame read on a connection (a greeting: a name, an address and with keys 96
bytes of handshake); a longer one is refused before it is read."""
UNGREETED = 256
"""Connections whose greeting has not come kept at most: past it the oldest is closed."""
HANDSHAKE = 5.0
"""Seconds a connection this process made waits for the peer's answer to its keyed greeting before it
is dropped and made again."""

_IN = select.EPOLLIN | select.EPOLLRDHUP
_OUT = _IN | select.EPOLLOUT
_GONE = select.EPOLLRDHUP | select.EPOLLHUP | select.EPOLLERR


def _framed(payload: bytes) -> bytes:
    """``payload`` preceded by its length, as every frame goes on the wire."""
    return len(payload).to_bytes(HEADER, "big") + payload


class _Keys:
    """This process's X25519 key pair and the cluster's public keys (the CurveZMQ keys, decoded)."""

    def __init__(self, curve: Curve) -> None:
        self.secret: bytes = z85_decode(curve.secret)
        self.public: dict[str, bytes] = {n: z85_decode(k) for n, k in curve.peers.items()}
        self.owner = {k: n for n, k in self.public.items()}

    @classmethod
    def of(cls, name: str, peers: Mapping[str, str]) -> _Keys | None:
        """``name``'s keys in a keyed cluster's address book (:meth:`Curve.of`); None without keys."""
        curve = Curve.of(name, peers) if isinstance(peers, Peers) else None
        return None if curve is None else cls(curve)

    def session(self, peer_key: bytes | None) -> Any:
        """A Noise handshake: the initiator's of a connection to ``peer_key``, the responder's if None."""
        from noise.connection import Keypair, NoiseConnection

        noise = NoiseConnection.from_name(NOISE)
        noise.set_prologue(PROLOGUE)
        noise.set_keypair_from_private_bytes(Keypair.STATIC, self.secret)
        if peer_key is None:
            noise.set_as_responder()
        else:
            noise.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, peer_key)
            noise.set_as_initiator()
        noise.start_handshake()
        return noise


class _Cipher:
    """One direction of a finished Noise session: its ChaCha20-Poly1305 key and nonce counter, used as
    Noise's own ``CipherState`` uses them (nonce: 4 zero bytes, then the counter, 64-bit little-endian;
    no associated data), without the library's per-message layers (half of a hop's crypto time)."""

    __slots__ = ("aead", "n")

    def __init__(self, state: Any) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

        self.aead = ChaCha20Poly1305(state.k)
        self.n: int = state.n

    def _nonce(self) -> bytes:
        n = self.n
        self.n = n + 1
        return b"\0\0\0\0" + n.to_bytes(8, "little")

    def seal(self, frame: bytes) -> bytes:
        if len(frame) <= PIECE:
            return self.aead.encrypt(self._nonce(), frame, None)
        return b"".join(
            self.aead.encrypt(self._nonce(), frame[i : i + PIECE], None) for i in range(0, len(frame), PIECE)
        )

    def open(self, sealed: bytes) -> bytes:
        """The frame, or ``cryptography``'s ``InvalidTag`` for one not sealed by the peer's session."""
        piece = PIECE + 16
        if len(sealed) <= piece:
            return self.aead.decrypt(self._nonce(), sealed, None)
        return b"".join(
            self.aead.decrypt(self._nonce(), sealed[i : i + piece], None)
            for i in range(0, len(sealed), piece)
        )


def _ciphers(noise: Any) -> tuple[_Cipher, _Cipher]:
    """The sending and receiving ciphers of a finished handshake."""
    protocol = noise.noise_protocol
    return _Cipher(protocol.cipher_state_encrypt), _Cipher(protocol.cipher_state_decrypt)


class _Link:
    """A connection this process makes to a peer: the frames waiting for it (plain), those being
    written (``out``, with its header, sealed with keys; ``offset`` bytes of it written), and with keys
    the handshake or session."""

    __slots__ = (
        *("address", "buf", "frames", "name", "noise", "offset", "out", "pending", "retry_at", "secure"),
        *("cipher", "sock", "watching"),
    )

    def __init__(self, name: str, address: str) -> None:
        self.name = name
        self.address = address
        self.watching = False
        """``EPOLLOUT`` is asked for: the kernel's buffer was full, or the connection is not up yet."""
        self.sock: socket.socket | None = None
        self.secure = False
        """The greeting is written (and with keys, the peer's answer read): frames may go."""
        self.noise: Any = None
        self.cipher: _Cipher | None = None
        """With keys, once the handshake is done: what seals this link's frames."""
        self.buf = bytearray()
        self.pending: deque[bytes] = deque()
        self.out = b""
        """What is being written: the greeting, or every frame that waited, framed (and sealed) in one."""
        self.frames: list[bytes] = []
        """The frames :attr:`out` carries: they go again over the next connection if none of it went."""
        self.offset = 0
        self.retry_at = 0.0


class _Inbound:
    """A connection a peer made to this process: bytes read and not yet framed, and its sender (and with
    keys its session) once its greeting came."""

    __slots__ = ("buf", "cipher", "claim", "limit", "sender", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.limit = GREETING
        """The longest frame read next: a greeting, then a frame (sealed: with its pieces' tags)."""
        self.buf = bytearray()
        self.sender: str | None = None
        self.cipher: _Cipher | None = None
        self.claim: bytes | None = None
        """With keys: the greeting's ``name@address``, learnt from only once a sealed frame proved the
        connection live (a replayed greeting teaches nothing)."""


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
        super().__init__(name, peers)
        self.keys = _Keys.of(name, peers)
        self.max_frame = max_frame
        self._sealed_max = max_frame + (max_frame // PIECE + 1) * 16
        """The longest sealed frame read: ``max_frame`` with the tag of each of its pieces."""
        self.dropped: Counter[str] = Counter()
        self._claim = f"{name}@{advertise}".encode()
        self._links: dict[str, _Link] = {}
        self._fds: dict[int, _Link | _Inbound] = {}
        self._ready: deque[tuple[str, bytes]] = deque()
        self._due: set[_Link] = set()
        """Links with frames waiting and no connection: dialled again once their ``retry_at`` passes."""
        self._retrying = False
        self._closed = False
        self._holding = False
        self._held: set[_Link] = set()
        """Links with frames sent while :meth:`hold` lasts, written by :meth:`release` (or :meth:`flush`)."""
        self._ungreeted: dict[int, _Inbound] = {}
        """Connections whose greeting has not come, oldest first."""
        self._epoll = select.epoll()
        self._listener = self._listen(bind)
        self._listen_fd = self._listener.fileno()
        self._epoll.register(self._listen_fd, select.EPOLLIN)
        host, port = self._listener.getsockname()[:2]
        self.bound = f"tcp://{'[' + host + ']' if ':' in host else host}:{port}"
        if self.keys is None:
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
        if self._closed:
            return
        if len(frame) > self.max_frame:
            raise FrameTooLarge(f"a frame of {len(frame)} bytes is above the limit of {self.max_frame}")
        link = self._link(to)
        if link is None:
            raise UnknownPeer(to)
        link.pending.append(frame)
        if link.sock is None:
            self._dial(link)
        elif link.secure and not link.out:
            if self._holding:
                self._held.add(link)
            else:
                self._flush(link)

    def hold(self) -> None:
        """Keep what is sent from now on until :meth:`release`, then write each peer's in one go (the
        runtime holds while it handles the frames read in one wake-up)."""
        self._holding = True

    def release(self) -> None:
        """Write what :meth:`hold` kept, and send at once again."""
        self._holding = False
        self._write_held()

    def _write_held(self) -> None:
        held, self._held = self._held, set()
        for link in held:
            if link.sock is not None and link.secure and not link.out:
                self._flush(link)

    def connect(self, names: list[str]) -> None:
        """Dial ``names`` now, before anything is sent to them (with keys, the handshake's first half
        goes at once); a name without an address or a key is left alone."""
        for name in names:
            if name not in self._links and not self._closed and (link := self._link(name)) is not None:
                self._dial(link)

    def connected(self) -> bool:
        """Every connection this process made is up, with keys handshake done (or given up on)."""
        return all(link.secure or link.sock is None for link in self._links.values())

    def _link(self, to: str) -> _Link | None:
        """The link to ``to``, made on first use (None: no address, or with keys no key, for it)."""
        link = self._links.get(to)
        if link is None:
            address = self.peers.get(to)
            if address is None or (self.keys is not None and to not in self.keys.public):
                return None
            link = self._links[to] = _Link(to, address)
        return link

    def flush(self) -> None:
        """Write what :meth:`hold` keeps so far and serve what the sockets say now (a connection up, room
        to write again), so that what waits is written: the runtime working through a long backlog of
        read frames reads no events meanwhile."""
        self._write_held()
        for fd, mask in self._epoll.poll(0):
            self._event(fd, mask)

    @staticmethod
    def _wire(link: _Link, frame: bytes) -> bytes:
        return _framed(frame if link.cipher is None else link.cipher.seal(frame))

    def _dial(self, link: _Link) -> None:
        """Start a connection to ``link``'s peer (unless a refusal was too recent: a retry is due)."""
        now = time.monotonic()
        if now < link.retry_at:
            self._due.add(link)
            self._retry_later()
            return
        self._due.discard(link)
        sock = None
        try:
            family, sockaddr = _sockaddr(link.address)
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            code = sock.connect_ex(sockaddr)
        except (OSError, ValueError):  # a name that does not resolve now, no descriptor left
            code = -1
        if sock is None or code not in (0, errno.EINPROGRESS):
            if sock is not None:
                sock.close()
            if code == -1:
                self.dropped["connect-failed"] += 1
            link.retry_at = now + RETRY
            self._due.add(link)
            self._retry_later()
            return
        link.sock = sock
        if self.keys is None:
            link.out = _framed(HELLO + self._claim)
        else:
            link.noise = self.keys.session(self.keys.public[link.name])
            link.out = _framed(bytes(link.noise.write_message(self._claim)))
            self._later(HANDSHAKE, self._handshake_due, link, sock)
        link.frames, link.offset, link.watching = [], 0, True
        self._fds[sock.fileno()] = link
        self._epoll.register(sock.fileno(), _OUT)

    def _retry_later(self) -> None:
        """Dial again the links whose peer refused, in :data:`RETRY` seconds (on the running event loop;
        without one, at the next receive)."""
        if not self._retrying:
            self._retrying = self._later(RETRY, self._redial)

    @staticmethod
    def _later(delay: float, fn: Any, *args: Any) -> bool:
        """Call ``fn(*args)`` in ``delay`` seconds on the running event loop (False: there is none)."""
        try:
            asyncio.get_running_loop().call_later(delay, fn, *args)
        except RuntimeError:
            return False
        return True

    def _redial(self) -> None:
        self._retrying = False
        if not self._closed:
            self._redial_due()

    def _handshake_due(self, link: _Link, sock: socket.socket) -> None:
        """The peer never answered the greeting on ``sock``: drop that connection and make another."""
        if not self._closed and link.sock is sock and not link.secure:
            self.dropped["handshake-timeout"] += 1
            self._lost(link)

    def _redial_due(self) -> None:
        now = time.monotonic()
        for link in list(self._due):
            if link.sock is not None or not link.pending:
                self._due.discard(link)
            elif now >= link.retry_at:
                self._dial(link)
        if self._due:
            self._retry_later()

    def _drop(self, sock: socket.socket) -> None:
        """Stop watching ``sock`` and close it."""
        self._ungreeted.pop(sock.fileno(), None)
        self._fds.pop(sock.fileno(), None)
        self._epoll.unregister(sock.fileno())
        sock.close()

    def _lost(self, link: _Link) -> None:
        """Forget ``link``'s connection (dropping the frames half written on it), and dial again in
        :data:`RETRY` seconds if frames wait."""
        if link.sock is not None:
            self._drop(link.sock)
        if link.frames and link.offset == 0:
            link.pending.extendleft(reversed(link.frames))  # not started: they go over the next connection
        link.sock, link.secure, link.noise, link.cipher = None, False, None, None
        link.out, link.frames, link.offset = b"", [], 0
        link.buf.clear()
        link.retry_at = time.monotonic() + RETRY
        if link.pending:
            self._dial(link)

    def _flush(self, link: _Link) -> None:
        """Write what waits for ``link`` until done or the kernel's buffer is full (then wait for
        ``EPOLLOUT``): every frame waiting in one write."""
        sock = link.sock
        assert sock is not None
        pending = link.pending
        while True:
            if not link.out:
                if not pending or not link.secure:
                    break
                link.frames = frames = list(pending)
                pending.clear()
                link.out = b"".join([self._wire(link, frame) for frame in frames])
                link.offset = 0
            out = link.out
            try:
                n = sock.send(memoryview(out)[link.offset :] if link.offset else out)
            except BlockingIOError:
                n = 0
            except OSError:
                self._lost(link)
                return
            link.offset += n
            if link.offset < len(out):
                if not link.watching:
                    link.watching = True
                    self._epoll.modify(sock.fileno(), _OUT)
                return
            link.out, link.frames, link.offset = b"", [], 0
            if not link.secure and link.noise is None:
                link.secure = True  # the plain greeting is out: frames may follow
        if link.watching:
            link.watching = False
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
        elif mask & select.EPOLLIN:
            self._answer(conn)
        elif mask & _GONE:
            self._lost(conn)
        else:
            self._flush(conn)

    def _answer(self, link: _Link) -> None:
        """Read on a connection this process made: with keys the peer's one answer to the greeting;
        anything else (the peer closed it, or sent what it should not) ends the connection."""
        sock = link.sock
        assert sock is not None
        n = self._receive(sock)
        if n is None:
            return
        if not n or link.noise is None or link.secure:
            self._lost(link)
            return
        link.buf += _INBOX[:n]
        if len(link.buf) < HEADER:
            return
        n = int.from_bytes(link.buf[:HEADER], "big")
        if len(link.buf) < HEADER + n:
            if n > GREETING:
                self._lost(link)
            return
        try:
            link.noise.read_message(bytes(link.buf[HEADER : HEADER + n]))
        except Exception:  # noise raises several kinds for a wrong answer
            self.dropped["unauthenticated"] += 1
            self._lost(link)
            return
        link.buf.clear()
        link.cipher = _ciphers(link.noise)[0]
        link.secure = True
        self._flush(link)

    def _receive(self, sock: socket.socket) -> int | None:
        """Bytes read from ``sock`` into :data:`_INBOX` (0: the connection ended; None: none yet)."""
        try:
            return sock.recv_into(_INBOX)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return 0

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError:  # out of descriptors: stop listening a while (the queue would spin)
                self.dropped["accept-failed"] += 1
                self._epoll.modify(self._listen_fd, 0)
                if not self._later(RETRY, self._listen_again):
                    self._epoll.modify(self._listen_fd, select.EPOLLIN)
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = self._fds[sock.fileno()] = _Inbound(sock)
            self._epoll.register(sock.fileno(), _IN)
            self._ungreeted[sock.fileno()] = conn
            if len(self._ungreeted) > UNGREETED:
                self.dropped["ungreeted"] += 1
                self._drop(next(iter(self._ungreeted.values())).sock)

    def _listen_again(self) -> None:
        if not self._closed:
            self._epoll.modify(self._listen_fd, select.EPOLLIN)

    def _read(self, conn: _Inbound) -> None:
        got = self._receive(conn.sock)
        if got is None:
            return
        if not got:
            self._drop(conn.sock)
            return
        buf = conn.buf
        buf += _INBOX[:got]
        at, end = 0, len(buf)
        while end - at >= HEADER:
            n = int.from_bytes(buf[at : at + HEADER], "big")
            if n > conn.limit:
                self.dropped["too-large"] += 1
                self._drop(conn.sock)
                return
            if end - at - HEADER < n:
                break
            frame = bytes(buf[at + HEADER : at + HEADER + n])
            at += HEADER + n
            if conn.sender is None:
                if not self._greeted(conn, frame):
                    self._drop(conn.sock)
                    return
                self._ungreeted.pop(conn.sock.fileno(), None)
                continue
            if conn.cipher is not None:
                try:
                    frame = conn.cipher.open(frame)
                except Exception:  # a forged or damaged frame (InvalidTag): the stream is lost
                    self.dropped["unauthenticated"] += 1
                    self._drop(conn.sock)
                    return
                if len(frame) > self.max_frame:  # the tags' allowance let it through
                    self.dropped["too-large"] += 1
                    self._drop(conn.sock)
                    return
                if conn.claim is not None:  # the connection is live: its claim can teach
                    claim, conn.claim = conn.claim, None
                    self.learn(claim)
            self._ready.append((conn.sender, frame))
        del buf[:at]

    def _greeted(self, conn: _Inbound, frame: bytes) -> bool:
        """Take a connection's first frame: its sender's name (with keys: the owner of the key its
        handshake proves, answered with the handshake's second message). False: close it."""
        if self.keys is None:
            if not frame.startswith(HELLO):
                self.dropped["bad-envelope"] += 1
                return False
            conn.sender, conn.limit = self.learn(frame[len(HELLO) :]), self.max_frame
            return True
        noise = self.keys.session(None)
        try:
            claim = bytes(noise.read_message(frame))
            key = noise.noise_protocol.handshake_state.rs.public_bytes
        except Exception:  # not a handshake made with a key pair
            self.dropped["bad-envelope"] += 1
            return False
        owner = self.keys.owner.get(key)
        if owner is None:
            self.dropped["unknown-key"] += 1
            return False
        answer = _framed(bytes(noise.write_message()))
        try:
            if conn.sock.send(answer) < len(answer):
                return False
        except OSError:
            return False
        if self._parse(claim)[0] == owner and owner not in self.known:
            conn.claim = claim  # a controller: answered where it says it listens, once proved live
        conn.sender, conn.cipher, conn.limit = owner, _ciphers(noise)[1], self._sealed_max
        return True

    def forget(self, name: str) -> None:
        """A controller came back under a new address: the next send to it dials that one."""
        link = self._links.pop(name, None)
        if link is not None:
            if link.sock is not None:
                self._drop(link.sock)
            self._due.discard(link)

    def close(self, linger: int | None = None) -> None:
        """Close every connection (once; again is harmless), first writing what waits for up to ``linger``
        ms (None: 1 s, as the ZeroMQ socket; 0: drop it, as a killed process would)."""
        if self._closed:
            return
        self._closed = True
        self._epoll.unregister(self._listen_fd)
        for conn in [c for c in self._fds.values() if isinstance(c, _Inbound)]:
            self._drop(conn.sock)
        deadline = time.monotonic() + (1.0 if linger is None else linger / 1000)
        while waiting := [link for link in self._links.values() if link.pending or link.out]:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for link in waiting:
                if link.sock is None and time.monotonic() >= link.retry_at:
                    self._dial(link)  # a refused peer is tried again while the linger lasts
            for fd, mask in self._epoll.poll(min(left, 0.05)):
                self._event(fd, mask)
        for item in list(self._fds.values()):
            if item.sock is not None:
                item.sock.close()
        self._fds.clear()
        self._listener.close()
        self._epoll.close()
