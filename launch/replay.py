"""``aviary replay``: a trace sample against a real testbed or the simulator, to results files.

The same workload, the same cores and the same results files on both runtimes (DESIGN §2, §7):
``--runtime real`` starts a local testbed (or uses one with ``--connect``) and drives it from a
frontend in this process; ``--runtime sim`` runs every core in this process on virtual time.

Know before you wait: a real replay is first simulated (the same cluster and jobs on virtual time,
usually well under a second), which gives its wall time and utilization in advance. That prediction
picks the time scale that fits ``--duration`` (by default, without ``--time-scale``, one minute), and a
replay predicted to run longer than ``--max-wall`` (5 min) is refused with one line naming the
``--time-scale``, ``--jobs`` or ``--task-scale`` that would fit, unless ``--yes``.

Never lose a run: SIGINT (Ctrl-C) or SIGTERM during a replay stops it cleanly (the testbed's processes
are asked for their counters, then stopped) and still writes ``jobs.csv`` and ``summary.json`` for what
finished, with ``extra.interrupted`` true, ``extra.interrupted_by`` the signal and the unfinished jobs in
``unfinished``; the command then exits 130 (SIGINT) or 143 (SIGTERM). A second signal stops at once.
"""

from __future__ import annotations

import argparse
import inspect
import math
import signal
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import uvloop
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Task as ProgressTask
from rich.text import Text

from ..common.cluster import Cluster, ClusterError, load_cluster, slot_node
from ..common.dags import GOOGLE_TRACE, DagTraceError, build_dag_workload, read_alibaba, read_tpch
from ..common.frontend import FrontendCore
from ..common.gshet import gshet_attributes, gshet_jobs
from ..common.model import GOOGLE_CUTOFF, JobSpec
from ..common.params import resolve
from ..common.resources import Resources, vector_sum
from ..common.results import JobRecord, format_summary_table, write_results
from ..common.trace import TraceError, TraceJob, read_trace
from ..common.usage import DEFAULT_FAIRNESS_WINDOW, TaskRecord
from ..common.workload import WorkloadError, build_workload, merge_tasks, task_count
from .local import LocalTestbed
from .real import ReplayError, run_real
from .registry import POLICIES, check_params, get_policy, policy_cluster
from .spec import ReplaySpec, UsageError

DEFAULT_LOAD = 0.8
GSHET_LOAD = 1.0
"""The offered load of a GS_HET-like replay without ``--load`` (the recipe's, spec §1.12)."""


@dataclass
class ReplaySetup:
    """Everything a replay needs, resolved from its :class:`ReplaySpec`."""

    cluster: Cluster
    jobs: list[JobSpec]
    runtime: str
    out: Path
    stall_timeout: float
    net_delay: float = 0.0005
    connect: Path | None = None  # the cluster description of a running testbed
    extra: dict[str, Any] = field(default_factory=dict)
    prediction: Prediction | None = None
    """A real replay's prediction on the simulator (:func:`predict`)."""


@dataclass
class Prediction:
    """What the simulator predicts for a real replay (the same cluster and jobs on virtual time)."""

    wall: float
    """Seconds of replay from the first submission to the last finish (a lower bound if not
    ``complete``); starting the testbed's processes comes on top."""
    utilization: float | None
    """Task-seconds over slot-seconds of that span (the dominant resource's share for DAG policies)."""
    finishes: list[float | None]
    """Each job's predicted finish, by job id."""
    seconds: float
    """Wall time the prediction took."""
    complete: bool = True
    """False when it was cut at :data:`PREDICT_LIMIT`: ``wall`` is then where it got to."""
    notes: list[str] = field(default_factory=list)
    """One-line warnings: utilization far below the asked load and why, tasks too short to be real."""

    def record(self) -> dict[str, Any]:
        """The summary's ``extra.predicted``."""
        util = None if self.utilization is None else round(self.utilization, 4)
        return {"wall_seconds": round(self.wall, 3), "utilization": util, "complete": self.complete}


REAL_TIME_SCALE = {"google": 1000.0, "alibaba": 10.0, "tpch": 1.0, "tpcds": 10.0, "gshet": 10.0}
"""Default time scale of a real replay per workload: Google tasks run minutes (seconds become ms),
Alibaba's seconds (p50 3 s, p90 52 s), TPC-H's stage runtimes are already 0.1-8 s, the generated
TPC-DS-like stages' mean task durations are p50 8 s, p95 41 s (:mod:`aviary.common.dag_shapes`), the
GS_HET-like tasks 10-120 s (:mod:`aviary.common.gshet`; 1-12 s at 10, TetriSched's 4 s cycle 0.4 s)."""

