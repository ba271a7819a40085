"""Registry entries of the hybrid schedulers: Hawk (thesis ch. 2), Eagle (ch. 3), their ablations, the
centralized LWL of §2.4.5 and the DLWL+SRPT baseline of §3.6.2 (docs/policies.md describes each one).

Each policy is a set of builders (one per role) closed over the mechanism switches its name stands
for. Its numeric parameters are declared below once (:data:`CUTOFF` ... :data:`SHORT_PARTITION`, defaults
from the thesis): the flags of ``aviary up``/``replay``, the cluster file's ``[cluster.params]`` and the
values the builders read all derive from them. Durations are given in trace seconds and held in the
cluster in seconds of the replay clock (divided by the time scale). The short partition (percent of the
nodes, 17 for the Google trace) is not a ``[cluster.params]`` entry but the nodes' ``partition`` in the
cluster description: the central scheduler places long tasks only on general-partition nodes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from ...common.cluster import Cluster
from ...common.core import Core
from ...common.declaration import Builder, Context, Policy
from ...common.frontend import Router, round_robin
from ...common.model import GOOGLE_CUTOFF, JobSpec
from ...common.params import Param

__all__ = [
    "CANCEL_PROBES",
    "CUTOFF",
    "DEFAULT_UPDATE_RATIO",
    "PROBE_RATIO",
    "SHORT_PARTITION",
    "hybrid_policies",
    "hybrid_router",
]

DEFAULT_UPDATE_RATIO = 0.1
"""Eagle: remaining-task updates go out when the count fell by 10 % (docs/policies.md: why not 0)."""

PROBE_RATIO = Param(
    "probe_ratio", 2.0, "Sparrow probe ratio d, probes per task (Hawk and Eagle too)", low=1.0
)
"""Sparrow's probe ratio (its registry entry declares it too), used by Hawk's and Eagle's schedulers."""
CUTOFF = Param(
    "cutoff",
    GOOGLE_CUTOFF,
    "short/long cutoff in trace seconds: a replay's classes for reporting (every policy), and the "
    "scheduling cutoff of hawk*, eagle*, lwl and dlwl once divided by the time scale",
    unit="trace s",
    scales=True,
    low=0.0,
    open_low=True,
)
"""The Google trace's cutoff (thesis §2.4.1); ``aviary replay --cutoff`` also sets every replay's
reporting classes (:class:`~aviary.launch.flags.spec.ReplaySpec` ``cutoff``)."""
SHORT_PARTITION = Param(
    "short_partition",
    17.0,
    "percent of the nodes reserved for short jobs",
    unit="%",
    low=0.0,
    high=100.0,
    open_high=True,
    cluster=False,
)
"""Share of the nodes in the short partition for the Google trace (thesis §2.4.1, §3.5), in percent;
the registry labels the nodes (``ProcessSpec.partition``) instead of writing a ``[cluster.params]`` entry."""
NO_PARTITION = replace(SHORT_PARTITION, default=0.0)
STEAL_ATTEMPTS = Param(
    "steal_attempts", 10, "Hawk: nodes an idle node asks for probes to steal (0: no stealing)", low=0
)
STEALERS = Param(
    "stealers",
    "all",
    "Hawk: which idle nodes steal, all (thesis §2.3.6) or only the general partition's (§3.6.1, the "
    "thesis' Eagle comparison); either steals only from general-partition nodes",
    choices=("all", "general"),
)
"""Who steals (docs/policies.md): §2.3.6 lets every idle node steal; §3.6.1 configures Hawk for the Eagle
comparison with "idle nodes in the general partition" only."""
CANCEL_PROBES = Param(
    "cancel_probes",
    "on",
    "Sparrow/Hawk/Eagle: cancel a job's leftover probes once its last task is handed out (on, Sparrow, "
    "thesis §2.3.5) or leave them queued (off, the authors' simulator: more probes left to steal)",
    choices=("on", "off"),
)
"""Leftover-probe cancellation; the summary's ``probes_leftover_cancelled`` / ``probes_leftover_kept``
say which a run used."""
MIN_PROBES = Param("min_probes", 20, "Eagle: minimum probes per job", low=0)
SRPT_THRESHOLD = Param(
    "srpt_threshold",
    5.0,
    "Eagle/DLWL: a probe may be bypassed by work up to this many of its task estimates",
    low=0.0,
)
UPDATE_RATIO = Param(
    "update_ratio",
    DEFAULT_UPDATE_RATIO,
    "Eagle and DLWL: send remaining-task updates when the count fell by this fraction (0: every change, "
    "as the thesis)",
    low=0.0,
    high=1.0,
    open_high=True,
)
HEARTBEAT = Param(
    "heartbeat",
    3.0,
    "DLWL heartbeat interval in trace seconds, divided by the time scale",
    unit="trace s",
    scales=True,
    low=0.0,
    open_low=True,
    option="--dlwl-heartbeat",
)


