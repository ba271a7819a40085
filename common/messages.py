"""Wire messages and their codec (DESIGN §3): msgspec's msgpack ``Struct``s, typed and checked at decode.

A frame is one byte, the protocol version (:data:`PROTOCOL_VERSION`), then a msgpack array
``[type_tag, field_1, ..., field_n]``: each message is a :class:`Message`, a ``msgspec.Struct`` encoded
as an array whose first item is its tag. Decoding checks the version, the tag, the number of fields and
each field's type in msgspec's compiled decoder (no hand-written checks), so that a core only ever sees
well-formed messages; anything else raises :class:`BadFrame` with a short ``kind`` that the runtime
counts (``dropped.<kind>``) before dropping the frame. A frame of protocol 1 (``[1, tag, fields...]``,
aviary before issue 27) is refused as ``bad-version`` with a detail that names it.

Adding a message: a subclass of :class:`Message` with a unique ``tag``; fields with defaults may be
omitted at the end of a frame, so new optional fields stay compatible with older senders.
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar

import msgspec

PROTOCOL_VERSION = 4
_VERSION = bytes([PROTOCOL_VERSION])


class BadFrame(ValueError):
    """A frame that cannot be decoded; ``kind`` names the reason for the counters."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


class Message(msgspec.Struct, array_like=True, forbid_unknown_fields=True, gc=False):
    """A wire message: ``[tag, fields...]`` after the version byte.

    ``gc=False``: a message holds data only (numbers, strings, bytes and lists of them), never a
    reference back to what holds it, so the cycle collector need not track it; the simulator makes and
    drops millions (a few per cent of a simulated replay's CPU at 12,500 nodes)."""

    TAG: ClassVar[int]


def encode(msg: Message) -> bytes:
    """Encode a message into one frame."""
    return _VERSION + _encode(msg)


def decode(frame: Any) -> Any:
    """Decode one frame (bytes or any buffer) into a message, or raise :class:`BadFrame`."""
    view = memoryview(frame)
    if view[:1] != _VERSION:
        raise _unversioned(bytes(view))
    try:
        return _decode(view[1:])
    except msgspec.ValidationError as exc:
        text = str(exc)
        if text.startswith("Expected `array`,"):
            raise BadFrame("not-a-message") from None
        if text.endswith("at `$[0]`"):
            raise BadFrame("unknown-type", text[:80]) from None
        raise BadFrame("bad-fields", text[:120]) from None
    except ValueError as exc:  # msgspec.DecodeError, and UnicodeDecodeError for a bad string
        raise BadFrame("not-msgpack", str(exc)[:120]) from None


def _unversioned(frame: bytes) -> BadFrame:
    """Why a frame that does not start with this protocol's version byte is refused."""
    if frame[:1] and frame[0] < 0x80:  # a msgpack positive fixint: another protocol's version byte
        return BadFrame("bad-version", f"version byte {frame[0]}; this process speaks {PROTOCOL_VERSION}")
    try:
        data = msgspec.msgpack.decode(frame)
    except ValueError as exc:  # msgspec.DecodeError, and UnicodeDecodeError for a bad string
        return BadFrame("not-msgpack", str(exc)[:120])
    if isinstance(data, list) and data and isinstance(data[0], int) and not isinstance(data[0], bool):
        return BadFrame(
            "bad-version", f"a frame of protocol {data[0]!r:.20}; this process speaks {PROTOCOL_VERSION}"
        )
    return BadFrame("not-a-message")


# --- frontend <-> schedulers -------------------------------------------------------------------


class SubmitJob(Message, tag=1):
    """A job for a scheduler: real task durations (run by executors) and the estimate schedulers see.

    Optional (multi-resource DAG jobs, :mod:`aviary.common.model`): ``stages``, each
    ``[tasks, estimate, demand (up to 4 numbers), parents (earlier stage numbers)]``, empty for a flat
    job of one-core tasks; ``deadline`` (seconds after arrival), ``slo`` ("" for none), ``gang``,
    ``preference`` ("" for none) and ``slowdown``. Old frames without them still decode.
    """

    job_id: int
    durations: list[float]
    estimate: float
    stages: list[Any] = []
    deadline: float | None = None
    slo: str = ""
    gang: bool = False
    preference: str = ""
    slowdown: float = 1.0


class JobDone(Message, tag=2):
    """Scheduler -> frontend: the last task of the job finished.

    ``first_start_delay`` is measured on the scheduler's own clock, from the job's arrival to the
    hand-out of its first task, so that no two clocks need to agree.
    """

    job_id: int
    first_start_delay: float


# --- distributed scheduler <-> node monitor ------------------------------------------------------


