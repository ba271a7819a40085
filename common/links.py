"""Links that lose nothing: sequence numbers, acknowledgements, retransmission and fencing between two
processes, below every core (no I/O: a driver calls it, as it calls a core).

The cores assume that a message sent reaches its peer once and in the order sent. On one live ZeroMQ or
TCP connection that holds; across reconnects, restarts and partitions, and under the faults of
:mod:`aviary.common.netfaults`, it does not. Each process keeps, for each peer, a :class:`LinkEnd`:

- **Sequence numbers.** Every message a process sends a peer goes as a :class:`Segment` numbered 1, 2, ...
  on that link. The receiver hands its core the messages in that order, each once: a copy of one it
  already has is dropped (``duplicates``), one that comes early waits for those before it (``held``).
  So a core sees neither a duplicate nor a reordering.
- **Acknowledgements.** Every segment carries the highest number its sender has received in order from
  the other side (``ack``, cumulative, as TCP's); a receiver with nothing to send back answers a data
  segment with a bare one (``seq`` 0). What is acknowledged is forgotten.
- **Retransmission.** What is not acknowledged :data:`RTO` seconds after it was sent goes again, and
  its timeout doubles at each of its retransmissions that brings no acknowledgement, up to
  :data:`RTO_MAX` (so a 10 s partition costs a few segments a message, and a link comes back within 2 s
  of its healing); a new acknowledgement brings every timeout of the link back to :data:`RTO`. The
  back-off is each segment's own: a timer that sends a later segment again (one that came early and
  waits, unacknowledged, behind a lost one) does not lengthen the lost one's timeout, and a segment sent
  while the others' timeouts are long is due :data:`RTO` after it all the same. A timeout of the whole
  link would be doubled once per segment sent after it, and a message lost three times under 5 % loss
  would come about 3 s late. A lost message is therefore late, never lost, while its receiver lives.
  The driver keeps one timer a link, set for the first segment due (:meth:`LinkEnd.rearm`): brought
  forward when a new segment or an acknowledgement makes one due sooner.
- **Incarnations (fencing).** Each process numbers its incarnations (a restart is a new one, with a
  larger number) and stamps every segment with its own and with the receiver's as it knows it. A
  receiver drops a segment of an older incarnation of its peer (``fenced``: what a process sent before it
  died and was restarted cannot act after its successor), and a segment addressed to an older
  incarnation of itself (``misaddressed``), which it answers with a bare acknowledgement: so the sender
  learns the new incarnation, renumbers what it had not had acknowledged from 1 and sends it again, as a
  socket's queue would have delivered it to the process restarted at the same address. What the earlier
  incarnation received and acknowledged died with it (the recovery of a restarted process covers that,
  as after any death). An incarnation 0 means "not known yet": a process that has not heard from a peer
  sends it ``to_inc`` 0, which any incarnation takes, and adopts the first incarnation it hears from the
  peer without a new session (the real runtime, whose incarnations are start times; the simulator knows
  every one from the start).

Every message kind goes through a link alike: the guarantee is *exactly once, in order, per link, while
both ends live*; the loss of a process is the failure detector's business (``PeerDown``), not the
link's. The protocol document (``docs/protocol.md``, "Delivery") states it.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["RTO", "RTO_MAX", "LinkEnd", "Segment"]

RTO = 0.2
"""The first retransmission timeout (s): well above a loopback or datacenter round trip (under 1 ms)."""
RTO_MAX = 2.0
"""The longest retransmission timeout (s): how long after a partition heals its links carry again."""


class Segment:
    """What goes on the wire between two processes: the sender's incarnation, the receiver's as the
    sender knows it, the message's number on the link (0: an acknowledgement alone), the cumulative
    acknowledgement of the other direction, and the message (None with ``seq`` 0)."""

    __slots__ = ("ack", "inc", "msg", "seq", "to_inc")

    def __init__(self, inc: int, to_inc: int, seq: int, ack: int, msg: Any = None) -> None:
        self.inc = inc
        self.to_inc = to_inc
        self.seq = seq
        self.ack = ack
        self.msg = msg

    def __repr__(self) -> str:
        what = "ack" if self.seq == 0 else f"#{self.seq} {type(self.msg).__name__}"
        return f"Segment({what}, ack {self.ack}, inc {self.inc}->{self.to_inc})"


class LinkEnd:
    """A process's end of its link with one peer (module docstring). ``inc``: this process's incarnation;
    ``peer_inc``: the peer's, as known (0: not known yet; the simulator's first incarnations are 1)."""

    __slots__ = (
        "counters",
        "first_due",
        "inc",
        "next_seq",
        "peer_inc",
        "received",
        "timer",
        "timer_at",
        "unacked",
        "waiting",
    )

    def __init__(self, inc: int, peer_inc: int) -> None:
        self.inc = inc
        self.peer_inc = peer_inc
        self.next_seq = 1
        self.unacked: dict[int, list[Any]] = {}
        """seq -> [message, when it was last sent, its retransmission timeout], oldest first."""
        self.received = 0
        """The highest number received in order (every one up to it handed on)."""
        self.waiting: dict[int, Any] = {}
        """Received early: seq -> message, until those before it come."""
        self.first_due = math.inf
        """When the first unacknowledged segment is due again (inf: none is unacknowledged)."""
        self.timer_at = math.inf
        """When the driver's retransmission timer for this end goes off (inf: none set): :meth:`rearm`."""
        self.timer = 0
        """The simulator's number of that timer (an event of its heap); the real runtime keeps its own."""
        self.counters: dict[str, int] = {}

    def _count(self, what: str, n: int = 1) -> None:
        self.counters[what] = self.counters.get(what, 0) + n

    # --- sending ---------------------------------------------------------------------------------------
    def send(self, now: float, msg: Any) -> Segment:
        """The segment that carries ``msg`` (kept until acknowledged)."""
        seq = self.next_seq
        self.next_seq = seq + 1
        self.unacked[seq] = [msg, now, RTO]
        self.first_due = min(self.first_due, now + RTO)
        return Segment(self.inc, self.peer_inc, seq, self.received, msg)

    def ack(self) -> Segment:
        """A bare acknowledgement of what was received in order."""
        return Segment(self.inc, self.peer_inc, 0, self.received)

    def due(self, now: float) -> list[Segment]:
        """The segments to send again at ``now``: each unacknowledged one sent at least its timeout ago
        (and its timeout doubled, up to :data:`RTO_MAX`)."""
        out = []
        first = math.inf
        for seq, entry in self.unacked.items():
            if now - entry[1] >= entry[2] - 1e-9:
                entry[1] = now
                entry[2] = min(RTO_MAX, 2 * entry[2])
                out.append(Segment(self.inc, self.peer_inc, seq, self.received, entry[0]))
            first = min(first, entry[1] + entry[2])
        self.first_due = first
        if out:
            self._count("retransmitted", len(out))
        return out

    def next_due(self) -> float | None:
        """When the first unacknowledged segment is due again (None: nothing unacknowledged)."""
        return self.first_due if self.unacked else None

    def rearm(self, now: float) -> float | None:
        """When the driver must set this end's retransmission timer: when the first unacknowledged
        segment is due (``now`` if overdue), if that is sooner than the timer set (:attr:`timer_at`, which
        it becomes; the driver drops the timer it replaces). None: the timer set will do, or nothing is
        unacknowledged. A driver calls it after every send and receive, and :meth:`fired` first when
        the timer goes off."""
        at = max(self.first_due, now)  # inf when nothing is unacknowledged: never sooner
        if at >= self.timer_at:
            return None
        self.timer_at = at
        return at

    def fired(self) -> None:
        """The driver's timer went off: none is set."""
        self.timer_at = math.inf

    def _acked(self, ack: int) -> None:
        unacked = self.unacked
        if not unacked or ack < next(iter(unacked)):
            return
        for seq in [s for s in unacked if s <= ack]:
            del unacked[seq]
        first = math.inf
        for entry in unacked.values():  # the link carries: what is left starts its back-off anew
            entry[2] = RTO
            first = min(first, entry[1] + RTO)
        self.first_due = first

    # --- receiving -------------------------------------------------------------------------------------
    def receive(self, now: float, seg: Segment) -> tuple[list[Any], list[Segment]]:
        """Take a segment from the peer at ``now``: the messages now to hand on, in order (none for a
        duplicate, a stale segment or one that came early), and the segments to send back (an
        acknowledgement; and when the peer turns out to be a new incarnation, what it had not
        acknowledged, renumbered)."""
        if seg.inc < self.peer_inc:  # an earlier incarnation of the peer: fenced
            self._count("fenced")
            return [], []
        again: list[Segment] = []
        if self.peer_inc == 0:  # the first word from the peer: its incarnation, not a restart
            self.peer_inc = seg.inc
        elif seg.inc > self.peer_inc:  # the peer was restarted: a new session both ways
            self._count("peer_restarts")
            self.peer_inc = seg.inc
            self.received = 0
            self.waiting.clear()
            old = [entry[0] for entry in self.unacked.values()]
            self.unacked.clear()
            self.first_due = math.inf
            self.next_seq = 1
            again = [self.send(now, msg) for msg in old]
        if seg.to_inc and seg.to_inc != self.inc:
            # Sent to an earlier incarnation of this process: say which one is here (a data segment is
            # answered, so that its sender learns; a later one, to this process fenced, is not).
            self._count("misaddressed")
            if seg.seq != 0 and seg.to_inc < self.inc:
                again.append(self.ack())
            return [], again
        self._acked(seg.ack)
        out: list[Any] = []
        if seg.seq == 0:
            pass
        elif seg.seq <= self.received or seg.seq in self.waiting:
            self._count("duplicates")
        elif seg.seq != self.received + 1:
            self._count("held")
            self.waiting[seg.seq] = seg.msg
        else:
            out.append(seg.msg)
            self.received = seg.seq
            waiting = self.waiting
            while waiting and self.received + 1 in waiting:
                self.received += 1
                out.append(waiting.pop(self.received))
        if seg.seq != 0:
            again.append(self.ack())
        return out, again
