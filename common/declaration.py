"""A policy declared as data (DESIGN §10): its name, the builder of each role's core, its parameters and
what its nodes need. The built-in policies and a plug-in's are the same kind of value, read by the
registry through one path (:mod:`aviary.launch.policies.registry`), and a builder sees the testbed only
through a :class:`Context`, so a plug-in depends on nothing but the public module :mod:`aviary.policy`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .cluster import Cluster, ClusterError, ProcessSpec
from .core import Core
from .frontend import Router, round_robin
from .params import Param
from .resources import Resources


class Context:
    """What a builder knows of the process it builds a core for, and of the testbed around it."""

    def __init__(self, spec: ProcessSpec, cluster: Cluster, declared: tuple[Param, ...] = ()) -> None:
        self.spec = spec
        """This process's entry of the cluster description (advanced use; the properties below suffice)."""
        self.cluster = cluster
        """The whole cluster description (advanced use)."""
        self._declared = declared

    @property
    def name(self) -> str:
        """This process's name: the sender name its peers see."""
        return self.spec.name

    @property
    def role(self) -> str:
        """``node``, ``scheduler`` or ``central``."""
        return self.spec.role

    @property
    def slots(self) -> int:
        """A node's task slots (0 for the other roles)."""
        return self.spec.slots

    @property
    def resources(self) -> Resources:
        """A node's capacity vector (cores, memory, disk, network); ``slots`` cores where none is given."""
        return self.spec.resources

    @property
    def partition(self) -> str:
        """A node's partition: ``general``, or ``short`` (Hawk's and Eagle's short partition)."""
        return self.spec.partition

    @property
    def attributes(self) -> dict[str, Any]:
        """A node's placement attributes (``gpu``, ``rack``...)."""
        return self.spec.attributes

    @cached_property
    def nodes(self) -> list[str]:
        """The names of every node monitor, in the description's order."""
        return [n.name for n in self.cluster.nodes]

    @cached_property
    def node_slots(self) -> dict[str, int]:
        """Each node's task slots, by name."""
        return {n.name: n.slots for n in self.cluster.nodes}

    @cached_property
    def node_resources(self) -> dict[str, Resources]:
        """Each node's capacity vector, by name."""
        return {n.name: n.resources for n in self.cluster.nodes}

    @cached_property
    def schedulers(self) -> list[str]:
        """The names of the distributed schedulers (empty if the policy has none)."""
        return [p.name for p in self.cluster.schedulers]

    @property
    def central(self) -> str | None:
        """The central scheduler's name, if the policy has one."""
        central = self.cluster.central
        return None if central is None else central.name

    @property
    def seed(self) -> int:
        """The run's seed: seed each core's own ``random.Random`` from it (and from ``name``)."""
        return self.cluster.seed

    @property
    def time_scale(self) -> float:
        """Trace seconds per second of the replay clock."""
        return float(self.cluster.params.get("time_scale", 1.0))

    @cached_property
    def params(self) -> dict[str, Any]:
        """The policy's declared parameters as this run holds them: durations in seconds of the replay
        clock (a ``scales`` default already divided by the time scale); an optional one not given is
        ``None``."""
        out: dict[str, Any] = {}
        for p in self._declared:
            if p.cluster:
                try:
                    out[p.name] = p.held(self.cluster.params)
                except ValueError as exc:
                    raise ClusterError(f"[cluster.params]: field '{p.name}': {exc}") from None
        return out


Builder = Callable[[Context], Core]
"""Makes one role's core for one process (a :class:`Core` subclass whose ``__init__`` takes the context
is one)."""


@dataclass(frozen=True)
class Policy:
    """A scheduling policy declared as data: at least one of ``scheduler`` (distributed schedulers, which
    get every job unless ``router`` says otherwise) and ``central``; ``node`` defaults to the built-in
    node monitor (FIFO queue, late binding for probes, ``PlaceTask`` queued)."""

    name: str
    summary: str
    scheduler: Builder | None = None
    """The distributed schedulers' core, if the policy uses them."""
    central: Builder | None = None
    """The central scheduler's core, if the policy uses one."""
    node: Builder | None = None
    """The node monitor's core (default: the built-in FIFO node monitor)."""
    router: Callable[[Cluster], Router] | None = None
    """Where the frontend sends each job (default: round-robin over the schedulers, else the central)."""
    params: tuple[Param, ...] = ()
    """Its parameters, declared once: flags, ``[cluster.params]`` of cluster files, :attr:`Context.params`."""
    dag: bool = False
    """It schedules multi-resource DAG jobs by resource fit: its nodes get capacity vectors."""
    family: str = ""
    """The heading its parameters' flags are listed under (default: its name)."""
    source: str = ""
    """Where it was loaded from (``module:attribute`` or ``/path/file.py:attribute``); set by the registry,
    empty for a built-in."""
    origin: str = "built-in"
    """What the registry says it comes from (``built-in``, an installed distribution, a module, a file)."""

    def param(self, name: str) -> Param | None:
        """The declared parameter ``name``, if the policy has one."""
        return next((p for p in self.params if p.name == name), None)

    @property
    def short_partition(self) -> float:
        """The default share of the nodes in the short partition (its declared percent / 100)."""
        p = self.param("short_partition")
        return 0.0 if p is None else p.default / 100

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles it builds a core for (``node`` always: the default node monitor otherwise)."""
        built = (("scheduler", self.scheduler), ("central", self.central))
        return (*(role for role, builder in built if builder is not None), "node")

    def route(self, cluster: Cluster) -> Router:
        """Where the frontend sends each job."""
        if self.router is not None:
            return self.router(cluster)
        if self.scheduler is not None:
            return round_robin([p.name for p in cluster.schedulers])
        assert cluster.central is not None
        return round_robin([cluster.central.name])

    def context(self, spec: ProcessSpec, cluster: Cluster) -> Context:
        """The context its builders get for the process ``spec`` of ``cluster``."""
        return Context(spec, cluster, self.params)
