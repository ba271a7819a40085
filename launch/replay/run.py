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

This module sets a replay up (:func:`setup_replay`) and runs it (:func:`run_replay`); the jobs come from
:mod:`~aviary.launch.replay.jobs` (GS_HET-like ones from :mod:`~aviary.launch.replay.gshet`), the
prediction from :mod:`~aviary.launch.replay.predict`, the progress bar and the stop signals from
:mod:`~aviary.launch.replay.progress`.
"""

from __future__ import annotations

import argparse
import difflib
import math
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import uvloop
from rich.console import Console

from ...common.cluster import Cluster, ClusterError, load_cluster, slot_node
from ...common.dags import GOOGLE_TRACE, DagTraceError
from ...common.failures import Failure, parse_failures
from ...common.frontend import FrontendCore
from ...common.gshet import gshet_attributes
from ...common.model import JobSpec
from ...common.params import resolve
from ...common.resources import Resources, vector_sum
from ...common.results import JobRecord, format_summary_table, write_results
from ...common.trace import TraceError
from ...common.usage import DEFAULT_FAIRNESS_WINDOW, TaskRecord
from ...common.workload import WorkloadError
from ..drivers.dashboard import Dashboard, serve
from ..drivers.local import LocalTestbed
from ..drivers.real import ReplayError, run_real
from ..drivers.sim import STALLED, quiet_limit, simulate
from ..flags.spec import REAL_TIME_SCALE, ReplaySpec, UsageError
from ..policies.registry import check_params, get_policy, policy_cluster
from .connect import testbed_down
from .folder import check_folder, default_folder, point_latest
from .gshet import gshet_defaults, gshet_options
from .jobs import DEFAULT_REAL_JOBS, longest_task, replay_jobs
from .predict import human, predict, prediction_notes, print_prediction, refusal
from .progress import ProgressBar, StopSignals
from .resolved import ReplaySetup

DEFAULT_LOAD = 0.8
GSHET_LOAD = 1.0
"""The offered load of a GS_HET-like replay without ``--load`` (the recipe's, spec §1.12)."""


DEFAULT_BUDGET = 60.0
"""The wall-clock budget (s) that picks a real replay's time scale without ``--time-scale`` or
``--duration`` (never below the workload's :data:`REAL_TIME_SCALE`)."""


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
    cluster.nodes_per_process = spec.nodes_per_process
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
    latest = spec.out is None
    if spec.out is None:  # a folder of its own, named after the policy that runs (--connect: the testbed's)
        policy = spec.policy if spec.connect is None else load_cluster(spec.connect).policy
        spec = replace(spec, out=default_folder(spec.workload, policy, spec.runtime))
    else:
        check_folder(spec.out, spec.force)
    setup = _predicted(spec, quiet)
    setup.latest = latest
    return setup


def _predicted(spec: ReplaySpec, quiet: bool) -> ReplaySetup:
    """:func:`setup_replay` once the output folder is settled: a real replay is predicted, given the time
    scale that fits and refused when too long; a simulated one is set up as it is."""
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
    if not spec.stall_timeout:  # a wide DAG job may rightly run for minutes with no job finishing
        setup.stall_timeout = max(setup.stall_timeout, 3 * longest_quiet(setup.jobs, prediction.finishes))
    setup.extra["duration"] = spec.duration
    setup.extra["predicted"] = prediction.record()
    limit = spec.max_wall
    if limit is not None and not spec.yes and prediction.wall > limit:
        rescalable = spec.connect is None or not scaled_params(setup.cluster)
        raise UsageError(refusal(spec, setup, prediction, limit, rebuild=_setup, rescalable=rescalable))
    return setup


def longest_quiet(jobs: list[JobSpec], finishes: list[float | None]) -> float:
    """The longest a replay's prediction went without a job finishing once every job was submitted."""
    last = max(j.submit for j in jobs)
    ends = sorted(f for f in finishes if f is not None and f > last)
    return max((b - a for a, b in zip([last, *ends], ends, strict=False)), default=0.0)


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
    stall = spec.stall_timeout or max(30.0, 3 * longest_task(jobs))
    out = spec.out or default_folder(spec.workload, cluster.policy, spec.runtime)
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
    if cluster.nodes_per_process > 1:
        extra["nodes_per_process"] = cluster.nodes_per_process
    failures = injected_failures(spec, cluster)
    if failures:
        extra["failures"] = [[f.name, f.at, *([f.stall] if f.stall else [])] for f in failures]
    liveness = (spec.liveness_period, spec.liveness_misses)
    if spec.runtime == "real":
        extra["liveness"] = list(liveness)
    return ReplaySetup(
        cluster,
        jobs,
        spec.runtime,
        out,
        stall,
        spec.net_delay,
        spec.connect,
        extra,
        failures=failures,
        liveness=liveness,
        keys=spec.keys,
        dashboard=spec.dashboard if spec.runtime == "real" else None,
        dashboard_address=spec.dashboard_address,
    )


def injected_failures(spec: ReplaySpec, cluster: Cluster) -> list[Failure]:
    """``--fail``'s failures, checked against the cluster (one-line errors)."""
    if spec.fail is None:
        return []
    if spec.connect is not None:
        raise UsageError("--fail: kills processes this replay starts; with --connect, kill them yourself")
    try:
        failures = parse_failures(spec.fail)
    except ValueError as exc:
        raise UsageError(f"--fail: {exc}") from None
    units = cluster.units()
    names = {p.name for p in cluster.processes if p.role != "frontend"} | set(units)
    names.discard(cluster.frontend.name)
    for f in failures:
        if f.name not in names:
            close = ", ".join(difflib.get_close_matches(f.name, sorted(names), 3)) or ", ".join(
                sorted(names)[:5]
            )
            raise UsageError(f"--fail: no process {f.name!r} in this testbed (such as {close})")
    if spec.runtime == "sim":  # a pack of nodes (``pack-0``) dies (or stalls) as its members together
        failures = [
            Failure(p.name, f.at, f.stall)
            for f in failures
            for p in units.get(f.name) or [cluster.get(f.name)]
        ]
    return failures


def job_records(frontend: FrontendCore, policy: str) -> list[JobRecord]:
    records = []
    for job in frontend.jobs:
        t = frontend.times[job.job_id]
        submit = job.submit if t.submit is None else t.submit
        records.append(JobRecord(job.job_id, job.cls, job.tasks, submit, t.first_start, t.finish, policy))
    return records


def run_replay(
    setup: ReplaySetup, *, quiet: bool = False, console: Console | None = None, progress_every: float = 10.0
) -> dict[str, Any]:
    """Run the replay and write the results; returns the summary. A real replay first prints its
    prediction. Progress: a bar on a terminal, else a line every ``progress_every`` seconds (unless
    ``quiet``). Interrupted by SIGINT or SIGTERM, it still writes the results of what finished
    (``extra.interrupted``, ``extra.interrupted_by``, the jobs left in ``unfinished``), prints them,
    and raises ``KeyboardInterrupt`` (SIGINT: the command exits 130) or ``SystemExit(143)`` (SIGTERM)."""
    console = console or Console(stderr=True)
    cluster, jobs = setup.cluster, setup.jobs
    policy = get_policy(cluster.policy)
    label = f"{policy.name} ({setup.runtime}, {len(cluster.nodes)} nodes)"
    problems: list[str] = []
    if setup.connect is not None and (down := testbed_down(setup.connect, cluster)):
        raise UsageError(down)  # at once, not after the registration wait
    if setup.runtime == "real":
        print_prediction(setup, console)
    end = None if setup.prediction is None else setup.prediction.wall
    arrivals = max(j.submit for j in jobs)
    span = max(arrivals, work_bound(cluster, jobs)) if setup.runtime == "sim" else arrivals
    bar = ProgressBar(
        len(jobs),
        label,
        not quiet,
        end=end,
        virtual=setup.runtime == "sim",
        last_arrival=arrivals or None,  # a batch: no arrivals to show the clock against
        every=progress_every,
        console=console,
    )
    with StopSignals(raise_first=False) as stop, bar:
        if setup.runtime == "sim":
            estimated = quiet

            def progress(fe: FrontendCore, now: float) -> None:
                # The simulator stops here, in its own frame: a KeyboardInterrupt raised by the signal
                # handler could land in a gc callback, where Python only prints it.
                nonlocal estimated
                bar.update(fe, now)
                if not estimated and (line := wall_estimate(time.monotonic() - started, fe, now, span)):
                    estimated = True
                    bar.console.print(line)
                if stop.reason is not None:
                    raise KeyboardInterrupt

            started = time.monotonic()
            outcome = simulate(
                cluster,
                jobs,
                net_delay=setup.net_delay,
                progress=progress,
                interruptible=True,
                failures=setup.failures,
                stall_detect=setup.liveness[0] * setup.liveness[1],
            )
            wall = time.monotonic() - started
            frontend, messages, counters = outcome.frontend, outcome.messages, outcome.counters
            log = [entry for core in outcome.cores.values() for entry in core.task_log()]
            cycles = [entry for core in outcome.cores.values() for entry in core.cycle_log()]
            setup.extra["events"] = outcome.events
            setup.extra["events_per_s"] = round(outcome.events / max(wall, 1e-9))
            setup.extra["virtual_seconds"] = outcome.virtual_seconds
            interrupted = None if outcome.stopped is None else stop.reason or outcome.stopped
            if interrupted == STALLED:  # gave up, as a real replay does when no job finishes
                interrupted = None
                problems.append(
                    f"gave up at virtual time {outcome.virtual_seconds:,.1f} s: no job finished for "
                    f"{quiet_limit(jobs):,.0f} s (ten times all the jobs' work); "
                    f"{len(frontend.unfinished())} of {len(jobs)} jobs did not finish"
                )
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
    if frontend.dead or frontend.resubmitted:  # which processes died when, and the jobs that moved
        setup.extra["declared_dead"] = {name: round(at, 3) for name, at in frontend.dead.items()}
        setup.extra["resubmitted"] = sorted(frontend.resubmitted)
    dag: dict[str, Any] = {}
    if policy.dag:
        dag = {
            "task_log": [TaskRecord(e[0], e[2], e[3], Resources(*e[4]), *e[5:6]) for e in log],
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
    if setup.latest:
        point_latest(setup.out)
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


def _dashboard(setup: ReplaySetup, console: Console) -> Callable[[Any], Dashboard]:
    """What starts the replay's dashboard on its frontend session and prints its URL."""

    def start(session: Any) -> Dashboard:
        port, address = setup.dashboard or 0, setup.dashboard_address
        say = partial(console.print, soft_wrap=True, markup=False, highlight=False)
        return serve(session, setup.cluster, port, address, say)

    return start


def _run_real(setup: ReplaySetup, bar: ProgressBar, console: Console, stop: StopSignals) -> Any:
    """The replay on real processes: a testbed of its own, or the running one of ``setup.connect``;
    a signal recorded by ``stop`` ends it early."""
    cluster = setup.cluster
    route = get_policy(cluster.policy).route(cluster)
    bed = None if setup.connect else LocalTestbed(cluster, setup.out / "testbed", keys=setup.keys)
    started = time.monotonic()
    try:
        if bed is not None:
            bed.start()
        try:
            outcome = uvloop.run(
                run_real(
                    cluster,
                    setup.jobs,
                    route,
                    stall_timeout=setup.stall_timeout,
                    shutdown=bed is not None,  # a running testbed outlives the replay
                    dead=dict if bed is None else bed.dead,
                    progress=bar.update,
                    stop=lambda: stop.reason,
                    failures=setup.failures,
                    fail=None if bed is None else bed.fail,
                    restart=None if bed is None else bed.restart,
                    liveness=setup.liveness,
                    watch=None if setup.dashboard is None else _dashboard(setup, console),
                )
            )
            if outcome.registered_at is not None:  # from the first process started to the last registered
                setup.extra["startup_seconds"] = round(outcome.registered_at - started, 3)
            return outcome
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


CALIBRATION = 3.0
"""Seconds of a simulated replay after which it estimates its own wall time."""
LONG_SIMULATION = 180.0
"""A simulated replay estimated to take longer than this (s) is flagged."""


def work_bound(cluster: Cluster, jobs: list[JobSpec]) -> float:
    """The least virtual time the jobs' work takes on the cluster: the busiest resource's work (each
    task's duration times its demand, summed) over the cluster's capacity of it. A batch's makespan is
    at least this; with contention, DAG barriers and fragmentation it is more (1.0-1.5x in the packing
    experiments)."""
    capacity = vector_sum(p.resources for p in cluster.nodes)
    work = [0.0, 0.0, 0.0, 0.0]
    for job in jobs:
        offset = 0
        for stage in job.dag():
            seconds = sum(job.durations[offset : offset + stage.tasks])
            offset += stage.tasks
            for r, d in enumerate(stage.demand):
                work[r] += seconds * d
    return max((w / c for w, c in zip(work, capacity, strict=True) if c > 0), default=0.0)


def wall_estimate(elapsed: float, frontend: FrontendCore, now: float, span: float) -> str | None:
    """After :data:`CALIBRATION` seconds of a simulated replay, one line estimating its whole wall time
    from the share done so far (of the jobs finished, or of the virtual ``span`` the run takes at the least:
    the last arrival, or the work's bound for a batch, whichever is further), with a warning when it looks
    long; None before then or with nothing done yet."""
    if elapsed < CALIBRATION:
        return None
    by_time = now / span if span > 0 else 0.0
    done = max(frontend.finished / max(1, len(frontend.jobs)), by_time)
    if done <= 0:
        return None
    total = elapsed / min(1.0, done)
    share = min(1.0, done)
    line = f"estimate: about {human(total)} of wall time in all (after {human(elapsed)}, {share:.0%} done)"
    if total > LONG_SIMULATION:
        line += (
            " [yellow]— a long simulation: fewer --jobs or --nodes, or 'aviary sweep' to use every core"
            "[/yellow]"
        )
    return line


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
