"""``aviary replay``: a trace sample against a real testbed or the simulator, to results files.

The same workload, the same cores and the same results files on both runtimes (DESIGN §2, §7):
``--runtime real`` starts a local testbed (or uses one with ``--connect``) and drives it from a
frontend in this process; ``--runtime sim`` runs every core in this process on virtual time.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..common.cluster import Cluster, ClusterError, load_cluster
from ..common.dags import GOOGLE_TRACE, DagTraceError, build_dag_workload, read_alibaba, read_tpch
from ..common.frontend import FrontendCore
from ..common.model import GOOGLE_CUTOFF, JobSpec
from ..common.params import resolve
from ..common.resources import Resources, vector_sum
from ..common.results import JobRecord, format_summary_table, write_results
from ..common.trace import TraceError, read_trace
from ..common.usage import DEFAULT_FAIRNESS_WINDOW, TaskRecord
from ..common.workload import WorkloadError, build_workload
from .hybrid import DEFAULT_UPDATE_RATIO
from .local import LocalTestbed
from .real import ReplayError, run_real
from .registry import POLICIES, check_params, get_policy, policy_cluster

DEFAULT_LOAD = 0.8


class UsageError(Exception):
    """Bad input the user must fix: printed as one line by the CLI, exit status 2."""


@dataclass
class ReplaySetup:
    """Everything a replay needs, resolved from the flags."""

    cluster: Cluster
    jobs: list[JobSpec]
    runtime: str
    out: Path
    stall_timeout: float
    net_delay: float = 0.0005
    connect: Path | None = None  # the cluster description of a running testbed
    extra: dict[str, Any] = field(default_factory=dict)


SCALED_PARAMS = ("cutoff", "heartbeat", "quantum")
"""Cluster parameters in seconds of the replay clock: derived from trace seconds by the time scale."""


REAL_TIME_SCALE = {"google": 1000.0, "alibaba": 10.0, "tpch": 1.0}
"""Default time scale of a real replay per workload: Google tasks run minutes (seconds become ms),
Alibaba's seconds (p50 3 s, p90 52 s), TPC-H's stage runtimes are already 0.1-8 s."""


def workload_kind(args: argparse.Namespace) -> str:
    return str(getattr(args, "workload", None) or "google")


def time_scale(args: argparse.Namespace) -> float:
    """``--time-scale``, or its default: 1 simulated; on the real runtime per workload
    (:data:`REAL_TIME_SCALE`)."""
    given = getattr(args, "time_scale", None)
    if given is not None:
        return given
    return REAL_TIME_SCALE[workload_kind(args)] if getattr(args, "runtime", "real") == "real" else 1.0


def policy_params(args: argparse.Namespace) -> dict[str, Any]:
    kairos = kairos_params(args) if str(getattr(args, "policy", "")).startswith("kairos") else {}
    hybrid = hybrid_params(args, get_policy(args.policy).params) if hasattr(args, "policy") else {}
    declared = declared_params(args) if hasattr(args, "policy") else {}
    return {"probe_ratio": args.probe_ratio, "time_scale": time_scale(args), **kairos, **hybrid, **declared}


def declared_params(args: argparse.Namespace) -> dict[str, Any]:
    """The policy's declared parameters from their flags (or defaults); a flag of a parameter the
    policy does not have, or a bad value, is a one-line error."""
    policy = get_policy(args.policy)
    names = {p.name for p in policy.declared}
    for other in POLICIES.values():
        for p in other.declared:
            if p.name not in names and getattr(args, p.name, None) is not None:
                raise UsageError(f"{p.flag}: policy {policy.name!r} has no such parameter")
    given = {p.name: getattr(args, p.name, None) for p in policy.declared}
    for p in policy.declared:
        try:
            resolve([p], given)
        except ValueError as exc:
            raise UsageError(f"{p.flag}: {exc}") from None
    return resolve(policy.declared, given, time_scale=time_scale(args))


def hybrid_params(args: argparse.Namespace, wanted: tuple[str, ...]) -> dict[str, Any]:
    """Hawk/Eagle/DLWL parameters the policy reads (``wanted``); times in trace seconds (the cutoff,
    the DLWL heartbeat) are divided by the time scale, as the estimates they are compared with."""
    scale = time_scale(args)
    ratio = getattr(args, "update_ratio", None)
    params = {
        "cutoff": (getattr(args, "cutoff", None) or GOOGLE_CUTOFF) / scale,
        "steal_attempts": getattr(args, "steal_attempts", 10),
        "min_probes": getattr(args, "min_probes", 20),
        "srpt_threshold": getattr(args, "srpt_threshold", 5.0),
        "update_ratio": DEFAULT_UPDATE_RATIO if ratio is None else ratio,
        "heartbeat": getattr(args, "dlwl_heartbeat", 3.0) / scale,
    }
    return {k: v for k, v in params.items() if k in wanted}


KAIROS_REFERENCE_QUANTUM = 10_000.0
"""The thesis' quantum for the Google trace, in trace seconds (§4.6.2)."""


