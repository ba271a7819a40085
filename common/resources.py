"""Resource vectors: what a task demands and what a node offers (DESIGN §9, spec §8).

Four fixed dimensions, in this order: ``cores`` (CPU cores), ``mem`` (GB), ``disk`` and ``net``
(bandwidth, as a fraction of one machine's: 1.0 is a whole disk or NIC). A vector is an immutable tuple
so that it hashes, compares and crosses the wire (a msgpack list of four floats) for free; arithmetic is
spelled as methods because ``+`` on a tuple concatenates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple

RESOURCES = ("cores", "mem", "disk", "net")
"""The dimensions, in vector order."""

EPS = 1e-9
"""Slack of :meth:`Resources.fits_in`: float sums of demands released in another order stay exact."""


class Resources(NamedTuple):
    cores: float = 0.0
    mem: float = 0.0
    disk: float = 0.0
    net: float = 0.0

    @classmethod
    def of(cls, values: Iterable[float] | Mapping[str, float]) -> Resources:
        """From a sequence of up to four numbers, or a mapping by dimension name (missing ones are 0).
        Raises ``ValueError`` on an unknown name, a negative or a non-finite amount."""
        if isinstance(values, Mapping):
            unknown = sorted(set(values) - set(RESOURCES))
            if unknown:
                raise ValueError(f"unknown resource {unknown[0]!r} (known: {', '.join(RESOURCES)})")
            items = [values.get(name, 0.0) for name in RESOURCES]
        else:
            items = list(values)
            if len(items) > len(RESOURCES):
                raise ValueError(f"a resource vector has at most {len(RESOURCES)} amounts, got {len(items)}")
        out = []
        for name, x in zip(RESOURCES, items, strict=False):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
                raise ValueError(f"resource {name!r} must be a finite number >= 0, got {x!r}")
            out.append(float(x))
        return cls(*out)

    def plus(self, other: Resources) -> Resources:
        a, b = self, other
        return Resources(a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])

    def minus(self, other: Resources) -> Resources:
        a, b = self, other
        return Resources(a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3])

    def times(self, k: float) -> Resources:
        return Resources(self[0] * k, self[1] * k, self[2] * k, self[3] * k)

    def fits_in(self, free: Resources) -> bool:
        """Every dimension of this demand is within ``free`` (multi-resource fit)."""
        a, b = self, free
        return a[0] <= b[0] + EPS and a[1] <= b[1] + EPS and a[2] <= b[2] + EPS and a[3] <= b[3] + EPS

    def dot(self, other: Resources) -> float:
        a, b = self, other
        return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]

    def over(self, capacity: Resources) -> Resources:
        """Each amount as a share of ``capacity`` (dimensions the capacity lacks count 0)."""
        return Resources(*(x / c if c > 0 else 0.0 for x, c in zip(self, capacity, strict=True)))

    def dominant_share(self, capacity: Resources) -> float:
        """The largest share of ``capacity`` this vector takes over the dimensions (DRF); the same
        floats as ``max(self.over(capacity))``, without building the vector (a DRF key per pick)."""
        return max(x / c if c > 0 else 0.0 for x, c in zip(self, capacity, strict=True))

    def total(self) -> float:
        return self[0] + self[1] + self[2] + self[3]

    def describe(self) -> str:
        return ", ".join(f"{n}={x:g}" for n, x in zip(RESOURCES, self, strict=True))


ZERO = Resources()
DEFAULT_MACHINE = Resources(cores=16.0, mem=64.0, disk=1.0, net=1.0)
"""The multi-resource policies' default node: the small-scale Tetris recipe's machine (spec §4.3)."""
ONE_CORE = Resources(cores=1.0)
"""The demand of a slot-based task: one core, nothing else."""


def vector_sum(vectors: Iterable[Resources]) -> Resources:
    total = ZERO
    for v in vectors:
        total = total.plus(v)
    return total
