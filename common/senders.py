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
    GetStats,
    GetTask,
    Heartbeat,
    Hello,
    JobDone,
    KillTask,
    LongTask,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    ProbeRejected,
    QueueReport,
    QueueTask,
    Register,
    RemainingUpdate,
    Shutdown,
    Stats,
    StealReply,
    StealRequest,
    SubmitJob,
    TaskFinished,
    TaskStarted,
)

CONTROLLERS = frozenset({"frontend", "control"})
"""The cluster's frontend and a launcher's ``control`` (``aviary up``, ``aviary host``)."""
SCHEDULERS = frozenset({"scheduler", "central"})
NODES = frozenset({"node"})
PROCESSES = frozenset({"frontend", "scheduler", "central", "node"})
"""Every process of the description (not ``control``, which runs none)."""

MAY_SEND: dict[type, frozenset[str]] = {
    **dict.fromkeys((SubmitJob, PeerDown, PeerUp, Hello, GetStats, GetCounters, Shutdown), CONTROLLERS),
    **dict.fromkeys(
        (
            JobDone,
            Probe,
            AssignTask,
            NoTask,
            CancelProbes,
            PlaceTask,
            KillTask,
            LongTask,
            RemainingUpdate,
            QueueTask,
        ),
        SCHEDULERS,
    ),
    **dict.fromkeys(
        (GetTask, TaskFinished, ProbeRejected, StealRequest, StealReply, TaskStarted, QueueReport, Heartbeat),
        NODES,
    ),
    **dict.fromkeys((Register, Stats, Counters), PROCESSES),
}
"""Each message kind's senders, by role."""


def may_send(role: str | None, msg: object) -> bool:
    """Whether a process of ``role`` (None: a name the description does not hold) may send ``msg``."""
    return role is not None and role in MAY_SEND.get(type(msg), PROCESSES)