DEFAULT_GSHET_JOBS = 200
"""Jobs of a GS_HET-like replay without ``--jobs``."""

DEFAULT_REAL_JOBS = 300
"""Jobs of a real replay of a trace (google, alibaba) without ``--jobs`` (the simulator takes all)."""

DEFAULT_BUDGET = 60.0
"""The wall-clock budget (s) that picks a real replay's time scale without ``--time-scale`` or
``--duration`` (never below the workload's :data:`REAL_TIME_SCALE`)."""

PREDICT_LIMIT = 30.0
"""At most this many seconds of wall time for a prediction; a longer one gives a lower bound."""

TASK_SCALES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""Task scales tried, in order, when the default one merges tasks that outlast the arrivals."""

TAIL_SHARE = 0.25
"""The longest merged task of a default task scale is at most this share of the sample's arrivals."""

LOAD_SHORTFALL = 0.75
"""A predicted utilization below this share of ``--load`` gets a note saying why and what to change."""

MIN_TASK = 0.002
"""A median task shorter than this (replay seconds) gets a note: the real runtime's per-task overhead
(about a millisecond) would weigh."""


def time_scale(spec: ReplaySpec) -> float:
    """The spec's time scale, or its default: 1 simulated; on the real runtime per workload
    (:data:`REAL_TIME_SCALE`)."""
    if spec.time_scale is not None:
        return spec.time_scale
    return REAL_TIME_SCALE[spec.workload] if spec.runtime == "real" else 1.0


def policy_values(spec: ReplaySpec) -> dict[str, Any]:
    """Every declared parameter of the spec's policy, as the cluster holds it (durations in seconds of
    the replay clock), those that shape the cluster (the short partition) included."""
    policy = get_policy(spec.policy)
    return resolve(policy.declared, spec.given(), time_scale=time_scale(spec))


def testbed_cluster(spec: ReplaySpec, *, bind_ports: bool | None = None) -> Cluster:
    """The cluster the spec describes (free local ports are looked for only for a real run). Its
    ``[cluster.params]``: the time scale, then the policy's declared parameters that are cluster
    parameters (:func:`policy_values`; the short partition shapes the nodes instead)."""
    values = policy_values(spec)
    held = {p.name for p in get_policy(spec.policy).declared if p.cluster}
    params = {"time_scale": time_scale(spec), **{k: v for k, v in values.items() if k in held}}
    partition = values.get("short_partition")
    capacity = spec.capacity
    if spec.workload == "gshet" and capacity is None:
        capacity = slot_node(spec.slots)
    cluster = policy_cluster(
        spec.policy,
        nodes=spec.nodes,
        slots=spec.slots,
        schedulers=spec.schedulers,
        executor=spec.executor,
        seed=spec.seed,
        params=params,
        short_partition=None if partition is None else partition / 100,
        bind_ports=spec.runtime == "real" if bind_ports is None else bind_ports,
        capacity=capacity,
    )
    if spec.workload == "gshet":  # racks of 10 nodes, a quarter of them GPU-labelled
        for node, attributes in zip(cluster.nodes, gshet_attributes(len(cluster.nodes)), strict=True):
            node.attributes = {**node.attributes, **attributes}
    return cluster


def scaled_params(cluster: Cluster) -> list[str]:
    """The cluster's parameters in seconds of the replay clock derived from trace seconds by its time
    scale (those its policy declares with ``scales``)."""
    return [p.name for p in get_policy(cluster.policy).declared if p.scales and p.name in cluster.params]


def connected_time_scale(spec: ReplaySpec, cluster: Cluster) -> float:
    """The time scale of a replay against a running testbed: the one its policy parameters were
    derived with (``aviary up --time-scale``) unless the replay names another and nothing depends on it."""
    held = cluster.params.get("time_scale")
    if held is None:
        return time_scale(spec)
    if spec.time_scale is not None and spec.time_scale != held:
        scaled = scaled_params(cluster)
        if scaled:
            raise UsageError(
                f"{spec.connect}: field 'time_scale': the testbed's {', '.join(scaled)} are for "
                f"--time-scale {held:g}, not {spec.time_scale:g} (start 'aviary up --time-scale "
                f"{spec.time_scale:g}', or replay without --time-scale)"
            )
        return spec.time_scale
    return float(held)


