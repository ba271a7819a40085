"""The wire protocol as a document, generated from the message structs (DESIGN §10; ``docs/protocol.md``).

The structs of :mod:`.messages` are the single source: :func:`message_tables` writes the Markdown tables
of every message (tag, fields in wire order, types, defaults, who may send it: :mod:`.senders`) and
:func:`senders_table` the kinds each role may send, which ``docs/protocol.md`` holds between the markers
of :func:`markers`; :func:`schema` is the JSON Schema of
every message (msgspec's, with each message's tag and each item's field name), which ``aviary protocol
schema`` prints; :func:`fingerprint` hashes that schema, which a test holds together with
:data:`~.messages.PROTOCOL_VERSION`. What the structs cannot say, a field's unit and meaning, is
:data:`FIELD_NOTES`: every field needs one, or the tables cannot be generated.

    python -m aviary.common.protocol_doc [docs/protocol.md]   # rewrite the generated parts
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi

from .messages import MESSAGE_TYPES, PROTOCOL_VERSION, Message
from .senders import MAY_SEND, PROCESSES

ROLE_ORDER = ("frontend", "control", "central", "scheduler", "node")

_JOB = "the job's id, as the frontend submitted it (64-bit)"
_TASK = "the task's index in the job's `durations` (0-based)"
_DURATION = "s: how long the task runs (replay seconds: trace seconds / time scale)"
_ESTIMATE = "s: the job's estimated task duration, what schedulers may know"
_BITVECTOR = "Eagle's SSS: bit i (byte i // 8, bit i % 8) set when the i-th node holds long work; empty: none"
_STAMP = "s, on the central scheduler's clock: when `bitvector` was current; -1: none"
_COUNTERS = "name -> count (or a float measure): the process's counters since it started"
_MESSAGES = "message kind -> how many this process sent, control kinds excluded"

FIELD_NOTES: dict[str, dict[str, str]] = {
    "SubmitJob": {
        "job_id": _JOB,
        "durations": "s, one per task: how long each task runs (replay seconds)",
        "estimate": _ESTIMATE,
        "stages": "DAG jobs: `[tasks, estimate (s), demand (up to 4 numbers), parents (earlier stage "
        "numbers)]` each, tasks in `durations` in stage order; empty: one stage of one-core tasks",
        "deadline": "s after submission; nil: none",
        "slo": 'the job\'s SLO class; "": none',
        "gang": "true: all the job's tasks start together or none",
        "preference": 'a node attribute the job prefers; "": none',
        "slowdown": "the factor by which the job runs slower off its preferred nodes",
    },
    "JobDone": {
        "job_id": "the job's id as it was submitted to this scheduler",
        "first_start_delay": "s, on the scheduler's clock: from the SubmitJob's arrival to the hand-out "
        "of the job's first task",
    },
    "Probe": {
        "job_id": _JOB,
        "estimate": _ESTIMATE,
        "remaining": "the job's tasks not yet handed out",
        "count": "reservations this probe stands for (batched probes)",
        "long": "true: a probe of a long job (Hawk without its central scheduler)",
        "attempt": "Eagle's placement round: 0 random, 1 re-sent by the bitvector, 2 short partition",
    },
    "GetTask": {"job_id": "the job whose probe reached a free slot"},
    "AssignTask": {
        "job_id": _JOB,
        "task_index": _TASK,
        "duration": _DURATION,
        "estimate": _ESTIMATE,
        "remaining": "the job's tasks not yet handed out after this one; -1: not told",
    },
    "NoTask": {"job_id": "the job that has no task left for the probe"},
    "CancelProbes": {"job_id": "the job whose queued probes from this sender are dropped"},
    "TaskFinished": {
        "job_id": _JOB,
        "task_index": _TASK,
        "ok": "false: the task failed or was killed",
    },
    "PlaceTask": {
        "job_id": _JOB,
        "task_index": _TASK,
        "duration": _DURATION,
        "estimate": _ESTIMATE,
        "demand": "[cores, mem (GB), disk, net (fractions of a machine's)], up to 4; empty: one slot",
    },
    "KillTask": {"job_id": _JOB, "task_index": _TASK},
    "Hello": {
        "epoch": "the replay this Hello belongs to; 0: none",
        "tasks": "true: the replay keeps a task table, so a node sends the frontend `TaskRecords`",
    },
    "TaskRecords": {
        "rows": "the runs of tasks that ended since the last batch, each `[job_id, task_index, node, placed, "
        "start, finish, preemptions, ok]`, times in seconds on the node's clock",
        "clock": "the node's clock (s) as it sent this batch: maps its times to the frontend's",
        "boot": "the node's kernel boot id: the frontend's own means one monotonic clock, no mapping; "
        "may be empty",
    },
    "Register": {
        "role": "the sender's role: frontend, central, scheduler or node",
        "slots": "a node's task slots; 0 for the other roles",
        "recovering": "true: a central scheduler restarted after a death, waiting for Recover",
    },
    "Stats": {
        "counters": _COUNTERS,
        "messages": _MESSAGES,
        "log": "a central scheduler's finished tasks, `[job_id, task_index, start (s), end (s), demand]` "
        "each, on its own clock; may be empty",
        "cycles": "a periodic planner's record per cycle; may be empty",
    },
    "PeerDown": {"name": "the process declared dead"},
    "PeerUp": {"name": "the process that answers again"},
    "Counters": {
        "counters": _COUNTERS,
        "messages": _MESSAGES,
        "gauges": "name -> what the process holds now (jobs pending, tasks running...); may be empty",
    },
    "LongTask": {
        "job_id": _JOB,
        "task_index": _TASK,
        "duration": _DURATION,
        "estimate": _ESTIMATE,
        "bitvector": _BITVECTOR,
        "stamp": _STAMP,
    },
    "ProbeRejected": {
        "job_id": _JOB,
        "count": "probes refused",
        "attempt": "the round the probes were sent in (see Probe)",
        "bitvector": _BITVECTOR,
        "stamp": _STAMP,
    },
    "RemainingUpdate": {"job_id": _JOB, "remaining": "the job's tasks not yet handed out"},
    "StealReply": {
        "probes": "the stolen probes, `[scheduler (str), job_id, estimate (s), remaining, count]` each; "
        "empty: none to give",
    },
    "TaskStarted": {"job_id": _JOB, "task_index": _TASK},
    "QueueReport": {"wait": "s: the node's estimated queue waiting time"},
    "QueueTask": {
        "job_id": _JOB,
        "task_index": _TASK,
        "duration": _DURATION,
        "estimate": _ESTIMATE,
        "remaining": "the job's tasks not yet started, as the scheduler knows it",
        "long": "true: a task of a long job",
    },
    "Heartbeat": {
        "tasks": "tasks on the node, running and suspended",
        "variance": "s²: population variance of their attained service",
        "attained_sum": "s: the sum of their attained service",
        "free": "free slots",
    },
    "Recover": {
        "jobs": "ids of the jobs it had that are not finished (their SubmitJobs follow)",
        "ages": "s, one per job: since its submission",
        "nodes": "names of the live nodes whose Holding it must hear",
    },
    "Holding": {
        "queued": "the sender's tasks queued here, `[job_id, task_index]` each",
        "running": "the sender's tasks running here, `[job_id, task_index, s since it started]` each",
        "finished": "the sender's tasks that finished here, `[job_id, task_index, s since it started]` each",
    },
    "Link": {
        "inc": "the sender's incarnation (its link layer's start, ms since 1970), larger after a restart",
        "to_inc": "the receiver's incarnation as the sender knows it; 0: not known yet (any takes it)",
        "seq": "the carried message's number on this link, from 1; 0: an acknowledgement alone",
        "ack": "the highest number received in order from the receiver (cumulative)",
        "frame": "the carried message: a whole frame (version byte included); empty when `seq` is 0",
    },
    "LinkFaults": {
        "faults": "`--fail`'s link items, `LINK:FAULT[@TIME[+SPAN]]` each (docs/failures.md)",
        "seed": "the seed of the faults' draws (the cluster's)",
        "clock": "s: the replay clock as the frontend sent this; the faults' times count from it",
    },
}
"""Each field's unit and meaning, by message and field: what the type alone does not say."""


