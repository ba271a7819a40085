"""A replay's set-up, in one pass: :func:`setup_replay` resolves a :class:`~..flags.spec.ReplaySpec` into
the :class:`~.resolved.ReplaySetup` that :func:`~.run.run_replay` runs.

    setup_replay(spec)
      -> _settle_folder(spec)             where results go (a folder of its own without --out)
      -> resolve(spec)                    policy = the registry's entry, asked once
           time scale, cluster            (testbed_cluster, or the running testbed of --connect)
           jobs                           (jobs.replay_jobs: trace or DAG workload, scaled to --load)
           failures, settings             -> ReplaySetup(policy, cluster, jobs, ...)
      -> _fit(spec, setup)                a real replay only: predicted on the simulator, rescaled to
                                          --duration (resolve again at the new time scale), or refused

Nothing after :func:`resolve` asks the registry or the spec again: the policy, cluster and jobs travel
in the set-up.
"""

from __future__ import annotations

import argparse
import difflib
import time
from dataclasses import replace
from typing import Any

from ...common.cluster import Cluster, load_cluster, slot_node
from ...common.dags import GOOGLE_TRACE, DagTraceError
from ...common.failures import Failure, parse_failures, split_items
from ...common.gshet import gshet_attributes
from ...common.model import JobSpec
from ...common.netfaults import FaultPlan, LinkFault, parse_link_faults
from ...common.params import resolve as resolve_params
from ...common.trace import TraceError
from ...common.workload import WorkloadError
from ..flags.spec import REAL_TIME_SCALE, ReplaySpec, UsageError
from ..policies.registry import Policy, check_params, cluster_policy, get_policy, policy_cluster
from .folder import check_folder, default_folder
from .gshet import gshet_defaults, gshet_options
from .jobs import DEFAULT_REAL_JOBS, longest_task, replay_jobs, streamed_jobs
from .predict import predict, prediction_notes, refusal
from .resolved import ReplaySetup

DEFAULT_LOAD = 0.8
GSHET_LOAD = 1.0
"""The offered load of a GS_HET-like replay without ``--load`` (the recipe's, spec §1.12)."""

DEFAULT_BUDGET = 60.0
"""The wall-clock budget (s) that picks a real replay's time scale without ``--time-scale`` or
``--duration`` (never below the workload's :data:`REAL_TIME_SCALE`)."""


def setup_replay(spec: ReplaySpec | argparse.Namespace, *, quiet: bool = False) -> ReplaySetup:
    """The policy, cluster, jobs and settings of the replay ``spec`` describes (a namespace of ``aviary
    replay`` flags, as experiments still build, is read through :meth:`ReplaySpec.from_args`).

    A real replay is predicted on the simulator (:func:`predict`; a transient progress bar when that
    takes over a second, unless ``quiet``): without ``--time-scale`` its time scale is the one whose
    prediction fits ``--duration`` (default :data:`DEFAULT_BUDGET`, then at least the workload's
    :data:`REAL_TIME_SCALE`), and one predicted to run longer than ``max_wall`` is refused (a one-line
    :class:`UsageError` naming what would fit) unless ``yes``."""
    begun = time.monotonic()
    if isinstance(spec, argparse.Namespace):
        spec = ReplaySpec.from_args(spec)
    latest = spec.out is None
    spec = _settle_folder(spec)
    if spec.runtime != "real":
        if spec.duration is not None:
            raise UsageError("--duration: only for --runtime real (the simulator runs as fast as it can)")
        setup = resolve(spec)
    else:
        setup = _fit(spec, quiet)
    setup.latest = latest
    setup.begun = begun
    return setup


def _settle_folder(spec: ReplaySpec) -> ReplaySpec:
    """The spec with its output folder: ``--out`` checked, or a folder of its own named after the policy
    that runs (with ``--connect``, the testbed's)."""
    if spec.out is not None:
        check_folder(spec.out, spec.force)
        return spec
    policy = get_policy(spec.policy).name if spec.connect is None else load_cluster(spec.connect).policy
    return replace(spec, out=default_folder(spec.workload, policy, spec.runtime))


def time_scale(spec: ReplaySpec) -> float:
    """The spec's time scale, or its default: 1 simulated; on the real runtime per workload
    (:data:`REAL_TIME_SCALE`)."""
    if spec.time_scale is not None:
        return spec.time_scale
    return REAL_TIME_SCALE[spec.workload] if spec.runtime == "real" else 1.0


