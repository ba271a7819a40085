"""What this machine allows before any runtime does any work: the floor under ``aviary bench``'s round trip
and its 10 ms tasks: which part of the path costs what.

    python -m aviary.benchmarks.floors [--rounds 300] [--gap-ms 5]

- **Round trip.** ``aviary bench``'s central FIFO round trip crosses four hops over three processes
  (frontend -> scheduler -> node -> scheduler -> frontend), each process idle in between. Here three
  processes do nothing but pass a 100-byte frame along the same path on loopback TCP: a relay that
  blocks in ``epoll_wait`` and an echo that blocks in ``recv`` (``block``), or uvloop protocols
  (``uvloop``); once with the bench's idle gap between round trips, once back to back. What is left
  of Aviary's round trip above this is Aviary's own work; the relay's CPU a round trip (two frames in,
  two out) is the floor under the scheduler's.
- **Timers.** A 10 ms task is a 10 ms wait: how late ``time.sleep(0.010)`` and uvloop's
  ``call_later(0.010)`` wake up, the floor under the 10 ms efficiency.
- **Cold caches.** The same small work (msgspec decoding one 20-byte msgpack frame into a typed
  ``Struct``, as every hop does) back to back and as the first thing after an idle gap: on a virtual
  machine whose idle CPU is lent out, a process woken after the bench's 5 ms finds its caches cold,
  and every hop's work costs that much more whatever the runtime does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import selectors
import signal
import socket
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import cast

FRAME = b"x" * 100
WARM = 20
"""Round trips before the measured ones (connections and caches warm)."""


def _listen() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def _nodelay(sock: socket.socket) -> socket.socket:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _pass_on(a: socket.socket, b: socket.socket, mode: str) -> None:
    """A process that does no work: what comes from ``a`` goes to ``b`` and back (the scheduler), or
    straight back to ``a`` when ``b`` is ``a`` (the node)."""
    route = {a.fileno(): b.fileno(), b.fileno(): a.fileno()}
    socks = {b.fileno(): b, a.fileno(): a}  # b first: its end is up before a frame can come from a
    if mode == "block":
        sel = selectors.EpollSelector()
        for sock in socks.values():
            sel.register(sock, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                data = socks[key.fd].recv(4096)
                if not data:
                    return
                socks[route[key.fd]].sendall(data)
    import uvloop

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        ends: dict[int, asyncio.Transport] = {}

        class Side(asyncio.Protocol):
            def __init__(self, fd: int) -> None:
                self.fd, self.to = fd, route[fd]

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                ends[self.fd] = cast(asyncio.Transport, transport)  # before any data_received

            def data_received(self, data: bytes) -> None:
                ends[self.to].write(data)

            def connection_lost(self, exc: Exception | None) -> None:
                if not done.done():
                    done.set_result(None)

        for fd, sock in socks.items():
            await loop.connect_accepted_socket(partial(Side, fd), sock)
        await done

    uvloop.run(main())


def _child(fn: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            fn()
        finally:
            os._exit(0)
    return pid


def round_trips(mode: str, rounds: int, gap: float) -> tuple[list[float], float]:
    """Microseconds of each 4-hop round trip through a relay and an echo of ``mode``, and the relay's CPU
    (user + system) per round trip in microseconds."""
    import psutil

    to_relay, to_echo = _listen(), _listen()

    def echo_side() -> None:
        node = _nodelay(to_echo.accept()[0])
        _pass_on(node, node, mode)

    echo = _child(echo_side)
    relay = _child(
        lambda: _pass_on(
            _nodelay(to_relay.accept()[0]), _nodelay(socket.create_connection(to_echo.getsockname())), mode
        )
    )
    client = _nodelay(socket.create_connection(to_relay.getsockname(), timeout=10))
    times = []
    cpu = 0.0
    try:
        for i in range(WARM + rounds):
            if i == WARM:
                cpu = sum(psutil.Process(relay).cpu_times()[:2])
            start = time.perf_counter()
            client.sendall(FRAME)
            got = 0
            while got < len(FRAME):
                data = client.recv(4096)
                if not data:
                    raise RuntimeError(
                        f"the {mode} relay or echo closed the connection (see its error above)"
                    )
                got += len(data)
            times.append((time.perf_counter() - start) * 1e6)
            time.sleep(gap)
        cpu = sum(psutil.Process(relay).cpu_times()[:2]) - cpu
    finally:
        client.close()
        for pid in (relay, echo):  # done with them (a child that failed may wait in accept for ever)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        to_relay.close()
        to_echo.close()
    return times[WARM:], cpu / rounds * 1e6


def _wake(woke: asyncio.Future[float]) -> None:
    woke.set_result(time.monotonic())


def timer_lateness(rounds: int) -> dict[str, float]:
    """Mean microseconds by which a 10 ms ``time.sleep`` and a 10 ms uvloop ``call_later`` wake up late."""
    import uvloop

    slept = []
    for _ in range(rounds):
        start = time.monotonic()
        time.sleep(0.010)
        slept.append((time.monotonic() - start - 0.010) * 1e6)

    async def timers() -> list[float]:
        loop = asyncio.get_running_loop()
        late = []
        for _ in range(rounds):
            woke: asyncio.Future[float] = loop.create_future()
            start = time.monotonic()
            loop.call_later(0.010, _wake, woke)
            late.append((await woke - start - 0.010) * 1e6)
        return late

    return {"sleep": statistics.mean(slept), "call_later": statistics.mean(uvloop.run(timers()))}


def cold_decode(rounds: int, gaps: tuple[float, ...]) -> dict[float, float]:
    """Median microseconds of one msgspec decode, the first after ``gap`` seconds idle, per gap."""
    import msgspec

    class Job(msgspec.Struct, array_like=True, tag=1):
        job_id: int
        durations: list[float]
        estimate: float

    decoder = msgspec.msgpack.Decoder(Job)
    frame = msgspec.msgpack.encode(Job(1, [0.0], 0.0))
    took = {}
    for gap in gaps:
        times = []
        for _ in range(rounds):
            if gap:
                time.sleep(gap)
            start = time.perf_counter_ns()
            decoder.decode(frame)
            times.append((time.perf_counter_ns() - start) / 1000)
        took[gap] = statistics.median(times[WARM:] or times)
    return took


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=300, help="round trips per case (default 300, as the bench)")
    p.add_argument(
        "--gap-ms", type=float, default=5.0, help="idle time between round trips (default 5, as the bench)"
    )
    args = p.parse_args(argv)
    print("4 hops over 3 processes, no work per hop: round trip p50 / p90, the relay's CPU a round trip (us)")
    for mode in ("block", "uvloop"):
        for gap in (args.gap_ms / 1000, 0.0):
            t, cpu = round_trips(mode, args.rounds, gap)
            t.sort()
            p50, p90 = statistics.median(t), t[9 * len(t) // 10]
            print(f"  {mode:6s} gap {gap * 1000:g} ms: {p50:6.0f} / {p90:6.0f}, CPU {cpu:4.0f}")
    late = timer_lateness(args.rounds)
    print(f"10 ms waits, lateness (us): time.sleep {late['sleep']:.0f}, call_later {late['call_later']:.0f}")
    cold = cold_decode(args.rounds, (0.0, 0.0005, args.gap_ms / 1000))
    print(
        "one msgpack decode, p50 (us): back to back "
        + ", ".join(
            f"{us:.1f}" if not gap else f"after {gap * 1000:g} ms idle {us:.1f}" for gap, us in cold.items()
        )
    )


if __name__ == "__main__":
    main()
