"""``aviary trace sample``: the jobs of a trace that pass filters ``replay --jobs/--sample/--start``
cannot express, streamed (``docs/traces.md``, "Sampling").

A job is kept when its submit time is in ``[since, until)``, its ``prio=`` in ``[lo, hi]``, its
``class=`` among ``classes``, its task count in ``[min_tasks, max_tasks]`` (each filter only when given; a
job without ``prio=``/``class=`` fails a filter on it), then with probability ``fraction`` (one draw of
``random.Random(seed)`` per job that passed the others, so a seed gives the same sample), up to ``jobs``
jobs (the first ones, in file order).
"""

from __future__ import annotations

import os
import random
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from ..trace import TraceJob, iter_trace

__all__ = ["Filter", "sample_trace"]


@dataclass(frozen=True)
class Filter:
    since: float | None = None
    until: float | None = None
    priority: tuple[int, int] | None = None
    classes: Collection[int] | None = None
    min_tasks: int | None = None
    max_tasks: int | None = None

    def keeps(self, job: TraceJob) -> bool:
        if self.since is not None and job.submit < self.since:
            return False
        if self.until is not None and job.submit >= self.until:
            return False
        if self.priority is not None and (
            job.priority is None or not self.priority[0] <= job.priority <= self.priority[1]
        ):
            return False
        if self.classes is not None and job.sched_class not in self.classes:
            return False
        if self.min_tasks is not None and job.tasks < self.min_tasks:
            return False
        return self.max_tasks is None or job.tasks <= self.max_tasks


def sample_trace(
    path: str | os.PathLike[str],
    keep: Filter,
    *,
    fraction: float | None = None,
    jobs: int | None = None,
    seed: int = 0,
) -> Iterator[TraceJob]:
    """Yield the jobs of ``path`` that pass ``keep`` and the seeded ``fraction``, at most ``jobs``."""
    rng = random.Random(seed)
    n = 0
    for job in iter_trace(path):
        if jobs is not None and n >= jobs:
            return
        if not keep.keeps(job):
            continue
        if fraction is not None and rng.random() >= fraction:
            continue
        n += 1
        yield job
