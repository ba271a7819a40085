"""Who may send what: each message kind and the roles of the cluster description that may send it
(issue 26, DESIGN §3 "Trust"). The runtime drops and counts a message whose sender's role is not among
its kind's (``dropped.<kind>-from-stranger``); a name the description does not hold has no role, so a
stranger's messages are all dropped, keys or not. The cores check what the roles cannot: a
``TaskFinished`` only from the node running that task, an ``AssignTask`` only in answer to the node's own
``GetTask``, a ``JobDone`` only from the job's scheduler, ``Stats`` only in answer to the frontend's
request.
"""

from __future__ import annotations

from .messages import (
    AssignTask,
    CancelProbes,
    Counters,
    GetCounters,
    GetHolding,
    GetStats,
    GetTask,
    Heartbeat,
    Hello,
    Holding,
    JobDone,
    KillTask,
    LinkFaults,
    LongTask,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    ProbeRejected,
    QueueReport,
    QueueTask,
    Recover,
    Register,
    RemainingUpdate,
    Shutdown,
    Stats,
    StealReply,
    StealRequest,
    SubmitJob,
    TaskFinished,
    TaskRecords,
    TaskStarted,
)

CONTROLLERS = frozenset({"frontend", "control"})
"""The cluster's frontend and a launcher's ``control`` (``aviary up``, ``aviary host``)."""
SCHEDULERS = frozenset({"scheduler", "central"})
NODES = frozenset({"node"})
PROCESSES = frozenset({"frontend", "scheduler", "central", "node"})
"""Every process of the description (not ``control``, which runs none)."""

Kinds = tuple[type, ...]
FROM_CONTROLLERS: Kinds = (SubmitJob, PeerDown, PeerUp, Hello, GetStats, GetCounters, Shutdown, Recover)
FROM_CONTROLLERS += (LinkFaults,)
FROM_SCHEDULERS: Kinds = (JobDone, Probe, AssignTask, NoTask, CancelProbes, PlaceTask, KillTask, LongTask)
FROM_SCHEDULERS += (RemainingUpdate, QueueTask, GetHolding)
FROM_NODES: Kinds = (GetTask, TaskFinished, ProbeRejected, StealRequest, StealReply, TaskStarted, QueueReport)
FROM_NODES += (Heartbeat, Holding, TaskRecords)

MAY_SEND: dict[type, frozenset[str]] = {
    **dict.fromkeys(FROM_CONTROLLERS, CONTROLLERS),
    **dict.fromkeys(FROM_SCHEDULERS, SCHEDULERS),
    **dict.fromkeys(FROM_NODES, NODES),
    **dict.fromkeys((Register, Stats, Counters), PROCESSES),
}
"""Each message kind's senders, by role."""


def may_send(role: str | None, msg: object) -> bool:
    """Whether a process of ``role`` (None: a name the description does not hold) may send ``msg``."""
    return role is not None and role in MAY_SEND.get(type(msg), PROCESSES)
