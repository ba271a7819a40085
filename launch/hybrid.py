"""Registry entries of the hybrid schedulers: Hawk (thesis ch. 2), Eagle (ch. 3), their ablations, the
centralized LWL of §2.4.5 and the DLWL+SRPT baseline of §3.6.2 (docs/policies.md describes each one).

Each policy is a set of builders (one per role) closed over the mechanism switches its name stands
for; the numeric parameters come from ``Cluster.params`` (defaults from the thesis):

==================  =========  =============================================================
param               default    meaning
==================  =========  =============================================================
cutoff              1129.532   short/long cutoff on the job's estimate, in replay seconds
                               (the Google cutoff divided by the time scale)
probe_ratio         2          probes per task (Sparrow, Hawk, Eagle)
min_probes          20         Eagle's minimum probes per job K
steal_attempts      10         nodes an idle Hawk node asks for probes
srpt_threshold      5          bypass threshold, in estimated task durations of the bypassed
update_ratio        0.1        Eagle: send remaining-task updates when the count fell by this
                               fraction since the last one (0: after every assignment)
heartbeat           3          DLWL heartbeat interval in replay seconds
==================  =========  =============================================================

The short partition (``--short-partition``, default 17 % of the nodes for these policies) comes from
the cluster description (``ProcessSpec.partition``): the central scheduler places long tasks only on
general-partition nodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..central.lwl import CentralLwlCore
from ..common.cluster import Cluster, ProcessSpec
from ..common.core import Core
from ..common.frontend import Router, round_robin
from ..common.model import GOOGLE_CUTOFF, JobSpec
from ..distributed.dlwl import DlwlSchedulerCore
from ..distributed.eagle import EagleSchedulerCore
from ..distributed.hawk import HawkSchedulerCore
from ..worker.hybrid import HybridNodeCore
from ..worker.stealing import Stealer

__all__ = ["DEFAULT_UPDATE_RATIO", "HYBRID_PARAMS", "SHORT_PARTITION", "hybrid_policies", "hybrid_router"]

DEFAULT_UPDATE_RATIO = 0.1
"""Eagle: remaining-task updates go out when the count fell by 10 % (docs/policies.md: why not 0)."""

SHORT_PARTITION = 0.17
"""Share of the nodes in the short partition for the Google trace (thesis §2.4.1, §3.5)."""

HYBRID_PARAMS = (
    "cutoff",
    "probe_ratio",
    "min_probes",
    "steal_attempts",
    "srpt_threshold",
    "update_ratio",
    "heartbeat",
)

Builder = Callable[[ProcessSpec, Cluster], Core]


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


def _p(cluster: Cluster, key: str, default: Any) -> Any:
    return cluster.params.get(key, default)


def cutoff_of(cluster: Cluster) -> float:
    return float(_p(cluster, "cutoff", GOOGLE_CUTOFF))


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
    def build(spec: ProcessSpec, cluster: Cluster) -> Core:
        lay = _layout(cluster)
        targets = lay.nodes if everywhere else lay.general
        return CentralLwlCore(spec.name, lay.nodes, targets, sss=sss, seed=cluster.seed)

    return build


def _hawk_scheduler(spec: ProcessSpec, cluster: Cluster) -> Core:
    lay = _layout(cluster)
    return HawkSchedulerCore(
        spec.name,
        lay.nodes,
        lay.general,
        probe_ratio=float(_p(cluster, "probe_ratio", 2.0)),
        cutoff=cutoff_of(cluster),
        seed=cluster.seed,
    )


def _hawk_node(*, steal: bool) -> Builder:
    def build(spec: ProcessSpec, cluster: Cluster) -> Core:
        lay = _layout(cluster)
        attempts = int(_p(cluster, "steal_attempts", 10)) if steal else 0
        stealer = None
        if attempts > 0:
            stealer = Stealer(spec.name, lay.general, attempts, random.Random(f"{cluster.seed}/{spec.name}"))
        return HybridNodeCore(
            spec.name, spec.slots, stealer=stealer, victim=steal and spec.partition != "short"
        )

    return build


def _eagle_scheduler(*, sss: bool, sbp: bool, min_probes: bool) -> Builder:
    def build(spec: ProcessSpec, cluster: Cluster) -> Core:
        lay = _layout(cluster)
        return EagleSchedulerCore(
            spec.name,
            lay.nodes,
            lay.short,
            probe_ratio=float(_p(cluster, "probe_ratio", 2.0)),
            min_probes=int(_p(cluster, "min_probes", 20)) if min_probes else 0,
            sss=sss,
            sticky=sbp,
            updates=sbp,
            update_ratio=float(_p(cluster, "update_ratio", DEFAULT_UPDATE_RATIO)),
            cutoff=cutoff_of(cluster),
            seed=cluster.seed,
        )

    return build


def _eagle_node(*, sss: bool, sbp: bool) -> Builder:
    def build(spec: ProcessSpec, cluster: Cluster) -> Core:
        return HybridNodeCore(
            spec.name,
            spec.slots,
            srpt=sbp,
            sticky=sbp,
            sss=sss,
            threshold=float(_p(cluster, "srpt_threshold", 5.0)),
        )

    return build


def _lwl_node(spec: ProcessSpec, cluster: Cluster) -> Core:
    return HybridNodeCore(spec.name, spec.slots)


def _dlwl_scheduler(spec: ProcessSpec, cluster: Cluster) -> Core:
    lay = _layout(cluster)
    return DlwlSchedulerCore(
        spec.name,
        lay.nodes,
        lay.general,
        lay.short,
        heartbeat=float(_p(cluster, "heartbeat", 3.0)),
        cutoff=cutoff_of(cluster),
        seed=cluster.seed,
    )


def _dlwl_node(spec: ProcessSpec, cluster: Cluster) -> Core:
    return HybridNodeCore(
        spec.name,
        spec.slots,
        srpt=True,
        stop_at_long=False,
        threshold=float(_p(cluster, "srpt_threshold", 5.0)),
        heartbeat_to=[p.name for p in cluster.schedulers],
        heartbeat=float(_p(cluster, "heartbeat", 3.0)),
    )


def hybrid_policies(policy: Callable[..., Any]) -> list[Any]:
    """The registry entries, built with the registry's ``Policy`` class."""
    hawk_params = ("cutoff", "probe_ratio", "steal_attempts")
    eagle_params = ("cutoff", "probe_ratio", "min_probes", "srpt_threshold", "update_ratio")
    hybrid = {"router": hybrid_router, "short_partition": SHORT_PARTITION}

    def hawk(name: str, summary: str, *, steal: bool = True, central: bool = True, part: bool = True) -> Any:
        return policy(
            name,
            summary,
            scheduler=_hawk_scheduler,
            central=_central(everywhere=not part, sss=False) if central else None,
            node=_hawk_node(steal=steal),
            params=hawk_params,
            **{**hybrid, "short_partition": SHORT_PARTITION if part else 0.0},
        )

    def eagle(name: str, summary: str, *, sss: bool = True, sbp: bool = True, min_probes: bool = True) -> Any:
        return policy(
            name,
            summary,
            scheduler=_eagle_scheduler(sss=sss, sbp=sbp, min_probes=min_probes),
            central=_central(everywhere=False, sss=sss),
            node=_eagle_node(sss=sss, sbp=sbp),
            params=eagle_params,
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
        policy(
            "lwl",
            "centralized LWL for every job on every node, no partition, no stealing (thesis §2.4.5)",
            central=_central(everywhere=True, sss=False),
            node=_lwl_node,
            params=("cutoff",),
            router=hybrid_router,
        ),
        policy(
            "dlwl",
            "distributed LWL on heartbeat-stale queue estimates with node SRPT (thesis §3.6.2)",
            scheduler=_dlwl_scheduler,
            node=_dlwl_node,
            params=("cutoff", "srpt_threshold", "heartbeat"),
            short_partition=SHORT_PARTITION,
        ),
    ]