@dataclass(frozen=True)
class _Layout:
    """Node names of a cluster, shared by all its cores (8,000 nodes must not hold 8,000 lists)."""

    nodes: tuple[str, ...]
    general: tuple[str, ...]
    short: tuple[str, ...]


_layout_cache: list[Any] = [None, None]


def _layout(cluster: Cluster) -> _Layout:
    if _layout_cache[0] is cluster:
        return _layout_cache[1]
    nodes = tuple(n.name for n in cluster.nodes)
    general = tuple(n.name for n in cluster.nodes if n.partition != "short")
    short = tuple(n.name for n in cluster.nodes if n.partition == "short")
    layout = _Layout(nodes, general or nodes, short)
    _layout_cache[0], _layout_cache[1] = cluster, layout
    return layout


def _p(cluster: Cluster, param: Param) -> Any:
    """The value the cluster holds (replay seconds), or the declared default."""
    return param.held(cluster.params)


def cutoff_of(cluster: Cluster) -> float:
    return float(_p(cluster, CUTOFF))


def cancel_of(cluster: Cluster) -> bool:
    """Whether the schedulers cancel leftover probes (:data:`CANCEL_PROBES`)."""
    return _p(cluster, CANCEL_PROBES) == "on"


def hybrid_router(cluster: Cluster) -> Router:
    """Long jobs (estimate >= cutoff) to the central scheduler, short ones round-robin to the
    distributed schedulers (thesis Figure 2.2); a policy without one of them sends everything to the
    other."""
    cutoff = cutoff_of(cluster)
    schedulers = [p.name for p in cluster.schedulers]
    central = cluster.central.name if cluster.central is not None else None
    if central is None:
        return round_robin(schedulers)
    if not schedulers:
        return round_robin([central])
    shorts = [0]

    def route(job: JobSpec, n: int) -> str:
        if job.estimate >= cutoff:
            return central
        k = shorts[0]
        shorts[0] = k + 1
        return schedulers[k % len(schedulers)]

    return route


# --- builders ----------------------------------------------------------------------------------------
def _central(*, everywhere: bool, sss: bool) -> Builder:
    def build(ctx: Context) -> Core:
        from ...central.lwl import CentralLwlCore

        spec, cluster = ctx.spec, ctx.cluster
        lay = _layout(cluster)
        targets = lay.nodes if everywhere else lay.general
        return CentralLwlCore(spec.name, lay.nodes, targets, sss=sss, seed=cluster.seed)

    return build


def _hawk_scheduler(ctx: Context) -> Core:
    from ...distributed.hawk import HawkSchedulerCore

    spec, cluster = ctx.spec, ctx.cluster
    lay = _layout(cluster)
    return HawkSchedulerCore(
        spec.name,
        lay.nodes,
        lay.general,
        probe_ratio=float(_p(cluster, PROBE_RATIO)),
        cancel=cancel_of(cluster),
        cutoff=cutoff_of(cluster),
        seed=cluster.seed,
    )


def _hawk_node(*, steal: bool) -> Builder:
    """Hawk's node: FIFO; with ``steal``, a general-partition node is a victim, and a node steals from
    general-partition nodes when idle: every node (``stealers`` all, thesis §2.3.6) or only the general
    partition's (``stealers`` general, §3.6.1)."""

    def build(ctx: Context) -> Core:
        from ...worker.hybrid import HybridNodeCore
        from ...worker.stealing import Stealer

        spec, cluster = ctx.spec, ctx.cluster
        lay = _layout(cluster)
        attempts = int(_p(cluster, STEAL_ATTEMPTS)) if steal else 0
        if spec.partition == "short" and _p(cluster, STEALERS) == "general":
            attempts = 0
        stealer = None
        if attempts > 0:
            stealer = Stealer(spec.name, lay.general, attempts, random.Random(f"{cluster.seed}/{spec.name}"))
        return HybridNodeCore(
            spec.name, spec.slots, stealer=stealer, victim=steal and spec.partition != "short"
        )

    return build


def _eagle_scheduler(*, sss: bool, sbp: bool, min_probes: bool) -> Builder:
    def build(ctx: Context) -> Core:
        from ...distributed.eagle import EagleSchedulerCore

        spec, cluster = ctx.spec, ctx.cluster
        lay = _layout(cluster)
        return EagleSchedulerCore(
            spec.name,
            lay.nodes,
            lay.short,
            probe_ratio=float(_p(cluster, PROBE_RATIO)),
            min_probes=int(_p(cluster, MIN_PROBES)) if min_probes else 0,
            sss=sss,
            sticky=sbp,
            updates=sbp,
            update_ratio=float(_p(cluster, UPDATE_RATIO)),
            cancel=cancel_of(cluster),
            cutoff=cutoff_of(cluster),
            seed=cluster.seed,
        )

    return build


def _eagle_node(*, sss: bool, sbp: bool) -> Builder:
    def build(ctx: Context) -> Core:
        from ...worker.hybrid import HybridNodeCore

        spec, cluster = ctx.spec, ctx.cluster
        return HybridNodeCore(
            spec.name,
            spec.slots,
            srpt=sbp,
            sticky=sbp,
            sss=sss,
            threshold=float(_p(cluster, SRPT_THRESHOLD)),
        )

    return build