def by_tag() -> list[type[Message]]:
    """Every message kind, by tag."""
    return sorted(MESSAGE_TYPES, key=lambda cls: cls.TAG)


def fields(cls: type[Message]) -> tuple[mi.Field, ...]:
    """A message's fields in wire order (msgspec's view of its struct)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return info.fields


def senders(cls: type) -> list[str]:
    """The roles that may send ``cls`` (:data:`~.senders.MAY_SEND`), in a fixed order."""
    roles = MAY_SEND.get(cls, PROCESSES)
    return [r for r in ROLE_ORDER if r in roles]


def type_name(t: mi.Type) -> str:
    """A field's type as the document writes it (msgpack's types; ``list[T]``, ``map[K, V]``, ``[A, B]``)."""
    simple = {
        mi.IntType: "int",
        mi.FloatType: "float",
        mi.BoolType: "bool",
        mi.StrType: "str",
        mi.BytesType: "bin",
        mi.NoneType: "nil",
        mi.AnyType: "any",
    }
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, mi.ListType):
        return f"list[{type_name(t.item_type)}]"
    if isinstance(t, mi.DictType):
        return f"map[{type_name(t.key_type)}, {type_name(t.value_type)}]"
    if isinstance(t, mi.TupleType):
        return "[" + ", ".join(type_name(x) for x in t.item_types) + "]"
    if isinstance(t, mi.UnionType):
        return " | ".join(type_name(x) for x in t.types)
    raise TypeError(f"no name in the protocol document for the type {t!r}")


def default_text(field: mi.Field) -> str:
    """A field's default as the document writes it ("required" when it has none)."""
    if field.required:
        return "required"
    value = field.default_factory() if field.default is msgspec.NODEFAULT else field.default
    if isinstance(value, bytes):
        return "empty bin" if not value else repr(value)
    return "nil" if value is None else json.dumps(value)


