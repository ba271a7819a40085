"""Aviary's public policy API: everything a scheduling policy's author imports, from this one module.

A policy is a few *cores* (objects that turn inputs into effects and do no I/O: no socket, clock, file,
process or thread) and a :class:`Policy` value that declares them::

    from aviary.policy import Context, Core, Policy, PlaceTask, Send, SubmitJob, TaskFinished, JobDone

    class RandomCentral(Core):
        def __init__(self, ctx: Context) -> None:
            super().__init__(ctx.name)
            ...

    POLICY = Policy("random", "each task on a random node", central=RandomCentral)

Then ``aviary replay --policy path/to/file.py:POLICY`` runs it, on the simulator and on real
processes; an installed package registers it under the entry-point group ``aviary.policies``
(``aviary policy new NAME`` writes one) and ``--policy random`` finds it. ``docs/plugins.md`` is the
tutorial and the reference.

What is here, by use:

- **the core interface** :class:`Core` (``start``, ``on_message``, ``on_timer``, ``on_task_exit``), its
  **effects** (:class:`Send`, :class:`Multicast`, :class:`SetTimer`, :class:`CancelTimer`, and for node
  monitors :class:`Launch`, :class:`Suspend`, :class:`Resume`, :class:`Kill`);
- **the messages** a role receives and sends (``SubmitJob`` ... ``PeerUp``; ``docs/protocol.md``);
- **the job model**: :class:`JobSpec`, :class:`Stage`, :class:`Resources`;
- **the declaration**: :class:`Policy`, the :class:`Context` a builder gets, :class:`Param` for its
  parameters (flags, cluster files and :attr:`Context.params` derive from them);
- **the multi-resource central layer**: :func:`packing_policy` declares a DAG policy from a
  :class:`PlacementPolicy` (hooks ``pick``, or :class:`OrderedPolicy`'s ``job_key``, over
  :class:`CentralState`'s :class:`JobState`, :class:`StageState` and :class:`NodeState`);
- :func:`unit_context`: the context a builder gets, for a unit test of a core without a testbed;
- :func:`builtin`: a built-in policy's declaration, to reuse its cores (a node policy under the built-in
  central FIFO, say).

Everything not named in ``__all__`` may change between versions; what is named changes only with
:data:`API_VERSION` (``tests/test_policy_api.py`` holds the names and signatures).
"""

from __future__ import annotations

from typing import Any as _Any

from .central.packing import OrderedPolicy, PlacementPolicy, RemainingWork, first_fitting
from .central.state import CentralState, JobState, NodeState, StageState
from .common.core import Core
from .common.declaration import Builder, Context, Policy
from .common.effects import (
    CancelTimer,
    Effect,
    Kill,
    Launch,
    Multicast,
    Resume,
    Send,
    SetTimer,
    Suspend,
    TaskId,
)
from .common.messages import (
    AssignTask,
    CancelProbes,
    GetTask,
    Heartbeat,
    JobDone,
    KillTask,
    Message,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    QueueReport,
    QueueTask,
    SubmitJob,
    TaskFinished,
    TaskStarted,
)
from .common.model import JobSpec, Stage
from .common.params import Param
from .common.params import resolve as _resolve
from .common.resources import Resources
from .launch.policies.multiresource import packing_policy
from .launch.policies.registry import get_policy as _get_policy
from .launch.policies.registry import policy_cluster as _policy_cluster

API_VERSION = "1.2"
"""The version of this module's names and signatures: a change of either changes it."""

__all__ = [
    "API_VERSION",
    "AssignTask",
    "Builder",
    "CancelProbes",
    "CancelTimer",
    "CentralState",
    "Context",
    "Core",
    "Effect",
    "GetTask",
    "Heartbeat",
    "JobDone",
    "JobSpec",
    "JobState",
    "Kill",
    "KillTask",
    "Launch",
    "Message",
    "Multicast",
    "NoTask",
    "NodeState",
    "OrderedPolicy",
    "Param",
    "PeerDown",
    "PeerUp",
    "PlaceTask",
    "PlacementPolicy",
    "Policy",
    "Probe",
    "QueueReport",
    "QueueTask",
    "RemainingWork",
    "Resources",
    "Resume",
    "Send",
    "SetTimer",
    "Stage",
    "StageState",
    "SubmitJob",
    "Suspend",
    "TaskFinished",
    "TaskId",
    "TaskStarted",
    "builtin",
    "first_fitting",
    "packing_policy",
    "unit_context",
]


def builtin(name: str) -> Policy:
    """The declaration of the built-in policy ``name`` (``aviary policy list``), to reuse its builders:
    ``Policy("mine", ..., central=builtin("fifo").central, node=MyNode, params=builtin("fifo").params)``
    (a reused builder reads the parameters its policy declares, so declare them too)."""
    policy = _get_policy(name)
    if policy.source:
        raise ValueError(f"{name!r} is a plug-in ({policy.origin}), not a built-in policy")
    return policy


def unit_context(
    policy: Policy,
    role: str,
    *,
    nodes: int = 4,
    slots: int = 1,
    schedulers: int = 1,
    seed: int = 0,
    params: dict[str, _Any] | None = None,
    index: int = 0,
) -> Context:
    """The :class:`Context` ``policy``'s ``role`` builder gets for its ``index``-th process in a local
    testbed of ``nodes`` nodes (named ``node0``, ``node1``...) of ``slots`` slots, ``schedulers``
    distributed schedulers (``sched0``...) if it has them and a central (``central``) if it has one;
    ``params``: values of its declared parameters (as flags give them; the rest their defaults). For
    unit tests: ``core = POLICY.central(unit_context(POLICY, "central"))``."""
    given = _resolve(policy.params, params or {})
    held = {p.name: given[p.name] for p in policy.params if p.cluster and p.name in given}
    cluster = _policy_cluster(
        policy, nodes=nodes, slots=slots, schedulers=schedulers, seed=seed, params=held, bind_ports=False
    )
    found = cluster.by_role(role)
    if index >= len(found):
        raise ValueError(f"policy {policy.name!r} has {len(found)} {role} process(es), not {index + 1}")
    return policy.context(found[index], cluster)
