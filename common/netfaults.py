"""Faults of the network, by link and time: what ``--fail``'s link items say, and which messages they hit.

A ``--fail`` list holds process failures (``node-3@30s``, :mod:`aviary.common.failures`) and link faults,
told apart by the ``:`` a link fault has::

    LINK:FAULT[@TIME[+SPAN]]

- ``LINK`` is ``FROM>TO`` (messages from FROM to TO) or ``A<>B`` (both ways). Each side is a process
  name, a glob over the names (``node-*``, ``node-[0-9]``, ``sched-?``, ``*``) or a role in braces
  (``{node}``, ``{scheduler}``, ``{central}``, ``{frontend}``).
- ``FAULT`` is one of: ``drop=P%`` (each message lost with probability P), ``delay=D`` or
  ``delay=D1..D2`` (every message held D, or a uniform draw between D1 and D2; ``delay=D1..D2/P%``: only
  a share P of them), ``dup=P%`` (a share P delivered twice, the copy right after the first),
  ``reorder=P%`` (a share P held back so that the link's next messages overtake them: by a draw up to
  :data:`REORDER_HOLD`) and ``cut`` (a partition: every message lost). Durations take ``ms``, ``s`` or ``m``.
- ``@TIME+SPAN``: from replay time TIME for SPAN seconds (``@30s+10s``); ``@TIME``: from TIME on;
  neither: the whole run.

So ``{node}<>{scheduler}:drop=1%``, ``*>*:delay=100ms..2s/10%``, ``*>*:dup=1%``,
``node-[0-9]<>{scheduler}:cut@30s+10s`` (a third of 30 nodes cut off from every scheduler for 10 s),
``{node}<>sched-0:cut@20s+10s``, ``central<>frontend:cut@30s+5s``.

Which message a fault hits is a pure function of the run's seed, the link and the message's number on
that link (:class:`FaultPlan`): a draw from a hash of ``(seed, sender, receiver, k)``, so the k-th
message from A to B meets the same fate on the simulator and on real processes, and a run is
reproducible, whatever else the runtime does. Faults on the same link apply in the order given, each to
what the one before let through.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["KINDS", "REORDER_HOLD", "FaultPlan", "LinkFault", "is_link_fault", "parse_link_faults"]

KINDS = ("drop", "delay", "dup", "reorder", "cut")
REORDER_HOLD = 0.05
"""The longest a reordered message is held back (s): what the link's next messages have to overtake it."""
_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)?$")
_SHARE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)%$")
ROLES = ("node", "scheduler", "central", "frontend")


@dataclass(frozen=True, slots=True)
class LinkFault:
    """One link item of ``--fail``: messages from a name matching ``src`` to one matching ``dst`` (and
    back, when ``both``) meet ``kind`` between replay times ``start`` and ``end``."""

    src: str
    dst: str
    both: bool
    kind: str
    share: float = 1.0  # of the messages the fault hits
    low: float = 0.0  # a delay's bounds, seconds
    high: float = 0.0
    start: float = 0.0
    end: float = math.inf
    text: str = ""

    def covers(self, src: str, dst: str, roles: Mapping[str, str]) -> bool:
        """Whether the message from ``src`` to ``dst`` goes over this fault's link."""
        if _match(self.src, src, roles) and _match(self.dst, dst, roles):
            return True
        return self.both and _match(self.src, dst, roles) and _match(self.dst, src, roles)


def _match(pattern: str, name: str, roles: Mapping[str, str]) -> bool:
    if pattern.startswith("{"):
        return roles.get(name) == pattern[1:-1]
    return fnmatch.fnmatchcase(name, pattern)


def is_link_fault(item: str) -> bool:
    """Whether a ``--fail`` item is a link fault (it has a ``:``) rather than a process failure."""
    return ":" in item


def _seconds(item: str, text: str, what: str) -> float:
    m = _DURATION.match(text.strip())
    if m is None:
        raise ValueError(f"{item!r}: {what} {text!r} is not a duration such as 100ms, 2s, 1m")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def _share(item: str, text: str) -> float:
    m = _SHARE.match(text.strip())
    if m is None or not 0 < float(m.group(1)) <= 100:
        raise ValueError(f"{item!r}: {text!r} is not a share such as 1% or 0.5% (above 0, at most 100%)")
    return float(m.group(1)) / 100


def _side(item: str, text: str) -> str:
    side = text.strip()
    if not side:
        raise ValueError(f"{item!r}: a link needs a process, a glob or a {{role}} on each side")
    if side.startswith("{") and side[1:-1] not in ROLES:
        raise ValueError(f"{item!r}: {side} is not a role: {{{'}, {'.join(ROLES)}}}")
    return side