def setup_replay(spec: ReplaySpec | argparse.Namespace, *, quiet: bool = False) -> ReplaySetup:
    """The cluster, jobs and settings of the replay ``spec`` describes (a namespace of ``aviary replay``
    flags, as experiments still build, is read through :meth:`ReplaySpec.from_args`).

    A real replay is predicted on the simulator (:func:`predict`; a transient progress bar when that
    takes over a second, unless ``quiet``): without ``--time-scale`` its time scale is the one whose
    prediction fits ``--duration`` (default :data:`DEFAULT_BUDGET`, then at least the workload's
    :data:`REAL_TIME_SCALE`), and one predicted to run longer than ``max_wall`` is refused (a one-line
    :class:`UsageError` naming what would fit) unless ``yes``."""
    if isinstance(spec, argparse.Namespace):
        spec = ReplaySpec.from_args(spec)
    if spec.runtime != "real":
        if spec.duration is not None:
            raise UsageError("--duration: only for --runtime real (the simulator runs as fast as it can)")
        return _setup(spec)
    if spec.duration is not None and spec.time_scale is not None:
        raise UsageError("--duration picks the time scale: give --duration or --time-scale, not both")
    if spec.jobs is None and spec.workload == "alibaba" and spec.trace == GOOGLE_TRACE:  # the bundled jobs
        spec = replace(spec, jobs=DEFAULT_REAL_JOBS)  # (a Google trace's: flat_jobs)
    setup = _setup(spec)
    budget = spec.duration
    if budget is None and spec.time_scale is None and spec.connect is None:
        budget = DEFAULT_BUDGET
    prediction = predict(setup, quiet=quiet)
    for round_ in range(3):  # durations scale with the time scale, the network delay does not: iterate
        if budget is None or not prediction.complete or prediction.wall <= 0:
            break
        if round_ and prediction.seconds > 5.0:  # a slow prediction (a MILP policy, say): once is enough
            break
        scale = float(setup.extra["time_scale"])
        want = float(f"{scale * prediction.wall / budget:.3g}")
        if spec.duration is None:
            want = max(want, REAL_TIME_SCALE[spec.workload])
        if abs(want / scale - 1) < 0.02:
            break
        setup = _setup(replace(spec, time_scale=want))
        prediction = predict(setup, quiet=quiet)
    prediction.notes = prediction_notes(spec, setup, prediction)
    setup.prediction = prediction
    setup.extra["duration"] = spec.duration
    setup.extra["predicted"] = prediction.record()
    limit = spec.max_wall
    if limit is not None and not spec.yes and prediction.wall > limit:
        raise UsageError(refusal(spec, setup, prediction, limit))
    return setup


def _setup(spec: ReplaySpec) -> ReplaySetup:
    """:func:`setup_replay` without the prediction: the cluster, the jobs, the settings."""
    if spec.connect is not None:
        if spec.runtime != "real":
            raise UsageError("--connect needs --runtime real")
        cluster = load_cluster(spec.connect)
        check_params(cluster, str(spec.connect))
        scale = connected_time_scale(spec, cluster)
        if spec.workload == "gshet" and not all("rack" in n.attributes for n in cluster.nodes):
            raise UsageError(
                f"--workload gshet: the nodes of {spec.connect} carry no rack attribute "
                "(start the testbed with 'aviary up --workload gshet')"
            )
    else:
        cluster = testbed_cluster(spec)
        scale = time_scale(spec)
    default_load = GSHET_LOAD if spec.workload == "gshet" else DEFAULT_LOAD
    load = None if spec.keep_arrivals or spec.batch else (spec.load or default_load)
    try:
        jobs, task_scale = replay_jobs(spec, cluster, scale, load)
    except (TraceError, WorkloadError, DagTraceError) as exc:
        raise UsageError(str(exc)) from None
    longest = max(max(j.durations) for j in jobs)
    stall = spec.stall_timeout or max(30.0, 3 * longest)
    out = spec.out or Path("results") / f"{cluster.policy}-{spec.runtime}"
    extra = {
        "workload": spec.workload,
        "trace": str(spec.trace),
        "time_scale": scale,
        "task_scale": task_scale,
        "load": load,
        "keep_arrivals": spec.keep_arrivals,
        "batch": spec.batch,
        "seed": spec.seed,
        "start": spec.start,
        "schedulers": len(cluster.schedulers),
        "executor": cluster.executor,
        "params": cluster.params,
    }
    if spec.workload == "gshet":  # the recipe's mix and sizes (keyword defaults of gshet_jobs)
        extra["gshet"] = gshet_defaults() | gshet_options(spec.gshet)
    return ReplaySetup(cluster, jobs, spec.runtime, out, stall, spec.net_delay, spec.connect, extra)


