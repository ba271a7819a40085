"""Policies by name: which processes a policy needs and how each role's core is built.

A new policy is one module plus one entry here (DESIGN §2). A core's module is imported by its builder,
when a process is built: a node process loads its node core only, and a command that only reads its
flags (``aviary replay --help``, a bad flag) no core at all.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ...common.choices import BOOKINGS, CONTENTION, LEFTOVER_ORDERS, WARM_STARTS
from ...common.cluster import Cluster, ClusterError, ProcessSpec, TomlLines, Where, local_cluster
from ...common.core import Core
from ...common.frontend import Router, round_robin
from ...common.params import Param, unknown
from ...common.resources import DEFAULT_MACHINE, Resources
from .hybrid import CANCEL_PROBES, PROBE_RATIO, cancel_of, hybrid_policies

if TYPE_CHECKING:
    from ...central.packing import PlacementPolicy

Builder = Callable[[ProcessSpec, Cluster], Core]


@dataclass(frozen=True)
class Policy:
    name: str
    summary: str
    scheduler: Builder | None = None  # distributed schedulers, if the policy uses them
    central: Builder | None = None  # the central scheduler, if the policy uses one
    node: Builder | None = None  # the node monitor core (default: NodeMonitorCore with a FIFO queue)
    router: Callable[[Cluster], Router] | None = None  # where jobs go (default: schedulers, else central)
    declared: tuple[Param, ...] = ()  # its parameters, declared once (flags, cluster file, replay)
    dag: bool = False  # schedules DAG jobs by multi-resource fit (nodes get capacity vectors)
    family: str = ""  # the heading its parameters' flags are listed under

    def param(self, name: str) -> Param | None:
        """The declared parameter ``name``, if the policy has one."""
        return next((p for p in self.declared if p.name == name), None)

    @property
    def short_partition(self) -> float:
        """The default share of the nodes in the short partition (its declared percent / 100)."""
        p = self.param("short_partition")
        return 0.0 if p is None else p.default / 100

    def route(self, cluster: Cluster) -> Router:
        """Where the frontend sends each job."""
        if self.router is not None:
            return self.router(cluster)
        if self.scheduler is not None:
            return round_robin([p.name for p in cluster.schedulers])
        assert cluster.central is not None
        return round_robin([cluster.central.name])


def declared_values(policy: Policy, cluster: Cluster) -> dict[str, Any]:
    """The policy's declared ``[cluster.params]`` as the cluster holds them (already in replay
    seconds), or their defaults (durations divided by the cluster's time scale); an optional one the
    cluster does not hold is ``None``."""
    out = {}
    for p in policy.declared:
        if p.cluster:
            try:
                out[p.name] = p.held(cluster.params)
            except ValueError as exc:
                raise ClusterError(f"[cluster.params]: field '{p.name}': {exc}") from None
    return out


TIME_SCALE = Param("time_scale", 1.0, "trace seconds per second of the replay clock", low=0.0, open_low=True)
COMMON_PARAMS = (TIME_SCALE.name,)
"""Parameters every cluster description holds (written by every replay): not a policy's."""

LEGACY_PARAMS = ("probe_ratio",)
"""Accepted in any policy's cluster description and unused unless the policy declares it: every
cluster file held ``probe_ratio`` before each policy declared its own parameters."""


def check_params(cluster: Cluster, source: str) -> None:
    """One line naming ``source``, the line and the field when the cluster description names no policy
    of ours, lacks a process its policy needs (or has one it cannot run), or ``[cluster.params]`` holds
    a name the policy does not declare or a bad value of one it declares."""
    lines = TomlLines.of(source)
    top = Where(source, lines, "cluster", label="[cluster]")
    if cluster.policy not in POLICIES:
        close = difflib.get_close_matches(cluster.policy, list(POLICIES), n=1)
        hint = f"did you mean {close[0]!r}?" if close else "'aviary replay --help' lists them"
        raise top.error("policy", f"unknown policy {cluster.policy!r} ({hint})")
    policy = POLICIES[cluster.policy]
    for role, builder in (("scheduler", policy.scheduler), ("central", policy.central)):
        found = [i for i, p in enumerate(cluster.processes) if p.role == role]
        if builder is not None and not found:
            raise top.error("policy", f"policy {policy.name!r} needs a process with role {role!r}")
        if builder is None and found:
            i = found[0]
            where = Where(source, lines, "process", i, f"[[process]] #{i + 1}")
            raise where.error("role", f"policy {policy.name!r} has no {role} (remove the process)")
    where = Where(source, lines, "cluster.params", label="[cluster.params]")
    held = [p for p in policy.declared if p.cluster]
    bad = unknown(held, cluster.params, (*COMMON_PARAMS, *LEGACY_PARAMS))
    if bad:
        raise where.error(bad[0], f"policy {policy.name!r} has no such parameter")
    if "time_scale" in cluster.params:
        try:
            TIME_SCALE.check(cluster.params["time_scale"])
        except ValueError as exc:
            raise where.error("time_scale", str(exc)) from None
    for p in held if policy.param("probe_ratio") else [*held, PROBE_RATIO]:
        if cluster.params.get(p.name) is not None:
            try:
                p.check(cluster.params[p.name])
            except ValueError as exc:
                raise where.error(p.name, str(exc)) from None


INTRA_ORDER = Param(
    "intra_order",
    "bfs",
    "order of a job's runnable stages: bfs (lowest DAG level first, Tez) or cp (longest critical path)",
    choices=("bfs", "cp"),
)
CONTENTION_PARAMS = (
    Param(
        "contention",
        "fluid",
        "DAG policies: nodes over-allocate cores, disk and network, each task slowed by "
        "min(1, capacity / summed demand) on what it uses, memory a hard limit (fluid); or admit by "
        "whole-vector fit at full speed (off, the model before contention)",
        choices=CONTENTION,
    ),
    Param(
        "disk_loss",
        0.0,
        "DAG policies, fluid contention: share of a disk's goodput lost as its over-subscription grows "
        "(0: none, as Graphene's 'do not lose goodput when demand exceeds capacity')",
        low=0.0,
        high=1.0,
        open_high=True,
    ),
)
ACCOUNT = Param(
    "account",
    "cores,mem",
    "CS, CP, DRF, SJF: what the scheduler counts of a task's demand, cores and memory as YARN does "
    "(disk and network over-allocated), or all four resources (the control)",
    choices=("cores,mem", "all"),
)
OVERBOOK = Param(
    "overbook",
    1.25,
    "Graphene: a node's disk and network may be allocated up to this factor of their capacity "
    "(1: no overbooking)",
    low=1.0,
)
TETRIS_PARAMS = (
    Param(
        "fair_fraction",
        1.0,
        "Tetris: share of the jobs considered, those furthest below their fair share "
        "(1: all, most efficient; near 0: only the furthest, strict fairness; the poster's f)",
        low=0.0,
        open_low=True,
        high=1.0,
    ),
    Param("srtf_weight", 1.0, "Tetris: weight m of the SRTF term (0: pure packing)", low=0.0),
    Param(
        "alignment",
        "dot",
        "Tetris: alignment score, dot (SIGCOMM) or cosine (poster)",
        choices=("dot", "cosine"),
    ),
)
CARBYNE_PARAMS = (
    Param(
        "altruism",
        1.0,
        "Carbyne: probability that a job yields what it need not use now at a scheduling event "
        "(0: DRF with the leftover handed out SRTF-first)",
        low=0.0,
        high=1.0,
    ),
    Param(
        "granule",
        1.0,
        "Carbyne: a task must start now when its latest start to keep the job's completion time is "
        "within this many trace seconds (divided by the time scale)",
        unit="trace s",
        scales=True,
        low=0.0,
    ),
    Param(
        "share_period",
        1.0,
        "Carbyne: trace seconds between DRF share recomputations besides job arrivals and completions "
        "(0: every event; divided by the time scale)",
        unit="trace s",
        scales=True,
        low=0.0,
    ),
    Param(
        "leftover",
        "srtf-first",
        "Carbyne: leftover resources to the shortest remaining work first (srtf-first) or to Tetris "
        "packing (pack-first)",
        choices=LEFTOVER_ORDERS,
    ),
)

GRAPHENE_PARAMS = (
    Param(
        "kappa",
        0.1,
        "Graphene: unfairness bound; a job whose deficit reaches kappa x the cluster gets the machine "
        "(0: strict fairness)",
        low=0.0,
    ),
    Param(
        "eta_weight",
        1.0,
        "Graphene: weight of the remaining-work term against packing x priScore (0: none)",
        low=0.0,
    ),
    Param(
        "virtual_share",
        0.25,
        "Graphene: a job's expected share of the cluster, the machines of its offline schedule",
        low=0.0,
        open_low=True,
        high=1.0,
    ),
    Param(
        "pri_score",
        "remaining",
        "Graphene: priScore from the offline schedule's order over the job's unplaced tasks (remaining), "
        "over all its tasks as printed (dag), or none (no offline part)",
        choices=("remaining", "dag", "none"),
    ),
)

PLAN_CYCLE = Param(
    "plan_cycle",
    4.0,
    "TetriSched, Rayon/CS: trace seconds between plans (TetriSched's cycle and time quantum; divided by "
    "the time scale)",
    unit="trace s",
    scales=True,
    low=0.0,
    open_low=True,
)
TETRISCHED_PARAMS = (
    PLAN_CYCLE,
    Param(
        "plan_ahead",
        96.0,
        "TetriSched: trace seconds of start options planned ahead (0: start now only; divided by the "
        "time scale)",
        unit="trace s",
        scales=True,
        low=0.0,
    ),
    Param("mip_gap", 0.1, "TetriSched: relative MIP gap at which HiGHS stops (0.1 as the paper)", low=0.0),
    Param(
        "solver_nodes",
        500,
        "TetriSched: branch-and-bound nodes per solve (0: no cap); a work limit, so runs stay reproducible",
        low=0,
    ),
    Param(
        "solver_time_limit",
        0.0,
        "TetriSched: wall-clock seconds a solve may take (0: none; a safety limit for real runs, "
        "not reproducible)",
        unit="s",
        low=0.0,
    ),
    Param(
        "warm_start",
        "greedy",
        "TetriSched: MIP start from the previous plan completed greedily (greedy), the previous plan "
        "only (previous) or none (off)",
        choices=WARM_STARTS,
    ),
    Param(
        "lp_rounds",
        35,
        "TetriSched: greedy passes guided by the LP relaxation, taken without branch and bound when "
        "within the MIP gap of its bound (0: no LP relaxation, the MIP from the greedy start)",
        low=0,
    ),
)


RAYON_PARAMS = (
    Param(
        "rayon_placement",
        "aware",
        "Rayon/CS: GPU jobs on GPU-labelled nodes and MPI gangs in one rack when it can, bookings on that "
        "partition first (aware), or heterogeneity-blind (blind: the control)",
        choices=("aware", "blind"),
    ),
    Param(
        "rayon_preemption",
        "on",
        "Rayon/CS: a reserved job kills and requeues best-effort containers at its reservation's start (on) "
        "or waits for free ones (off: the control)",
        choices=("on", "off"),
    ),
    Param(
        "rayon_booking",
        "preferred",
        "Rayon/CS: book a preference job on its preferred partition first, then for estimate x slowdown "
        "anywhere (preferred), or the slowed booking first (slowed)",
        choices=BOOKINGS,
    ),
    Param(
        "rayon_start",
        "reservation",
        "Rayon/CS: an accepted job starts at its reservation's start (reservation) or may start earlier "
        "from the FIFO queue, preemptable until it begins (early)",
        choices=("reservation", "early"),
    ),
)


def _tetrisched(
    *, nh: bool = False, ng: bool = False, np: bool = False
) -> Callable[[dict[str, Any]], PlacementPolicy]:
    def make(v: dict[str, Any]) -> PlacementPolicy:
        from ...central.tetrisched import TetriSched

        silence_highs_banner()
        return TetriSched(
            cycle=v["plan_cycle"],
            plan_ahead=v["plan_ahead"],
            gap=v["mip_gap"],
            max_nodes=int(v["solver_nodes"]),
            time_limit=v["solver_time_limit"] or None,
            warm_start=v["warm_start"],
            lp_rounds=int(v["lp_rounds"]),
            nh=nh,
            ng=ng,
            np=np,
        )

    return make


_highs_silenced = False


def silence_highs_banner() -> None:
    """HiGHS prints its banner on the process's standard output (from C++, past Python's ``sys.stdout``)
    when the process makes its first ``Highs()``, before any option can turn output off; later ones print
    nothing. Make that first one here, the descriptor pointed at /dev/null meanwhile, so that a run of
    TetriSched prints no banner (its cores stay pure: the launcher does this I/O); once per process."""
    global _highs_silenced
    if _highs_silenced:
        return
    _highs_silenced = True
    import highspy

    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _packing_central(make: Callable[[dict[str, Any]], PlacementPolicy]) -> Builder:
    def build(spec: ProcessSpec, cluster: Cluster) -> Core:
        from ...central.packing import PackingCore

        values = declared_values(get_policy(cluster.policy), cluster)
        nodes = [(n.name, n.resources, n.attributes) for n in cluster.nodes]
        return PackingCore(
            spec.name,
            nodes,
            make(values),
            seed=cluster.seed,
            account=values.get("account", "all"),
            overbook=values.get("overbook", 1.0),
        )

    return build


def _resource_node(spec: ProcessSpec, cluster: Cluster) -> Core:
    from ...worker.resource_node import ResourceNodeCore

    contention, disk_loss = (p.held(cluster.params) for p in CONTENTION_PARAMS)
    return ResourceNodeCore(spec.name, spec.resources, contention, disk_loss)


def _packing_policy(
    name: str, summary: str, make: Callable[[dict[str, Any]], PlacementPolicy], declared: tuple[Param, ...]
) -> Policy:
    return Policy(
        name,
        summary,
        central=_packing_central(make),
        node=_resource_node,
        declared=(*declared, *CONTENTION_PARAMS),
        dag=True,
        family="Multi-resource DAG",
    )


def _slot_fair(order: str | None = None) -> Callable[[dict[str, Any]], PlacementPolicy]:
    def make(v: dict[str, Any]) -> PlacementPolicy:
        from ...central.cs import SlotFair

        return SlotFair(order or v["intra_order"])

    return make


def _drf(v: dict[str, Any]) -> PlacementPolicy:
    from ...central.drf import Drf

    return Drf(v["intra_order"])


def _sjf(v: dict[str, Any]) -> PlacementPolicy:
    from ...central.sjf import ShortestJobFirst

    return ShortestJobFirst(v["intra_order"])


def _tetris(v: dict[str, Any]) -> PlacementPolicy:
    from ...central.tetris import Tetris

    return Tetris(fair_fraction=v["fair_fraction"], srtf_weight=v["srtf_weight"], alignment=v["alignment"])


def _carbyne(v: dict[str, Any]) -> PlacementPolicy:
    from ...central.carbyne import Carbyne

    return Carbyne(
        altruism=v["altruism"],
        granule=v["granule"],
        period=v["share_period"],
        leftover=v["leftover"],
        intra=v["intra_order"],
    )


def _graphene(v: dict[str, Any]) -> PlacementPolicy:
    from ...central.graphene import Graphene

    return Graphene(
        kappa=v["kappa"],
        m_eta=v["eta_weight"],
        share=v["virtual_share"],
        offline=v["pri_score"] != "none",
        rebase=v["pri_score"] == "remaining",
    )


def _rayon_cs(v: dict[str, Any]) -> PlacementPolicy:
    from ...central.rayon_cs import RayonCS

    return RayonCS(
        cycle=v["plan_cycle"],
        quantum=v["plan_cycle"],
        hetero=v["rayon_placement"] == "aware",
        preempt=v["rayon_preemption"] == "on",
        book=v["rayon_booking"],
        early=v["rayon_start"] == "early",
    )


PACKING_POLICIES = (
    _packing_policy(
        "cs",
        "slot-fair capacity scheduler: the job running the fewest tasks first, first fit (Tez + CS)",
        _slot_fair(),
        (INTRA_ORDER, ACCOUNT),
    ),
    _packing_policy(
        "cp",
        "slot-fair capacity scheduler, critical path first within a job (Tez + CP)",
        _slot_fair("cp"),
        (ACCOUNT,),
    ),
    _packing_policy(
        "drf",
        "DRF: the job with the lowest dominant share first, first fit (progressive filling)",
        _drf,
        (INTRA_ORDER, ACCOUNT),
    ),
    _packing_policy(
        "sjf",
        "shortest remaining critical path first, strictly; critical path first within a job",
        _sjf,
        (replace(INTRA_ORDER, default="cp"), ACCOUNT),
    ),
    _packing_policy(
        "tetris",
        "Tetris: best alignment of demand and free resources, minus an SRTF term, with a fairness knob",
        _tetris,
        TETRIS_PARAMS,
    ),
    _packing_policy(
        "carbyne",
        "Carbyne: DRF shares, each job starts only what keeps its completion time, the rest SRTF then packed",
        _carbyne,
        (INTRA_ORDER, *CARBYNE_PARAMS),
    ),
    _packing_policy(
        "graphene",
        "Graphene: offline DAG schedules with troublesome tasks first, online packing x priority - SRPT, "
        "deficit counters",
        _graphene,
        (*GRAPHENE_PARAMS, OVERBOOK),
    ),
    _packing_policy(
        "tetrisched",
        "TetriSched: every cycle all pending jobs' STRL compiled to one MILP (HiGHS), plan-ahead, "
        "only start-now gangs launched",
        _tetrisched(),
        TETRISCHED_PARAMS,
    ),
    _packing_policy(
        "tetrisched-nh",
        "TetriSched without heterogeneity: one equivalence set, every job planned at its slowed duration",
        _tetrisched(nh=True),
        TETRISCHED_PARAMS,
    ),
    _packing_policy(
        "tetrisched-ng",
        "TetriSched greedy: one job at a time from three priority queues (accepted, no reservation, BE)",
        _tetrisched(ng=True),
        TETRISCHED_PARAMS,
    ),
    _packing_policy(
        "tetrisched-np",
        "TetriSched without plan-ahead: start-now options only",
        _tetrisched(np=True),
        TETRISCHED_PARAMS,
    ),
    _packing_policy(
        "rayon-cs",
        "Rayon/CS-like: accepted SLO jobs at their latest-start reservations, the rest one FIFO queue",
        _rayon_cs,
        (PLAN_CYCLE, *RAYON_PARAMS),
    ),
)


def _sparrow(spec: ProcessSpec, cluster: Cluster) -> Core:
    from ...distributed.sparrow import SparrowCore

    return SparrowCore(
        spec.name,
        [n.name for n in cluster.nodes],
        probe_ratio=float(PROBE_RATIO.held(cluster.params)),
        cancel=cancel_of(cluster),
        seed=cluster.seed,
    )


FIFO_QUEUE = Param(
    "fifo_queue",
    0,
    "tasks placed on a node beyond its slots, waiting in its queue (0: on a free slot only, the thesis')",
    low=0,
)


def _central_fifo(spec: ProcessSpec, cluster: Cluster) -> Core:
    from ...central.fifo import CentralFifoCore

    queue = int(declared_values(get_policy(cluster.policy), cluster)["fifo_queue"])
    return CentralFifoCore(spec.name, {n.name: n.slots for n in cluster.nodes}, queue)


KAIROS_REFERENCE_QUANTUM = 10_000.0
"""The thesis' quantum for the Google trace, in trace seconds (§4.6.2)."""

KAIROS_PARAMS = (
    Param(
        "quantum",
        KAIROS_REFERENCE_QUANTUM,
        "LAS quantum W in seconds of the replay clock",
        unit="s",
        scales=True,
        scales_given=False,
        low=0.0,
        open_low=True,
    ),
    Param("kairos_q", 2, "tasks per node beyond its slots, Q", low=0),
    Param("starvation_quanta", 3, "missed quanta before a task is guarded against preemption", low=1),
    Param(
        "starvation_multiple",
        2.0,
        "a starving task then runs un-preempted for this many quanta",
        low=0.0,
        open_low=True,
    ),
    Param(
        "heartbeat_interval",
        None,
        "node -> central heartbeat period in seconds (default: quantum / 10)",
        unit="s",
        low=0.0,
        open_low=True,
    ),
)
"""Kairos' parameters: the quantum's default is the thesis' 10,000 trace seconds divided by the time
scale, but a given ``--quantum`` is already in seconds of the replay clock."""


def _kairos_central(tiebreak: str) -> Builder:
    def build(spec: ProcessSpec, cluster: Cluster) -> Core:
        from ...central.kairos import KairosCentralCore

        values = declared_values(get_policy(cluster.policy), cluster)
        return KairosCentralCore(
            spec.name,
            {n.name: n.slots for n in cluster.nodes},
            q=int(values["kairos_q"]),
            tiebreak=tiebreak,
            seed=cluster.seed,
        )

    return build


def _kairos_node(spec: ProcessSpec, cluster: Cluster) -> Core:
    from ...worker.las import KairosNodeCore

    values = declared_values(get_policy(cluster.policy), cluster)
    heartbeat = values["heartbeat_interval"]
    return KairosNodeCore(
        spec.name,
        spec.slots,
        central=cluster.central.name if cluster.central is not None else None,
        quantum=float(values["quantum"]),
        starvation_quanta=int(values["starvation_quanta"]),
        starvation_multiple=float(values["starvation_multiple"]),
        heartbeat_interval=None if heartbeat is None else float(heartbeat),
    )


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in [
        Policy(
            "sparrow",
            "batch sampling with probe ratio d and late binding",
            scheduler=_sparrow,
            declared=(PROBE_RATIO, CANCEL_PROBES),
            family="Sparrow",
        ),
        Policy(
            "fifo",
            "central FIFO queue, a task placed on a free slot (--fifo-queue Q: Q more a node), no preemption",
            central=_central_fifo,
            declared=(FIFO_QUEUE,),
            family="Central FIFO",
        ),
        *(
            Policy(
                name,
                f"Kairos: node LAS with quantum and preemption, central N+Q dispatch, {tb} tie-break",
                central=_kairos_central(tb),
                node=_kairos_node,
                declared=KAIROS_PARAMS,
                family="Kairos",
            )
            for name, tb in (("kairos", "var"), ("kairos-random", "random"), ("kairos-sum", "sum"))
        ),
    ]
}
POLICIES.update((p.name, p) for p in hybrid_policies(Policy))  # Hawk, Eagle, ablations, LWL, DLWL
POLICIES.update((p.name, p) for p in PACKING_POLICIES)


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise ClusterError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}") from None