class Probe(Message, tag=3):
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


class GetTask(Message, tag=4):
    """Node -> scheduler: a probe of this job reached a free slot; send a task or NoTask."""

    job_id: int


class AssignTask(Message, tag=5):
    """Scheduler -> node: run this task now in the slot reserved for the probe.

    Optional ``remaining``: the job's tasks not yet handed out after this one (-1: not told); Eagle's
    node SRPT uses it (thesis §3.4.3).
    """

    job_id: int
    task_index: int
    duration: float
    estimate: float
    remaining: int = -1


class NoTask(Message, tag=6):
    """Scheduler -> node: the job has no task left for this probe."""

    job_id: int


class CancelProbes(Message, tag=7):
    """Scheduler -> node: every task of the job is handed out; drop its queued probes."""

    job_id: int


class TaskFinished(Message, tag=8):
    """Node -> the scheduler that placed the task."""

    job_id: int
    task_index: int
    ok: bool = True


class PlaceTask(Message, tag=9):
    """Central scheduler -> node: queue this task itself (no late binding).

    Optional ``demand``: the task's resource vector (up to 4 numbers, :mod:`aviary.common.resources`);
    a node that admits tasks by resource fit reserves it while the task runs. Empty: one slot.
    """

    job_id: int
    task_index: int
    duration: float
    estimate: float
    demand: list[float] = []


class KillTask(Message, tag=10):
    """Central scheduler -> node: kill this task, which the sender placed there (preemption: the central
    has already made it runnable again, its work lost). The node kills it and answers
    ``TaskFinished(ok=False)``; a task the node does not run, or that another scheduler placed, is
    counted and ignored (no answer)."""

    job_id: int
    task_index: int


# --- control -------------------------------------------------------------------------------------


class Hello(Message, tag=20):
    """Frontend -> any process: answer with Register when ready. ``epoch``: the replay it belongs to
    (0: none); a process hearing a new one from its frontend starts afresh (:class:`Runtime`).
    ``tasks``: the replay keeps a task table; a node sends it its tasks' records (``TaskRecords``)."""

    epoch: int = 0
    tasks: bool = False


class Register(Message, tag=21):
    """Any process -> frontend: this process is up. ``recovering``: a central scheduler restarted after
    a death, waiting for :class:`Recover`."""

    role: str
    slots: int = 0
    recovering: bool = False


class Shutdown(Message, tag=22):
    """Frontend -> any process: reply with Stats, then exit."""


class Stats(Message, tag=23):
    """A process's counters and its sent-message counts by kind, sent in answer to Shutdown.

    Optional ``log``: a central scheduler's record of every finished task, each
    ``[job_id, task_index, start, end, demand]`` on its own clock (:meth:`Core.task_log`); optional
    ``cycles``: a periodic planner's record per cycle (:meth:`Core.cycle_log`).
    """

    counters: dict[str, int | float]
    messages: dict[str, int]
    log: list[Any] = []
    cycles: list[Any] = []


class GetStats(Message, tag=24):
    """Frontend -> any process: reply with Stats and keep running."""


class PeerDown(Message, tag=25):
    """Frontend -> every live process: ``name`` was declared dead (missed heartbeats, an exit, or an
    injected failure); stop sending it work and re-run what it held."""

    name: str


class PeerUp(Message, tag=26):
    """Frontend -> every live process: ``name``, declared dead earlier, answers again: it rejoins."""

    name: str


class TaskRecords(Message, tag=29):
    """Node -> frontend, at most every quarter second while tasks end, and before its ``Stats``: the
    runs of tasks that ended since the last batch, each ``[job_id, task_index, node, placed, start,
    finish, preemptions, ok]`` with times on the node's clock, which read ``clock`` as it sent this;
    ``boot``: its kernel's boot id (the same as the frontend's: the same monotonic clock)
    (:mod:`aviary.common.tasktable`: the task table, and how the clocks are mapped)."""

    rows: list[Any]
    clock: float
    boot: str = ""


class GetCounters(Message, tag=27):
    """Frontend -> any process, now and then during a replay: reply with ``Counters``."""


class Counters(Message, tag=28):
    """A process's counters and sent-message counts so far (``Stats`` without the logs): what the replay
    keeps of a process that dies before the end; and its core's :meth:`~aviary.common.core.Core.gauges`
    (what it holds now), which only the live dashboard reads."""

    counters: dict[str, int | float]
    messages: dict[str, int]
    gauges: dict[str, float] = {}


# --- Hawk, Eagle, DLWL (tags 30-49) ---------------------------------------------------------------


class LongTask(Message, tag=30):
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