def replay_jobs(
    spec: ReplaySpec, cluster: Cluster, scale: float, load: float | None
) -> tuple[list[JobSpec], float | None]:
    """The scaled jobs of the replay and the task scale they were merged with (None: none given, the
    DAG workloads'): the Google-format trace as flat jobs for the slot-based policies (:func:`flat_jobs`);
    DAG jobs with per-stage demands (:mod:`aviary.common.dags`) for the multi-resource ones, whose
    ``--load`` is the offered load of the dominant resource."""
    kind = spec.workload
    policy = get_policy(cluster.policy)
    if spec.gshet is not None and kind != "gshet":
        raise UsageError(f"--gshet applies to --workload gshet, not {kind}")
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
        trace = read_tpch(spec.trace) if explicit else None
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
        cutoff=spec.cutoff or GOOGLE_CUTOFF,
        machine=max((n.resources for n in cluster.nodes), key=lambda c: c.total()),
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
        return build_workload(
            trace,
            jobs=count,
            sample=spec.sample,
            start=spec.start,
            seed=spec.seed,
            time_scale=scale,
            task_scale=factor,
            nodes=nodes,
            slots=slots,
            reference_nodes=spec.reference_nodes,
            load=load,
            keep_arrivals=spec.keep_arrivals,
            cutoff=spec.cutoff or GOOGLE_CUTOFF,
            misestimate=spec.misestimate,
        )

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
    stat = Path(path).stat() if Path(path).exists() else None
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


def predict(setup: ReplaySetup, *, quiet: bool = True, limit: float = PREDICT_LIMIT) -> Prediction:
    """The replay on the simulator: its end (the real replay's wall time, start-up aside) and
    utilization. Cut after ``limit`` seconds of wall time (a lower bound); a transient progress bar on
    stderr when it takes over a second, unless ``quiet``."""
    from .sim import simulate

    started = time.monotonic()
    bar: ProgressBar | None = None
    arrivals = max(j.submit for j in setup.jobs)
    quiet = quiet or not Console(stderr=True).is_terminal  # a transient bar needs a terminal

    def progress(frontend: FrontendCore, now: float) -> None:
        nonlocal bar
        if bar is None and not quiet and time.monotonic() - started > 1.0:
            bar = ProgressBar(
                len(setup.jobs),
                "predicting on the simulator",
                True,
                virtual=True,
                last_arrival=arrivals,
                transient=True,
            )
            bar.__enter__()
        if bar is not None:
            bar.update(frontend, now)

    try:
        outcome = simulate(
            setup.cluster,
            setup.jobs,
            net_delay=setup.net_delay,
            progress=progress,
            progress_every=5_000,
            wall_limit=limit,
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    times = outcome.frontend.times
    finishes = [times[j.job_id].finish for j in setup.jobs]
    done = [f for f in finishes if f is not None]
    wall = outcome.virtual_seconds if outcome.stopped else max(done, default=0.0)
    utilization = None  # the DAG policies' is the dominant resource's: not estimated here
    if wall > 0 and not get_policy(setup.cluster.policy).dag:
        work = math.fsum(math.fsum(j.durations) for j in setup.jobs)
        utilization = work / (sum(p.slots for p in setup.cluster.nodes) * wall)
    return Prediction(wall, utilization, finishes, time.monotonic() - started, outcome.stopped is None)


def human(seconds: float) -> str:
    """A duration for people: 850 ms, 18.5 s, 4.2 min, 34.2 h."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def as_flag(seconds: float) -> str:
    """A duration as ``--duration`` / ``--max-wall`` take it: 90s, 5m, 2h."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _round_up(x: float) -> float:
    """``x`` rounded up to two significant digits."""
    if x <= 0:
        return x
    step = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / step - 1e-9) * step


def trace_index(spec: ReplaySpec, jobs: list[JobSpec]) -> tuple[list[TraceJob], int | None]:
    """The Google trace's jobs and the index of the first replayed one (None if not found)."""
    trace = google_trace(spec.trace)
    first = min(jobs, key=lambda j: j.job_id).line
    return trace, next((i for i, tj in enumerate(trace) if tj.line == first), None)