def build_core(spec: ProcessSpec, cluster: Cluster, *, recover: bool = False) -> Core:
    """The core of one process of the cluster (frontends are built by the replay); ``recover``: a central
    scheduler restarted after a death, held back until it has rebuilt its state."""
    if recover and spec.role == "central":
        from ...central.recovery import Recovering

        return Recovering(build_core(spec, cluster))
    policy = get_policy(cluster.policy)
    if spec.role == "node" and policy.node is None:
        from ...worker.node_monitor import NodeMonitorCore

        return NodeMonitorCore(spec.name, spec.slots)
    builder = {"scheduler": policy.scheduler, "central": policy.central, "node": policy.node}.get(spec.role)
    if builder is None:
        raise ClusterError(f"process {spec.name!r}: policy {policy.name!r} has no {spec.role} role")
    return builder(spec, cluster)


def policy_cluster(
    policy: str,
    *,
    nodes: int,
    slots: int = 1,
    schedulers: int = 1,
    executor: str = "timer",
    seed: int = 0,
    params: dict[str, Any] | None = None,
    short_partition: float | None = None,
    bind_ports: bool = True,
    capacity: Resources | None = None,
) -> Cluster:
    """A local cluster with the processes ``policy`` needs: a central scheduler if it uses one, and
    ``schedulers`` distributed schedulers only if it uses them (``bind_ports=False`` for the simulator).
    ``short_partition`` (share of the nodes) defaults to the policy's own (17 % for Hawk and Eagle).
    The nodes of a multi-resource policy get ``capacity`` (default :data:`DEFAULT_MACHINE`) and as many
    slots as whole cores; the other policies' nodes have ``slots`` and no capacity."""
    spec = get_policy(policy)
    if short_partition is None:
        short_partition = spec.short_partition
    if spec.dag:
        capacity = capacity or DEFAULT_MACHINE
        slots = max(1, int(capacity.cores))
    else:
        capacity = None
    return local_cluster(
        nodes=nodes,
        slots=slots,
        schedulers=schedulers if spec.scheduler is not None else 0,
        central=spec.central is not None,
        policy=spec.name,
        executor=executor,
        seed=seed,
        params=params,
        short_partition=short_partition,
        bind_ports=bind_ports,
        capacity=capacity,
    )
