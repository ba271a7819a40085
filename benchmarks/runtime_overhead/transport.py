"""What one hop costs: a ping-pong between two processes on loopback, ZeroMQ as the runtime uses it
against plain asyncio TCP, and Aviary's two transports themselves with and without keys, in one run.

    python -m aviary.benchmarks.runtime_overhead transport [--rounds 5000]

Each side is a uvloop loop in its own process. ``zmq``: ROUTER to ROUTER with routing ids, the socket's
descriptor watched by the loop and drained on each wake-up, as :class:`~aviary.common.transport.Transport`
and :class:`~aviary.common.runtime.Runtime` do; ``tcp``: an asyncio ``Protocol`` on one TCP connection,
4-byte length-prefixed frames; then :class:`~aviary.common.transport.Transport` (ZeroMQ) and
:class:`~aviary.common.tcp_transport.TcpTransport`, each bare and with keys (CURVE; Noise), driven as the
runtime drives them. A 40-byte frame (a ``Probe``'s size) goes back and forth ``--rounds`` times; the
figure is the median round trip (two hops) and, beside it, the same frame's encode + decode with the
wire codec. The difference between the first two is what libzmq's I/O threads add per hop.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import socket
import statistics
import struct
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

from aviary.benchmarks.wire.codec import round_trip_ns
from aviary.common import messages
from aviary.common.cluster import Peers, free_ports
from aviary.common.wire import open_transport

FRAME = b"x" * 40


Ends = tuple[Callable[[bytes], None], Callable[[], Awaitable[bytes]]]
Client = Callable[[int], Awaitable[Ends]]
"""Connects to the echo on a port; returns how to send a frame and how to await the echoed one."""


def round_trips(echo: Callable[[int, Any], None], client: Client, rounds: int) -> list[float]:
    """Seconds of each of ``rounds`` round trips of :data:`FRAME` against ``echo(port, ready)`` started in
    a process of its own; a ``stop`` frame ends the echo."""
    import uvloop

    (port,) = free_ports(1)
    spawn = mp.get_context("spawn")  # not fork: this process may hold ZeroMQ's threads by now
    ready = spawn.Event()
    child = spawn.Process(target=echo, args=(port, ready))
    child.start()
    ready.wait(10)
    times: list[float] = []

    async def main() -> None:
        send, receive = await client(port)
        for _ in range(rounds):
            t0 = time.perf_counter()
            send(FRAME)
            await receive()
            times.append(time.perf_counter() - t0)
        send(b"stop")
        await receive()

    uvloop.run(main())
    child.join(10)
    return times


def _zmq_echo(port: int, ready: Any) -> None:
    import uvloop
    import zmq

    async def main() -> None:
        sock: Any = zmq.Context.instance().socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTING_ID, b"echo")
        sock.bind(f"tcp://127.0.0.1:{port}")
        done = asyncio.Event()

        def drain() -> None:
            while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                rid, frame = sock.recv_multipart(zmq.NOBLOCK)
                if frame == b"stop":
                    done.set()
                sock.send_multipart((rid, frame), zmq.NOBLOCK)

        asyncio.get_running_loop().add_reader(sock.getsockopt(zmq.FD), drain)
        ready.set()
        await done.wait()

    uvloop.run(main())


async def _zmq_client(port: int) -> tuple[Callable[[bytes], None], Callable[[], Awaitable[bytes]]]:
    import zmq

    sock: Any = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.ROUTING_ID, b"ping")
    sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
    sock.connect(f"tcp://127.0.0.1:{port}")
    got: asyncio.Queue[bytes] = asyncio.Queue()

    def drain() -> None:
        while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            got.put_nowait(sock.recv_multipart(zmq.NOBLOCK)[1])

    def send(frame: bytes) -> None:
        sock.send_multipart((b"echo", frame), zmq.NOBLOCK)
        drain()  # the send may have taken the descriptor's edge

    asyncio.get_running_loop().add_reader(sock.getsockopt(zmq.FD), drain)
    while True:  # the connection is up once a send is accepted
        try:
            send(FRAME)
            break
        except zmq.ZMQError:
            await asyncio.sleep(0.01)
    await got.get()
    return send, got.get


class _Framed(asyncio.Protocol):
    """4-byte length-prefixed frames on one TCP connection (no Nagle delay)."""

    def __init__(self) -> None:
        self.buf = b""

    def connection_made(self, transport: Any) -> None:
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.transport = transport

    def send(self, frame: bytes) -> None:
        self.transport.write(struct.pack("!I", len(frame)) + frame)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from("!I", self.buf)
            if len(self.buf) < 4 + n:
                return
            frame, self.buf = self.buf[4 : 4 + n], self.buf[4 + n :]
            self.on_frame(frame)

    def on_frame(self, frame: bytes) -> None:
        raise NotImplementedError


class _Echo(_Framed):
    def __init__(self, done: asyncio.Event) -> None:
        super().__init__()
        self.done = done

    def on_frame(self, frame: bytes) -> None:
        if frame == b"stop":
            self.done.set()
        self.send(frame)


class _Ping(_Framed):
    def __init__(self) -> None:
        super().__init__()
        self.got: asyncio.Queue[bytes] = asyncio.Queue()

    def on_frame(self, frame: bytes) -> None:
        self.got.put_nowait(frame)


def _tcp_echo(port: int, ready: Any) -> None:
    import uvloop

    async def main() -> None:
        done = asyncio.Event()
        server = await asyncio.get_running_loop().create_server(lambda: _Echo(done), "127.0.0.1", port)
        ready.set()
        await done.wait()
        server.close()

    uvloop.run(main())


async def _tcp_client(port: int) -> tuple[Callable[[bytes], None], Callable[[], Awaitable[bytes]]]:
    _, ping = await asyncio.get_running_loop().create_connection(_Ping, "127.0.0.1", port)
    return ping.send, ping.got.get


def _book(transport: str, keys: Path | None) -> Peers:
    """The address book of ``echo`` and ``ping`` over ``transport``, with key pairs in ``keys``."""
    ports = free_ports(2)
    book = Peers({"echo": f"tcp://127.0.0.1:{ports[0]}", "ping": f"tcp://127.0.0.1:{ports[1]}"})
    book.transport = transport
    if keys is not None:
        import zmq

        book.key_folder = keys
        for name in book:
            public, secret = zmq.curve_keypair()
            (keys / f"{name}.secret").write_bytes(secret + b"\n")
            book.public[name] = public.decode()
    return book


def _aviary_echo(book: Peers, port: int, ready: Any) -> None:
    import uvloop

    async def main() -> None:
        t = open_transport("echo", book["echo"], book["echo"], book)
        done = asyncio.Event()

        def drain() -> None:
            while (item := t.recv()) is not None:
                sender, frame = item
                if frame == b"stop":
                    done.set()
                t.send(sender, frame)

        loop = asyncio.get_running_loop()
        loop.add_reader(t.fd, drain)
        ready.set()
        await done.wait()
        loop.remove_reader(t.fd)
        t.close()

    uvloop.run(main())


async def _aviary_client(book: Peers, port: int) -> Ends:
    t = open_transport("ping", book["ping"], book["ping"], book)
    got: asyncio.Queue[bytes] = asyncio.Queue()

    def drain() -> None:
        while (item := t.recv()) is not None:
            got.put_nowait(item[1])

    def send(frame: bytes) -> None:
        t.send("echo", frame)
        if t.readable():
            drain()

    asyncio.get_running_loop().add_reader(t.fd, drain)
    _opened.append(t)
    send(FRAME)
    await got.get()
    return send, got.get


_opened: list[Any] = []
"""The client transports of this process, closed once their round trips are done."""


def _aviary(transport: str, keyed: bool, rounds: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="aviary-bench-transport-") as tmp:
        book = _book(transport, Path(tmp) if keyed else None)
        try:
            return round_trips(partial(_aviary_echo, book), partial(_aviary_client, book), rounds)
        finally:
            while _opened:
                _opened.pop().close(linger=0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5000)
    args = p.parse_args(argv)
    zmq_times = round_trips(_zmq_echo, _zmq_client, args.rounds)
    tcp_times = round_trips(_tcp_echo, _tcp_client, args.rounds)
    zmq_us, tcp_us = (statistics.median(t) * 1e6 for t in (zmq_times, tcp_times))
    print("| transport | round trip p50 (µs) | per hop (µs) |\n|---|---|---|")
    print(f"| ZeroMQ ROUTER-ROUTER on uvloop | {zmq_us:.0f} | {zmq_us / 2:.0f} |")
    print(f"| asyncio TCP on uvloop | {tcp_us:.0f} | {tcp_us / 2:.0f} |")
    ours = {}
    for transport, keyed in (("zmq", False), ("zmq", True), ("tcp", False), ("tcp", True)):
        us = ours[transport, keyed] = statistics.median(_aviary(transport, keyed, args.rounds)) * 1e6
        label = f"Aviary's {transport} transport" + (", keyed" if keyed else "")
        print(f"| {label} | {us:.0f} | {us / 2:.0f} |")
    codec, _ = round_trip_ns(messages, "Probe")
    print(f"\nZeroMQ / TCP: {zmq_us / tcp_us:.2f}; the codec's encode + decode of a Probe: {codec:.0f} ns")
    print(
        f"Aviary's zmq / tcp transport: {ours['zmq', False] / ours['tcp', False]:.2f} bare, "
        f"{ours['zmq', True] / ours['tcp', True]:.2f} keyed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
