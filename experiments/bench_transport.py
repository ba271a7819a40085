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
import statistics
import struct
import time
import timeit
from typing import Any

FRAME = b"x" * 40


def _zmq_echo(port: int, ready: Any) -> None:
    import uvloop
    import zmq

    async def main() -> None:
        sock: Any = zmq.Context.instance().socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTING_ID, b"echo")
        sock.bind(f"tcp://127.0.0.1:{port}")
        loop, done = asyncio.get_running_loop(), asyncio.Event()

        def drain() -> None:
            while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                rid, frame = sock.recv_multipart(zmq.NOBLOCK)
                if frame == b"stop":
                    done.set()
                sock.send_multipart((rid, frame), zmq.NOBLOCK)

        loop.add_reader(sock.getsockopt(zmq.FD), drain)
        ready.set()
        await done.wait()

    uvloop.run(main())


def zmq_round_trips(rounds: int) -> list[float]:
    import uvloop
    import zmq

    port, ready = 47391, mp.Event()
    child = mp.Process(target=_zmq_echo, args=(port, ready))
    child.start()
    ready.wait(10)
    times: list[float] = []

    async def main() -> None:
        sock: Any = zmq.Context.instance().socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTING_ID, b"ping")
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.connect(f"tcp://127.0.0.1:{port}")
        loop = asyncio.get_running_loop()
        got: asyncio.Queue[bytes] = asyncio.Queue()

        def drain() -> None:
            while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                got.put_nowait(sock.recv_multipart(zmq.NOBLOCK)[1])

        loop.add_reader(sock.getsockopt(zmq.FD), drain)
        while True:  # the connection is up once a send is accepted
            try:
                sock.send_multipart((b"echo", FRAME), zmq.NOBLOCK)
                break
            except zmq.ZMQError:
                await asyncio.sleep(0.01)
        await got.get()
        for _ in range(rounds):
            t0 = time.perf_counter()
            sock.send_multipart((b"echo", FRAME), zmq.NOBLOCK)
            drain()
            await got.get()
            times.append(time.perf_counter() - t0)
        sock.send_multipart((b"echo", b"stop"), zmq.NOBLOCK)
        await got.get()

    uvloop.run(main())
    child.join(10)
    return times


class _Echo(asyncio.Protocol):
    def __init__(self, done: asyncio.Event) -> None:
        self.buf, self.done = b"", done

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from("!I", self.buf)
            if len(self.buf) < 4 + n:
                return
            frame, self.buf = self.buf[4 : 4 + n], self.buf[4 + n :]
            if frame == b"stop":
                self.done.set()
            self.transport.write(struct.pack("!I", len(frame)) + frame)


def _tcp_echo(port: int, ready: Any) -> None:
    import uvloop

    async def main() -> None:
        done = asyncio.Event()
        server = await asyncio.get_running_loop().create_server(lambda: _Echo(done), "127.0.0.1", port)
        ready.set()
        await done.wait()
        server.close()

    uvloop.run(main())


class _Ping(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf, self.got = b"", asyncio.Queue[bytes]()

    def connection_made(self, transport: Any) -> None:
        transport.get_extra_info("socket").setsockopt(6, 1, 1)  # TCP_NODELAY
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from("!I", self.buf)
            if len(self.buf) < 4 + n:
                return
            frame, self.buf = self.buf[4 : 4 + n], self.buf[4 + n :]
            self.got.put_nowait(frame)


def tcp_round_trips(rounds: int) -> list[float]:
    import uvloop

    port, ready = 47392, mp.Event()
    child = mp.Process(target=_tcp_echo, args=(port, ready))
    child.start()
    ready.wait(10)
    times: list[float] = []

    async def main() -> None:
        _, ping = await asyncio.get_running_loop().create_connection(_Ping, "127.0.0.1", port)
        header = struct.pack("!I", len(FRAME))
        for _ in range(rounds):
            t0 = time.perf_counter()
            ping.transport.write(header + FRAME)
            await ping.got.get()
            times.append(time.perf_counter() - t0)
        ping.transport.write(struct.pack("!I", 4) + b"stop")
        await ping.got.get()

    uvloop.run(main())
    child.join(10)
    return times


def codec_ns() -> float:
    from aviary.common.messages import Probe, decode, encode

    msg = Probe(7, 0.25, 18)
    number = 20000
    return min(timeit.repeat(lambda: decode(encode(msg)), number=number, repeat=5)) / number * 1e9


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5000)
    args = p.parse_args(argv)
    zmq_times, tcp_times = zmq_round_trips(args.rounds), tcp_round_trips(args.rounds)
    zmq_us, tcp_us = (statistics.median(t) * 1e6 for t in (zmq_times, tcp_times))
    print("| transport | round trip p50 (µs) | per hop (µs) |\n|---|---|---|")
    print(f"| ZeroMQ ROUTER-ROUTER on uvloop | {zmq_us:.0f} | {zmq_us / 2:.0f} |")
    print(f"| asyncio TCP on uvloop | {tcp_us:.0f} | {tcp_us / 2:.0f} |")
    print(
        f"\nZeroMQ / TCP: {zmq_us / tcp_us:.2f}; the codec's encode + decode of a Probe: {codec_ns():.0f} ns"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
