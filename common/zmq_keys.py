"""The ZeroMQ side of a keyed cluster (:mod:`.keys`): the ZAP handler that admits the cluster's keys
(:class:`Gate`, pyzmq's ``ThreadAuthenticator``) and the monitor that counts peers offering no key or a
wrong one (:class:`Watch`). Only the ZeroMQ transport imports it."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections import Counter
from typing import Any

import zmq
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

log = logging.getLogger("aviary.keys")


class Gate(ThreadAuthenticator):
    """The ZAP handler of one ZeroMQ context: per ZAP domain (one per socket), the public keys it admits
    and the process each names. ``refused`` counts refusals by domain; each address is logged once."""

    _gates: dict[int, Gate] = {}
    _lock = threading.Lock()

    def __init__(self, context: zmq.Context[Any]) -> None:
        quiet = logging.getLogger("aviary.keys.zap")  # pyzmq's own debug lines name keys: keep them off
        quiet.setLevel(logging.WARNING)
        super().__init__(context, log=quiet)
        self.names: dict[str, dict[bytes, str]] = {}
        self.refused: Counter[str] = Counter()
        self.logged: set[str] = set()
        self._domain = ""
        self._address = ""

    @classmethod
    def of(cls, context: zmq.Context[Any]) -> Gate:
        """The context's gate, started on first use."""
        with cls._lock:
            gate = cls._gates.get(id(context))
            if gate is None or not gate.is_alive():
                gate = cls._gates[id(context)] = cls(context)
                gate.start()
            return gate

    def start(self, patience: float = 2.0) -> None:
        """Start, waiting up to ``patience`` seconds for a gate just stopped to let go of ZAP's endpoint
        (ZeroMQ closes sockets in the background)."""
        deadline = time.monotonic() + patience
        while True:
            try:
                super().start()
                return
            except zmq.ZMQError as exc:
                if self.zap_socket is not None:
                    self.zap_socket.close(linger=0)
                    self.zap_socket = None  # type: ignore[assignment]
                if exc.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def admit(self, domain: str, names: dict[bytes, str]) -> None:
        self.names[domain] = dict(names)
        self.configure_curve_callback(domain, self)

    def forget(self, domain: str) -> None:
        """Stop admitting clients in ``domain``; the gate stops with its last domain."""
        self.names.pop(domain, None)
        self.credentials_providers.pop(domain, None)
        if not self.names:
            with self._lock:
                if self._gates.get(id(self.context)) is self:
                    del self._gates[id(self.context)]
            self.stop()

    def callback(self, domain: str, key: bytes) -> bool:
        """pyzmq's credentials provider: is ``key`` (z85) one of ``domain``'s?"""
        if key in self.names.get(domain, {}):
            return True
        self.refused[domain] += 1
        if self._address not in self.logged and len(self.logged) < 10_000:
            self.logged.add(self._address)
            log.warning(
                "refused a connection from %s: its key is not one of the cluster's "
                "(further refusals from that address are only counted)",
                self._address or "an unknown address",
            )
        return False

    def curve_user_id(self, client_public_key: bytes) -> str:
        return self.names.get(self._domain, {}).get(z85.encode(client_public_key), "")

    async def handle_zap_message(self, msg: list[bytes]) -> None:
        # One request at a time on the handler's thread: note where it came from for the callbacks.
        self._domain = msg[2].decode(errors="replace") if len(msg) > 2 else ""
        self._address = msg[3].decode(errors="replace") if len(msg) > 3 else ""
        await super().handle_zap_message(msg)


