"""The real runtime runs a core's long timer handler off its event loop (TetriSched's solve): the loop
keeps running, and what arrives meanwhile is handled after, in order."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections import Counter
from typing import Any

import pytest
import uvloop

from aviary.common import runtime as runtime_module
from aviary.common.cluster import Peers
from aviary.common.core import Core
from aviary.common.effects import Send, SetTimer
from aviary.common.messages import Hello, JobDone, decode, encode
from aviary.common.runtime import Runtime
from aviary.common.tcp_transport import TcpTransport
from aviary.common.transport import Transport

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Slow(Core):
    """On start, a timer whose handler takes 0.3 s; records the order of what it handles."""

    role = "central"
    offloop = frozenset({"solve"})

    def __init__(self) -> None:
        super().__init__("core")
        self.seen: list[str] = []

    def start(self, now):
        return [SetTimer("solve", 0.0)]

    def on_timer(self, now, key):
        self.seen.append("solve begins")
        time.sleep(0.3)
        self.seen.append("solve ends")
        return [Send("peer", JobDone(1, 0.0))]

    def on_message(self, now, sender, msg):
        self.seen.append(f"message {msg.job_id}")
        return [Send("peer", JobDone(msg.job_id + 100, 0.0))]


def test_a_long_timer_handler_runs_off_the_loop_and_inputs_wait_in_order():
    a, b = free_port(), free_port()
    core_addr, peer_addr = f"tcp://127.0.0.1:{a}", f"tcp://127.0.0.1:{b}"
    peers = {"core": core_addr, "peer": peer_addr}
    core = Slow()

    async def scenario():
        runtime = Runtime(core, Transport("core", core_addr, core_addr, peers))
        peer = Transport("peer", peer_addr, peer_addr, peers)
        task = asyncio.ensure_future(runtime.run())
        gaps, last = [], time.monotonic()
        await asyncio.sleep(0.05)  # the solve has begun in its thread
        for job_id in (7, 8):
            peer.send("core", encode(JobDone(job_id, 0.0)))
        peer.send("core", encode(Hello()))
        got, deadline = [], time.monotonic() + 5
        while len(got) < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now
            while (item := peer.recv()) is not None:
                got.append(decode(item[1]))
        runtime.stop()
        await task
        return gaps, got

    gaps, got = uvloop.run(scenario())
    # The loop ran all along (answering Hello during the solve); the messages waited for the solve.
    assert max(gaps) < 0.2
    assert type(got[0]).__name__ == "Register"
    assert [m.job_id for m in got[1:]] == [1, 107, 108]
    assert core.seen == ["solve begins", "solve ends", "message 7", "message 8"]


def test_a_runtime_stopped_before_its_run_began_returns_at_once():
    """``aviary replay --dashboard`` stops its frontend's runtime when the dashboard fails to start, which
    can come before the runtime's task ran at all: the replay exits, it does not wait for ever."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    core = Slow()

    async def scenario() -> None:
        runtime = Runtime(core, Transport("core", address, address, {"core": address}))
        task = asyncio.ensure_future(runtime.run())
        runtime.stop()  # the task has not started yet
        await asyncio.wait_for(task, 2.0)
        runtime.transport.close()

    uvloop.run(scenario())
    assert core.seen == []  # not even started: its timer never fired


