"""The built-in policies, declared as a plug-in declares its own (:class:`~aviary.common.declaration.Policy`):
the registry reads :data:`BUILTIN` through the path it reads a plug-in's ``module:attribute`` with
(:func:`aviary.launch.policies.registry.load_source`). A core's module is imported by its builder, when a
process is built: a node process loads its node core only, and a command that only reads its flags
(``aviary replay --help``, a bad flag) no core at all.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...common.choices import BOOKINGS, LEFTOVER_ORDERS, WARM_STARTS
from ...common.core import Core
from ...common.declaration import Builder, Context, Policy
from ...common.params import Param
from .hybrid import CANCEL_PROBES, PROBE_RATIO, hybrid_policies
from .multiresource import FAMILY, MakePlacement, packing_policy, silence_highs_banner

if TYPE_CHECKING:
    from ...central.packing import PlacementPolicy

INTRA_ORDER = Param(
    "intra_order",
    "bfs",
    "order of a job's runnable stages: bfs (lowest DAG level first, Tez) or cp (longest critical path)",
    choices=("bfs", "cp"),
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


def _tetrisched(*, nh: bool = False, ng: bool = False, np: bool = False) -> MakePlacement:
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


def _slot_fair(order: str | None = None) -> MakePlacement:
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
    packing_policy(
        "cs",
        "slot-fair capacity scheduler: the job running the fewest tasks first, first fit (Tez + CS)",
        _slot_fair(),
        (INTRA_ORDER, ACCOUNT),
        family=FAMILY,
    ),
    packing_policy(
        "cp",
        "slot-fair capacity scheduler, critical path first within a job (Tez + CP)",
        _slot_fair("cp"),
        (ACCOUNT,),
        family=FAMILY,
    ),
    packing_policy(
        "drf",
        "DRF: the job with the lowest dominant share first, first fit (progressive filling)",
        _drf,
        (INTRA_ORDER, ACCOUNT),
        family=FAMILY,
    ),
    packing_policy(
        "sjf",
        "shortest remaining critical path first, strictly; critical path first within a job",
        _sjf,
        (replace(INTRA_ORDER, default="cp"), ACCOUNT),
        family=FAMILY,
    ),
    packing_policy(
        "tetris",
        "Tetris: best alignment of demand and free resources, minus an SRTF term, with a fairness knob",
        _tetris,
        TETRIS_PARAMS,
        family=FAMILY,
    ),
    packing_policy(
        "carbyne",
        "Carbyne: DRF shares, each job starts only what keeps its completion time, the rest SRTF then packed",
        _carbyne,
        (INTRA_ORDER, *CARBYNE_PARAMS),
        family=FAMILY,
    ),
    packing_policy(
        "graphene",
        "Graphene: offline DAG schedules with troublesome tasks first, online packing x priority - SRPT, "
        "deficit counters",
        _graphene,
        (*GRAPHENE_PARAMS, OVERBOOK),
        family=FAMILY,
    ),
    packing_policy(
        "tetrisched",
        "TetriSched: every cycle all pending jobs' STRL compiled to one MILP (HiGHS), plan-ahead, "
        "only start-now gangs launched",
        _tetrisched(),
        TETRISCHED_PARAMS,
        family=FAMILY,
    ),
    packing_policy(
        "tetrisched-nh",
        "TetriSched without heterogeneity: one equivalence set, every job planned at its slowed duration",
        _tetrisched(nh=True),
        TETRISCHED_PARAMS,
        family=FAMILY,
    ),
    packing_policy(
        "tetrisched-ng",
        "TetriSched greedy: one job at a time from three priority queues (accepted, no reservation, BE)",
        _tetrisched(ng=True),
        TETRISCHED_PARAMS,
        family=FAMILY,
    ),
    packing_policy(
        "tetrisched-np",
        "TetriSched without plan-ahead: start-now options only",
        _tetrisched(np=True),
        TETRISCHED_PARAMS,
        family=FAMILY,
    ),
    packing_policy(
        "rayon-cs",
        "Rayon/CS-like: accepted SLO jobs at their latest-start reservations, the rest one FIFO queue",
        _rayon_cs,
        (PLAN_CYCLE, *RAYON_PARAMS),
        family=FAMILY,
    ),
)


def _sparrow(ctx: Context) -> Core:
    from ...distributed.sparrow import SparrowCore

    return SparrowCore(
        ctx.name,
        ctx.nodes,
        probe_ratio=float(ctx.params["probe_ratio"]),
        cancel=ctx.params["cancel_probes"] == "on",
        seed=ctx.seed,
    )


FIFO_QUEUE = Param(
    "fifo_queue",
    0,
    "tasks placed on a node beyond its slots, waiting in its queue (0: on a free slot only, the thesis')",
    low=0,
)


def _central_fifo(ctx: Context) -> Core:
    from ...central.fifo import CentralFifoCore

    return CentralFifoCore(ctx.name, ctx.node_slots, int(ctx.params["fifo_queue"]))


AM_TASKS = Param(
    "am_tasks",
    "off",
    "each job's application master holds a place from its first placement to its last task's end: "
    "yarn-fifo, a slot; Kairos, one of a node's N + Q places on its launching core, outside LAS",
    choices=("off", "on"),
)


def _yarn_fifo(ctx: Context) -> Core:
    from ...central.fifo import CentralFifoCore

    values = ctx.params
    return CentralFifoCore(
        ctx.name, ctx.node_slots, int(values["fifo_queue"]), am_tasks=values["am_tasks"] == "on"
    )


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
    Param(
        "swap_margin",
        0.0,
        "Kairos: at a quantum's end, swap only if the running task attained this many quanta more than "
        "the youngest idle one (0: Alg. 2 line 34's <=; the authors' code: 0.5)",
        low=0.0,
    ),
    Param(
        "starvation",
        "text",
        "Kairos: starvation guard, as the thesis text reads (idle starvation_quanta x W, then "
        "starvation_multiple x W unpreempted), as the authors' code behaves (a running task suspended "
        "more than starvation_quanta times gets starvation_multiple x W, arrivals may preempt it), or off",
        choices=("text", "code", "off"),
    ),
    Param(
        "suspended_share",
        0.0,
        "Kairos: share of a core a suspended task keeps, so it still progresses (the testbed: 0.1, "
        "processorsharing.minimum-cpu); needs --launch-core on",
        low=0.0,
        high=1.0,
        open_high=True,
    ),
    AM_TASKS,
    Param(
        "launch_core",
        "off",
        "Kairos: each node has one core beyond its slots for launching, suspended and application-master "
        "tasks (the testbed: 5 vcores, 4 LAS containers); where --suspended-share and --am-tasks run",
        choices=("off", "on"),
    ),
)
"""Kairos' parameters: the quantum's default is the thesis' 10,000 trace seconds divided by the time
scale, but a given ``--quantum`` is already in seconds of the replay clock. The last five are the options
the authors' YARN code calls for (docs/kairos.md, "The testbed as the authors' code ran it"); their
defaults are the thesis' algorithms."""