class _Watched:
    """One watched socket: its label, the counters it counts into, and what its monitor told so far."""

    __slots__ = ("accepted", "counts", "failed", "label", "logged")

    def __init__(self, label: str, counts: Counter[str]) -> None:
        self.label = label
        self.counts = counts
        self.accepted: dict[int, str] = {}
        self.failed = False
        self.logged: set[str] = set()

    def event(self, kind: int, fd: int) -> None:
        if kind == zmq.EVENT_ACCEPTED:
            self.accepted[fd] = _peer(fd)
            if len(self.accepted) > 10_000:  # descriptors whose close we missed
                self.accepted.clear()
        elif kind == zmq.EVENT_DISCONNECTED:
            address = self.accepted.pop(fd, "")
            if self.failed:
                self._refused(address)
            self.failed = False
        elif kind in (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
            self.failed = True

    def _refused(self, address: str) -> None:
        self.counts["no-key"] += 1
        if address not in self.logged and len(self.logged) < 10_000:
            self.logged.add(address)
            log.warning(
                "%s: refused a connection from %s at the handshake: it offered no key of the cluster "
                "(further refusals from that address are only counted)",
                self.label,
                address or "an unknown address",
            )


class Watch(threading.Thread):
    """Counts (``counts["no-key"]``) and logs once per address the connections of a CURVE socket that
    fail their handshake for want of a key (or with a wrong one): ZeroMQ asks no ZAP handler about them.

    One thread per ZeroMQ context reads the monitors of all its watched sockets (a pack of 50 nodes has
    50), and sleeps until one has an event or a socket comes or goes: a thread per socket polling its
    monitor every 0.1 s cost a pack 3 % of a core and its loop the GIL, 500 times a second. A monitor
    says which descriptor was accepted from where, that a handshake failed, then which descriptor
    closed: events of one connection come in that order from ZeroMQ's I/O thread."""

    EVENTS = (
        zmq.EVENT_ACCEPTED
        | zmq.EVENT_DISCONNECTED
        | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
        | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    )
    _watches: dict[int, Watch] = {}
    _lock = threading.Lock()
    _made = 0

    def __init__(self, context: zmq.Context[Any]) -> None:
        super().__init__(daemon=True, name="aviary-watch")
        Watch._made += 1
        address = f"inproc://aviary-watch-{os.getpid()}-{Watch._made}"
        self._wake = context.socket(zmq.PAIR)
        self._wake.bind(address)
        self._bell = context.socket(zmq.PAIR)
        self._bell.connect(address)
        self._ops: list[tuple[zmq.Socket[Any] | None, _Watched | None]] = []
        """Monitors to start reading (with their socket's state) or to close (None), and None, None to
        end; rung in by :meth:`_ring` under the class lock."""
        self._sockets = 0

    @classmethod
    def watch(cls, sock: zmq.Socket[Any], label: str, counts: Counter[str]) -> zmq.Socket[Any]:
        """Watch ``sock`` (on its context's thread, started on first use); the monitor, for
        :meth:`unwatch`."""
        monitor = sock.get_monitor_socket(cls.EVENTS)
        with cls._lock:
            watch = cls._watches.get(id(sock.context))
            if watch is None:
                watch = cls._watches[id(sock.context)] = cls(sock.context)
                watch.start()
            watch._sockets += 1
            watch._ring(monitor, _Watched(label, counts))
        return monitor

    @classmethod
    def unwatch(cls, sock: zmq.Socket[Any], monitor: zmq.Socket[Any]) -> None:
        """Stop watching ``sock``; the thread ends with its context's last socket."""
        sock.disable_monitor()
        with cls._lock:
            watch = cls._watches.get(id(sock.context))
            if watch is None:
                return
            watch._ring(monitor, None)
            watch._sockets -= 1
            if watch._sockets == 0:
                del cls._watches[id(sock.context)]
                watch._ring(None, None)
        if watch._sockets == 0:
            watch.join(1.0)

    def _ring(self, monitor: zmq.Socket[Any] | None, watched: _Watched | None) -> None:
        """(Under the class lock.) Queue one operation and wake the thread (a full bell: it is awake
        already, and takes every operation queued when it wakes)."""
        self._ops.append((monitor, watched))
        with contextlib.suppress(zmq.Again):
            self._bell.send(b"", zmq.NOBLOCK)

    def run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._wake, zmq.POLLIN)
        watched: dict[zmq.Socket[Any], _Watched] = {}
        try:
            while True:
                for sock, _ in poller.poll():
                    if sock is self._wake:
                        if not self._operate(poller, watched):
                            return
                        continue
                    state = watched.get(sock)
                    while state is not None:
                        try:
                            event = recv_monitor_message(sock, zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        state.event(event["event"], event["value"])
        except zmq.ZMQError:
            pass  # the context is closing
        finally:
            for monitor in watched:
                monitor.close(linger=0)
            self._wake.close(linger=0)
            self._bell.close(linger=0)

    def _operate(self, poller: zmq.Poller, watched: dict[zmq.Socket[Any], _Watched]) -> bool:
        """Carry out what was rung in; False: end."""
        while True:
            try:
                self._wake.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
        with self._lock:
            ops, self._ops = self._ops, []
        for monitor, state in ops:
            if monitor is None:
                return False
            if state is not None:
                watched[monitor] = state
                poller.register(monitor, zmq.POLLIN)
            elif monitor in watched:
                del watched[monitor]
                poller.unregister(monitor)
                monitor.close(linger=0)
        return True


def _peer(fd: int) -> str:
    """The remote IP address of a connected descriptor ("" if it is gone already)."""
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            return str(sock.getpeername()[0])
    except OSError:
        return ""