def prediction_notes(spec: ReplaySpec, setup: ReplaySetup, prediction: Prediction) -> list[str]:
    """One line each: the predicted utilization far below ``--load`` (why, and what to change), tasks
    too short for real processes."""
    jobs, notes = setup.jobs, []
    load, util = setup.extra.get("load"), prediction.utilization
    flat = spec.workload == "google" and not get_policy(setup.cluster.policy).dag
    if load is not None and util is not None and prediction.complete and util < LOAD_SHORTFALL * load:
        head = f"predicted utilization {util:.0%}, not the --load {load:g} asked"
        span = arrival_span(jobs)
        long_job = max(jobs, key=lambda j: max(j.durations))
        factor = setup.extra.get("task_scale")
        if flat and factor is not None and factor < 1 and max(long_job.durations) > TAIL_SHARE * span:
            trace, _ = trace_index(spec, jobs)
            by_line = {tj.line: tj for tj in trace}
            scale = float(setup.extra["time_scale"])

            def longest_at(f: float) -> float:
                return (
                    max(
                        max(merge_tasks(by_line[j.line].durations, task_count(by_line[j.line].tasks, f)))
                        for j in jobs
                    )
                    / scale
                )

            fits = next((f for f in TASK_SCALES if f > factor and longest_at(f) <= TAIL_SHARE * span), None)
            what = (
                f"--task-scale {fits:g} splits them (or pick another --start)"
                if fits is not None
                else "even unmerged they do: pick another --start, or more --jobs"
            )
            notes.append(
                f"{head}: task merging (--task-scale {factor:g}) makes tasks of up to "
                f"{human(max(long_job.durations))} (job {long_job.job_id}, trace line {long_job.line}), "
                f"longer than a quarter of the sample's {human(span)} of arrivals; {what}"
            )
        else:
            done = [(f, j) for f, j in zip(prediction.finishes, jobs, strict=True) if f is not None]
            last = max(done, key=lambda fj: fj[0])[1] if done else long_job
            where = f" (trace line {last.line})" if flat else ""
            notes.append(
                f"{head}: job {last.job_id}{where} with {human(math.fsum(last.durations))} of task time "
                f"keeps the cluster busy {human(max(0.0, prediction.wall - span))} after the last arrival, "
                "mostly idle; pick another --start, or more --jobs"
            )
    median = statistics.median(d for j in jobs for d in j.durations)
    if median < MIN_TASK:
        notes.append(
            f"the median task runs {human(median)} at --time-scale {setup.extra['time_scale']:g}, near the "
            "real runtime's per-task overhead (about 1 ms): the run may take longer than predicted and "
            "its times are noisy; fewer --jobs or a longer --duration"
        )
    return notes


def refusal(spec: ReplaySpec, setup: ReplaySetup, prediction: Prediction, limit: float) -> str:
    """The one line refusing a replay predicted to outlast ``limit``: the ``--time-scale``,
    ``--jobs`` (from the same start) or ``--task-scale`` that would fit, checked on the simulator."""
    target = 0.8 * limit
    cheap = prediction.seconds < 0.5  # each check is one more prediction
    fits: list[str] = []

    def check(changed: ReplaySpec) -> Prediction | None:
        try:
            return predict(_setup(changed), limit=min(PREDICT_LIMIT, 5.0))
        except UsageError:
            return None

    scale = float(setup.extra["time_scale"])
    want = _round_up(scale * prediction.wall / target)
    if spec.connect is None or not scaled_params(setup.cluster):
        for _ in range(3 if cheap else 0):
            again = check(replace(spec, time_scale=want, duration=None))
            if again is None or (again.complete and again.wall <= limit):
                break
            want = _round_up(want * again.wall / target)
        fits.append(f"--time-scale {want:g}")
    flat = spec.workload == "google" and not get_policy(setup.cluster.policy).dag
    if flat and cheap and spec.sample == "consecutive" and len(setup.jobs) > 1:
        _, start = trace_index(spec, setup.jobs)
        inf = float("inf")
        ends = [inf if f is None else f for f in prediction.finishes]
        count = 0
        while count < len(ends) and max(ends[: count + 1]) <= target:
            count += 1
        for _ in range(3):
            if count < 2 or start is None:
                break
            again = check(replace(spec, jobs=count, start=start, time_scale=scale, duration=None))
            if again is not None and again.complete and again.wall <= limit:
                fits.append(f"--jobs {count} --start {start}")
                break
            count //= 2
        factor = setup.extra.get("task_scale")
        for bigger in [f for f in TASK_SCALES if factor is not None and f > factor][:3]:
            again = check(replace(spec, task_scale=bigger, time_scale=scale, duration=None))
            if again is not None and again.complete and again.wall <= limit:
                fits.append(f"--task-scale {bigger:g}")
                break
    bound = "" if prediction.complete else "at least "
    fit = f"{' or '.join(fits)} would fit" if fits else "fewer --jobs would fit"
    return (
        f"predicted {bound}{human(prediction.wall)} of replay (simulated in {prediction.seconds:.1f} s), "
        f"above --max-wall {as_flag(limit)}: {fit} (or --duration {as_flag(target)} picks the time "
        "scale; --max-wall raises the limit; --yes runs anyway)"
    )