def kairos_params(args: argparse.Namespace) -> dict[str, Any]:
    """Kairos parameters from the flags; the quantum follows the time scale unless given."""
    quantum = getattr(args, "quantum", None)
    if quantum is None:
        quantum = KAIROS_REFERENCE_QUANTUM / time_scale(args)
    params: dict[str, Any] = {
        "quantum": quantum,
        "kairos_q": getattr(args, "kairos_q", 2),
        "starvation_quanta": getattr(args, "starvation_quanta", 3),
        "starvation_multiple": getattr(args, "starvation_multiple", 2.0),
    }
    if getattr(args, "heartbeat_interval", None) is not None:
        params["heartbeat_interval"] = args.heartbeat_interval
    return params


def testbed_cluster(args: argparse.Namespace, *, bind_ports: bool | None = None) -> Cluster:
    """The cluster the flags describe (free local ports are looked for only for a real run)."""
    return policy_cluster(
        args.policy,
        nodes=args.nodes,
        slots=args.slots,
        schedulers=args.schedulers,
        executor=args.executor,
        seed=args.seed,
        params=policy_params(args),
        short_partition=None if args.short_partition is None else args.short_partition / 100,
        bind_ports=getattr(args, "runtime", "real") == "real" if bind_ports is None else bind_ports,
        capacity=getattr(args, "capacity", None),
    )


def connected_time_scale(args: argparse.Namespace, cluster: Cluster) -> float:
    """The time scale of a replay against a running testbed: the one its policy parameters were
    derived with (``aviary up --time-scale``) unless the replay names another and nothing depends on it."""
    held = cluster.params.get("time_scale")
    if held is None:
        return time_scale(args)
    if args.time_scale is not None and args.time_scale != held:
        scaled = [k for k in SCALED_PARAMS if k in cluster.params]
        if scaled:
            raise UsageError(
                f"{args.connect}: field 'time_scale': the testbed's {', '.join(scaled)} are for "
                f"--time-scale {held:g}, not {args.time_scale:g} (start 'aviary up --time-scale "
                f"{args.time_scale:g}', or replay without --time-scale)"
            )
        return args.time_scale
    return float(held)


