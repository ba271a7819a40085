"""The real runtime's links: :mod:`aviary.common.links` on sockets, and the faults of the network injected
where a process hands a frame to its transport (either transport, never a core).

A :class:`LinkLayer` sits between a :class:`~aviary.common.runtime.Runtime` and its transport. Until the
replay's frontend sends ``LinkFaults`` (a replay run with ``--fail``'s link items), it does nothing: the
runtime hands frames to the transport as they are, and ZeroMQ or TCP delivers them in order on a live
connection. From then on every frame this process sends goes in a ``Link`` segment of its link with the
peer (numbered, acknowledged, retransmitted, fenced by incarnation: :class:`~aviary.common.links.LinkEnd`),
and each segment, acknowledgements and retransmissions included, first meets the fate the run's
:class:`~aviary.common.netfaults.FaultPlan` draws for it: lost, held back, or sent twice. The draws are
the simulator's: the k-th segment from A to B meets the same fate on both runtimes, at the same replay
time (``LinkFaults.clock`` sets this process's replay clock, to within the message's own latency).

Segments are taken whenever they come, before ``LinkFaults`` too (a peer may have heard it first): the
answer to a segment is always a segment. A process's incarnation is its link layer's start time in
milliseconds, so a restarted process has a larger one than the process it replaces (on one host's
clock), and a new replay (a new epoch, :meth:`reset`) starts a new one too: its peers then begin new
sessions with it, and nothing of the earlier replay is delivered in the new one's place.

What differs from the simulator: a ``cut`` is made here by losing every segment of the link, so the
connection itself stays up (no reconnect), as a firewall rule that drops packets would leave it; the
retransmission timers run on the event loop's clock; and a delayed or reordered copy is written when its
delay is up, by a timer of the loop (a few ms late under load).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .addresses import UnknownPeer
from .links import RTO, LinkEnd, Segment
from .messages import Link, encode
from .netfaults import FaultPlan, parse_link_faults

log = logging.getLogger("aviary.links")

__all__ = ["LinkLayer"]


def _nothing() -> None:
    pass


def incarnation() -> int:
    """A new incarnation number: the time in milliseconds (larger for a process started later)."""
    return time.time_ns() // 1_000_000


class LinkLayer:
    """One process's links with its peers over ``transport`` (module docstring): ``name`` and ``role`` are
    this process's (the fault patterns' ``{role}`` read the others' from the transport's address book)."""

    def __init__(self, name: str, role: str, transport: Any) -> None:
        self.name = name
        self.role = role
        self.transport = transport
        self.inc = incarnation()
        self.on = False
        """Whether this process sends over links (from its ``LinkFaults`` on)."""
        self.plan: FaultPlan | None = None
        self.t0 = 0.0
        """The event loop's time at replay time 0."""
        self.ends: dict[str, LinkEnd] = {}
        self.counters: Counter[str] = Counter()
        self.frozen = False
        """Paused (SIGSTOP's stand-in): retransmissions wait."""
        self.closed = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.poke: Callable[[], None] = _nothing
        """Called after a send from a timer of this layer (a retransmission, a delayed copy): the runtime
        looks for frames waiting, as after any send outside its reading (ZeroMQ's descriptor is
        edge-triggered, and a send may have taken its edge)."""
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.heard: dict[str, float] = {}
        """When a segment (any) last came from each peer: the frontend's sign that a process lives while
        its answers wait behind a lost segment (:attr:`~aviary.common.frontend.FrontendCore.link_heard`)."""

    # --- configuration -----------------------------------------------------------------------------
    def configure(self, faults: list[str], seed: int, clock: float, now: float) -> None:
        """Inject ``faults`` (``--fail``'s link items) with ``seed`` from replay time ``clock``, which is
        ``now`` on this process's clock; ValueError if an item does not parse or matches no process."""
        roles = {**self.transport.roles, self.name: self.role}
        self.plan = FaultPlan(parse_link_faults(faults), roles, seed) if faults else None
        self.t0 = now - clock
        self.on = True

    def reset(self) -> None:
        """A new replay: no faults, no links, and a new incarnation (its peers start new sessions)."""
        self.stop()
        self.closed = False
        self.inc = incarnation()
        self.on = False
        self.plan = None
        self.ends.clear()
        self.heard.clear()

    def stop(self) -> None:
        """Send nothing more (the process crashed or stops)."""
        self.closed = True
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    async def settle(self, limit: float) -> None:
        """Wait until every segment sent is acknowledged, for ``limit`` seconds at most."""
        deadline = time.monotonic() + limit
        while any(end.unacked for end in self.ends.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def link_counters(self) -> dict[str, int]:
        """Segments sent and what each end counted (retransmitted, duplicates, held, fenced, ...)."""
        out = Counter(self.counters)
        for end in self.ends.values():
            out.update(end.counters)
        return dict(out)

    def _end(self, peer: str) -> LinkEnd:
        end = self.ends.get(peer)
        if end is None:
            end = self.ends[peer] = LinkEnd(self.inc, 0)
        return end

    # --- sending -----------------------------------------------------------------------------------
    def send(self, to: str, frame: bytes, now: float) -> None:
        """Send ``frame`` to ``to`` over their link (UnknownPeer at once for a peer with no address)."""
        if to not in self.transport.peers:
            raise UnknownPeer(to)
        self._out(to, self._end(to).send(now, frame), now)
        self._arm(to, now)

    def _out(self, to: str, seg: Segment, now: float) -> None:
        """Put a segment on the wire, as its fate says."""
        if self.closed:
            return
        frame = encode(Link(seg.inc, seg.to_inc, seg.seq, seg.ack, seg.msg or b""))
        self.counters["segments"] += 1
        copies = [0.0] if self.plan is None else self.plan.fate(self.name, to, now - self.t0)
        for delay in copies:
            if delay <= 0.0:
                self._write(to, frame)
            else:
                assert self.loop is not None
                self.loop.call_later(delay, self._late, to, frame)

    def _late(self, to: str, frame: bytes) -> None:
        """A delayed copy's time came."""
        self._write(to, frame)
        self.poke()

    def _write(self, to: str, frame: bytes) -> None:
        if self.closed:
            return
        try:
            self.transport.send(to, frame)
        except Exception as exc:  # no address, a frame too large, an unreachable peer: the end retries
            self.counters["send_failed"] += 1
            if self.counters["send_failed"] == 1:
                text = "%s: a segment to %r was not sent: %s (further ones only counted)"
                log.warning(text, self.name, to, exc)

    def _arm(self, to: str, now: float) -> None:
        """The retransmission timer of the link to ``to``: set for its first segment due, or brought
        forward when a segment sent or an acknowledgement made one due sooner (:meth:`LinkEnd.rearm`)."""
        if self.closed:
            return
        at = self.ends[to].rearm(now)
        if at is not None:
            assert self.loop is not None
            old = self._timers.pop(to, None)
            if old is not None:
                old.cancel()
            self._timers[to] = self.loop.call_later(at - now, self._retransmit, to)

    def _retransmit(self, to: str) -> None:
        self._timers.pop(to, None)
        now = time.monotonic()
        end = self.ends.get(to)
        if end is None or self.closed:
            return
        end.fired()
        if self.frozen:  # nothing goes out while paused: look again a timeout later
            assert self.loop is not None
            end.timer_at = now + RTO
            self._timers[to] = self.loop.call_later(RTO, self._retransmit, to)
            return
        for seg in end.due(now):
            self._out(to, seg, now)
        self.poke()
        self._arm(to, now)

    # --- receiving ---------------------------------------------------------------------------------
    def receive(self, sender: str, seg: Link, now: float) -> tuple[list[bytes], bool]:
        """Take a segment from ``sender``: the frames now to hand on, in order, and whether the sender
        turned out to be a new incarnation (restarted). Acknowledgements go back at once."""
        self.heard[sender] = now
        end = self._end(sender)
        restarts = end.counters.get("peer_restarts", 0)
        frames, replies = end.receive(now, Segment(seg.inc, seg.to_inc, seg.seq, seg.ack, seg.frame))
        for reply in replies:
            self._out(sender, reply, now)
        if end.unacked:
            self._arm(sender, now)
        return frames, end.counters.get("peer_restarts", 0) > restarts