def print_prediction(setup: ReplaySetup, console: Console) -> None:
    """The prediction of a real replay, and its notes, before it starts."""
    pred = setup.prediction
    if pred is None:
        return
    bound = "" if pred.complete else "at least "
    util = "" if pred.utilization is None else f", utilization {pred.utilization:.0%}"
    load = setup.extra.get("load")
    asked = "" if load is None or pred.utilization is None else f" (--load {load:g})"
    starting = (
        "" if setup.connect else f" plus a few seconds to start {len(setup.cluster.processes) - 1} processes"
    )
    console.print(
        f"predicted on the simulator in {human(pred.seconds)}: {bound}{human(pred.wall)} of replay for "
        f"{len(setup.jobs)} jobs at --time-scale {setup.extra['time_scale']:g}{starting}{util}{asked}"
    )
    for note in pred.notes:
        console.print(f"[yellow]note: {note}[/yellow]")


DEFAULT_TPCH_JOBS = 200

DEFAULT_TPCH_JOBS = 200
"""Jobs of a TPC-H (each a random query of the 22) or TPC-DS (each a generated DAG) replay without
``--jobs``."""


GSHET_FIXED = ("load", "nodes", "slots", "misestimate", "time_scale")
"""Keywords of :func:`~aviary.common.gshet.gshet_jobs` a replay sets from its own flags."""


def gshet_defaults() -> dict[str, Any]:
    """The mix, sizes and admission of :func:`~aviary.common.gshet.gshet_jobs` a replay uses by default
    (trace seconds), for the summary's ``extra``."""
    params = inspect.signature(gshet_jobs).parameters.items()
    return {
        k: p.default for k, p in params if p.default is not inspect.Parameter.empty and k not in GSHET_FIXED
    }


def gshet_options(text: str | None) -> dict[str, Any]:
    """``--gshet KEY=VALUE,...``: keywords of :func:`~aviary.common.gshet.gshet_jobs` (``LO:HI`` for a
    range); an unknown key or a bad value is a one-line ``UsageError`` naming it."""
    defaults = gshet_defaults()
    out: dict[str, Any] = {}
    for item in filter(None, (text or "").split(",")):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in defaults:
            raise UsageError(f"--gshet: field '{key}': not one of {', '.join(defaults)}")
        default = defaults[key]
        try:
            if isinstance(default, tuple):
                lo, hi = value.split(":")
                kind = type(default[0])
                out[key] = (kind(lo), kind(hi))
            elif isinstance(default, str):
                out[key] = value
            else:
                out[key] = type(default)(value)
        except ValueError:
            raise UsageError(f"--gshet: field '{key}': bad value {value!r} (default {default!r})") from None
    return out


def replay_gshet(spec: ReplaySpec, cluster: Cluster, scale: float, load: float | None) -> list[JobSpec]:
    """The GS_HET-like jobs (:func:`~aviary.common.gshet.gshet_jobs`, the recipe's mix and sizes) for the
    cluster: ``--jobs`` (default :data:`DEFAULT_GSHET_JOBS`), ``--seed``, ``--load`` in preferred-runtime
    slot-seconds of all the nodes' slots (one per core), ``--batch``, ``--misestimate``."""
    refused = [
        ("a trace file", spec.trace != GOOGLE_TRACE),
        ("--keep-arrivals", spec.keep_arrivals),
        ("--start", spec.start is not None),
        ("--task-scale", spec.task_scale is not None),
        ("--demands alibaba-plan", spec.demands != "synth"),
    ]
    for what, given in refused:
        if given:
            raise UsageError(f"--workload gshet takes no {what} (its jobs are drawn, one slot per task)")
    slots = [int(n.resources.cores) for n in cluster.nodes]
    if min(slots) < 1:
        raise UsageError("--workload gshet: every node needs at least one core (a task's slot)")
    return gshet_jobs(
        spec.seed,
        spec.jobs if spec.jobs is not None else DEFAULT_GSHET_JOBS,
        load=load,
        nodes=sum(slots),  # the generator counts only slots (nodes x slots)
        slots=1,
        misestimate=spec.misestimate,
        time_scale=scale,
        **gshet_options(spec.gshet),
    )


def job_records(frontend: FrontendCore, policy: str) -> list[JobRecord]:
    records = []
    for job in frontend.jobs:
        t = frontend.times[job.job_id]
        submit = job.submit if t.submit is None else t.submit
        records.append(JobRecord(job.job_id, job.cls, job.tasks, submit, t.first_start, t.finish, policy))
    return records


