"""``aviary trace convert google-2019``: ClusterData2019 (the "Google cluster-usage traces v3", schema
google/cluster-data ``clusterdata_trace_format_v3.proto``) to Aviary trace jobs, streamed.

Read: the ``collection_events`` and ``instance_events`` tables as BigQuery exports them, in any number of
files each, in any order:

- **JSON lines** (``.json``, ``.jsonl``, ``.ndjson``, or gzipped ``.gz``; the published download is
  ``collection_events-000000000000.json.gz``...): one object a line, nested ``resource_request``
  ``{cpus, memory}``, repeated ``constraint`` and ``start_after_collection_ids``; a field that is NULL
  is left out; BigQuery writes INT64 values as strings (``"time": "3600000000"``), and both are read.
- **CSV with named columns** (``.csv``, ``.csv.gz``: a flattened export, header first):
  ``resource_request.cpus`` (or ``resource_request_cpus``, or ``cpus``) and the same for ``memory``;
  ``start_after_collection_ids`` as a JSON list or ids separated by commas, spaces, ``;`` or ``|``.

A file is a ``collection_events`` or an ``instance_events`` one by its name (or its folder's); a folder
given is searched for both.

Fields read (the proto's names): ``time`` (µs, as in v2.1: the window starts at 600 s; 0 means before
it, 2^63 - 1 after it), ``type`` (0 SUBMIT, 1 QUEUE, 2 ENABLE, 3 SCHEDULE, 4 EVICT, 5 FAIL, 6 FINISH,
7 KILL, 8 LOST, 9 UPDATE_PENDING, 10 UPDATE_RUNNING), ``collection_id``, ``collection_type`` (0 job,
1 alloc set; missing: 0), ``scheduling_class`` (0..3), ``priority``, and ``instance_index`` and
``resource_request`` of instances, ``start_after_collection_ids`` of collections. The others
(``machine_id``, ``alloc_collection_id``, ``parent_collection_id``, ``constraint``, ``user``, names,
``missing_type``...) are not checked: a value there cannot make a job wrong.

The exports are not in time order: every event read goes through
:class:`~aviary.common.traces.rows.ExternalSort` (bounded memory, sorted runs spilled to temporary files)
by (time, then a job's SUBMIT, its instances' events, its other events), then through the 2011
converter's state machine (:func:`~aviary.common.traces.google2011.run_events`) with the 2019 codes
mapped to 2011's; QUEUE and ENABLE (a batch job held back, then let go) do not change what a job
becomes and are dropped before the sort. So a job becomes what a 2011 job does (``docs/traces.md``,
"Google 2019"): its submit time is its collection's first SUBMIT; each task's duration its last attempt
(last SCHEDULE to the FINISH, EVICT, FAIL, KILL or LOST that ended it); an attempt followed by a
resubmission is redone, not counted; ``cpu``/``mem`` the largest ``resource_request`` of its tasks,
``prio`` the largest priority of its tasks (the collection's if they give none), ``class`` the
collection's scheduling class, ``job`` its ``collection_id``, ``after`` its
``start_after_collection_ids``. Open jobs are dropped or cut (``open_jobs``), as in 2011.

An export loses the order of one instance's events at one microsecond: they are taken in life-cycle
order, an end first (it ends an attempt begun earlier: EVICT, FAIL, KILL or LOST, then FINISH, the last
thing a task does), then SUBMIT, UPDATE_PENDING, SCHEDULE, UPDATE_RUNNING; an end that finds no attempt
running and a SCHEDULE at that microsecond make an attempt of zero length (always for a FINISH; for
another end unless a SUBMIT comes between: a pending task killed, submitted again and scheduled).

**Alloc sets** (``collection_type`` 1) are reservations that jobs run inside, not work: their events and
their alloc instances' are skipped and counted (``alloc sets skipped``, ``alloc instance rows
skipped``); a job running in one (``alloc_collection_id`` set) is a job like any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from ..trace import MAX_JOB_TASKS, TraceError, TraceJob
from . import google2011 as g
from .rows import BadRows, Bytes, ExternalSort, csv_rows, json_rows

__all__ = [
    "ALLOC_SET",
    "COLLECTION_FIELDS",
    "INSTANCE_FIELDS",
    "JOB",
    "Counts2019",
    "convert_2019",
    "find_tables",
]

SUBMIT, QUEUE, ENABLE, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(11)
JOB, ALLOC_SET = 0, 1
"""``collection_type``."""

TO_2011 = {
    SUBMIT: g.SUBMIT,
    SCHEDULE: g.SCHEDULE,
    EVICT: g.EVICT,
    FAIL: g.FAIL,
    FINISH: g.FINISH,
    KILL: g.KILL,
    LOST: g.LOST,
    UPDATE_PENDING: g.UPDATE_PENDING,
    UPDATE_RUNNING: g.UPDATE_RUNNING,
}
"""The 2019 event codes the state machine uses, as 2011's (QUEUE and ENABLE: none)."""