class ProbeRejected(Message, tag=31):
    """Node -> scheduler: a node holding long work refuses ``count`` short probes of the job (Eagle SSS),
    sending back its own bitvector and timestamp; ``attempt`` is the round the probes were sent in."""

    job_id: int
    count: int
    attempt: int
    bitvector: bytes = b""
    stamp: float = -1.0


class RemainingUpdate(Message, tag=32):
    """Scheduler -> nodes holding the job's probes or tasks: its tasks not yet handed out (node SRPT)."""

    job_id: int
    remaining: int


class StealRequest(Message, tag=33):
    """Idle node -> general-partition node: give me your first group of short probes behind a long task
    (Hawk randomized stealing, thesis §2.3.6)."""


class StealReply(Message, tag=34):
    """Victim -> thief: the stolen probes, each ``[scheduler, job_id, estimate, remaining, count]``; an
    empty list when the victim had none to give."""

    probes: list[Any]


class TaskStarted(Message, tag=35):
    """Node -> the scheduler that placed the task: it started running now (LWL counts the remaining part
    of a running long task; DLWL's remaining-work bookkeeping)."""

    job_id: int
    task_index: int


class QueueReport(Message, tag=36):
    """Node -> distributed schedulers (DLWL heartbeat, thesis §3.6.2): the node's estimated queue waiting
    time in seconds (estimates of queued tasks plus the remaining part of the running ones)."""

    wait: float


class QueueTask(Message, tag=37):
    """Distributed scheduler -> node (DLWL, early binding): queue this task; ``remaining`` is the job's
    tasks not yet started as the scheduler knows it (node SRPT), ``long`` its class."""

    job_id: int
    task_index: int
    duration: float
    estimate: float
    remaining: int
    long: bool = False


# --- Kairos (tags 50-59) -------------------------------------------------------------------------


class Heartbeat(Message, tag=50):
    """Node -> central scheduler, every heartbeat interval (Kairos, thesis Alg. 2 line 45).

    ``tasks``: tasks on the node (running and suspended); ``variance``: population variance of their
    attained service (s^2); ``attained_sum``: its sum (s); ``free``: free slots.
    """

    tasks: int
    variance: float
    attained_sum: float = 0.0
    free: int = 0


# --- a central scheduler's recovery (issue 26; tags 60-69) --------------------------------------------


class Recover(Message, tag=60):
    """Frontend -> a restarted central scheduler: the jobs it had that are not finished (``jobs``, each
    ``ages`` seconds after its submission; their ``SubmitJob``s follow) and the live nodes whose
    :class:`Holding` it must hear before it schedules again."""

    jobs: list[int]
    ages: list[float]
    nodes: list[str]


class GetHolding(Message, tag=61):
    """Restarted central scheduler -> node: what do you hold of mine?"""


class Holding(Message, tag=62):
    """Node -> the central scheduler that asked: the tasks it placed here, each ``[job_id, task_index]``
    queued, ``[job_id, task_index, seconds since it started]`` running or finished."""

    queued: list[tuple[int, int]]
    running: list[tuple[int, int, float]]
    finished: list[tuple[int, int, float]]


# --- delivery under faults of the network (issue 50; tags 70-79) ----------------------------------------


class Link(Message, tag=70):
    """Any process -> any process, while the replay injects faults of the network: one segment of the
    link between the two (:mod:`aviary.common.links`; ``docs/protocol.md``, "Delivery"). ``inc``: the
    sender's incarnation; ``to_inc``: the receiver's as the sender knows it (0: not known yet); ``seq``:
    the number of the carried message on this link (0: an acknowledgement alone); ``ack``: the highest
    number received in order from the receiver; ``frame``: the carried message, a whole frame (empty
    with ``seq`` 0)."""

    inc: int
    to_inc: int
    seq: int
    ack: int
    frame: bytes = b""


class LinkFaults(Message, tag=71):
    """Frontend -> any process, as a replay with faults of the network begins (and to a process that
    restarted): the ``--fail`` link items to inject on what this process sends, the ``seed`` of their
    draws, and ``clock``, the replay's clock as this was sent (s), from which the faults' times count.
    From then on the process sends everything over :class:`Link` segments."""

    faults: list[str]
    seed: int
    clock: float


MESSAGE_TYPES: tuple[type[Message], ...] = tuple(Message.__subclasses__())
for _cls in MESSAGE_TYPES:
    _cls.TAG = _cls.__struct_config__.tag  # type: ignore[assignment]  # an int: every message sets one
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(typing.Union[MESSAGE_TYPES]).decode  # type: ignore[valid-type]  # noqa: UP007 (a union built from a tuple)