def testbed_cluster(spec: ReplaySpec, *, bind_ports: bool | None = None) -> Cluster:
    """The cluster the spec describes (free local ports are looked for only for a real run)."""
    return _cluster(spec, get_policy(spec.policy), time_scale(spec), bind_ports)


def _cluster(spec: ReplaySpec, policy: Policy, scale: float, bind_ports: bool | None = None) -> Cluster:
    """:func:`testbed_cluster` of a resolved policy and time scale. Its ``[cluster.params]``: the time
    scale, then the policy's declared parameters that are cluster parameters (durations in seconds of the
    replay clock; the short partition shapes the nodes instead)."""
    values = resolve_params(policy.params, spec.given(), time_scale=scale)
    held = {p.name for p in policy.params if p.cluster}
    params = {"time_scale": scale, **{k: v for k, v in values.items() if k in held}}
    partition = values.get("short_partition")
    capacity = spec.capacity
    if spec.workload == "gshet" and capacity is None:
        capacity = slot_node(spec.slots)
    cluster = policy_cluster(
        policy,
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
    cluster.transport = spec.transport
    if spec.workload == "gshet":  # racks of 10 nodes, a quarter of them GPU-labelled
        for node, attributes in zip(cluster.nodes, gshet_attributes(len(cluster.nodes)), strict=True):
            node.attributes = {**node.attributes, **attributes}
    return cluster


def scaled_params(policy: Policy, cluster: Cluster) -> list[str]:
    """The cluster's parameters in seconds of the replay clock derived from trace seconds by its time
    scale (those its policy declares with ``scales``)."""
    return [p.name for p in policy.params if p.scales and p.name in cluster.params]


def _connected(spec: ReplaySpec) -> tuple[Policy, Cluster, float]:
    """The running testbed of ``--connect``: its policy, its cluster (parameters checked) and the time
    scale its policy parameters were derived with (``aviary up --time-scale``), unless the replay names
    another and nothing depends on it."""
    if spec.runtime != "real":
        raise UsageError("--connect needs --runtime real")
    assert spec.connect is not None
    cluster = load_cluster(spec.connect)
    check_params(cluster, str(spec.connect))
    policy = cluster_policy(cluster)
    if spec.workload == "gshet" and not all("rack" in n.attributes for n in cluster.nodes):
        raise UsageError(
            f"--workload gshet: the nodes of {spec.connect} carry no rack attribute "
            "(start the testbed with 'aviary up --workload gshet')"
        )
    held = cluster.params.get("time_scale")
    if held is None:
        return policy, cluster, time_scale(spec)
    if spec.time_scale is not None and spec.time_scale != held:
        scaled = scaled_params(policy, cluster)
        if scaled:
            raise UsageError(
                f"{spec.connect}: field 'time_scale': the testbed's {', '.join(scaled)} are for "
                f"--time-scale {held:g}, not {spec.time_scale:g} (start 'aviary up --time-scale "
                f"{spec.time_scale:g}', or replay without --time-scale)"
            )
        return policy, cluster, spec.time_scale
    return policy, cluster, float(held)


def resolve(spec: ReplaySpec) -> ReplaySetup:
    """The set-up without the prediction: the policy (asked of the registry once), the time scale, the
    cluster, the jobs, the failures to inject and the settings the summary records."""
    if spec.connect is not None:
        policy, cluster, scale = _connected(spec)
    else:
        policy, scale = get_policy(spec.policy), time_scale(spec)
        cluster = _cluster(spec, policy, scale)
    default_load = GSHET_LOAD if spec.workload == "gshet" else DEFAULT_LOAD
    load = None if spec.keep_arrivals or spec.batch else (spec.load or default_load)
    try:
        stream = streamed_jobs(spec, policy, cluster, scale, load)
        if stream is None:
            jobs, task_scale = replay_jobs(spec, policy, cluster, scale, load)
        else:
            jobs, task_scale = [], spec.task_scale or 1.0
    except (TraceError, WorkloadError, DagTraceError) as exc:
        raise UsageError(str(exc)) from None
    stall = spec.stall_timeout or max(30.0, 3 * (longest_task(jobs) if stream is None else stream.longest))
    out = spec.out or default_folder(spec.workload, cluster.policy, spec.runtime)
    extra: dict[str, Any] = {
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
    if stream is not None:
        extra["streamed"] = True
    if spec.workload == "gshet":  # the recipe's mix and sizes (keyword defaults of gshet_jobs)
        extra["gshet"] = gshet_defaults() | gshet_options(spec.gshet)
    if cluster.nodes_per_process > 1:
        extra["nodes_per_process"] = cluster.nodes_per_process
    if cluster.transport != "zmq" and spec.runtime == "real":
        extra["transport"] = cluster.transport
    failures = injected_failures(spec, cluster)
    links = injected_link_faults(spec, cluster)
    if links:
        extra["link_faults"] = [f.text for f in links]
    if failures:
        extra["failures"] = [[f.name, f.at, *([f.stall] if f.stall else [])] for f in failures]
    liveness = (spec.liveness_period, spec.liveness_misses)
    if spec.runtime == "real":
        extra["liveness"] = list(liveness)
    return ReplaySetup(
        policy,
        cluster,
        jobs,
        spec.runtime,
        out,
        stall,
        spec.net_delay,
        spec.connect,
        extra,
        failures=failures,
        link_faults=links,
        liveness=liveness,
        keys=spec.keys,
        dashboard=spec.dashboard if spec.runtime == "real" else None,
        dashboard_address=spec.dashboard_address,
        task_table=spec.task_table and stream is None,
        stream=stream,
    )


def fitted_time_scale(spec: ReplaySpec) -> float:
    """The time scale a real replay of ``spec`` takes (``--time-scale``, else the one that fits its
    ``--duration``, 1 minute by default): what ``aviary compose write`` gives the testbed it writes, so
    that a replay ``--connect``-ed to it runs that long."""
    if spec.time_scale is not None:
        return spec.time_scale
    setup = _fit(replace(spec, runtime="real", connect=None, max_wall=None), quiet=True)
    return float(setup.extra["time_scale"])


def _fit(spec: ReplaySpec, quiet: bool) -> ReplaySetup:
    """A real replay's set-up: predicted, given the time scale that fits and refused when too long."""
    if spec.duration is not None and spec.time_scale is not None:
        raise UsageError("--duration picks the time scale: give --duration or --time-scale, not both")
    if spec.jobs is None and spec.workload == "alibaba" and spec.trace == GOOGLE_TRACE:  # the bundled jobs
        spec = replace(spec, jobs=DEFAULT_REAL_JOBS)  # (a Google trace's: flat_jobs)
    setup = resolve(spec)
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
        setup = resolve(replace(spec, time_scale=want))
        prediction = predict(setup, quiet=quiet)
    prediction.notes = prediction_notes(spec, setup, prediction)
    setup.prediction = prediction
    if not spec.stall_timeout:  # a wide DAG job may rightly run for minutes with no job finishing
        setup.stall_timeout = max(setup.stall_timeout, 3 * longest_quiet(setup.jobs, prediction.finishes))
    setup.extra["duration"] = spec.duration
    setup.extra["predicted"] = prediction.record()
    limit = spec.max_wall
    if limit is not None and not spec.yes and prediction.wall > limit:
        rescalable = spec.connect is None or not scaled_params(setup.policy, setup.cluster)
        raise UsageError(refusal(spec, setup, prediction, limit, rebuild=resolve, rescalable=rescalable))
    return setup


def longest_quiet(jobs: list[JobSpec], finishes: list[float | None]) -> float:
    """The longest a replay's prediction went without a job finishing once every job was submitted."""
    last = max(j.submit for j in jobs)
    ends = sorted(f for f in finishes if f is not None and f > last)
    return max((b - a for a, b in zip([last, *ends], ends, strict=False)), default=0.0)


def injected_link_faults(spec: ReplaySpec, cluster: Cluster) -> list[LinkFault]:
    """``--fail``'s link faults (:mod:`aviary.common.netfaults`), each side checked against the cluster's
    processes (one-line errors). The simulator injects them in its message delivery, the real runtime in
    each process's link layer (:mod:`aviary.common.linklayer`)."""
    if spec.fail is None:
        return []
    items = split_items(spec.fail)[1]
    if not items:
        return []
    try:
        faults = parse_link_faults(items)
        FaultPlan(faults, {p.name: p.role for p in cluster.processes})  # every side matches a process
    except ValueError as exc:
        raise UsageError(f"--fail: {exc}") from None
    return faults


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