RANK = {
    EVICT: 0, FAIL: 0, KILL: 0, LOST: 0, FINISH: 1,
    SUBMIT: 2, UPDATE_PENDING: 5, SCHEDULE: 6, UPDATE_RUNNING: 7,
}  # fmt: skip
"""Order of one instance's events at one microsecond (module docstring)."""

COLLECTION_FIELDS = ("time", "type", "collection_id")
INSTANCE_FIELDS = ("time", "type", "collection_id", "instance_index")
"""The fields a row must have (the others may be NULL, i.e. left out)."""

CPUS = ("resource_request.cpus", "resource_request_cpus", "cpus")
MEMORY = ("resource_request.memory", "resource_request_memory", "memory")
"""Column names of a flattened export's requests."""

JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
TABLES = ("collection_events", "instance_events")

READ_SHARE = 0.8
"""The progress bar's share of reading (the rest: the sorted events through the state machine); about
what the benchmark measures (``benchmarks/simulator_speed/trace_convert.py``)."""

MAX_ID = 2**63 - 1
AFTER = g.AFTER


@dataclass
class Counts2019(g.Counts):
    """What the conversion did, for its summary: the 2011 counts and what 2019 adds."""

    alloc_sets_skipped: int = 0
    alloc_instance_rows_skipped: int = 0
    queue_enable_rows: int = 0
    events_sorted: int = 0
    sort_runs: int = 0


def _table(path: Path) -> str | None:
    for name in TABLES:
        if name in path.name or name in (path.parent.name, path.parent.parent.name):
            return name
    return None


def _kind(path: Path) -> str | None:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    if name.endswith(JSON_SUFFIXES):
        return "json"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    return None