class _EtaColumn(ProgressColumn):
    """``ETA``: the time left by the prediction (``eta`` field), else rich's estimate from the rate."""

    def render(self, task: ProgressTask) -> Text:
        eta = task.fields.get("eta")
        if eta is None:
            eta = task.time_remaining
        if task.finished:
            return Text("")
        if eta is None:
            shown = "-:--:--"
        else:
            minutes, seconds = divmod(round(max(0.0, eta)), 60)
            shown = f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"
        return Text(f"ETA {shown}", style="progress.remaining")


class ProgressBar:
    """A rich progress bar of a replay. The bar counts jobs finished (of all of them); then the jobs
    submitted, the replay clock against its predicted end, the time left and the time elapsed.

    Real processes: the clock counts replay seconds from the first submission; the end is the
    simulator's prediction (``end``) and the ETA the difference (rich's estimate from the rate of
    finishing jobs without a prediction, or once past it). The simulator (``virtual``): the clock is
    virtual time, shown against the last arrival (``last_arrival``), the ETA rich's estimate."""

    def __init__(
        self,
        total: int,
        label: str,
        enabled: bool,
        *,
        end: float | None = None,
        virtual: bool = False,
        last_arrival: float | None = None,
        transient: bool = False,
    ) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("jobs finished, {task.fields[submitted]} submitted"),
            TextColumn("{task.fields[clock]}"),
            _EtaColumn(),
            TimeElapsedColumn(),
            disable=not enabled,
            transient=transient,
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task(label, total=total, submitted=0, clock="", eta=None)
        self.label = label
        self.end = end
        self.virtual = virtual
        self.last_arrival = last_arrival

    def __enter__(self) -> ProgressBar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def clock_text(self, clock: float | None) -> tuple[str, float | None]:
        """The clock column's text and the ETA by the prediction (None: rich's estimate)."""
        if clock is None:
            return "", None
        if self.virtual:
            until = "" if self.last_arrival is None else f" (arrivals until {self.last_arrival:,.0f} s)"
            return f"virtual clock {clock:,.0f} s{until}", None
        if self.end is None:
            return f"clock {clock:,.1f} s", None
        eta = self.end - clock if clock <= self.end else None
        return f"clock {clock:,.1f} s of {self.end:,.1f} s predicted", eta

    def update(self, frontend: FrontendCore, clock: float | None = None) -> None:
        """Show ``frontend``'s jobs and the clock (replay seconds, or virtual ones; None: not started)."""
        if frontend.ready:
            desc = self.label
        else:
            desc = f"{self.label}: waiting for {len(frontend.waiting)} processes to register"
        text, eta = self.clock_text(clock)
        self.progress.update(
            self.task,
            completed=frontend.finished,
            description=desc,
            submitted=frontend.submitted,
            clock=text,
            eta=eta,
        )


