"""Events of the 2019 trace's schema (google/cluster-data ``clusterdata_trace_format_v3.proto``) for jobs
whose truth is known: what the tests and the conversion benchmark feed ``aviary trace convert
google-2019``, since the real trace cannot be downloaded here.

The true jobs are :class:`~aviary.common.traces.fake2011.TrueJob` ones (with ``after``, the jobs they wait
for), and :func:`~aviary.common.traces.fake2011.expected` is what converting their events must give. Each
job's rows: the collection's SUBMIT (its ``start_after_collection_ids``), for some a QUEUE and an ENABLE
(a batch job held back), its SCHEDULE; each instance's SUBMIT (for some a smaller request, then an
UPDATE_PENDING to the true one), QUEUE/ENABLE for some, its redone attempts (SCHEDULE, then EVICT, FAIL,
KILL or LOST, then SUBMIT again) and its last attempt (SCHEDULE, an UPDATE_RUNNING for some, FINISH);
the collection's FINISH with its last instance. Some jobs run inside an alloc set; alloc sets (a
collection of ``collection_type`` 1 and its alloc instances) come between the jobs and must be skipped.

Rows come out job by job (a job's rows together, not in time order, as an export gives them) and are
written as BigQuery exports them: JSON lines (INT64 values as strings, NULL fields left out, nested
``resource_request``) or a flattened CSV with a header (:data:`CSV_COLUMNS`).
"""

from __future__ import annotations

import csv
import gzip
import io
import random
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import IO, Any, cast

import msgspec

from .fake2011 import TrueJob, TrueTask, random_jobs
from .google2011 import EVICT as EVICT_2011
from .google2011 import FAIL as FAIL_2011
from .google2011 import KILL as KILL_2011
from .google2011 import LOST as LOST_2011
from .google2019 import (
    ALLOC_SET,
    ENABLE,
    EVICT,
    FAIL,
    FINISH,
    JOB,
    KILL,
    LOST,
    QUEUE,
    SCHEDULE,
    SUBMIT,
    UPDATE_PENDING,
    UPDATE_RUNNING,
)

__all__ = [
    "CSV_COLUMNS",
    "Record",
    "event_records",
    "random_jobs_2019",
    "shuffled",
    "write_csv",
    "write_json",
]

Record = tuple[bool, dict[str, Any]]
"""(a collection event, its fields by the proto's names, ``resource_request`` nested)."""

ENDS_2019 = {EVICT_2011: EVICT, FAIL_2011: FAIL, KILL_2011: KILL, LOST_2011: LOST}

COLLECTION_COLUMNS = (
    "time", "type", "collection_id", "scheduling_class", "missing_type", "collection_type", "priority",
    "alloc_collection_id", "user", "collection_name", "collection_logical_name", "parent_collection_id",
    "start_after_collection_ids", "max_per_machine", "max_per_switch", "vertical_scaling", "scheduler",
)  # fmt: skip
INSTANCE_COLUMNS = (
    "time", "type", "collection_id", "scheduling_class", "missing_type", "collection_type", "priority",
    "alloc_collection_id", "instance_index", "machine_id", "alloc_instance_index",
    "resource_request.cpus", "resource_request.memory",
)  # fmt: skip
CSV_COLUMNS = {True: COLLECTION_COLUMNS, False: INSTANCE_COLUMNS}
"""The columns of a flattened export (the repeated ``constraint`` left out, as a CSV cannot hold it)."""

ALLOC_BASE = 9_000_000_000


def random_jobs_2019(
    rng: random.Random, n: int, *, max_tasks: int = 20, redo: float = 0.1, after: float = 0.2
) -> Iterator[TrueJob]:
    """:func:`~aviary.common.traces.fake2011.random_jobs`, about ``after`` of them waiting for one to
    three of the 50 jobs before them."""
    before: list[int] = []
    for job in random_jobs(rng, n, max_tasks=max_tasks, redo=redo):
        deps: tuple[int, ...] = ()
        if before and rng.random() < after:
            deps = tuple(sorted(rng.sample(before[-50:], min(len(before[-50:]), rng.randint(1, 3)))))
        yield replace(job, after=deps)
        before.append(job.jid)