def _prose(doc: str | None) -> str:
    """A docstring as Markdown: Sphinx roles and double backquotes made plain code spans, one line per
    paragraph."""
    text = inspect.cleandoc(doc or "")
    text = re.sub(r":\w+:`~[\w.]*?(\w+)`", r"`\1`", text)  # :class:`~a.b.C`: C
    text = re.sub(r":\w+:`([\w.]+)`", r"`\1`", text)  # :mod:`a.b`: a.b
    text = text.replace("``", "`")
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n") if p.strip())


def _anchor(cls: type[Message]) -> str:
    return f"#{cls.__name__.lower()}-tag-{cls.TAG}"


def message_tables() -> str:
    """The generated part of ``docs/protocol.md``: the summary table, then each message's fields."""
    out = [
        f"Protocol version **{PROTOCOL_VERSION}** (each frame's first byte). Item 0 of every message is its"
        " tag; the fields follow in this order.",
        "",
        "| tag | message | sent by | fields |",
        "|---:|---|---|---|",
    ]
    for cls in by_tag():
        names = ", ".join(f.name for f in fields(cls)) or "(none)"
        link = f"[`{cls.__name__}`]({_anchor(cls)})"
        out.append(f"| {cls.TAG} | {link} | {', '.join(senders(cls))} | {names} |")
    for cls in by_tag():
        info = fields(cls)
        out += ["", f"### `{cls.__name__}` (tag {cls.TAG})", "", _prose(cls.__doc__), ""]
        out.append(f"Sent by: {', '.join(senders(cls))}.")
        if not info:
            out += ["", f"No fields: the frame is the version byte and `[{cls.TAG}]`."]
            continue
        notes = FIELD_NOTES.get(cls.__name__, {})
        out += ["", "| item | field | type | default | unit, meaning |", "|---:|---|---|---|---|"]
        for i, f in enumerate(info, 1):
            if f.name not in notes:
                raise KeyError(f"{cls.__name__}.{f.name} has no note: add one to common/protocol_doc.py")
            note = notes[f.name].replace("|", "\\|")
            kind = type_name(f.type).replace("|", "\\|")
            out.append(f"| {i} | `{f.name}` | {kind} | {default_text(f)} | {note} |")
    return "\n".join(out) + "\n"


