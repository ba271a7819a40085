"""Wire messages and their msgpack codec (DESIGN §3).

A frame is the msgpack array ``[PROTOCOL_VERSION, type_tag, field_1, ..., field_n]``. Decoding checks
the version, the tag, the number of fields and each field's type, so that a core only ever sees
well-formed messages; anything else raises :class:`BadFrame` with a short ``kind`` that the runtime
counts (``dropped.<kind>``) before dropping the frame.

Adding a message: a slotted dataclass with a unique tag, decorated with :func:`message`. Fields with
defaults may be omitted on the wire, so new optional fields stay compatible.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

import msgpack

PROTOCOL_VERSION = 1
_pack = msgpack.Packer(use_bin_type=True).pack


class BadFrame(ValueError):
    """A frame that cannot be decoded; ``kind`` names the reason for the counters."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


_BY_TAG: dict[int, type] = {}
_CHECKS: dict[type, tuple[int, tuple[Callable[[Any], bool], ...]]] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _checker(tp: Any) -> Callable[[Any], bool]:
    """A predicate accepting the msgpack form of values of type ``tp``."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        parts = [_checker(a) for a in typing.get_args(tp)]
        return lambda v: any(p(v) for p in parts)
    if tp is type(None):
        return lambda v: v is None
    if tp is float:
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if tp is int:
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if tp in (str, bool, bytes):
        return lambda v: isinstance(v, tp)
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        check = _checker(item)
        return lambda v: isinstance(v, (list, tuple)) and all(check(x) for x in v)
    if origin is dict or tp is dict:
        return lambda v: isinstance(v, dict)
    if tp is Any:
        return lambda v: True
    raise TypeError(f"unsupported message field type {tp!r}")


def message(tag: int) -> Callable[[type], type]:
    """Register a dataclass as a wire message with the given type tag."""

    def register(cls: type) -> type:
        if tag in _BY_TAG:
            raise ValueError(f"message tag {tag} used twice")
        hints = typing.get_type_hints(cls)
        fields = dataclasses.fields(cls)
        required = sum(
            1 for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        setattr(cls, "TAG", tag)  # noqa: B010 (set on a class the decorator receives)
        setattr(cls, "KIND", cls.__name__)  # noqa: B010
        _BY_TAG[tag] = cls
        _CHECKS[cls] = (required, tuple(_checker(hints[f.name]) for f in fields))
        _FIELDS[cls] = tuple(f.name for f in fields)
        return cls

    return register


def encode(msg: Any) -> bytes:
    """Encode a registered message into one frame."""
    return _pack([PROTOCOL_VERSION, msg.TAG, *[getattr(msg, name) for name in _FIELDS[type(msg)]]])


def decode(frame: bytes) -> Any:
    """Decode one frame into a message, or raise :class:`BadFrame`."""
    try:
        data = msgpack.unpackb(frame, use_list=True, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise BadFrame("not-msgpack", str(exc)) from None
    if not isinstance(data, list) or len(data) < 2:
        raise BadFrame("not-a-message")
    version, tag, *values = data
    if version != PROTOCOL_VERSION:
        raise BadFrame("bad-version", repr(version)[:40])
    cls = _BY_TAG.get(tag) if isinstance(tag, int) else None
    if cls is None:
        raise BadFrame("unknown-type", repr(tag)[:40])
    required, checks = _CHECKS[cls]
    if not required <= len(values) <= len(checks):
        raise BadFrame("bad-fields", f"{cls.__name__} with {len(values)} fields")
    for check, value in zip(checks, values, strict=False):
        if not check(value):
            raise BadFrame("bad-fields", f"{cls.__name__} field of type {type(value).__name__}")
    return cls(*values)


# --- frontend <-> schedulers -------------------------------------------------------------------


@message(1)
@dataclasses.dataclass(slots=True)
class SubmitJob:
    """A job for a scheduler: real task durations (run by executors) and the estimate schedulers see.

    Optional (multi-resource DAG jobs, :mod:`aviary.common.model`): ``stages``, each
    ``[tasks, estimate, demand (up to 4 numbers), parents (earlier stage numbers)]``, empty for a flat
    job of one-core tasks; ``deadline`` (seconds after arrival), ``slo`` ("" for none), ``gang``,
    ``preference`` ("" for none) and ``slowdown``. Old frames without them still decode.
    """

    job_id: int
    durations: list[float]
    estimate: float
    stages: list[Any] = dataclasses.field(default_factory=list)
    deadline: float | None = None
    slo: str = ""
    gang: bool = False
    preference: str = ""
    slowdown: float = 1.0


@message(2)
@dataclasses.dataclass(slots=True)
class JobDone:
    """Scheduler -> frontend: the last task of the job finished.

    ``first_start_delay`` is measured on the scheduler's own clock, from the job's arrival to the
    hand-out of its first task, so that no two clocks need to agree.
    """

    job_id: int
    first_start_delay: float


# --- distributed scheduler <-> node monitor ------------------------------------------------------


@message(3)
@dataclasses.dataclass(slots=True)
class Probe:
    """A reservation for ``count`` tasks of a job in a node's queue (batch sampling, late binding).

    Optional (Hawk/Eagle): ``long`` marks a probe of a long job (Hawk without its central scheduler);
    ``attempt`` is Eagle's placement round: 0 random, 1 re-sent by the bitvector, 2 short partition
    (a node never rejects a probe of the last round).
    """

    job_id: int
    estimate: float
    remaining: int
    count: int = 1
    long: bool = False
    attempt: int = 0


@message(4)
@dataclasses.dataclass(slots=True)
class GetTask:
    """Node -> scheduler: a probe of this job reached a free slot; send a task or NoTask."""

    job_id: int


@message(5)
@dataclasses.dataclass(slots=True)
class AssignTask:
    """Scheduler -> node: run this task now in the slot reserved for the probe.

    Optional ``remaining``: the job's tasks not yet handed out after this one (-1: not told); Eagle's
    node SRPT uses it (thesis §3.4.3).
    """

    job_id: int
    task_index: int
    duration: float
    estimate: float
    remaining: int = -1


@message(6)
@dataclasses.dataclass(slots=True)
class NoTask:
    """Scheduler -> node: the job has no task left for this probe."""

    job_id: int


@message(7)
@dataclasses.dataclass(slots=True)
class CancelProbes:
    """Scheduler -> node: every task of the job is handed out; drop its queued probes."""

    job_id: int


@message(8)
@dataclasses.dataclass(slots=True)
class TaskFinished:
    """Node -> the scheduler that placed the task."""

    job_id: int
    task_index: int
    ok: bool = True


@message(9)
@dataclasses.dataclass(slots=True)
class PlaceTask:
    """Central scheduler -> node: queue this task itself (no late binding).

    Optional ``demand``: the task's resource vector (up to 4 numbers, :mod:`aviary.common.resources`);
    a node that admits tasks by resource fit reserves it while the task runs. Empty: one slot.
    """

    job_id: int
    task_index: int
    duration: float
    estimate: float
    demand: list[float] = dataclasses.field(default_factory=list)


@message(10)
@dataclasses.dataclass(slots=True)
class KillTask:
    """Central scheduler -> node: kill this task, which the sender placed there (preemption: the central
    has already made it runnable again, its work lost). The node kills it and answers
    ``TaskFinished(ok=False)``; a task the node does not run, or that another scheduler placed, is
    counted and ignored (no answer)."""

    job_id: int
    task_index: int


# --- control -------------------------------------------------------------------------------------


@message(20)
@dataclasses.dataclass(slots=True)
class Hello:
    """Frontend -> any process: answer with Register when ready. ``epoch``: the replay it belongs to
    (0: none); a process hearing a new one from its frontend starts afresh (:class:`Runtime`)."""

    epoch: int = 0


@message(21)
@dataclasses.dataclass(slots=True)
class Register:
    """Any process -> frontend: this process is up."""

    role: str
    slots: int = 0


@message(22)
@dataclasses.dataclass(slots=True)
class Shutdown:
    """Frontend -> any process: reply with Stats, then exit."""


@message(23)
@dataclasses.dataclass(slots=True)
class Stats:
    """A process's counters and its sent-message counts by kind, sent in answer to Shutdown.

    Optional ``log``: a central scheduler's record of every finished task, each
    ``[job_id, task_index, start, end, demand]`` on its own clock (:meth:`Core.task_log`); optional
    ``cycles``: a periodic planner's record per cycle (:meth:`Core.cycle_log`).
    """

    counters: dict
    messages: dict
    log: list[Any] = dataclasses.field(default_factory=list)
    cycles: list[Any] = dataclasses.field(default_factory=list)


@message(24)
@dataclasses.dataclass(slots=True)
class GetStats:
    """Frontend -> any process: reply with Stats and keep running."""


@message(25)
@dataclasses.dataclass(slots=True)
class PeerDown:
    """Frontend -> every live process: ``name`` was declared dead (missed heartbeats, an exit, or an
    injected failure); stop sending it work and re-run what it held."""

    name: str


@message(26)
@dataclasses.dataclass(slots=True)
class PeerUp:
    """Frontend -> every live process: ``name``, declared dead earlier, answers again: it rejoins."""

    name: str


@message(27)
@dataclasses.dataclass(slots=True)
class GetCounters:
    """Frontend -> any process, now and then during a replay: reply with ``Counters``."""


@message(28)
@dataclasses.dataclass(slots=True)
class Counters:
    """A process's counters and sent-message counts so far (``Stats`` without the logs): what the replay
    keeps of a process that dies before the end."""

    counters: dict
    messages: dict


# --- Hawk, Eagle, DLWL (tags 30-49) ---------------------------------------------------------------


@message(30)
@dataclasses.dataclass(slots=True)
class LongTask:
    """Central -> node: queue this long task (LWL placement, thesis §2.3.7).

    Piggybacks Eagle's succinct state (§3.3.3): ``bitvector`` has bit i (byte i // 8, bit i % 8) set
    when the i-th node of the cluster holds long work by the central's bookkeeping, and ``stamp`` is
    the central's clock when that bitvector was current. Empty when the policy does not share state.
    """

    job_id: int
    task_index: int
    duration: float
    estimate: float
    bitvector: bytes = b""
    stamp: float = -1.0


@message(31)
@dataclasses.dataclass(slots=True)
class ProbeRejected:
    """Node -> scheduler: a node holding long work refuses ``count`` short probes of the job (Eagle SSS),
    sending back its own bitvector and timestamp; ``attempt`` is the round the probes were sent in."""

    job_id: int
    count: int
    attempt: int
    bitvector: bytes = b""
    stamp: float = -1.0


@message(32)
@dataclasses.dataclass(slots=True)
class RemainingUpdate:
    """Scheduler -> nodes holding the job's probes or tasks: its tasks not yet handed out (node SRPT)."""

    job_id: int
    remaining: int