def _lwl_node(ctx: Context) -> Core:
    spec, cluster = ctx.spec, ctx.cluster
    """The centralized baseline places short jobs too: a task below the cutoff is short on the node."""
    from ...worker.hybrid import HybridNodeCore

    return HybridNodeCore(spec.name, spec.slots, long_cutoff=cutoff_of(cluster))


def _dlwl_scheduler(ctx: Context) -> Core:
    from ...distributed.dlwl import DlwlSchedulerCore

    spec, cluster = ctx.spec, ctx.cluster
    lay = _layout(cluster)
    return DlwlSchedulerCore(
        spec.name,
        lay.nodes,
        lay.general,
        lay.short,
        heartbeat=float(_p(cluster, HEARTBEAT)),
        update_ratio=float(_p(cluster, UPDATE_RATIO)),
        cutoff=cutoff_of(cluster),
        seed=cluster.seed,
    )


def _dlwl_node(ctx: Context) -> Core:
    from ...worker.hybrid import HybridNodeCore

    spec, cluster = ctx.spec, ctx.cluster
    return HybridNodeCore(
        spec.name,
        spec.slots,
        srpt=True,
        stop_at_long=False,
        threshold=float(_p(cluster, SRPT_THRESHOLD)),
        heartbeat_to=[p.name for p in cluster.schedulers],
        heartbeat=float(_p(cluster, HEARTBEAT)),
    )


HAWK_PARAMS = (CUTOFF, PROBE_RATIO, STEAL_ATTEMPTS, STEALERS, CANCEL_PROBES, SHORT_PARTITION)
EAGLE_PARAMS = (
    CUTOFF, PROBE_RATIO, MIN_PROBES, SRPT_THRESHOLD, UPDATE_RATIO, CANCEL_PROBES, SHORT_PARTITION,
)  # fmt: skip
DLWL_PARAMS = (CUTOFF, SRPT_THRESHOLD, UPDATE_RATIO, HEARTBEAT, SHORT_PARTITION)
FAMILY = "Hawk, Eagle, DLWL"


def hybrid_policies() -> list[Policy]:
    """The declarations. The ablations declare the parameters of the mechanism they leave out too
    (ignored), so that a command line runs them all."""
    hybrid: dict[str, Any] = {"router": hybrid_router, "family": FAMILY}

    def hawk(
        name: str, summary: str, *, steal: bool = True, central: bool = True, part: bool = True
    ) -> Policy:
        return Policy(
            name,
            summary,
            scheduler=_hawk_scheduler,
            central=_central(everywhere=not part, sss=False) if central else None,
            node=_hawk_node(steal=steal),
            params=HAWK_PARAMS if part else (*HAWK_PARAMS[:-1], NO_PARTITION),
            **hybrid,
        )

    def eagle(
        name: str, summary: str, *, sss: bool = True, sbp: bool = True, min_probes: bool = True
    ) -> Policy:
        return Policy(
            name,
            summary,
            scheduler=_eagle_scheduler(sss=sss, sbp=sbp, min_probes=min_probes),
            central=_central(everywhere=False, sss=sss),
            node=_eagle_node(sss=sss, sbp=sbp),
            params=EAGLE_PARAMS,
            **hybrid,
        )

    return [
        hawk("hawk", "Hawk: central LWL for long jobs, Sparrow for short ones, short partition, stealing"),
        hawk("hawk-nosteal", "Hawk without randomized stealing (thesis §2.4.4)", steal=False),
        hawk("hawk-nopartition", "Hawk without the short partition (thesis §2.4.4)", part=False),
        hawk(
            "hawk-nocentral",
            "Hawk without the central scheduler: long jobs probed over the general partition (§2.4.4)",
            central=False,
        ),
        eagle("eagle", "Eagle: Hawk's hybrid with SSS, sticky batch probing + SRPT, min. 20 probes"),
        eagle("eagle-nosss", "Eagle without succinct state sharing (thesis §3.6.3)", sss=False),
        eagle("eagle-nosbp", "Eagle without sticky batch probing and SRPT (thesis §3.6.3)", sbp=False),
        eagle(
            "eagle-nominprobes",
            "Eagle without the minimum number of probes (thesis §3.6.3)",
            min_probes=False,
        ),
        Policy(
            "lwl",
            "centralized LWL for every job on every node, no partition, no stealing (thesis §2.4.5)",
            central=_central(everywhere=True, sss=False),
            node=_lwl_node,
            params=(CUTOFF,),
            **hybrid,
        ),
        Policy(
            "dlwl",
            "distributed LWL on heartbeat-stale queue estimates with node SRPT (thesis §3.6.2)",
            scheduler=_dlwl_scheduler,
            node=_dlwl_node,
            params=DLWL_PARAMS,
            family=FAMILY,
        ),
    ]