def test_a_paused_runtime_reads_nothing_and_fires_no_timer_until_it_resumes_then_all_in_order():
    """What ``stop NAME`` does to a packed node (``--fail NAME@T+PAUSE``): frozen as by SIGSTOP."""

    class Ticker(Core):
        role = "node"

        def __init__(self) -> None:
            super().__init__("core")
            self.seen: list[str] = []

        def start(self, now):
            return [SetTimer("tick", 0.05)]

        def on_timer(self, now, key):
            self.seen.append("tick")
            return []

        def on_message(self, now, sender, msg):
            self.seen.append(f"message {msg.job_id}")
            return []

    a, b = free_port(), free_port()
    core_addr, peer_addr = f"tcp://127.0.0.1:{a}", f"tcp://127.0.0.1:{b}"
    peers = {"core": core_addr, "peer": peer_addr}
    core = Ticker()

    async def scenario() -> tuple[list[str], list[str], list[Any]]:
        runtime = Runtime(core, Transport("core", core_addr, core_addr, peers))
        peer = Transport("peer", peer_addr, peer_addr, peers)
        task = asyncio.ensure_future(runtime.run())
        await asyncio.sleep(0.01)
        runtime.pause()
        peer.send("core", encode(JobDone(7, 0.0)))
        peer.send("core", encode(Hello()))
        await asyncio.sleep(0.3)  # the timer's time and the frames' arrival pass while it is frozen
        frozen, answers = list(core.seen), []
        while (item := peer.recv()) is not None:
            answers.append(item)
        runtime.resume()
        await asyncio.sleep(0.1)
        while (item := peer.recv()) is not None:
            answers.append(decode(item[1]))
        runtime.stop()
        await task
        peer.close()
        return frozen, list(core.seen), answers

    frozen, after, answers = uvloop.run(scenario())
    assert frozen == []
    assert after == ["tick", "message 7"]  # what waited first, then the frames in their order
    assert [type(m).__name__ for m in answers] == ["Register"]  # the Hello answered only after resuming


@pytest.mark.parametrize("wire", [Transport, TcpTransport])
def test_a_runtime_working_through_a_backlog_tells_the_frontend_it_lives(wire, monkeypatch):
    """A scheduler handing out a big job at 1,000 nodes works through frames for seconds: the frontend's
    next ``Hello`` waits behind them, so the runtime beats (an unasked ``Register``) every BEAT s, and
    the beats go out at once (the tcp transport writes at the end of a turn: a backlog is one long turn,
    so the runtime flushes as it goes)."""

    class Busy(Core):
        role = "scheduler"

        def on_message(self, now, sender, msg):
            time.sleep(0.004)
            return []

    a, b = free_port(), free_port()
    core_addr, fe_addr = f"tcp://127.0.0.1:{a}", f"tcp://127.0.0.1:{b}"
    peers = {"core": core_addr, "frontend": fe_addr}

    runtime = Runtime(Busy("core"), wire("core", core_addr, core_addr, peers))
    frontend = wire("frontend", fe_addr, fe_addr, peers)
    heard: list[tuple[float, str]] = []
    monkeypatch.setattr(runtime_module, "BEAT", 0.2)  # checked every 64 frames: every ~0.26 s here

    def listen(start: float) -> None:  # the frontend, in a thread of its own: when each frame comes
        while time.monotonic() - start < 1.3:
            item = frontend.recv()
            if item is None:
                time.sleep(0.005)
            else:
                heard.append((time.monotonic() - start, type(decode(item[1])).__name__))

    async def scenario() -> None:
        task = asyncio.ensure_future(runtime.run())
        await asyncio.sleep(1.1)
        runtime.stop()
        await task

    frontend.send("core", encode(Hello(1)))
    for i in range(250):  # 1 s of work behind the Hello
        frontend.send("core", encode(JobDone(i, 0.0)))
    listener = threading.Thread(target=listen, args=(time.monotonic(),))
    listener.start()
    uvloop.run(scenario())
    listener.join()
    frontend.close()
    assert {kind for _, kind in heard} == {"Register"}
    assert len(heard) >= 3, heard  # the answer, then the beats
    assert sum(at < 0.9 for at, _ in heard) >= 2, heard  # they come while the backlog lasts


