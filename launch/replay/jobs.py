"""The scaled jobs of a replay: the bundled Google sample (or any trace in its format) as flat jobs
for the slot-based policies, with the task scale that keeps a small testbed's utilization near
``--load``; DAG jobs with per-stage demands for the multi-resource ones; the GS_HET-like jobs
(:mod:`aviary.launch.replay.gshet`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...common.cluster import Cluster
from ...common.dags import GOOGLE_TRACE, build_dag_workload, read_alibaba
from ...common.model import GOOGLE_CUTOFF, JobSpec
from ...common.resources import vector_sum
from ...common.trace import TraceJob, read_trace
from ...common.workload import JobStream, build_workload, stream_workload
from ..flags.spec import ReplaySpec, UsageError
from ..policies.registry import POLICIES, Policy
from .gshet import replay_gshet

DEFAULT_REAL_JOBS = 300
"""Jobs of a real replay of a trace (google, alibaba) without ``--jobs`` (the simulator takes all)."""

DEFAULT_TPCH_JOBS = 200
"""Jobs of a TPC-H (each a random query of the 22 at an input size of ``--tpch-mix``) or TPC-DS (each a
generated DAG) replay without ``--jobs``."""

TASK_SCALES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""Task scales tried, in order, when the default one merges tasks that outlast the arrivals."""

TAIL_SHARE = 0.25
"""The longest merged task of a default task scale is at most this share of the sample's arrivals."""

STREAM_BYTES = 64 * 2**20
"""A simulated replay of a Google-format trace file larger than this streams its jobs (``--stream``):
about 2 million tasks; the whole month is about 200 MB."""


def streamed_jobs(
    spec: ReplaySpec, policy: Policy, cluster: Cluster, scale: float, load: float | None
) -> JobStream | None:
    """The replay's jobs as a stream (:func:`~aviary.common.workload.stream_workload`: the jobs
    :func:`flat_jobs` would build on the simulator, the same bit for bit, made as the replay pulls them),
    with ``--stream`` or, without ``--no-stream``, for a simulated replay of a trace file above
    :data:`STREAM_BYTES`; None: the jobs are built as a list."""
    wanted = spec.stream
    if wanted is None:
        try:
            big = Path(spec.trace).stat().st_size > STREAM_BYTES
        except OSError:
            big = False
        wanted = big and spec.runtime == "sim" and not policy.dag and spec.workload == "google"
    if not wanted:
        return None
    if spec.runtime != "sim":
        raise UsageError("--stream: only for --runtime sim (a real replay holds a few hundred jobs)")
    if policy.dag or spec.workload != "google" or spec.batch:
        raise UsageError(
            f"--stream: only for a Google-format trace under a slot-based policy, not --workload "
            f"{spec.workload} under {policy.name}" + (" with --batch" if spec.batch else "")
        )
    return stream_workload(
        spec.trace, **flat_settings(spec, cluster, scale, load, spec.jobs, spec.task_scale or 1.0)
    )


def flat_settings(
    spec: ReplaySpec, cluster: Cluster, scale: float, load: float | None, jobs: int | None, factor: float
) -> dict[str, Any]:
    """The keywords of :func:`~aviary.common.workload.build_workload` (and of ``stream_workload``) for the
    Google trace's flat jobs: ``jobs`` of them at task scale ``factor``."""
    return {
        "jobs": jobs,
        "sample": spec.sample,
        "start": spec.start,
        "seed": spec.seed,
        "time_scale": scale,
        "task_scale": factor,
        "nodes": len(cluster.nodes),
        "slots": max(p.slots for p in cluster.nodes),
        "reference_nodes": spec.reference_nodes,
        "load": load,
        "keep_arrivals": spec.keep_arrivals,
        "cutoff": GOOGLE_CUTOFF,  # reporting classes: the trace's reference, whatever --cutoff
        "misestimate": spec.misestimate,
    }


