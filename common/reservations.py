"""A scalar capacity plan with Rayon-style bookings (TetriSched EuroSys'16 §2.1, §6.2.2; spec §1.11 step 1
[D]): the admission the GS_HET-like workload runs for every stack (:mod:`aviary.common.gshet`) and the
reservations of the Rayon/CS-like baseline (:mod:`aviary.central.rayon_cs`)."""

from __future__ import annotations

import math

from .resources import EPS


class CapacityPlan:
    """``capacity`` slots on quanta of ``quantum`` seconds; what is booked per quantum."""

    def __init__(self, capacity: int, quantum: float) -> None:
        self.capacity = capacity
        self.quantum = quantum
        self.reserved: dict[int, int] = {}  # absolute quantum -> slots booked

    def book_latest(
        self, arrival: float, deadline: float, duration: float, k: int
    ) -> tuple[float, float] | None:
        """Book ``k`` slots for ``duration`` at the *latest* quantum start in [arrival, deadline -
        duration] where they fit ([R] Rayon's greedy agent reserves as late as possible); the booked
        interval, or ``None`` when no start fits. ``deadline`` is absolute."""
        q = self.quantum
        first = math.ceil(arrival / q - EPS)
        last = math.floor((deadline - duration) / q + EPS)
        length = max(1, math.ceil(duration / q - EPS))
        reserved = self.reserved
        for s in range(last, first - 1, -1):
            if all(reserved.get(t, 0) + k <= self.capacity for t in range(s, s + length)):
                for t in range(s, s + length):
                    reserved[t] = reserved.get(t, 0) + k
                return s * q, (s + length) * q
        return None