def _needs_launch_core(values: Any) -> None:
    """A suspended task's share and the masters run on the node's launching core: without one, they would
    take their CPU from the LAS slots, which the model does not do."""
    if values["launch_core"] != "on":
        if float(values["suspended_share"]) > 0:
            raise ValueError("--suspended-share needs --launch-core on (the core a suspended task runs on)")
        if values["am_tasks"] == "on":
            raise ValueError("Kairos: --am-tasks on needs --launch-core on (the core the masters run on)")


def _kairos_central(tiebreak: str) -> Builder:
    def build(ctx: Context) -> Core:
        from ...central.kairos import KairosCentralCore

        values = ctx.params
        _needs_launch_core(values)
        return KairosCentralCore(
            ctx.name,
            ctx.node_slots,
            q=int(values["kairos_q"]),
            tiebreak=tiebreak,
            seed=ctx.seed,
            am_tasks=values["am_tasks"] == "on",
        )

    return build


def _kairos_node(ctx: Context) -> Core:
    from ...worker.las import KairosNodeCore

    values = ctx.params
    _needs_launch_core(values)
    heartbeat = values["heartbeat_interval"]
    return KairosNodeCore(
        ctx.name,
        ctx.slots,
        central=ctx.central,
        quantum=float(values["quantum"]),
        starvation_quanta=int(values["starvation_quanta"]),
        starvation_multiple=float(values["starvation_multiple"]),
        heartbeat_interval=None if heartbeat is None else float(heartbeat),
        swap_margin=float(values["swap_margin"]),
        starvation=str(values["starvation"]),
        suspended_share=float(values["suspended_share"]),
    )


BUILTIN: tuple[Policy, ...] = (
    Policy(
        "sparrow",
        "batch sampling with probe ratio d and late binding",
        scheduler=_sparrow,
        params=(PROBE_RATIO, CANCEL_PROBES),
        family="Sparrow",
    ),
    Policy(
        "fifo",
        "central FIFO queue, a task placed on a free slot (--fifo-queue Q: Q more a node), no preemption",
        central=_central_fifo,
        params=(FIFO_QUEUE,),
        family="Central FIFO",
    ),
    *(
        Policy(
            name,
            f"Kairos: node LAS with quantum and preemption, central N+Q dispatch, {tb} tie-break",
            central=_kairos_central(tb),
            node=_kairos_node,
            params=KAIROS_PARAMS,
            family="Kairos",
        )
        for name, tb in (("kairos", "var"), ("kairos-random", "random"), ("kairos-sum", "sum"))
    ),
    Policy(
        "yarn-fifo",
        "the Kairos testbed's YARN FIFO: central FIFO, no preemption; --am-tasks on: each job's "
        "application master holds a slot",
        central=_yarn_fifo,
        params=(FIFO_QUEUE, AM_TASKS),
        family="Central FIFO",
    ),
    *hybrid_policies(),  # Hawk, Eagle, their ablations, LWL, DLWL
    *PACKING_POLICIES,
)
"""Every built-in policy, in the order ``aviary policy list`` shows them."""