def replay_jobs(
    spec: ReplaySpec, policy: Policy, cluster: Cluster, scale: float, load: float | None
) -> tuple[list[JobSpec], float | None]:
    """The scaled jobs of the replay and the task scale they were merged with (None: none given, the
    DAG workloads'): the Google-format trace as flat jobs for the slot-based policies (:func:`flat_jobs`);
    DAG jobs with per-stage demands (:mod:`aviary.common.dags`) for the multi-resource ones, whose
    ``--load`` is the offered load of the dominant resource."""
    kind = spec.workload
    if spec.gshet is not None and kind != "gshet":
        raise UsageError(f"--gshet applies to --workload gshet, not {kind}")
    if spec.tpch_mix is not None and kind != "tpch":
        raise UsageError(f"--tpch-mix applies to --workload tpch, not {kind}")
    if kind == "gshet" and policy.dag:
        return replay_gshet(spec, cluster, scale, load), spec.task_scale
    if not policy.dag:
        if spec.batch:
            raise UsageError(
                "--batch: only for the DAG policies (the Google replay keeps --load or --keep-arrivals)"
            )
        if kind != "google":
            dag = ", ".join(p.name for p in POLICIES.values() if p.dag)
            raise UsageError(
                f"--workload {kind}: policy {policy.name!r} does not schedule DAG jobs (use {dag})"
            )
        return flat_jobs(spec, cluster, scale, load)
    if spec.misestimate:
        raise UsageError("--misestimate: not yet applied to DAG workloads")
    explicit = spec.trace != GOOGLE_TRACE
    if kind == "tpcds" and explicit:
        raise UsageError(f"--workload tpcds takes no trace file (its jobs are generated), got {spec.trace}")
    if kind == "google":
        trace: Any = read_trace(spec.trace)
    elif kind == "alibaba":
        trace = read_alibaba(spec.trace) if explicit else None
    elif kind == "tpch":
        trace = spec.trace if explicit else None  # read at each profile of the mix
    else:
        trace = None
    capacity = vector_sum(n.resources for n in cluster.nodes)
    jobs = build_dag_workload(
        kind,  # type: ignore[arg-type]
        trace,
        jobs=spec.jobs if spec.jobs is not None or kind not in ("tpch", "tpcds") else DEFAULT_TPCH_JOBS,
        sample=spec.sample,
        start=spec.start,
        seed=spec.seed,
        time_scale=scale,
        task_scale=spec.task_scale or 1.0,
        load=load,
        capacity_total=capacity,
        keep_arrivals=spec.keep_arrivals,
        batch=spec.batch,
        demands=spec.demands,
        cutoff=GOOGLE_CUTOFF,  # reporting classes: the trace's reference, whatever --cutoff
        machine=max((n.resources for n in cluster.nodes), key=lambda c: c.total()),
        tpch_mix=spec.tpch_mix,
    )
    capacities = {n.resources for n in cluster.nodes}
    for job in jobs:  # a heterogeneous cluster: the largest machine is not every machine
        for i, stage in enumerate(job.dag()):
            if not any(stage.demand.fits_in(c) for c in capacities):
                raise UsageError(
                    f"job {job.job_id} (line {job.line}) stage {i} demands <{stage.demand.describe()}>: "
                    "no node has that much (see --capacity)"
                )
    return jobs, spec.task_scale


def flat_jobs(
    spec: ReplaySpec, cluster: Cluster, scale: float, load: float | None
) -> tuple[list[JobSpec], float]:
    """The Google trace's jobs, flat, and their task scale. ``--jobs``, or on real processes
    :data:`DEFAULT_REAL_JOBS` (or the trace's jobs from ``--start``, if fewer); the task scale is
    ``--task-scale``, or on real processes
    ``nodes*slots/reference_nodes`` (the thesis' rule: the largest job keeps its share of the cluster)
    raised through :data:`TASK_SCALES` until no merged task outlasts :data:`TAIL_SHARE` of the sample's
    arrivals (a small testbed would otherwise merge most jobs into one task longer than the whole
    replay, and the utilization would fall far below ``--load``), or, when even unmerged tasks do, to
    the first whose longest task is within 25 % of the unmerged one; 1 simulated."""
    nodes, slots = len(cluster.nodes), max(p.slots for p in cluster.nodes)
    trace = google_trace(spec.trace)
    count = spec.jobs
    if count is None and spec.runtime == "real":  # a short first run, not the whole trace
        left = len(trace) - (spec.start or 0)
        count = min(DEFAULT_REAL_JOBS, left) if left > 0 else None

    def build(factor: float) -> list[JobSpec]:
        return build_workload(trace, **flat_settings(spec, cluster, scale, load, count, factor))

    if spec.task_scale is not None:
        return build(spec.task_scale), spec.task_scale
    if spec.runtime != "real":
        return build(1.0), 1.0
    factor = nodes * slots / spec.reference_nodes
    tried = [(factor, build(factor))]
    span = arrival_span(tried[0][1])
    for bigger in (f for f in TASK_SCALES if f > factor):
        if len(tried[-1][1]) < 2 or longest_task(tried[-1][1]) <= TAIL_SHARE * span:
            return tried[-1][1], tried[-1][0]
        tried.append((bigger, build(bigger)))
    # The sample's own tasks outlast its arrivals: merge no more than makes a difference.
    floor = longest_task(tried[-1][1])
    factor, jobs = next((f, js) for f, js in tried if longest_task(js) <= 1.25 * floor)
    return jobs, factor


_TRACES: dict[tuple[str, int, int], list[TraceJob]] = {}


def google_trace(path: Path) -> list[TraceJob]:
    """:func:`read_trace`, read once per file version (a replay's prediction rebuilds its jobs)."""
    path = Path(path).resolve()  # one entry for every name of the file (the provenance record's too)
    stat = path.stat() if path.exists() else None
    key = (str(path), stat.st_mtime_ns if stat else 0, stat.st_size if stat else 0)
    if key not in _TRACES:
        _TRACES.clear()
        _TRACES[key] = read_trace(path)
    return _TRACES[key]


def longest_task(jobs: list[JobSpec]) -> float:
    return max(max(j.durations) for j in jobs)


def arrival_span(jobs: list[JobSpec]) -> float:
    """From the first submission to the last (replay seconds)."""
    return max(j.submit for j in jobs) - min(j.submit for j in jobs)