def _collection(t: int, kind: int, cid: int, klass: int, prio: int, ctype: int = JOB, **more: Any) -> Record:
    rec = {
        "time": t,
        "type": kind,
        "collection_id": cid,
        "scheduling_class": klass,
        "missing_type": None,
        "collection_type": ctype,
        "priority": prio,
        "alloc_collection_id": more.pop("alloc", 0),
        "user": "u1",
        "collection_name": "n",
        "collection_logical_name": "l",
        "parent_collection_id": None,
        "start_after_collection_ids": [],
        "max_per_machine": None,
        "max_per_switch": None,
        "vertical_scaling": 1,
        "scheduler": 0,
    }
    rec.update(more)
    return True, rec


def _instance(
    t: int, kind: int, cid: int, index: int, klass: int, prio: int, cpu: float, mem: float, **more: Any
) -> Record:
    rec = {
        "time": t,
        "type": kind,
        "collection_id": cid,
        "scheduling_class": klass,
        "missing_type": None,
        "collection_type": more.pop("ctype", JOB),
        "priority": prio,
        "alloc_collection_id": more.pop("alloc", 0),
        "instance_index": index,
        "machine_id": more.pop("machine", 0),
        "alloc_instance_index": -1,
        "resource_request": {"cpus": cpu, "memory": mem},
        "constraint": [],
    }
    rec.update(more)
    return False, rec


def _alloc_set(rng: random.Random, aid: int, t: int) -> list[Record]:
    rows = [_collection(t, SUBMIT, aid, 2, 200, ALLOC_SET), _collection(t, SCHEDULE, aid, 2, 200, ALLOC_SET)]
    for i in range(rng.randint(1, 3)):
        rows.append(_instance(t, SUBMIT, aid, i, 2, 200, 0.5, 0.5, ctype=ALLOC_SET))
        rows.append(_instance(t, SCHEDULE, aid, i, 2, 200, 0.5, 0.5, ctype=ALLOC_SET, machine=5))
        rows.append(_instance(t + 10**6, KILL, aid, i, 2, 200, 0.5, 0.5, ctype=ALLOC_SET, machine=5))
    rows.append(_collection(t + 10**6, KILL, aid, 2, 200, ALLOC_SET))
    return rows


def _task_row(
    cid: int, i: int, klass: int, task: TrueTask, alloc: int, t: int, kind: int, machine: int = 0, **more: Any
) -> Record:
    cpu = more.pop("cpu", task.cpu)
    return _instance(t, kind, cid, i, klass, task.priority, cpu, task.mem, alloc=alloc, machine=machine)


