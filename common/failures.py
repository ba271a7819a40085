"""Failures injected on purpose (issue 14): ``--fail "node-3@30s,sched-0@45s"``.

Each names a process and a replay time (seconds since the first submission; ``s``, ``m`` or ``h`` may
follow the number). The real runtime kills the process with SIGKILL at that time; ``NAME@TIME+PAUSE``
stops it instead for ``PAUSE`` (SIGSTOP, then SIGCONT: a stall; a packed node alone is frozen by its
pack, as a SIGSTOP would freeze it; the simulator holds its inputs for as long); the simulator drops it
at the same virtual time. Either way the frontend learns of the death only as it would of a real one:
the replay's own testbed sees its child exit within one poll (:data:`EXIT_DETECT_SECONDS`, what the
simulator waits after an injected kill); a process it did not start (``--connect``, other hosts) or one
that stalls is declared dead after :data:`DETECT_SECONDS` of silence (the frontend's ``Hello`` every
:data:`LIVENESS_PERIOD` s, :data:`LIVENESS_MISSES` unanswered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .netfaults import is_link_fault

LIVENESS_PERIOD = 0.5
"""Seconds between the frontend's liveness ``Hello``s on the real runtime."""
LIVENESS_MISSES = 6
"""Periods without an answer before a process is declared dead."""
DETECT_SECONDS = LIVENESS_PERIOD * LIVENESS_MISSES
"""How long a silent process goes before it is declared dead (3 s): a 20 s stall is declared, its work
re-run elsewhere, and the process rejoins when it answers again."""

RESTART_SECONDS = 0.5
"""From a dead central scheduler's restart to its new process registering (a Python process's start and
imports, measured on a local testbed: ``docs/failures.md``); the simulator's restart takes as long."""

EXIT_DETECT_SECONDS = 0.1
"""How soon a replay notices that a child of its own testbed exited (its poll period)."""

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class Failure:
    name: str
    at: float  # replay seconds
    stall: float = 0.0  # > 0: stopped for this long (seconds), not killed


def _seconds(item: str, when: str) -> float:
    number, unit = (when[:-1], when[-1]) if when and when[-1] in _UNITS else (when, "s")
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"{item!r}: {when!r} is not a time such as 30s, 2m, 1h") from None
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{item!r}: the time must be >= 0")
    return value


def split_items(text: str) -> tuple[list[str], list[str]]:
    """A ``--fail`` list's items: the process failures' and the link faults' (``LINK:FAULT...``,
    :mod:`aviary.common.netfaults`; a link's own commas, ``after=a,b``-style, do not occur there)."""
    items = [part.strip() for part in text.split(",")]
    return [i for i in items if not is_link_fault(i)], [i for i in items if is_link_fault(i)]


def parse_failures(text: str) -> list[Failure]:
    """``"node-3@30s,sched-0@45,node-5@10s+20s"`` -> failures in time order (the last a 20 s stall);
    ValueError names the bad item. Link faults in the list (:func:`split_items`) are not read here."""
    out = []
    for item in split_items(text)[0]:
        name, sep, when = item.partition("@")
        if not sep or not name or not when:
            raise ValueError(f"{item!r}: expected PROCESS@TIME or PROCESS@TIME+PAUSE, such as node-3@30s")
        when, plus, pause = when.partition("+")
        stall = _seconds(item, pause) if plus else 0.0
        if plus and stall <= 0:
            raise ValueError(f"{item!r}: a pause must be longer than 0 s")
        out.append(Failure(name.strip(), _seconds(item, when), stall))
    return sorted(out, key=lambda f: (f.at, f.name))
