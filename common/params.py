"""Policy parameters, declared once (DESIGN §9): the CLI flags, the cluster file's ``[cluster.params]``
and the replay all derive from a policy's tuple of :class:`Param`.

Three units meet here. A *given* value (a flag, an entry of ``ReplaySpec.params``) is in the unit its
help names: trace seconds for most durations (``scales``), seconds of the replay clock for Kairos'
quantum (``scales_given=False``). A *held* value (``[cluster.params]``, what a core is built from) is
always in seconds of the replay clock. :func:`resolve` turns given values into held ones;
:meth:`Param.held` reads one back from a cluster's params, falling back on the declared default."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter: ``default`` fixes its type (float, int, str; ``None``: an optional float, absent
    from the cluster's params unless given, the policy then derives one); ``scales``: a duration whose
    default is in trace seconds, divided by the replay's time scale, and so is a given value unless
    ``scales_given`` is off (it is then already in seconds of the replay clock); ``choices``: the
    allowed strings; ``low``/``high``: bounds on a number (exclusive when ``open_low``/``open_high``);
    ``option``: the flag when it is not ``--name``; ``cluster`` off: not a ``[cluster.params]`` entry
    but a shape of the cluster the registry builds (the short partition: node labels)."""

    name: str
    default: Any
    help: str
    unit: str = ""
    scales: bool = False
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    scales_given: bool = True
    option: str = ""
    cluster: bool = True

    @property
    def flag(self) -> str:
        return self.option or "--" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """The attribute of the flag's value in an argparse namespace."""
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def kind(self) -> type:
        return float if self.default is None else type(self.default)

    def check(self, value: Any) -> Any:
        """The value, converted to the parameter's type; ``ValueError`` (one line) if it is not one."""
        kind = self.kind
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
        bad_high = self.high is not None and (value >= self.high if self.open_high else value > self.high)
        if not math.isfinite(value) or bad_low or bad_high:
            lo = "" if self.low is None else f"{'>' if self.open_low else '>='} {self.low:g}"
            hi = "" if self.high is None else f"{'<' if self.open_high else '<='} {self.high:g}"
            raise ValueError(f"{self.name} must be {' and '.join(x for x in (lo, hi) if x)}, got {value!r}")
        return value

    def held(self, params: Mapping[str, Any]) -> Any:
        """The value a cluster's ``params`` hold (in seconds of the replay clock), checked; or the
        default, a duration divided by the params' ``time_scale`` (1 when they have none)."""
        given = params.get(self.name)
        if given is not None:
            return self.check(given)
        if self.scales and self.default is not None:
            return self.default / float(params.get("time_scale", 1.0))
        return self.default


def resolve(
    declared: Iterable[Param], given: Mapping[str, Any], *, time_scale: float = 1.0
) -> dict[str, Any]:
    """Every declared parameter's held value: the given one (checked) or its default; defaults of
    durations (in trace seconds) divided by ``time_scale``, and given durations too unless
    ``scales_given`` is off. An optional parameter (default ``None``) not given is left out. Names in
    ``given`` that are not declared are ignored here (see :func:`unknown`)."""
    out: dict[str, Any] = {}
    for p in declared:
        value = given.get(p.name)
        if value is None:
            if p.default is None:
                continue
            out[p.name] = p.default / time_scale if p.scales else p.default
        else:
            value = p.check(value)
            out[p.name] = value / time_scale if p.scales and p.scales_given else value
    return out


def unknown(declared: Iterable[Param], given: Iterable[str], also: Iterable[str] = ()) -> list[str]:
    """The names of ``given`` that are neither declared nor in ``also``, sorted."""
    known = {p.name for p in declared} | set(also)
    return sorted(set(given) - known)
