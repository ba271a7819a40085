"""The instrumented Kairos run of :mod:`aviary.experiments.kairos_sim` (``measure.json``): the central
queue, when short jobs leave it, and the suspensions of long tasks, seen through the simulator's
observer hook."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from aviary.experiments.kairos_sim.cells import KAIROS, flags_for
from aviary.launch.flags.parser import BUNDLED_TRACE

BIN = 10_000.0
LONG_BUCKETS = ((1129.532, 5_000.0), (5_000.0, 20_000.0), (20_000.0, math.inf))


def measure_kairos(nodes: int, seed: int, jobs_limit: int | None = None) -> dict[str, Any]:
    """One more Kairos run on ``nodes``, instrumented: the central queue every 1,000 s, when each task
    left it, and every suspension of every task (seen through the simulator's observer hook). Returns
    aggregates for :func:`kairos_lines`."""
    from aviary.central.kairos import KairosCentralCore
    from aviary.common.core import Core
    from aviary.common.effects import Resume, Suspend
    from aviary.common.frontend import FrontendCore
    from aviary.common.messages import PlaceTask
    from aviary.common.trace import read_trace
    from aviary.launch.drivers.sim import Simulator
    from aviary.launch.flags.parser import build_parser
    from aviary.launch.policies.registry import build_core, get_policy
    from aviary.launch.replay.resolve import setup_replay

    flags = flags_for("kairos", nodes, Path("/nonexistent"), KAIROS, seed, jobs_limit)
    setup = setup_replay(build_parser().parse_args(flags))
    cluster, jobs = setup.cluster, setup.jobs
    cls = {j.job_id: j.cls for j in jobs}
    submit = {j.job_id: j.submit for j in jobs}
    placed: dict[tuple[int, int], float] = {}
    stops: dict[tuple[int, int], float] = {}
    suspended: dict[tuple[int, int], list[float]] = {}  # task -> [suspensions, seconds suspended]
    cores = [build_core(spec, cluster) for spec in cluster.processes if spec.role != "frontend"]
    central = next(c for c in cores if c.role != "node")
    if not isinstance(central, KairosCentralCore):
        raise TypeError(f"measure_kairos: expected Kairos's central core, got {type(central).__name__}")

    def observe(now: float, core: Core, _input: tuple[Any, ...], effects: list[Any]) -> None:
        """What the dispatcher placed and what the nodes suspended (the simulator's observer hook)."""
        if core is central:
            for e in effects:
                if type(getattr(e, "msg", None)) is PlaceTask:
                    placed[(e.msg.job_id, e.msg.task_index)] = now
        elif core.role == "node":
            for e in effects:
                k = type(e)
                if k is Suspend:
                    stops[e.task_id] = now
                    suspended.setdefault(e.task_id, [0, 0.0])[0] += 1
                elif k is Resume and e.task_id in stops:
                    suspended[e.task_id][1] += now - stops.pop(e.task_id)

    samples: list[tuple[float, int, int]] = []

    def sample(frontend: Any, now: float) -> None:
        if not samples or now >= samples[-1][0] + 1_000.0:
            q = central.queue
            samples.append((now, len(q), sum(1 for j, _ in q if cls[j] == "short")))

    frontend = FrontendCore(cluster.frontend.name, jobs, get_policy(cluster.policy).route(cluster))
    Simulator([*cores, frontend], net_delay=setup.net_delay, observer=observe).run(
        frontend=frontend, progress=sample, progress_every=5_000
    )

    def finish(job_id: int) -> float:
        at = frontend.times[job_id].finish
        if at is None:
            raise RuntimeError(f"measure_kairos: job {job_id} never finished on {nodes} nodes")
        return at

    trace = read_trace(BUNDLED_TRACE)
    out: dict[str, Any] = {"nodes": nodes, "queue": [], "short_wait": [], "long": []}
    first = 60_000.0
    for lo in np.arange(first, 100_000.0 + 1, BIN):
        qs = [(q, sq) for t, q, sq in samples if lo <= t < lo + BIN]
        ids = [j.job_id for j in jobs if j.cls == "short" and lo <= j.submit < lo + BIN]
        # a short job's time in the central queue: until its last task left it
        waits = [max(placed[(j, i)] for i in range(len(jobs[j].durations))) - submit[j] for j in ids]
        done = [finish(j) - submit[j] for j in ids]
        out["queue"].append(
            [float(lo), max((q for q, _ in qs), default=0), max((sq for _, sq in qs), default=0)]
        )
        out["short_wait"].append(
            [
                float(lo),
                len(ids),
                float(np.median(waits)) if ids else None,
                float(np.median(done)) if ids else None,
            ]
        )
    for lo, hi in LONG_BUCKETS:
        tasks = [
            (j.job_id, i)
            for j in jobs
            if j.cls == "long" and lo <= trace[j.job_id].mean < hi
            for i in range(j.tasks)
        ]
        n = len(tasks)
        susp = [suspended.get(t, [0, 0.0]) for t in tasks]
        dur = [jobs[j].durations[i] for j, i in tasks]
        out["long"].append(
            [
                lo,
                hi,
                n,
                sum(x[0] for x in susp) / max(1, n),
                sum(x[1] for x in susp) / max(1e-9, sum(dur)),
                sum(1 for x in susp if x[0]) / max(1, n),
            ]
        )
    short_tasks = [(j.job_id, i) for j in jobs if j.cls == "short" for i in range(j.tasks)]
    out["short_suspended"] = sum(1 for t in short_tasks if t in suspended) / max(1, len(short_tasks))
    return out