@message(33)
@dataclasses.dataclass(slots=True)
class StealRequest:
    """Idle node -> general-partition node: give me your first group of short probes behind a long task
    (Hawk randomized stealing, thesis §2.3.6)."""


@message(34)
@dataclasses.dataclass(slots=True)
class StealReply:
    """Victim -> thief: the stolen probes, each ``[scheduler, job_id, estimate, remaining, count]``; an
    empty list when the victim had none to give."""

    probes: list[Any]


@message(35)
@dataclasses.dataclass(slots=True)
class TaskStarted:
    """Node -> the scheduler that placed the task: it started running now (LWL counts the remaining part
    of a running long task; DLWL's remaining-work bookkeeping)."""

    job_id: int
    task_index: int


@message(36)
@dataclasses.dataclass(slots=True)
class QueueReport:
    """Node -> distributed schedulers (DLWL heartbeat, thesis §3.6.2): the node's estimated queue waiting
    time in seconds (estimates of queued tasks plus the remaining part of the running ones)."""

    wait: float


@message(37)
@dataclasses.dataclass(slots=True)
class QueueTask:
    """Distributed scheduler -> node (DLWL, early binding): queue this task; ``remaining`` is the job's
    tasks not yet started as the scheduler knows it (node SRPT), ``long`` its class."""

    job_id: int
    task_index: int
    duration: float
    estimate: float
    remaining: int
    long: bool = False


# --- Kairos (tags 50-59) -------------------------------------------------------------------------


@message(50)
@dataclasses.dataclass(slots=True)
class Heartbeat:
    """Node -> central scheduler, every heartbeat interval (Kairos, thesis Alg. 2 line 45).

    ``tasks``: tasks on the node (running and suspended); ``variance``: population variance of their
    attained service (s^2); ``attained_sum``: its sum (s); ``free``: free slots.
    """

    tasks: int
    variance: float
    attained_sum: float = 0.0
    free: int = 0


MESSAGE_TYPES: tuple[type, ...] = tuple(_BY_TAG.values())
