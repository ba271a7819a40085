"""The real runtime's link layer (common/linklayer.py) between two processes over an in-memory wire:
faults injected on what each sends, and what each hands on is every frame once and in order."""

from __future__ import annotations

import asyncio

import pytest

from aviary.common import links
from aviary.common.addresses import UnknownPeer
from aviary.common.linklayer import LinkLayer
from aviary.common.messages import Link, decode

ROLES = {"a": "node", "b": "scheduler"}


class Wire:
    """Two processes' transports: what one sends, the other's inbox gets (at once)."""

    def __init__(self) -> None:
        self.inbox: dict[str, list[tuple[str, bytes]]] = {"a": [], "b": []}

    def transport(self, me: str) -> object:
        wire = self

        class T:
            peers = {n: "inproc" for n in ROLES if n != me}
            roles = ROLES

            def send(self, to: str, frame: bytes) -> None:
                wire.inbox[to].append((me, frame))

        return T()


def pump(layers: dict[str, LinkLayer], got: dict[str, list[bytes]], now: float) -> None:
    """Hand every waiting segment to its layer; keep the frames they give up."""
    for name, layer in layers.items():
        inbox = WIRE.inbox[name]
        while inbox:
            sender, frame = inbox.pop(0)
            seg = decode(frame)
            assert type(seg) is Link
            frames, _ = layer.receive(sender, seg, now)
            got[name] += frames


WIRE = Wire()


async def exchange(faults: list[str], n: int, rounds: int = 400) -> tuple[dict, dict]:
    loop = asyncio.get_running_loop()
    WIRE.inbox = {"a": [], "b": []}
    layers = {name: LinkLayer(name, ROLES[name], WIRE.transport(name)) for name in ROLES}
    for layer in layers.values():
        layer.loop = loop
        layer.configure(faults, 0, 0.0, loop.time())
    got: dict[str, list[bytes]] = {"a": [], "b": []}
    for i in range(n):
        layers["a"].send("b", f"a{i}".encode(), loop.time())
        layers["b"].send("a", f"b{i}".encode(), loop.time())
        pump(layers, got, loop.time())
    for _ in range(rounds):
        await asyncio.sleep(0.005)
        pump(layers, got, loop.time())
        if not any(end.unacked for layer in layers.values() for end in layer.ends.values()):
            break
    for layer in layers.values():
        layer.stop()
    return got, {name: layer.link_counters() for name, layer in layers.items()}


@pytest.fixture(autouse=True)
def fast_retransmission(monkeypatch):
    monkeypatch.setattr(links, "RTO", 0.01)
    monkeypatch.setattr(links, "RTO_MAX", 0.04)


@pytest.mark.parametrize(
    ("faults", "counted"),
    [
        (["*>*:drop=30%"], "retransmitted"),
        (["*>*:dup=30%"], "duplicates"),
        (["*>*:reorder=40%"], "held"),
        (["*>*:delay=1ms..30ms/50%"], "held"),
        (["a<>b:cut@0s+0.05s", "*>*:drop=10%"], "retransmitted"),
    ],
)
def test_every_frame_arrives_once_and_in_order_whatever_the_wire_does(faults, counted):
    got, counters = asyncio.run(exchange(faults, 60))
    assert got["b"] == [f"a{i}".encode() for i in range(60)]
    assert got["a"] == [f"b{i}".encode() for i in range(60)]
    assert counters["a"].get(counted, 0) + counters["b"].get(counted, 0) > 0  # the fault was there


def test_a_peer_without_an_address_is_refused_at_once_and_a_layer_off_sends_nothing_itself():
    layer = LinkLayer("a", "node", WIRE.transport("a"))
    assert not layer.on  # until LinkFaults: the runtime writes to the transport itself
    with pytest.raises(UnknownPeer):
        layer.send("nobody", b"x", 0.0)
    with pytest.raises(ValueError, match="matches no process"):
        layer.configure(["rack-9>*:drop=1%"], 0, 0.0, 0.0)


def test_a_new_incarnation_starts_a_new_session_and_nothing_old_reaches_it():
    """A restarted process (a new link layer: a larger incarnation) gets what its peer had not had
    acknowledged, renumbered from 1; a segment of the old incarnation that comes late is fenced."""

    async def run() -> tuple[list[bytes], dict[str, int]]:
        loop = asyncio.get_running_loop()
        WIRE.inbox = {"a": [], "b": []}
        a = LinkLayer("a", "node", WIRE.transport("a"))
        b_old = LinkLayer("b", "scheduler", WIRE.transport("b"))
        for layer in (a, b_old):
            layer.loop = loop
            layer.configure([], 0, 0.0, loop.time())
        a.send("b", b"one", loop.time())
        b_old.send("a", b"hello", loop.time())
        got: dict[str, list[bytes]] = {"a": [], "b": []}
        pump({"a": a, "b": b_old}, got, loop.time())
        assert got == {"a": [b"hello"], "b": [b"one"]}
        stale = WIRE.transport("b")
        late = b_old.ends["a"].send(loop.time(), b"from the dead")  # sent, then b died
        b_old.stop()
        await asyncio.sleep(0.002)
        b_new = LinkLayer("b", "scheduler", stale)  # restarted: a larger incarnation
        b_new.loop = loop
        b_new.configure([], 0, 0.0, loop.time())
        assert b_new.inc > b_old.inc
        a.send("b", b"two", loop.time())  # addressed to the old incarnation: answered, renumbered
        got = {"a": [], "b": []}
        for _ in range(50):
            pump({"a": a, "b": b_new}, got, loop.time())
            await asyncio.sleep(0.005)
        b_new.send("a", b"I am new", loop.time())
        pump({"a": a, "b": b_new}, got, loop.time())
        seg = Link(late.inc, late.to_inc, late.seq, late.ack, late.msg)
        frames, _ = a.receive("b", seg, loop.time())
        assert frames == []  # the dead incarnation's segment is fenced
        a.stop()
        b_new.stop()
        misaddressed = b_new.link_counters()["misaddressed"]
        return got["b"] + got["a"], a.link_counters() | {"b_misaddressed": misaddressed}

    frames, counters = asyncio.run(run())
    assert frames == [b"two", b"I am new"]
    assert counters["peer_restarts"] == 1 and counters["fenced"] == 1 and counters["b_misaddressed"] >= 1


def test_a_paused_process_resends_nothing_until_it_goes_on():
    """SIGSTOP's stand-in (Runtime.pause): what was not acknowledged waits, the timer looking again a
    timeout later (not in a busy loop), and goes out once the process goes on."""

    async def run() -> tuple[int, int, int]:
        loop = asyncio.get_running_loop()
        WIRE.inbox = {"a": [], "b": []}
        a = LinkLayer("a", "node", WIRE.transport("a"))
        a.loop = loop
        a.configure([], 0, 0.0, loop.time())
        looks = [0]
        retransmit = a._retransmit

        def counted(to: str) -> None:
            looks[0] += 1
            retransmit(to)

        a._retransmit = counted  # type: ignore[method-assign]
        a.send("b", b"lost", loop.time())
        WIRE.inbox["b"].clear()  # the wire lost it
        a.frozen = True
        await asyncio.sleep(0.2)
        paused = (len(WIRE.inbox["b"]), looks[0])
        a.frozen = False
        await asyncio.sleep(0.1)
        a.stop()
        return *paused, len(WIRE.inbox["b"])

    sent_paused, looks, sent_after = asyncio.run(run())
    assert sent_paused == 0 and 1 <= looks <= 40 and sent_after >= 1  # a timeout (0.01 s) apart: ~20
