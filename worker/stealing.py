"""Hawk's randomized task stealing, the thief's side (thesis §2.3.6).

"Whenever a server is out of tasks to execute, it randomly contacts a number of other servers to select
one from which to steal short tasks. Both the servers from the general partition and the servers from
the short partition can steal, but they can only steal from servers in the general partition." An idle
node asks up to ``attempts`` distinct random general-partition nodes (default 10, §2.4.1), one after
the other, and stops at the first that gives it probes. The victim's side (which probes it gives) is
:meth:`aviary.worker.queues.HybridQueue.steal_group`.

Which nodes get a :class:`Stealer` is the registry's choice (``--stealers``, ``launch/policies/hybrid.py``):
every node, as quoted above, or, as Hawk is configured for the Eagle comparison (§3.6.1: "idle nodes in the
general partition perform ten attempts to steal probes from other nodes in that partition"), only the
general partition's. Victims are general-partition nodes either way.

Here each attempt is a message round trip (``StealRequest`` / ``StealReply``), where the thesis'
simulator stole instantly; a round stops early when the node got work meanwhile, and a node that found
nothing tries again only the next time it runs out of work (as in the thesis' simulator).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final

from ..common.draws import below, randbelow, uses_getrandbits
from ..common.effects import Effect, Send
from ..common.messages import StealRequest

__all__ = ["Stealer"]

_REQUEST: Final = StealRequest()
"""Every steal request is the same message: one object for all (a message is never changed once sent)."""


class Stealer:
    """The stealing rounds of one node: pick victims, ask them one at a time."""

    __slots__ = ("attempts", "bits", "dead", "in_round", "me", "rng", "tried", "victims")

    def __init__(self, me: str, victims: Sequence[str], attempts: int, rng: random.Random) -> None:
        self.me = me
        self.victims = victims  # general-partition nodes (may include ``me``; shared between nodes)
        self.attempts = attempts
        self.rng = rng
        # The generator's getrandbits, bound once (randbelow's draw without a method look-up per victim),
        # where randbelow draws with it; else None
        self.bits: Callable[[int], int] | None = rng.getrandbits if uses_getrandbits(rng) else None
        self.in_round = False
        self.tried: list[str] = []
        self.dead: set[str] = set()  # victims declared dead (PeerDown): never asked

    def _next_victim(self) -> str | None:
        """A random general-partition node not asked yet in this round (never ``me``)."""
        victims = self.victims
        n = len(victims)
        if len(self.tried) >= self.attempts or n == 0:
            return None
        rng = self.rng
        bits = self.bits
        me, tried, dead = self.me, self.tried, self.dead
        for _ in range(64):
            v = victims[below(bits, n) if bits is not None else randbelow(rng, n)]  # rng.randrange(n)'s draw
            if v != me and v not in tried and (not dead or v not in dead):
                return v
        # Few candidates: pick among the ones left explicitly.
        left = [v for v in victims if v != me and v not in tried and v not in dead]
        return rng.choice(left) if left else None

    def start(self) -> list[Effect]:
        """Begin a round (the node just ran out of work); no-op while a round is on."""
        if self.in_round or self.attempts <= 0:
            return []
        self.tried = []
        return self._ask()

    def _ask(self) -> list[Effect]:
        victim = self._next_victim()
        if victim is None:
            self.in_round = False
            return []
        self.in_round = True
        self.tried.append(victim)
        return [Send(victim, _REQUEST)]

    def failed(self, still_idle: bool) -> list[Effect]:
        """The last victim had nothing to give: ask the next one, if the node is still idle."""
        if not self.in_round:
            return []
        if not still_idle:
            self.in_round = False
            return []
        return self._ask()

    def down(self, victim: str, still_idle: bool) -> list[Effect]:
        """``victim`` died: never ask it again; if the round waits on its answer, ask the next one."""
        self.dead.add(victim)
        if self.in_round and self.tried and self.tried[-1] == victim:
            return self.failed(still_idle)
        return []

    def up(self, victim: str) -> None:
        self.dead.discard(victim)

    def succeeded(self) -> None:
        self.in_round = False