def senders_table() -> str:
    """The generated table of the message kinds each role may send (:data:`~.senders.MAY_SEND`)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for cls in by_tag():
        groups.setdefault(tuple(senders(cls)), []).append(f"`{cls.__name__}`")
    out = ["| roles | may send |", "|---|---|"]
    out += [f"| {', '.join(roles)} | {', '.join(kinds)} |" for roles, kinds in groups.items()]
    return "\n".join(out) + "\n"


BLOCKS = {"senders": senders_table, "messages": message_tables}
"""The generated parts of ``docs/protocol.md``, by name."""


def markers(name: str) -> tuple[str, str]:
    """The lines that open and close the generated part ``name`` of the document."""
    begin = f"<!-- BEGIN GENERATED: {name} (python -m aviary.common.protocol_doc) -->"
    return begin, f"<!-- END GENERATED: {name} -->"


def _span(document: str, name: str) -> tuple[int, int]:
    begin, end = markers(name)
    start, stop = document.find(begin), document.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"the document has no generated part {name!r} (between {begin!r} and {end!r})")
    return start + len(begin) + 1, stop


def generated(document: str, name: str) -> str:
    """The generated part ``name`` of ``document`` as it stands."""
    start, stop = _span(document, name)
    return document[start:stop]


def splice(document: str, name: str, text: str) -> str:
    """``document`` with its generated part ``name`` replaced by ``text``."""
    start, stop = _span(document, name)
    return document[:start] + text + document[stop:]


def schema() -> dict[str, Any]:
    """The JSON Schema of every message (draft 2020-12, msgspec's), by tag: each message's ``x-tag``,
    each array item titled with its field's name (item 0: ``tag``). Only the wire shape: no docstring, so
    the output changes only with the messages (:func:`fingerprint`)."""
    _, defs = msgspec.json.schema_components(by_tag(), ref_template="#/$defs/{name}")
    messages: dict[str, Any] = {}
    for cls in by_tag():
        d = dict(defs[cls.__name__])
        d.pop("description", None)
        names = ["tag", *(f.name for f in fields(cls))]
        d["prefixItems"] = [{"title": n, **item} for n, item in zip(names, d["prefixItems"], strict=True)]
        messages[cls.__name__] = {"x-tag": cls.TAG, **d}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Aviary wire protocol, version {PROTOCOL_VERSION}",
        "description": (
            f"A frame is one byte, the protocol version ({PROTOCOL_VERSION}), then one of these messages as "
            "a msgpack array [tag, fields...]; trailing fields with a default may be left out. A bytes field "
            "(contentEncoding base64 here) is a msgpack bin. docs/protocol.md says the rest."
        ),
        "x-protocol-version": PROTOCOL_VERSION,
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in messages],
        "$defs": messages,
    }


def fingerprint() -> str:
    """SHA-256 of :func:`schema` (keys sorted): changes with any message's tag, field, type or default."""
    text = json.dumps(schema(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def write(path: Path) -> bool:
    """Rewrite the generated parts of the document at ``path``; True if it changed."""
    old = new = path.read_text()
    for name, make in BLOCKS.items():
        new = splice(new, name, make())
    if new != old:
        path.write_text(new)
    return new != old


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "docs" / "protocol.md"
    print(f"{path}: {'rewritten' if write(path) else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
