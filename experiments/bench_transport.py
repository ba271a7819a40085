"""What one hop costs: a ping-pong between two processes on loopback, ZeroMQ as the runtime uses it
against plain asyncio TCP, in one run (issue 27's "which part of the path costs what").

    python -m aviary.experiments.bench_transport [--rounds 5000]

Each side is a uvloop loop in its own process. ``zmq``: ROUTER to ROUTER with routing ids, the socket's
descriptor watched by the loop and drained on each wake-up, as :class:`~aviary.common.transport.Transport`
and :class:`~aviary.common.runtime.Runtime` do; ``tcp``: an asyncio ``Protocol`` on one TCP connection,
4-byte length-prefixed frames. A 40-byte frame (a ``Probe``'s size) goes back and forth ``--rounds``
times; the figure is the median round trip (two hops) and, beside it, the same frame's encode + decode
with the wire codec. The difference between the two transports is what libzmq's I/O threads add per hop.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import socket
import statistics
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aviary.common import messages
from aviary.common.cluster import free_ports
from aviary.experiments.bench_codec import round_trip_ns

FRAME = b"x" * 40


Client = Callable[[int], Awaitable[tuple[Callable[[bytes], None], Callable[[], Awaitable[bytes]]]]]
"""Connects to the echo on a port; returns how to send a frame and how to await the echoed one."""


def round_trips(echo: Callable[[int, Any], None], client: Client, rounds: int) -> list[float]:
    """Seconds of each of ``rounds`` round trips of :data:`FRAME` against ``echo(port, ready)`` started in
    a process of its own; a ``stop`` frame ends the echo."""
    import uvloop

    (port,) = free_ports(1)
    ready = mp.Event()
    child = mp.Process(target=echo, args=(port, ready))
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
    codec, _ = round_trip_ns(messages, "Probe")
    print(f"\nZeroMQ / TCP: {zmq_us / tcp_us:.2f}; the codec's encode + decode of a Probe: {codec:.0f} ns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