class StopSignals:
    """SIGINT and SIGTERM during a replay (a context manager; the main thread only): the first one is
    recorded in :attr:`reason` (its name) and, with ``raise_first``, raises ``KeyboardInterrupt`` (to
    break the simulator's loop); a second one raises ``KeyboardInterrupt`` at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, raise_first: bool) -> None:
        self.raise_first = raise_first
        self.reason: str | None = None
        self.saved: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        first = self.reason is None
        if first:
            self.reason = signal.Signals(signum).name
        if self.raise_first or not first:
            raise KeyboardInterrupt

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved.clear()


def run_replay(setup: ReplaySetup, *, quiet: bool = False, console: Console | None = None) -> dict[str, Any]:
    """Run the replay and write the results; returns the summary. A real replay first prints its
    prediction. Interrupted by SIGINT or SIGTERM, it still writes the results of what finished
    (``extra.interrupted``, ``extra.interrupted_by``, the jobs left in ``unfinished``), prints them,
    and raises ``KeyboardInterrupt`` (SIGINT: the command exits 130) or ``SystemExit(143)`` (SIGTERM)."""
    console = console or Console(stderr=True)
    cluster, jobs = setup.cluster, setup.jobs
    policy = get_policy(cluster.policy)
    label = f"{policy.name} ({setup.runtime}, {len(cluster.nodes)} nodes)"
    problems: list[str] = []
    if setup.runtime == "real":
        print_prediction(setup, console)
    end = None if setup.prediction is None else setup.prediction.wall
    arrivals = max(j.submit for j in jobs)
    bar = ProgressBar(
        len(jobs), label, not quiet, end=end, virtual=setup.runtime == "sim", last_arrival=arrivals
    )
    with StopSignals(raise_first=setup.runtime == "sim") as stop, bar:
        if setup.runtime == "sim":
            from .sim import simulate

            started = time.monotonic()
            outcome = simulate(
                cluster, jobs, net_delay=setup.net_delay, progress=bar.update, interruptible=True
            )
            wall = time.monotonic() - started
            frontend, messages, counters = outcome.frontend, outcome.messages, outcome.counters
            log = [entry for core in outcome.cores.values() for entry in core.task_log()]
            cycles = [entry for core in outcome.cores.values() for entry in core.cycle_log()]
            setup.extra["events"] = outcome.events
            setup.extra["events_per_s"] = round(outcome.events / max(wall, 1e-9))
            setup.extra["virtual_seconds"] = outcome.virtual_seconds
            interrupted = None if outcome.stopped is None else stop.reason or outcome.stopped
            if interrupted is not None:
                left = len(frontend.unfinished())
                problems.append(
                    f"interrupted by {interrupted} at virtual time {outcome.virtual_seconds:,.1f} s: "
                    f"{left} of {len(jobs)} jobs did not finish"
                )
        else:
            result = _run_real(setup, bar, console, stop)
            frontend, wall, messages, counters = (
                result.frontend,
                result.wall_seconds,
                result.messages,
                result.counters,
            )
            problems = result.problems
            log = result.task_log
            cycles = result.cycles
            interrupted = result.interrupted
    records = job_records(frontend, policy.name)
    dag: dict[str, Any] = {}
    if policy.dag:
        dag = {
            "task_log": [TaskRecord(e[0], e[2], e[3], Resources(*e[4])) for e in log],
            "capacity_total": vector_sum(n.resources for n in cluster.nodes),
            "fairness_window": DEFAULT_FAIRNESS_WINDOW / float(setup.extra["time_scale"]),
        }
    ran = jobs if interrupted is None else [j for j in jobs if frontend.times[j.job_id].finish is not None]
    task_seconds = math.fsum(math.fsum(j.durations) for j in ran)  # interrupted: the finished jobs'
    if interrupted is not None:
        setup.extra["interrupted"], setup.extra["interrupted_by"] = True, interrupted
    slo = {j.job_id: (j.slo, j.deadline) for j in jobs if j.slo is not None or j.deadline is not None}
    from .provenance import workload_record

    summary = write_results(
        setup.out,
        records,
        workload=workload_record(setup),
        policy=policy.name,
        runtime=setup.runtime,
        nodes=len(cluster.nodes),
        slots=max(p.slots for p in cluster.nodes),
        wall_seconds=wall,
        task_seconds=task_seconds,
        messages=Counter(messages),
        counters=Counter(counters),
        extra={**setup.extra, "problems": problems},
        slo=slo or None,
        cycles=cycles,
        **dag,
    )
    for problem in problems:
        console.print(f"[yellow]{problem}[/yellow]")
    if interrupted is not None:
        print_summary(summary, setup.out)
        console.print(
            f"interrupted by {interrupted}: partial results of the {summary['finished']} finished jobs "
            f"of {summary['jobs']} (the others are listed as unfinished)"
        )
        if interrupted == "SIGTERM":
            raise SystemExit(128 + signal.SIGTERM)
        raise KeyboardInterrupt
    return summary


def _run_real(setup: ReplaySetup, bar: ProgressBar, console: Console, stop: StopSignals) -> Any:
    """The replay on real processes: a testbed of its own, or the running one of ``setup.connect``;
    a signal recorded by ``stop`` ends it early."""
    cluster = setup.cluster
    route = get_policy(cluster.policy).route(cluster)
    bed = None if setup.connect else LocalTestbed(cluster, setup.out / "testbed")
    try:
        if bed is not None:
            bed.start()
        try:
            return uvloop.run(
                run_real(
                    cluster,
                    setup.jobs,
                    route,
                    stall_timeout=setup.stall_timeout,
                    shutdown=bed is not None,  # a running testbed outlives the replay
                    dead=dict if bed is None else bed.dead,
                    progress=bar.update,
                    stop=lambda: stop.reason,
                )
            )
        except ReplayError as exc:
            if bed is None:
                raise UsageError(f"{setup.connect}: {exc}") from None
            dead = sorted(bed.dead())
            tail = f"; last lines of {dead[0]}'s log:\n{bed.log_tail(dead[0])}" if dead else ""
            raise UsageError(f"{exc}{tail}") from None
        finally:
            if bed is not None:
                bed.wait(5.0)
    finally:
        if bed is not None:
            bed.stop()


def print_summary(summary: dict[str, Any], out: Path, console: Console | None = None) -> None:
    console = console or Console()
    console.print(format_summary_table(summary))
    console.print(f"results: {out}/jobs.csv, {out}/summary.json")


__all__ = [
    "ClusterError",
    "ReplaySetup",
    "ReplaySpec",
    "UsageError",
    "print_summary",
    "run_replay",
    "setup_replay",
    "testbed_cluster",
]
