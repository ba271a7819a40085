"""Policies by name: which processes a policy needs and how each role's core is built.

A new policy is one module plus one entry here (DESIGN §2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..central.fifo import CentralFifoCore
from ..central.kairos import KairosCentralCore
from ..common.cluster import Cluster, ClusterError, ProcessSpec, local_cluster
from ..common.core import Core
from ..common.frontend import Router, round_robin
from ..distributed.sparrow import SparrowCore
from ..worker.las import KairosNodeCore
from ..worker.node_monitor import NodeMonitorCore
from .hybrid import hybrid_policies

Builder = Callable[[ProcessSpec, Cluster], Core]


@dataclass(frozen=True)
class Policy:
    name: str
    summary: str
    scheduler: Builder | None = None  # distributed schedulers, if the policy uses them
    central: Builder | None = None  # the central scheduler, if the policy uses one
    node: Builder | None = None  # the node monitor core (default: NodeMonitorCore with a FIFO queue)
    params: tuple[str, ...] = ()  # the cluster parameters it reads
    router: Callable[[Cluster], Router] | None = None  # where jobs go (default: schedulers, else central)
    short_partition: float = 0.0  # default share of nodes in the short partition

    def route(self, cluster: Cluster) -> Router:
        """Where the frontend sends each job."""
        if self.router is not None:
            return self.router(cluster)
        if self.scheduler is not None:
            return round_robin([p.name for p in cluster.schedulers])
        assert cluster.central is not None
        return round_robin([cluster.central.name])


def _param(cluster: Cluster, key: str, default: Any) -> Any:
    return cluster.params.get(key, default)


def _sparrow(spec: ProcessSpec, cluster: Cluster) -> Core:
    return SparrowCore(
        spec.name,
        [n.name for n in cluster.nodes],
        probe_ratio=float(_param(cluster, "probe_ratio", 2.0)),
        seed=cluster.seed,
    )


def _central_fifo(spec: ProcessSpec, cluster: Cluster) -> Core:
    return CentralFifoCore(spec.name, {n.name: n.slots for n in cluster.nodes})


KAIROS_PARAMS = ("quantum", "kairos_q", "starvation_quanta", "starvation_multiple", "heartbeat_interval")


def _kairos_central(tiebreak: str) -> Builder:
    def build(spec: ProcessSpec, cluster: Cluster) -> Core:
        return KairosCentralCore(
            spec.name,
            {n.name: n.slots for n in cluster.nodes},
            q=int(_param(cluster, "kairos_q", 2)),
            tiebreak=tiebreak,
            seed=cluster.seed,
        )

    return build


def _kairos_node(spec: ProcessSpec, cluster: Cluster) -> Core:
    quantum = float(_param(cluster, "quantum", 10.0))
    heartbeat = _param(cluster, "heartbeat_interval", None)
    return KairosNodeCore(
        spec.name,
        spec.slots,
        central=cluster.central.name if cluster.central is not None else None,
        quantum=quantum,
        starvation_quanta=int(_param(cluster, "starvation_quanta", 3)),
        starvation_multiple=float(_param(cluster, "starvation_multiple", 2.0)),
        heartbeat_interval=None if heartbeat is None else float(heartbeat),
    )


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in [
        Policy(
            "sparrow",
            "batch sampling with probe ratio d and late binding",
            scheduler=_sparrow,
            params=("probe_ratio",),
        ),
        Policy(
            "fifo",
            "central FIFO queue, a task placed only on a free slot (no preemption)",
            central=_central_fifo,
        ),
        *(
            Policy(
                name,
                f"Kairos: node LAS with quantum and preemption, central N+Q dispatch, {tb} tie-break",
                central=_kairos_central(tb),
                node=_kairos_node,
                params=KAIROS_PARAMS,
            )
            for name, tb in (("kairos", "var"), ("kairos-random", "random"), ("kairos-sum", "sum"))
        ),
    ]
}
POLICIES.update((p.name, p) for p in hybrid_policies(Policy))  # Hawk, Eagle, ablations, LWL, DLWL


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise ClusterError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}") from None


def build_core(spec: ProcessSpec, cluster: Cluster) -> Core:
    """The core of one process of the cluster (frontends are built by the replay)."""
    policy = get_policy(cluster.policy)
    if spec.role == "node" and policy.node is None:
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
) -> Cluster:
    """A local cluster with the processes ``policy`` needs: a central scheduler if it uses one, and
    ``schedulers`` distributed schedulers only if it uses them (``bind_ports=False`` for the simulator).
    ``short_partition`` (share of the nodes) defaults to the policy's own (17 % for Hawk and Eagle)."""
    spec = get_policy(policy)
    if short_partition is None:
        short_partition = spec.short_partition
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
    )
