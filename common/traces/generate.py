"""``aviary trace generate --like TRACE``: a synthetic trace with a given trace's distributions
(``docs/traces.md``, "Synthetic traces").

The method, streamed and seeded (``random.Random(seed)``):

1. One pass over the source (:func:`~aviary.common.trace.iter_trace`, in file order) keeps a uniform
   reservoir (Vitter's Algorithm R) of at most :data:`POOL` jobs, the *templates*, and one of at most
   :data:`POOL` inter-arrival gaps (``max(0, submit_k - submit_{k-1})`` between consecutive lines; a
   converted trace is in submit order). A source of at most ``POOL`` jobs is kept whole.
2. Job ``k`` of the output: a template drawn uniformly; its task count kept; each task's duration
   drawn with replacement from the template's own durations (a bootstrap within the job, so a job's
   spread of durations and the joint law of size and duration follow the source's); the template's
   demands, priority, class and gang kept (no ``after``: a synthetic job waits for none); its submit
   time the previous one's plus a gap drawn from the gap reservoir (the first at the source's first
   submit). So sizes, durations and arrival gaps follow the source's empirical laws; burstiness beyond
   one gap (correlated arrivals) is not reproduced.

Memory: the two reservoirs, whatever ``jobs`` is; the output is yielded one job at a time.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterator

from ..trace import MAX_JOBS, TraceError, TraceJob, iter_trace

POOL = 50_000
"""Most templates (and gaps) kept from the source: the bundled sample (10,000 jobs) whole; a month of
the 2011 trace (670,000 jobs) through a uniform reservoir."""

__all__ = ["POOL", "generate_like", "header"]


def _reservoirs(path: str, rng: random.Random, pool: int) -> tuple[list[TraceJob], list[float], float]:
    templates: list[TraceJob] = []
    gaps: list[float] = []
    first: float | None = None
    last = 0.0
    for seen, job in enumerate(iter_trace(path), 1):
        if first is None:
            first = job.submit
        else:
            gap = max(0.0, job.submit - last)
            if len(gaps) < pool:
                gaps.append(gap)
            else:
                i = rng.randrange(seen - 1)
                if i < pool:
                    gaps[i] = gap
        last = job.submit
        if len(templates) < pool:
            templates.append(job)
        else:
            i = rng.randrange(seen)
            if i < pool:
                templates[i] = job
    if first is None:
        raise TraceError(f"{path}: no jobs to learn from")
    return templates, gaps or [0.0], first


def generate_like(
    source: str | os.PathLike[str], jobs: int, seed: int = 0, pool: int = POOL
) -> Iterator[TraceJob]:
    """Yield ``jobs`` synthetic jobs drawn like ``source``'s (the module docstring's method), in submit
    order; ``line`` is the job's position (1-based). Raises :class:`~aviary.common.trace.TraceError` on
    a bad or empty source."""
    if not 1 <= jobs <= MAX_JOBS * 100:
        raise ValueError(f"jobs must be in 1..{MAX_JOBS * 100:,}, got {jobs}")
    rng = random.Random(seed)
    templates, gaps, t = _reservoirs(os.fspath(source), rng, pool)
    for k in range(jobs):
        if k:
            t += rng.choice(gaps)
        tpl = rng.choice(templates)
        src = tpl.durations
        durations = [src[int(rng.random() * len(src))] for _ in src]
        yield TraceJob(
            line=k + 1,
            submit=round(t, 6),
            durations=durations,
            mean=math.fsum(durations) / len(durations),
            cpu=tpl.cpu,
            mem=tpl.mem,
            priority=tpl.priority,
            sched_class=tpl.sched_class,
            name=f"syn{k}",
            gang=tpl.gang,
        )


def header(source: str, jobs: int, seed: int) -> list[str]:
    """The comment lines that open a generated trace: it is synthetic, and how it was made."""
    return [
        "# aviary-trace 1 (docs/traces.md): submit num_tasks mean d_1..d_n [KEY=VALUE...]",
        f"# SYNTHETIC: not real data. aviary trace generate --like {source} --jobs {jobs} --seed {seed}",
        "# method: job sizes and per-job durations bootstrapped from a reservoir of the source's jobs, "
        "gaps between arrivals from its gaps (aviary.common.traces.generate)",
    ]
