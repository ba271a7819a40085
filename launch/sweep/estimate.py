"""How long a sweep's cells take, before and while they run (issue 25).

A cell's estimate is the mean wall time of the cells already run that share its setting: the same
values on every axis but the seed, else the same policy, else any cell (their ``summary.json``'s
``wall_seconds``, or the times of this run's cells as they finish). Seeds of one setting take about the
same time (three seeds of a carbyne_sim setting fall within 25 % of each other). Policies do not: a
simulated task costs 90-620 µs among the multi-resource policies, so a policy's own cells are what its
estimate rests on. With no cell to go by, ``aviary sweep --dry-run`` sets the cell's replay up (nothing
runs) and counts its tasks at :data:`SECONDS_PER_TASK`.

The running sweep's ETA is the sum of the estimates of the cells left, over the workers.
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import fmean
from typing import Any

from .spec import Cell

SECONDS_PER_TASK = 3e-4
"""A simulated task's wall time when no cell of the policy ran yet: the middle of what the multi-resource
policies took in ``experiments/carbyne_sim`` (90-620 µs a task, 2026-11-27). The slot-based policies
take 10-50x less: their first cell corrects the estimate."""


def setting(cell: Cell) -> tuple[tuple[str, str], ...]:
    """The cell's values on every axis but the seed."""
    return cell.others("seed")


class Estimates:
    """Wall seconds of the cells run so far, by setting and by policy; guesses for the others."""

    def __init__(self) -> None:
        self.by_setting: dict[tuple[tuple[str, str], ...], list[float]] = {}
        self.by_policy: dict[str, list[float]] = {}
        self.all: list[float] = []

    def record(self, cell: Cell, seconds: float) -> None:
        self.by_setting.setdefault(setting(cell), []).append(seconds)
        self.by_policy.setdefault(str(cell.values.get("policy")), []).append(seconds)
        self.all.append(seconds)

    def guess(self, cell: Cell) -> float | None:
        """The cell's wall seconds as its closest relatives took them, None with none run."""
        for found in (self.by_setting.get(setting(cell)), self.by_policy.get(str(cell.values.get("policy")))):
            if found:
                return fmean(found)
        return fmean(self.all) if self.all else None

    def left(self, cells: Iterable[Cell], workers: int) -> float | None:
        """Seconds until ``cells`` are done on ``workers`` workers, None before any cell ran."""
        guesses = [self.guess(c) for c in cells]
        if not self.all:
            return None
        return sum(g or 0.0 for g in guesses) / max(1, workers)


def summary_seconds(summary: dict[str, Any] | None) -> float | None:
    """A finished cell's wall time from its ``summary.json``."""
    seconds = (summary or {}).get("wall_seconds")
    return float(seconds) if isinstance(seconds, int | float) and seconds >= 0 else None


def cell_tasks(cell: Cell) -> int:
    """How many tasks the cell's replay has (its jobs set up as the replay would; nothing runs)."""
    import tempfile

    from ..flags.parser import build_parser
    from ..flags.spec import ReplaySpec
    from ..replay.resolve import setup_replay

    with tempfile.TemporaryDirectory(prefix="aviary-estimate-") as tmp:
        args = build_parser().parse_args(["replay", *cell.flags, "--quiet", "--out", tmp])
        setup = setup_replay(ReplaySpec.from_args(args), quiet=True)
    return sum(len(job.durations) for job in setup.jobs)


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``1.2 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