def setup_replay(args: argparse.Namespace) -> ReplaySetup:
    if args.connect is not None:
        if args.runtime != "real":
            raise UsageError("--connect needs --runtime real")
        cluster = load_cluster(args.connect)
        check_params(cluster, str(args.connect))
        scale = connected_time_scale(args, cluster)
    else:
        cluster = testbed_cluster(args)
        scale = time_scale(args)
    load = None if args.keep_arrivals else (args.load or DEFAULT_LOAD)
    try:
        jobs = replay_jobs(args, cluster, scale, load)
    except (TraceError, WorkloadError, DagTraceError) as exc:
        raise UsageError(str(exc)) from None
    longest = max(max(j.durations) for j in jobs)
    stall = args.stall_timeout or max(30.0, 3 * longest)
    out = args.out or Path("results") / f"{cluster.policy}-{args.runtime}"
    extra = {
        "workload": workload_kind(args),
        "trace": str(args.trace),
        "time_scale": scale,
        "task_scale": args.task_scale,
        "load": load,
        "keep_arrivals": args.keep_arrivals,
        "seed": args.seed,
        "start": args.start,
        "schedulers": len(cluster.schedulers),
        "executor": cluster.executor,
        "params": cluster.params,
    }
    return ReplaySetup(cluster, jobs, args.runtime, out, stall, args.net_delay, args.connect, extra)


def replay_jobs(
    args: argparse.Namespace, cluster: Cluster, scale: float, load: float | None
) -> list[JobSpec]:
    """The scaled jobs of the replay: the Google-format trace as flat jobs for the slot-based policies;
    DAG jobs with per-stage demands (:mod:`aviary.common.dags`) for the multi-resource ones, whose
    ``--load`` is the offered load of the dominant resource."""
    kind = workload_kind(args)
    policy = get_policy(cluster.policy)
    if not policy.dag:
        if kind != "google":
            dag = ", ".join(p.name for p in POLICIES.values() if p.dag)
            raise UsageError(
                f"--workload {kind}: policy {policy.name!r} does not schedule DAG jobs (use {dag})"
            )
        nodes, slots = len(cluster.nodes), max(p.slots for p in cluster.nodes)
        return build_workload(
            read_trace(args.trace),
            jobs=args.jobs,
            sample=args.sample,
            start=args.start,
            seed=args.seed,
            time_scale=scale,
            task_scale=args.task_scale,
            scale_tasks=args.runtime == "real",
            nodes=nodes,
            slots=slots,
            reference_nodes=args.reference_nodes,
            load=load,
            keep_arrivals=args.keep_arrivals,
            cutoff=args.cutoff or GOOGLE_CUTOFF,
            misestimate=tuple(args.misestimate) if args.misestimate else None,
        )
    if args.misestimate:
        raise UsageError("--misestimate: not yet applied to DAG workloads")
    explicit = args.trace != GOOGLE_TRACE
    if kind == "google":
        trace: Any = read_trace(args.trace)
    elif kind == "alibaba":
        trace = read_alibaba(args.trace) if explicit else None
    else:
        trace = read_tpch(args.trace) if explicit else None
    capacity = vector_sum(n.resources for n in cluster.nodes)
    return build_dag_workload(
        kind,  # type: ignore[arg-type]
        trace,
        jobs=args.jobs if args.jobs is not None or kind != "tpch" else DEFAULT_TPCH_JOBS,
        sample=args.sample,
        start=args.start,
        seed=args.seed,
        time_scale=scale,
        task_scale=args.task_scale or 1.0,
        load=load,
        capacity_total=capacity,
        keep_arrivals=args.keep_arrivals,
        demands=args.demands,
        cutoff=args.cutoff or GOOGLE_CUTOFF,
    )


DEFAULT_TPCH_JOBS = 200
"""Jobs of a TPC-H replay without ``--jobs`` (each a random query of the 22)."""


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
    records = job_records(frontend, policy.name)
    dag: dict[str, Any] = {}
    if policy.dag:
        dag = {
            "task_log": [TaskRecord(e[0], e[2], e[3], Resources.of(e[4])) for e in log],
            "capacity_total": vector_sum(n.resources for n in cluster.nodes),
            "fairness_window": DEFAULT_FAIRNESS_WINDOW / float(setup.extra["time_scale"]),
        }
    task_seconds = math.fsum(math.fsum(j.durations) for j in jobs)
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


__all__ = ["ClusterError", "ReplaySetup", "UsageError", "print_summary", "run_replay", "setup_replay"]
