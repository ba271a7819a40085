"""``aviary replay``: a trace sample against a real testbed or the simulator, to results files.

The same workload, the same cores and the same results files on both runtimes (DESIGN §2, §7):
``--runtime real`` starts a local testbed (or uses one with ``--connect``) and drives it from a
frontend in this process; ``--runtime sim`` runs every core in this process on virtual time.
"""

from __future__ import annotations

import argparse
import inspect
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..common.cluster import Cluster, ClusterError, load_cluster, slot_node
from ..common.dags import GOOGLE_TRACE, DagTraceError, build_dag_workload, read_alibaba, read_tpch
from ..common.frontend import FrontendCore
from ..common.gshet import gshet_attributes, gshet_jobs
from ..common.model import GOOGLE_CUTOFF, JobSpec
from ..common.params import resolve
from ..common.resources import Resources, vector_sum
from ..common.results import JobRecord, format_summary_table, write_results
from ..common.trace import TraceError, read_trace
from ..common.usage import DEFAULT_FAIRNESS_WINDOW, TaskRecord
from ..common.workload import WorkloadError, build_workload
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


REAL_TIME_SCALE = {"google": 1000.0, "alibaba": 10.0, "tpch": 1.0, "tpcds": 10.0, "gshet": 10.0}
"""Default time scale of a real replay per workload: Google tasks run minutes (seconds become ms),
Alibaba's seconds (p50 3 s, p90 52 s), TPC-H's stage runtimes are already 0.1-8 s, the generated
TPC-DS-like stages' mean task durations are p50 8 s, p95 41 s (:mod:`aviary.common.dag_shapes`), the
GS_HET-like tasks 10-120 s (:mod:`aviary.common.gshet`; 1-12 s at 10, TetriSched's 4 s cycle 0.4 s)."""

DEFAULT_GSHET_JOBS = 200
"""Jobs of a GS_HET-like replay without ``--jobs``."""


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


def setup_replay(spec: ReplaySpec | argparse.Namespace) -> ReplaySetup:
    """The cluster, jobs and settings of the replay ``spec`` describes (a namespace of ``aviary replay``
    flags, as experiments still build, is read through :meth:`ReplaySpec.from_args`)."""
    if isinstance(spec, argparse.Namespace):
        spec = ReplaySpec.from_args(spec)
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
        jobs = replay_jobs(spec, cluster, scale, load)
    except (TraceError, WorkloadError, DagTraceError) as exc:
        raise UsageError(str(exc)) from None
    longest = max(max(j.durations) for j in jobs)
    stall = spec.stall_timeout or max(30.0, 3 * longest)
    out = spec.out or Path("results") / f"{cluster.policy}-{spec.runtime}"
    extra = {
        "workload": spec.workload,
        "trace": str(spec.trace),
        "time_scale": scale,
        "task_scale": spec.task_scale,
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


def replay_jobs(spec: ReplaySpec, cluster: Cluster, scale: float, load: float | None) -> list[JobSpec]:
    """The scaled jobs of the replay: the Google-format trace as flat jobs for the slot-based policies;
    DAG jobs with per-stage demands (:mod:`aviary.common.dags`) for the multi-resource ones, whose
    ``--load`` is the offered load of the dominant resource."""
    kind = spec.workload
    policy = get_policy(cluster.policy)
    if spec.gshet is not None and kind != "gshet":
        raise UsageError(f"--gshet applies to --workload gshet, not {kind}")
    if kind == "gshet" and policy.dag:
        return replay_gshet(spec, cluster, scale, load)
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
        nodes, slots = len(cluster.nodes), max(p.slots for p in cluster.nodes)
        return build_workload(
            read_trace(spec.trace),
            jobs=spec.jobs,
            sample=spec.sample,
            start=spec.start,
            seed=spec.seed,
            time_scale=scale,
            task_scale=spec.task_scale,
            scale_tasks=spec.runtime == "real",
            nodes=nodes,
            slots=slots,
            reference_nodes=spec.reference_nodes,
            load=load,
            keep_arrivals=spec.keep_arrivals,
            cutoff=spec.cutoff or GOOGLE_CUTOFF,
            misestimate=spec.misestimate,
        )
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
    return jobs


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


class ProgressBar:
    """A rich progress bar of finished jobs (submitted ones in the description)."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            disable=not enabled,
            transient=False,
        )
        self.task = self.progress.add_task(label, total=total)
        self.label = label

    def __enter__(self) -> ProgressBar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def update(self, frontend: FrontendCore, note: str = "") -> None:
        if frontend.ready:
            desc = f"{self.label}: {frontend.submitted} submitted{note}"
        else:
            desc = f"{self.label}: waiting for {len(frontend.waiting)} processes to register"
        self.progress.update(self.task, completed=frontend.finished, description=desc)


def run_replay(setup: ReplaySetup, *, quiet: bool = False, console: Console | None = None) -> dict[str, Any]:
    """Run the replay and write the results; returns the summary."""
    console = console or Console(stderr=True)
    cluster, jobs = setup.cluster, setup.jobs
    policy = get_policy(cluster.policy)
    label = f"{policy.name} ({setup.runtime}, {len(cluster.nodes)} nodes)"
    problems: list[str] = []
    with ProgressBar(len(jobs), label, enabled=not quiet) as bar:
        if setup.runtime == "sim":
            from .sim import simulate

            started = time.monotonic()
            outcome = simulate(
                cluster,
                jobs,
                net_delay=setup.net_delay,
                progress=lambda fe, now: bar.update(fe, f", t={now:,.0f} s"),
            )
            wall = time.monotonic() - started
            frontend, messages, counters = outcome.frontend, outcome.messages, outcome.counters
            log = [entry for core in outcome.cores.values() for entry in core.task_log()]
            cycles = [entry for core in outcome.cores.values() for entry in core.cycle_log()]
            setup.extra["events"] = outcome.events
            setup.extra["events_per_s"] = round(outcome.events / max(wall, 1e-9))
            setup.extra["virtual_seconds"] = outcome.virtual_seconds
        else:
            result = _run_real(setup, bar, console)
            frontend, wall, messages, counters = (
                result.frontend,
                result.wall_seconds,
                result.messages,
                result.counters,
            )
            problems = result.problems
            log = result.task_log
            cycles = result.cycles
    records = job_records(frontend, policy.name)
    dag: dict[str, Any] = {}
    if policy.dag:
        dag = {
            "task_log": [TaskRecord(e[0], e[2], e[3], Resources(*e[4])) for e in log],
            "capacity_total": vector_sum(n.resources for n in cluster.nodes),
            "fairness_window": DEFAULT_FAIRNESS_WINDOW / float(setup.extra["time_scale"]),
        }
    task_seconds = math.fsum(math.fsum(j.durations) for j in jobs)
    slo = {j.job_id: (j.slo, j.deadline) for j in jobs if j.slo is not None or j.deadline is not None}
    summary = write_results(
        setup.out,
        records,
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
    return summary


def _run_real(setup: ReplaySetup, bar: ProgressBar, console: Console) -> Any:
    """The replay on real processes: a testbed of its own, or the running one of ``setup.connect``."""
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