def _job_records(job: TrueJob, rng: random.Random, alloc: int) -> list[Record]:
    c, s = job.sched_class, job.submit_us
    prio = max(t.priority for t in job.tasks)
    batch = rng.random() < 0.3
    rows = [_collection(s, SUBMIT, job.jid, c, prio, alloc=alloc, start_after_collection_ids=list(job.after))]
    if batch:
        rows += [_collection(s, QUEUE, job.jid, c, prio), _collection(s, ENABLE, job.jid, c, prio)]
    rows.append(_collection(s, SCHEDULE, job.jid, c, prio, alloc=alloc))
    end = s
    for i, task in enumerate(job.tasks):
        row = partial(_task_row, job.jid, i, c, task, alloc)
        t = s
        if rng.random() < 0.2:  # submitted asking less, updated to the true request while pending
            rows += [row(t, SUBMIT, cpu=round(task.cpu / 2, 4)), row(t, UPDATE_PENDING)]
        else:
            rows.append(row(t, SUBMIT))
        if batch:
            rows += [row(t, QUEUE), row(t, ENABLE)]
        for kind, run in task.redo:
            rows.append(row(t, SCHEDULE, 42))
            t += run
            rows += [row(t, ENDS_2019[kind], 42), row(t, SUBMIT)]
        rows.append(row(t, SCHEDULE, 7))
        if task.duration_us > 1 and rng.random() < 0.2:
            rows.append(row(t + task.duration_us // 2, UPDATE_RUNNING, 7))
        t += task.duration_us
        rows.append(row(t, FINISH, 7))
        end = max(end, t)
    rows.append(_collection(end, FINISH, job.jid, c, prio, alloc=alloc))
    return rows


def event_records(
    jobs: Iterable[TrueJob], rng: random.Random, *, alloc_sets: float = 0.1
) -> Iterator[Record]:
    """The rows of ``jobs``, job by job; before about ``alloc_sets`` of them an alloc set, which the next
    job runs in (their number: ``sum(1 for _, r in rows if r["collection_type"] == 1 and r["type"] == 0
    and collection)``)."""
    k = 0
    for job in jobs:
        alloc = 0
        if rng.random() < alloc_sets:
            alloc = ALLOC_BASE + k
            k += 1
            yield from _alloc_set(rng, alloc, job.submit_us)
        yield from _job_records(job, rng, alloc)


def shuffled(records: Iterable[Record], rng: random.Random, window: int = 50_000) -> Iterator[Record]:
    """``records`` shuffled within windows of ``window`` rows (an export's order: none)."""
    held: list[Record] = []
    for rec in records:
        held.append(rec)
        if len(held) >= window:
            rng.shuffle(held)
            yield from held
            held = []
    rng.shuffle(held)
    yield from held


def _open(path: Path, level: int) -> IO[bytes]:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "wb", compresslevel=level))
    return open(path, "wb")


def _bigquery(value: Any) -> Any:
    """A value as BigQuery's JSON export writes it: INT64 as a string, FLOAT as a number."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return [_bigquery(v) for v in value]
    if isinstance(value, dict):
        return {k: _bigquery(v) for k, v in value.items() if v is not None}
    return value


def write_json(
    collections: Path, instances: Path, records: Iterable[Record], *, int_strings: bool = True, level: int = 6
) -> int:
    """``records`` as JSON lines into the two tables' files (gzipped if a name ends in ``.gz``): NULL
    fields left out, INT64 values as strings unless not ``int_strings``; returns the bytes (uncompressed)
    written."""
    encode = msgspec.json.Encoder().encode
    written = 0
    with _open(collections, level) as cf, _open(instances, level) as inf:
        for is_job, rec in records:
            out = {k: v for k, v in rec.items() if v is not None}
            line = encode(_bigquery(out) if int_strings else out) + b"\n"
            (cf if is_job else inf).write(line)
            written += len(line)
    return written


def _flat(is_job: bool, rec: dict[str, Any], after_as_json: bool) -> list[str]:
    out = []
    for name in CSV_COLUMNS[is_job]:
        if name.startswith("resource_request."):
            value = (rec.get("resource_request") or {}).get(name.split(".", 1)[1])
        else:
            value = rec.get(name)
        if isinstance(value, list):
            value = msgspec.json.encode(value).decode() if after_as_json else ",".join(map(str, value))
        out.append("" if value is None else str(value))
    return out


def write_csv(
    collections: Path,
    instances: Path,
    records: Iterable[Record],
    *,
    after_as_json: bool = False,
    level: int = 6,
) -> None:
    """``records`` as flattened CSV with a header (:data:`CSV_COLUMNS`), gzipped if a name ends in ``.gz``;
    ``start_after_collection_ids`` as ids separated by commas, or as a JSON list."""
    with _open(collections, level) as cf, _open(instances, level) as inf:
        texts = {
            True: io.TextIOWrapper(cf, "utf-8", newline=""),
            False: io.TextIOWrapper(inf, "utf-8", newline=""),
        }
        writers = {k: csv.writer(v) for k, v in texts.items()}
        for k, w in writers.items():
            w.writerow(CSV_COLUMNS[k])
        for is_job, rec in records:
            writers[is_job].writerow(_flat(is_job, rec, after_as_json))
        for text in texts.values():
            text.flush()
            text.detach()