def parse_link_fault(item: str) -> LinkFault:
    """One ``LINK:FAULT[@TIME[+SPAN]]`` item (module docstring); ValueError names it and what is wrong."""
    link, _, rest = item.partition(":")
    fault, at, when = rest.partition("@")
    if "<>" in link:
        a, b = link.split("<>", 1)
        both = True
    elif ">" in link:
        a, b = link.split(">", 1)
        both = False
    else:
        raise ValueError(f"{item!r}: the link is FROM>TO or A<>B, such as {{node}}<>sched-0")
    src, dst = _side(item, a), _side(item, b)
    start, end = 0.0, math.inf
    if at:
        first, plus, span = when.partition("+")
        start = _seconds(item, first, "the time")
        if plus:
            length = _seconds(item, span, "the span")
            if length <= 0:
                raise ValueError(f"{item!r}: the span must be longer than 0 s")
            end = start + length
    kind, eq, value = fault.strip().partition("=")
    if kind not in KINDS:
        raise ValueError(f"{item!r}: {kind!r} is not a fault: {', '.join(KINDS)}")
    if kind == "cut":
        if eq:
            raise ValueError(f"{item!r}: cut takes no value (every message of the link is lost)")
        return LinkFault(src, dst, both, kind, 1.0, start=start, end=end, text=item)
    if not value:
        raise ValueError(
            f"{item!r}: {kind} needs a value, such as {kind}={'100ms' if kind == 'delay' else '1%'}"
        )
    if kind != "delay":
        return LinkFault(src, dst, both, kind, _share(item, value), start=start, end=end, text=item)
    bounds, slash, share = value.partition("/")
    low_text, dots, high_text = bounds.partition("..")
    low = _seconds(item, low_text, "the delay")
    high = _seconds(item, high_text, "the delay") if dots else low
    if high < low:
        raise ValueError(f"{item!r}: the delay's bounds are LOW..HIGH, got {low_text}..{high_text}")
    fraction = _share(item, share) if slash else 1.0
    return LinkFault(src, dst, both, kind, fraction, low, high, start, end, item)


def parse_link_faults(items: Iterable[str]) -> list[LinkFault]:
    """The link items of a ``--fail`` list, in the order given."""
    return [parse_link_fault(item.strip()) for item in items]


def _draws(seed: int, src: str, dst: str, k: int) -> tuple[float, float, float]:
    """Three uniform draws in [0, 1) for the k-th message from ``src`` to ``dst``."""
    digest = hashlib.blake2b(f"{seed}|{src}|{dst}|{k}".encode(), digest_size=24).digest()
    a, b, c = struct.unpack("<QQQ", digest)
    return a / 2**64, b / 2**64, c / 2**64


class FaultPlan:
    """The link faults of a run over its processes (``roles``: name -> role) with its ``seed``.

    :meth:`fate` says what becomes of the next message from a sender to a receiver sent at a replay
    time: the delays after which its copies arrive (none: lost; two: duplicated). Every pattern must
    match some process of the run, and a link its fault names must exist (checked at construction)."""

    def __init__(self, faults: Iterable[LinkFault], roles: Mapping[str, str], seed: int = 0) -> None:
        self.faults = list(faults)
        self.roles = dict(roles)
        self.seed = seed
        self.sent: dict[tuple[str, str], int] = {}
        """(sender, receiver) -> messages numbered so far on that link."""
        self.hit: dict[str, int] = dict.fromkeys(KINDS, 0)
        """Messages each kind of fault changed."""
        names = list(self.roles)
        for f in self.faults:
            for side in (f.src, f.dst):
                if not any(_match(side, n, self.roles) for n in names):
                    raise ValueError(f"{f.text!r}: {side} matches no process of this testbed")
        self._links: dict[tuple[str, str], list[LinkFault]] = {}

    def on_link(self, src: str, dst: str) -> list[LinkFault]:
        """The faults of the link from ``src`` to ``dst`` (cached)."""
        key = (src, dst)
        found = self._links.get(key)
        if found is None:
            found = self._links[key] = [f for f in self.faults if f.covers(src, dst, self.roles)]
        return found

    def silences(self, frontend: str, detect: float) -> list[tuple[str, float, float]]:
        """The processes a partition hides from ``frontend`` (the failure detector) for longer than
        ``detect`` seconds, each ``(name, when it is declared dead, when it answers again)``: a ``cut``
        with an end, over a link between the frontend and it (either way: a ``Hello`` or its answer
        lost). A simulator declares them as the real frontend's silence rule would."""
        out = []
        for f in self.faults:
            if f.kind != "cut" or f.end == math.inf or f.end - f.start <= detect:
                continue
            for name in self.roles:
                if name != frontend and (
                    f.covers(name, frontend, self.roles) or f.covers(frontend, name, self.roles)
                ):
                    out.append((name, f.start + detect, f.end))
        return out

    def fate(self, src: str, dst: str, now: float) -> list[float]:
        """The delays (s) after which copies of the next message from ``src`` to ``dst``, sent at replay
        time ``now``, arrive: ``[0.0]`` untouched, ``[]`` lost, two for a duplicate."""
        faults = self.on_link(src, dst)
        key = (src, dst)
        k = self.sent.get(key, 0)
        self.sent[key] = k + 1
        if not faults:
            return [0.0]
        copies = [0.0]
        for i, f in enumerate(faults):
            if not f.start <= now < f.end or not copies:
                continue
            hit, size, _ = _draws(self.seed + 7919 * i, src, dst, k)
            if hit >= f.share:
                continue
            self.hit[f.kind] += 1
            if f.kind in ("drop", "cut"):
                copies = []
            elif f.kind == "dup":
                copies = [*copies, copies[-1]]
            elif f.kind == "delay":
                extra = f.low + (f.high - f.low) * size
                copies = [c + extra for c in copies]
            else:  # reorder: held back, so what follows on the link overtakes it
                copies = [c + REORDER_HOLD * (0.5 + 0.5 * size) for c in copies]
        return copies
