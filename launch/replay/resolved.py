"""What a replay is, once resolved: :class:`ReplaySetup` (the policy, the cluster, the jobs, the runtime
and where results go) and the simulator's :class:`Prediction` of a real replay. Plain data:
:mod:`.resolve` builds them from a :class:`~..flags.spec.ReplaySpec`, :mod:`.predict` makes the
prediction, :mod:`.provenance` records them; none of those is imported here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...common.cluster import Cluster
from ...common.failures import LIVENESS_MISSES, LIVENESS_PERIOD, Failure
from ...common.model import JobSpec
from ...common.netfaults import LinkFault
from ...common.workload import JobStream
from ..policies.registry import Policy


@dataclass
class Prediction:
    """What the simulator predicts for a real replay (the same cluster and jobs on virtual time)."""

    wall: float
    """Seconds of replay from the first submission to the last finish (a lower bound if not
    ``complete``); starting the testbed's processes comes on top."""
    utilization: float | None
    """Task-seconds over slot-seconds of that span (the dominant resource's share for DAG policies)."""
    finishes: list[float | None]
    """Each job's predicted finish, by job id."""
    seconds: float
    """Wall time the prediction took."""
    complete: bool = True
    """False when it was cut at :data:`.predict.PREDICT_LIMIT`: ``wall`` is then where it got to."""
    notes: list[str] = field(default_factory=list)
    """One-line warnings: utilization far below the asked load and why, tasks too short to be real."""

    def record(self) -> dict[str, Any]:
        """The summary's ``extra.predicted``."""
        util = None if self.utilization is None else round(self.utilization, 4)
        return {"wall_seconds": round(self.wall, 3), "utilization": util, "complete": self.complete}


@dataclass
class ReplaySetup:
    """Everything a replay needs, resolved from its :class:`ReplaySpec` once (:func:`.resolve.resolve`)."""

    policy: Policy
    """The registry's entry of the policy that runs (with ``--connect``, the testbed's)."""
    cluster: Cluster
    jobs: list[JobSpec]
    runtime: str
    out: Path
    stall_timeout: float
    net_delay: float = 0.0005
    connect: Path | None = None  # the cluster description of a running testbed
    extra: dict[str, Any] = field(default_factory=dict)
    prediction: Prediction | None = None
    """A real replay's prediction on the simulator (:func:`predict`)."""
    failures: list[Failure] = field(default_factory=list)
    """Processes killed on purpose at replay times (``--fail``)."""
    link_faults: list[LinkFault] = field(default_factory=list)
    """``--fail``'s faults of the network (:mod:`aviary.common.netfaults`), injected on either runtime."""
    keys: bool = True
    """A testbed this replay starts gets CurveZMQ keys of its own (:class:`LocalTestbed`)."""
    latest: bool = False
    """``out`` is the run's own default folder: ``results/latest`` is pointed at it once written."""
    liveness: tuple[float, int] = (LIVENESS_PERIOD, LIVENESS_MISSES)
    """Real processes: heartbeat period (s) and heartbeats missed before a process is declared dead."""
    dashboard: int | None = None
    """Real processes: the live dashboard's port (0: any free one), or None."""
    dashboard_address: str = "127.0.0.1"
    journal: bool = True
    """Journal each finished job as it finishes (:mod:`aviary.common.journal`); off only to measure its
    cost."""
    begun: float = 0.0
    """When its set-up began (``time.monotonic``; 0: unknown): a simulated replay's estimate counts it."""
    task_table: bool = True
    """Write the task table, ``tasks.csv``, as tasks end (:mod:`aviary.common.tasktable`; with the
    journal)."""
    stream: JobStream | None = None
    """The jobs as a stream (``--stream``: :mod:`aviary.common.workload`), ``jobs`` then empty: read as the
    replay advances, each written to ``jobs.csv`` as it finishes and forgotten."""

    @property
    def count(self) -> int:
        """How many jobs the replay submits."""
        return len(self.jobs) if self.stream is None else self.stream.count

    @property
    def tasks(self) -> int:
        """Their tasks in all."""
        return sum(j.tasks for j in self.jobs) if self.stream is None else self.stream.tasks