@pytest.mark.parametrize("wire", [Transport, TcpTransport])
def test_a_process_connects_to_the_roles_it_works_with_as_it_starts(wire):
    """A node dials the schedulers and the central before any work (a warm testbed: the first jobs do not
    pay for a thousand connections and key handshakes); not the other nodes, nor the frontend."""
    names = ["node-0", "node-1", "sched-0", "central", "frontend"]
    roles = ["node", "node", "scheduler", "central", "frontend"]
    peers = Peers({n: f"tcp://127.0.0.1:{free_port()}" for n in names})
    peers.roles = dict(zip(names, roles, strict=True))
    others = {n: wire(n, peers[n], peers[n], peers) for n in names[1:]}

    class Node(Core):
        role = "node"

    async def scenario() -> set[str]:
        runtime = Runtime(Node("node-0"), wire("node-0", peers["node-0"], peers["node-0"], peers))
        task = asyncio.ensure_future(runtime.run())
        await asyncio.sleep(0.3)
        told = set(getattr(runtime.transport, "_ids", {}))  # ZeroMQ: the peers its socket connects to
        if wire is TcpTransport:  # the peers that saw a connection greet them as node-0
            for other in others.values():
                other.recv()
            senders = {n: {getattr(c, "sender", "") for c in t._fds.values()} for n, t in others.items()}
            told = {n for n, seen in senders.items() if "node-0" in seen}
        runtime.stop()
        await task
        runtime.transport.close()
        return told

    told = uvloop.run(scenario())
    for other in others.values():
        other.close()
    assert told == {"sched-0", "central"}


class _Wire:
    """A transport without sockets: frames put in by the test (a pipe wakes the loop), frames sent kept,
    and whether the connections made at the start are up."""

    roles: dict[str, str] = {}
    controllers = frozenset({"frontend"})

    def __init__(self) -> None:
        self.fd, self._bell = os.pipe()
        self.inbox: list[tuple[str, bytes]] = []
        self.sent: list[tuple[str, Any]] = []
        self.up = False
        self.dropped: Counter[str] = Counter()
        self.holding = False
        self.held: list[bool] = []  # whether each send came while the runtime held the transport

    def put(self, sender: str, msg: Any) -> None:
        self.inbox.append((sender, encode(msg)))
        os.write(self._bell, b"x")

    def recv(self) -> tuple[str, bytes] | None:
        if not self.inbox:
            return None
        os.read(self.fd, 1)
        return self.inbox.pop(0)

    def send(self, to: str, frame: bytes) -> None:
        self.sent.append((to, type(decode(frame)).__name__))
        self.held.append(self.holding)

    def connected(self) -> bool:
        return self.up

    def readable(self) -> bool:
        return bool(self.inbox)

    def connect(self, names: list[str]) -> None:
        pass

    def flush(self) -> None:
        pass

    def hold(self) -> None:
        self.holding = True

    def release(self) -> None:
        self.holding = False

    def counts(self) -> Counter[str]:
        return Counter()


def test_registration_waits_for_the_connections_made_at_the_start(monkeypatch):
    """The frontend's registration ``Hello``s go unanswered while the process's first connections are
    being made (it says ``Hello`` again), so a replay begins on a warm testbed; never longer than WARM_UP."""
    monkeypatch.setattr(runtime_module, "WARM_UP", 0.3)
    wire = _Wire()

    class Node(Core):
        role = "node"

    async def scenario() -> list[list[tuple[str, Any]]]:
        runtime = Runtime(Node("node-0"), wire)  # type: ignore[arg-type]
        task = asyncio.ensure_future(runtime.run())
        seen = []
        for up in (False, True):
            wire.up = up
            wire.put("frontend", Hello(1))
            await asyncio.sleep(0.05)
            seen.append(list(wire.sent))
        runtime.stop()
        await task
        return seen

    before, after = uvloop.run(scenario())
    assert before == [] and after == [("frontend", "Register")]
    assert wire.held == [True] and not wire.holding  # sent while the frames read were handled, then released

    wire = _Wire()  # never connected: answered all the same once WARM_UP passed

    async def late() -> list[tuple[str, Any]]:
        runtime = Runtime(Node("node-0"), wire)  # type: ignore[arg-type]
        task = asyncio.ensure_future(runtime.run())
        await asyncio.sleep(0.35)
        wire.put("frontend", Hello(1))
        await asyncio.sleep(0.05)
        runtime.stop()
        await task
        return list(wire.sent)

    assert uvloop.run(late()) == [("frontend", "Register")]
