"""Policy parameters, declared once (DESIGN §9): the CLI flags, the cluster file's ``[cluster.params]``
and the replay all derive from a policy's tuple of :class:`Param`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter: ``default`` fixes its type (float, int, str); ``scales``: a duration in trace
    seconds, divided by the replay's time scale; ``choices``: the allowed strings; ``low``/``high``:
    bounds on a number (``low`` exclusive when ``open_low``)."""

    name: str
    default: Any
    help: str
    unit: str = ""
    scales: bool = False
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    open_low: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """The value, converted to the parameter's type; ``ValueError`` (one line) if it is not one."""
        kind = type(self.default)
        if kind is str:
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}, got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{self.name} must be a number, got {value!r}")
        if kind is int and value != int(value):
            raise ValueError(f"{self.name} must be a whole number, got {value!r}")
        value = kind(value)
        bad_low = self.low is not None and (value <= self.low if self.open_low else value < self.low)
        if not math.isfinite(value) or bad_low or (self.high is not None and value > self.high):
            lo = "" if self.low is None else f"{'>' if self.open_low else '>='} {self.low:g}"
            hi = "" if self.high is None else f"<= {self.high:g}"
            raise ValueError(f"{self.name} must be {' and '.join(x for x in (lo, hi) if x)}, got {value!r}")
        return value


def resolve(
    declared: Iterable[Param], given: Mapping[str, Any], *, time_scale: float = 1.0
) -> dict[str, Any]:
    """Every declared parameter's value, the given one (checked) or its default; durations (given and
    default alike, in trace seconds) divided by ``time_scale``. Names in ``given`` that are not
    declared are ignored here (see :func:`unknown`)."""
    out: dict[str, Any] = {}
    for p in declared:
        value = p.default if given.get(p.name) is None else p.check(given[p.name])
        out[p.name] = value / time_scale if p.scales else value
    return out


def unknown(declared: Iterable[Param], given: Iterable[str], also: Iterable[str] = ()) -> list[str]:
    """The names of ``given`` that are neither declared nor in ``also``, sorted."""
    known = {p.name for p in declared} | set(also)
    return sorted(set(given) - known)