def find_tables(inputs: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The ``collection_events`` and ``instance_events`` files among ``inputs`` (files, or folders
    searched), each list sorted by name. Raises :class:`TraceError` (one line) for a file given that is
    neither, or when either table is missing."""
    found: dict[str, list[Path]] = {name: [] for name in TABLES}
    for path in inputs:
        if path.is_dir():
            for f in sorted(path.rglob("*")):
                table = _table(f.relative_to(path.parent))
                if f.is_file() and table is not None and _kind(f) is not None:
                    found[table].append(f)
            continue
        table = _table(path)
        if table is None or _kind(path) is None:
            raise TraceError(
                f"{path}: not a collection_events or instance_events file (.json[.gz] lines or .csv[.gz], "
                "named after its table)"
            )
        found[table].append(path)
    for name, files in found.items():
        if not files:
            where = ", ".join(map(str, inputs))
            raise TraceError(f"{where}: no {name} file (.json[.gz] lines or .csv[.gz]) found")
        files.sort(key=lambda p: (str(p.parent), p.name))
    return found["collection_events"], found["instance_events"]


# --- one row ---------------------------------------------------------------------------------------------


def _int(where: str, name: str, value: Any, low: int, high: int, required: bool = False) -> int | None:
    """A JSON integer (or its text: BigQuery writes INT64 as a string), read as the 2011 reader reads one."""
    if value is None or value == "":
        if required:
            raise TraceError(f"{where}: field '{name}': missing")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TraceError(f"{where}: field '{name}': not an integer: {value!r}")
    return g._int(where, name, str(value), low, high)


def _share(where: str, name: str, value: Any) -> float | None:
    """A JSON number (or its text), read as the 2011 reader reads a share."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TraceError(f"{where}: field '{name}': not a number: {value!r}")
    return g._share(where, name, str(value))


_SEPARATORS = re.compile(r"[\s,;|]+")


def _after(where: str, value: Any) -> tuple[str, ...]:
    name = "start_after_collection_ids"
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = msgspec.json.decode(text)
            except msgspec.DecodeError:
                raise TraceError(f"{where}: field '{name}': not a list of ids: {value!r}") from None
        else:
            value = [t for t in _SEPARATORS.split(text) if t]
    if not isinstance(value, list):
        raise TraceError(f"{where}: field '{name}': not a list of ids: {value!r}")
    if len(value) > MAX_JOB_TASKS:
        raise TraceError(f"{where}: field '{name}': more than {MAX_JOB_TASKS:,} ids")
    return tuple(str(_int(where, name, v, 0, MAX_ID, True)) for v in value)


Row = tuple[int, int, str]
"""(sort key, its time, the event as a line for the sort)."""


def _event(where: str, rec: Mapping[str, Any], is_job: bool, counts: Counts2019) -> Row | None:
    """The sort key and line of one row, or None for a row that does not go through the sort."""
    ts = _int(where, "time", rec.get("time"), 0, AFTER, True)
    kind = _int(where, "type", rec.get("type"), 0, 10, True)
    jid = _int(where, "collection_id", rec.get("collection_id"), 0, MAX_ID, True)
    ctype = _int(where, "collection_type", rec.get("collection_type"), 0, 1)
    klass = _int(where, "scheduling_class", rec.get("scheduling_class"), 0, 3)
    prio = _int(where, "priority", rec.get("priority"), 0, 10**9)
    assert ts is not None and kind is not None and jid is not None
    cpu = mem = None
    after: tuple[str, ...] = ()
    index = 0
    if is_job:
        after = _after(where, rec.get("start_after_collection_ids"))
    else:
        index = _int(where, "instance_index", rec.get("instance_index"), 0, MAX_JOB_TASKS - 1, True) or 0
        request = rec.get("resource_request")
        if request is not None and request != "":
            if not isinstance(request, dict):
                raise TraceError(f"{where}: field 'resource_request': not an object: {request!r}")
            cpu = _share(where, "resource_request.cpus", request.get("cpus"))
            mem = _share(where, "resource_request.memory", request.get("memory"))
        else:
            cpu = _share(where, "resource_request.cpus", next((rec[k] for k in CPUS if k in rec), None))
            mem = _share(where, "resource_request.memory", next((rec[k] for k in MEMORY if k in rec), None))
    if ctype == ALLOC_SET:
        if not is_job:
            counts.alloc_instance_rows_skipped += 1
        elif kind == SUBMIT:
            counts.alloc_sets_skipped += 1
        return None
    if kind in (QUEUE, ENABLE):
        counts.queue_enable_rows += 1
        return None
    if ts == AFTER:
        return None  # after the window: as if it never happened in it (counted in rows)
    order = (0 if kind == SUBMIT else 2) if is_job else 1
    rank = 0 if is_job else RANK[kind]
    line = " ".join(
        (
            str(ts),
            str(order),
            str(jid),
            str(index),
            str(TO_2011[kind]),
            "-" if klass is None else str(klass),
            "-" if prio is None else str(prio),
            "-" if cpu is None else repr(cpu),
            "-" if mem is None else repr(mem),
            ",".join(after) or "-",
        )
    )
    return (ts * 3 + order) * 8 + rank, ts, line


def _field_of(message: str) -> str:
    return message.split("field '", 1)[-1].split("'", 1)[0]


Record = tuple[str, Mapping[str, Any] | None, str]
"""(file:line, the row's fields, or None and the one-line error of a row that is not one)."""


def _json_records(files: list[Path], progress: Bytes) -> Iterator[Record]:
    decode = msgspec.json.Decoder().decode
    for path, lineno, raw in json_rows(files, progress):
        where = f"{path}:{lineno}"
        try:
            rec = decode(raw)
        except msgspec.DecodeError as exc:
            yield where, None, f"{where}: field 'row': not JSON: {exc}"
            continue
        if not isinstance(rec, dict):
            yield where, None, f"{where}: field 'row': not a JSON object"
            continue
        yield where, rec, ""


def _csv_records(files: list[Path], required: tuple[str, ...], progress: Bytes) -> Iterator[Record]:
    header: list[str] = []
    current = ""
    for path, lineno, row in csv_rows(files, progress):
        where = f"{path}:{lineno}"
        if path != current:
            current, header = path, [name.strip() for name in row]
            missing = [name for name in required if name not in header]
            if missing:
                raise TraceError(
                    f"{where}: field '{missing[0]}': not in the header (a flattened export names its "
                    f"columns, {', '.join(required)} at least)"
                )
            continue
        if len(row) != len(header):
            yield where, None, f"{where}: field 'row': {len(row)} fields, the header has {len(header)}"
            continue
        yield where, dict(zip(header, row, strict=True)), ""


def _records(files: list[Path], is_job: bool, progress: Bytes) -> Iterator[Record]:
    yield from _json_records([f for f in files if _kind(f) == "json"], progress)
    required = COLLECTION_FIELDS if is_job else INSTANCE_FIELDS
    yield from _csv_records([f for f in files if _kind(f) == "csv"], required, progress)


def _line_event(line: str) -> g.Event:
    ts, order, jid, index, kind, klass, prio, cpu, mem, after = line.split(" ")
    return (
        int(ts),
        int(order),
        int(jid),
        int(index),
        int(kind),
        None if klass == "-" else int(klass),
        None if prio == "-" else int(prio),
        None if cpu == "-" else float(cpu),
        None if mem == "-" else float(mem),
        () if after == "-" else tuple(after.split(",")),
    )


def convert_2019(
    inputs: Sequence[Path],
    *,
    open_jobs: Literal["drop", "cut"] = "drop",
    bad: BadRows | None = None,
    progress: Bytes | None = None,
    counts: Counts2019 | None = None,
    sort_buffer: int = 200_000,
) -> Iterator[TraceJob]:
    """Yield the jobs of the 2019 trace's ``collection_events`` and ``instance_events`` files under
    ``inputs`` as they end (not in submit order), then the open ones (``open_jobs="cut"``). Every event
    is read first, into an external sort of ``sort_buffer`` events in memory. Raises
    :class:`TraceError` (one line naming file, line and field) on a bad row unless ``bad.skip``, or when
    either table is missing."""
    counts = counts if counts is not None else Counts2019()
    if bad is not None:
        counts.bad = bad
    outer = progress if progress is not None else Bytes()
    collections, instances = find_tables(inputs)
    outer.total = sum(p.stat().st_size for p in collections + instances)

    def show(share: float) -> None:
        outer.done = int(outer.total * share)
        if outer.on_progress is not None:
            outer.on_progress(outer.done)

    reading = Bytes(total=outer.total)
    reading.on_progress = lambda done: show(READ_SHARE * done / max(1, reading.total))
    sorter = ExternalSort(sort_buffer, parse=int)
    rows = 0
    for is_job, files in ((True, collections), (False, instances)):
        for where, rec, error in _records(files, is_job, reading):
            rows += 1
            try:
                if rec is None:
                    raise TraceError(error)
                row = _event(where, rec, is_job, counts)
            except TraceError as exc:
                counts.bad.bad(str(exc), _field_of(str(exc)))
                continue
            if row is not None:
                sorter.add(row[0], row[2])
    counts.events_sorted = sorter.seq
    counts.sort_runs = sorter.runs
    counts.rows = rows - sorter.seq  # run_events counts the sorted ones again
    total = max(1, sorter.seq)

    def events() -> Iterator[g.Event]:
        for k, line in enumerate(sorter.sorted(), 1):
            if k % 65536 == 0:
                show(READ_SHARE + (1 - READ_SHARE) * k / total)
            yield _line_event(line)
        show(1.0)

    yield from g.run_events(events(), open_jobs, counts, same_time=True)
