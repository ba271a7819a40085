"""A run's journal: each job's record written as the job finishes, so that a run that dies keeps what it
finished (a replay killed with ``kill -9``, by the OOM killer, a lost SSH session or a machine that went
down).

``journal.jsonl`` in the results folder holds one JSON object a line, appended, never rewritten:

    {"journal":1,"kind":"start","started":"2025-06-01T12:00:00Z","began":1748779200.0,"pid":4242,
     "host":"lab-3","policy":"sparrow","runtime":"real","nodes":4,"slots":2,"jobs":300,"tasks":3120,
     "workload":{...},"extra":{...}}
    {"kind":"job","job_id":12,"class":"short","tasks":3,"submit":0.100000,"first_start":0.150000,
     "finish":0.420000,"work":0.900000,"wall":1.234}
    ...
    {"kind":"end","wall_seconds":61.2,"finished":300,"jobs":300,"interrupted_by":null}

The start line says what runs (``workload`` and ``extra`` as ``summary.json`` will hold them); a ``job``
line is written for each job as the frontend records its finish, in the order they finished: its times
in replay seconds to the microsecond, as ``jobs.csv`` has them, ``work`` its task-seconds (for the
utilization), ``wall`` the wall-clock seconds since the journal began when the line was made (within
:data:`FLUSH_SECONDS` of the finish), and ``slo`` and ``deadline`` for a job that has them. The
``end`` line comes last, after ``jobs.csv`` and ``summary.json`` were written: a journal without one
belongs to a run that never reached its end (or is still running: ``pid``, ``host`` and ``began``
tell). Lines of other kinds are skipped by this reader. The task table (``tasks.csv``,
:mod:`aviary.common.tasktable`) is written beside it by another :class:`RecordWriter`, on the same clock.

Writing costs little and loses at most a second: :class:`RecordWriter` buffers lines and writes them in
one append (``O_APPEND``) when its owner polls it and :data:`FLUSH_SECONDS` have passed since its last
write (a clock check, no timer), so a crash leaves whole lines and at most a partial last one, which
:func:`read_journal` drops and reports; a thread makes what was written durable (``fdatasync``) at most
every :data:`SYNC_SECONDS`, off the driver's event loop. A write error (a full disk) stops the journal,
not the run (:attr:`RecordWriter.error`).

:class:`Journal` is the replay's: the drivers call :meth:`Journal.note` with the frontend core (which
does no I/O: it keeps the ids of finished jobs in order, ``FrontendCore.finish_order``) after each message
it handles (the simulator; and :meth:`Journal.poll` every 20,000 events) or every tick (the real
runtime's frontend session); when a write is due, the jobs finished since the last one become lines
(~3 us a job) and are written. A replay of a stream of jobs (issue 49) gives it a ``sink`` too (the rows
of its ``jobs.csv``, :class:`aviary.common.results.StreamedResults`), and its frontend forgets each job
once taken (``FrontendCore.release``): a whole month's replay keeps no record of a finished job.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from math import fsum
from pathlib import Path
from typing import Any, Protocol

from .frontend import RESUBMIT_STRIDE, FrontendCore, JobTimes
from .model import JobSpec
from .tasktable import TASKS_CSV, TaskRecorder, TaskTable

__all__ = [
    "FLUSH_SECONDS",
    "JOURNAL",
    "SYNC_SECONDS",
    "Journal",
    "JournalError",
    "JournalJob",
    "JournalRecords",
    "RecordWriter",
    "has_records",
    "read_journal",
]

JOURNAL = "journal.jsonl"
VERSION = 1
FLUSH_SECONDS = 0.25
"""A buffered line is written once this long has passed since the last write (at the owner's next poll):
a job that finished more than a second before a crash is in the file."""
SYNC_SECONDS = 1.0
"""What was written is made durable (``fdatasync``) at most this often, by a thread of its own."""


class JournalError(ValueError):
    """A journal that cannot be read; the message is one line naming the file, line and field."""


def _datasync(fd: int) -> None:
    getattr(os, "fdatasync", os.fsync)(fd)


class _Syncer:
    """A thread that makes a file's writes durable when woken, at most every :data:`SYNC_SECONDS`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.wanted = threading.Event()
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._run, name="aviary-journal-sync", daemon=True)
        self.thread.start()

    def wake(self) -> None:
        self.wanted.set()

    def _run(self) -> None:
        while True:
            self.wanted.wait()
            if self.closing.is_set():
                return
            self.wanted.clear()
            try:
                _datasync(self.fd)
            except OSError:
                return  # the file's writer reports its own errors
            if self.closing.wait(SYNC_SECONDS):
                return

    def stop(self) -> None:
        self.closing.set()
        self.wanted.set()
        self.thread.join()


class RecordWriter:
    """Lines appended to a file (created or emptied), buffered and written on a clock check.

    :meth:`write` buffers a line (with its newline); :meth:`poll` writes the buffer when
    :data:`FLUSH_SECONDS` (``every``) have passed since the last write, :meth:`flush` at once: one
    ``write`` of whole lines (a loop over partial writes), so a crash cuts at most the last line. With
    ``sync``, a thread then makes them durable (:class:`_Syncer`). An ``OSError`` stops the writer and
    is kept, one line, in :attr:`error`; what is written later is dropped."""

    def __init__(
        self, path: str | os.PathLike[str], *, every: float = FLUSH_SECONDS, sync: bool = True
    ) -> None:
        self.path = Path(path)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o666)
        self.every = every
        self.buffer: list[str] = []
        self.due = 0.0
        self.written = 0
        """Lines written so far."""
        self.error: str | None = None
        self._syncer = _Syncer(self.fd) if sync else None

    def write(self, line: str) -> None:
        self.buffer.append(line)

    def extend(self, lines: list[str]) -> None:
        """:meth:`write` each of ``lines``."""
        self.buffer.extend(lines)

    def poll(self) -> None:
        """Write what is buffered if :attr:`every` seconds passed since the last write."""
        if self.buffer and time.monotonic() >= self.due:
            self.flush()

    def flush(self) -> None:
        self.due = time.monotonic() + self.every
        if not self.buffer:
            return
        lines, self.buffer = self.buffer, []
        if self.error is not None or self.fd < 0:
            return
        view = memoryview("".join(lines).encode())
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self.error = f"{self.path}: cannot write: {exc.strerror or exc}"
            return
        self.written += len(lines)
        if self._syncer is not None:
            self._syncer.wake()

    def close(self) -> None:
        """Write what is buffered, make the file durable and close it (again: nothing)."""
        if self.fd < 0:
            return
        self.flush()
        if self._syncer is not None:
            self._syncer.stop()
        with contextlib.suppress(OSError):
            os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1


class JobSink(Protocol):
    """Where a journal also hands each finished job it takes (the streamed ``jobs.csv`` of a replay of a
    stream of jobs, :class:`aviary.common.results.StreamedResults`)."""

    def add(self, job: JobSpec, times: JobTimes) -> None: ...


def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"), default=str) + "\n"


class Journal:
    """A replay's journal in ``folder`` (module docstring): the start line at once (``start``: the run's
    ``policy``, ``runtime``, ``nodes``, ``slots``, ``jobs``, ``tasks``, ``workload`` and ``extra``), each
    finished job's line as :meth:`note` sees it, the end line at :meth:`end`. Use as a context manager,
    or :meth:`close` it: a journal closed without :meth:`end` is one of a run that never reached its end.

    With ``tasks`` (the replay's jobs), the task table (:mod:`aviary.common.tasktable`) is written beside
    it, on the same clock: the rows of :attr:`recorder` (the simulator's, on the frontend's clock) and the
    batches the nodes sent the frontend (``FrontendCore.task_batches``, the real runtime)."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        start: Mapping[str, Any],
        *,
        every: float = FLUSH_SECONDS,
        sync: bool = True,
        tasks: list[JobSpec] | None = None,
        sink: JobSink | None = None,
    ) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / JOURNAL
        self.writer = RecordWriter(self.path, every=every, sync=sync)
        self.tasks: TaskTable | None = None
        if tasks is not None:
            self.tasks = TaskTable(RecordWriter(folder / TASKS_CSV, every=every, sync=sync), tasks)
        self.task_error: str | None = None
        """Why the task table stopped (a row it could not take), or None."""
        self.recorder: TaskRecorder | None = None
        """The simulator's recorder of every node's tasks (its rows are on the frontend's clock)."""
        self.began = time.monotonic()
        self.frontend: FrontendCore | None = None
        self.sink = sink
        """Also gets each finished job as it is taken (a stream's results)."""
        self.noted = 0
        """Jobs taken so far (entries of the frontend's ``finish_order``, counted from the start: the
        frontend of a stream of jobs drops those taken, ``FrontendCore.release``)."""
        self.ended = False
        """The end line is written."""
        head = {
            "journal": VERSION,
            "kind": "start",
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "began": round(time.time(), 3),
            "pid": os.getpid(),
            "host": platform.node(),
            **start,
        }
        self.writer.write(_line(head))
        self.writer.flush()

    @property
    def error(self) -> str | None:
        """Why the journal (or its task table) stopped writing (one line), or None."""
        return self.writer.error or self.task_error or (self.tasks.error if self.tasks is not None else None)

    def note(self, frontend: FrontendCore) -> None:
        """The frontend may have finished jobs: when a write is due, its jobs finished since the last
        one are journaled and written (:meth:`poll`). Called after each of its inputs, this costs a
        clock read; the lines are made when written, ``wall`` their time."""
        self.frontend = frontend
        self.poll()

    def poll(self) -> None:
        """Write what is due: the frontend's newly finished jobs and any buffered line."""
        writer = self.writer
        if time.monotonic() < writer.due:
            return
        self._take()
        if writer.buffer:
            writer.flush()
        if self.tasks is not None and self.tasks.writer.buffer:
            self.tasks.writer.flush()

    def _take(self) -> None:
        """Buffer a line for each job the frontend finished since the last call (and each task)."""
        fe = self.frontend
        if self.tasks is not None and fe is not None and fe.t0 is not None:
            try:
                self._take_tasks(self.tasks, fe, fe.t0)
            except Exception as exc:  # a bad row (a node's batch) stops the task table, not the journal
                self.task_error = f"{self.tasks.writer.path}: stopped: {type(exc).__name__}: {exc}"
                self.tasks.close()
                self.tasks = None
        if fe is None or fe.released + len(fe.finish_order) <= self.noted:
            return
        order = fe.finish_order
        wall = repr(round(time.monotonic() - self.began, 3))
        write = self.writer.write
        sink = self.sink
        for job_id in order[self.noted - fe.released :]:
            write(job_line(fe, job_id, wall))
            if sink is not None:
                sink.add(fe.by_id[job_id], fe.times[job_id])
        self.noted = fe.released + len(order)
        fe.release(self.noted)  # a stream's frontend forgets them (a list's keeps them: no effect)

    def take(self) -> None:
        """Take every job the frontend finished so far, now (the end of a run: before its results)."""
        self._take()

    def _take_tasks(self, table: TaskTable, fe: FrontendCore, t0: float) -> None:
        times = fe.times
        if self.recorder is not None and self.recorder.rows:
            table.add(self.recorder.take(), t0, times, RESUBMIT_STRIDE)
        if fe.task_batches:
            batches, fe.task_batches = fe.task_batches, []
            for node, sent, received, boot, rows in batches:
                table.add_batch(node, sent, received, boot, rows, t0, submits=times, stride=RESUBMIT_STRIDE)

    def end(self, fields: Mapping[str, Any]) -> None:
        """The end line (the run's results are written), then close."""
        self._take()
        wall = round(time.monotonic() - self.began, 3)
        self.writer.write(_line({"kind": "end", "wall_seconds": wall, **fields}))
        self.ended = True
        self.close()

    def close(self) -> None:
        """Write what is left and close (without the end line: a run that never reached its end); the
        task table gets a row for each task still running (``unfinished``)."""
        if self.recorder is not None:
            self.recorder.rows.extend(self.recorder.unfinished())
        self._take()
        self.writer.close()
        if self.tasks is not None:
            self.tasks.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


JOB_LINE = (
    '{"kind":"job","job_id":%d,"class":"%s","tasks":%d,"submit":%.6f,"first_start":%s,"finish":%.6f,'
    '"work":%.6f,"wall":%s'
)


def job_line(frontend: FrontendCore, job_id: int, wall: str) -> str:
    """The journal line of a finished job, from the frontend's record (``wall``: its text). Times to the
    microsecond, as ``jobs.csv`` has them; formatted with ``%`` (a third of the time of ``json.dumps``:
    ~3 us a job, ~1 % of a simulated replay of Google jobs)."""
    job = frontend.by_id[job_id]
    t = frontend.times[job_id]
    submit = job.submit if t.submit is None else t.submit
    first = "null" if t.first_start is None else f"{t.first_start:.6f}"
    values = (job_id, job.cls, len(job.durations), submit, first, t.finish, fsum(job.durations), wall)
    line = JOB_LINE % values
    if job.slo is not None or job.deadline is not None:
        line += f',"slo":{json.dumps(job.slo)},"deadline":{json.dumps(job.deadline)}'
    return line + "}\n"


# --- reading ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JournalJob:
    """A finished job as its journal line has it (times in replay seconds)."""

    job_id: int
    cls: str
    tasks: int
    submit: float
    first_start: float | None
    finish: float
    work: float | None = None
    wall: float | None = None
    slo: str | None = None
    deadline: float | None = None


@dataclass(frozen=True)
class JournalRecords:
    """What a journal holds: its start line, its finished jobs in the order they finished, its end line
    (None: the run never reached its end, or is still running), and what was dropped of a partial last
    line (one line, or None)."""

    path: Path
    start: dict[str, Any]
    jobs: list[JournalJob]
    end: dict[str, Any] | None
    dropped: str | None = None

    @property
    def total(self) -> int | None:
        """The run's number of jobs (its start line's ``jobs``)."""
        n = self.start.get("jobs")
        return n if isinstance(n, int) else None

    def running(self) -> bool:
        """Whether the run that writes this journal is still alive (this machine, its pid, started no
        later than the journal). False when it cannot tell."""
        if self.end is not None or self.start.get("host") != platform.node():
            return False
        pid = self.start.get("pid")
        if not isinstance(pid, int):
            return False
        try:
            import psutil

            made = psutil.Process(pid).create_time()
        except Exception:  # no such process, no psutil, no permission: not ours to wait for
            return False
        began = self.start.get("began")
        return isinstance(began, (int, float)) and made <= began + 1.0


def _field(path: Path, lineno: int, record: Mapping[str, Any], name: str, kinds: tuple[type, ...]) -> Any:
    value = record.get(name)
    if value is None and type(None) in kinds:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds):
        want = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise JournalError(f"{path}:{lineno}: field '{name}': expected {want}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise JournalError(f"{path}:{lineno}: field '{name}': not a finite number: {value!r}")
    return value


NUMBER = (int, float)
OPT_NUMBER = (int, float, type(None))


def _job(path: Path, lineno: int, r: Mapping[str, Any]) -> JournalJob:
    cls = _field(path, lineno, r, "class", (str,))
    if cls not in ("short", "long"):
        raise JournalError(f"{path}:{lineno}: field 'class': expected short or long, got {cls!r}")
    deadline = _field(path, lineno, r, "deadline", OPT_NUMBER)
    work = _field(path, lineno, r, "work", OPT_NUMBER)
    wall = _field(path, lineno, r, "wall", OPT_NUMBER)
    first = _field(path, lineno, r, "first_start", OPT_NUMBER)
    return JournalJob(
        job_id=_field(path, lineno, r, "job_id", (int,)),
        cls=cls,
        tasks=_field(path, lineno, r, "tasks", (int,)),
        submit=float(_field(path, lineno, r, "submit", NUMBER)),
        first_start=None if first is None else float(first),
        finish=float(_field(path, lineno, r, "finish", NUMBER)),
        work=None if work is None else float(work),
        wall=None if wall is None else float(wall),
        slo=_field(path, lineno, r, "slo", (str, type(None))),
        deadline=None if deadline is None else float(deadline),
    )


def _lines(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], str | None]:
    """The journal's records with their line numbers, and what was dropped at its end (a crash's
    partial line), one line; :class:`JournalError` for a bad line with whole records after it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise JournalError(f"{path}: not found") from None
    except OSError as exc:
        raise JournalError(f"{path}: cannot read: {exc.strerror or exc}") from None
    raw = data.split(b"\n")
    tail = raw.pop()  # after the last newline: empty when the file ends with a whole line
    records: list[tuple[int, dict[str, Any]]] = []
    bad: tuple[int, str] | None = None
    for lineno, text in enumerate(raw, 1):
        try:
            record = json.loads(text)
        except ValueError as exc:
            bad = bad or (lineno, getattr(exc, "msg", str(exc)))
            continue
        if not isinstance(record, dict):
            bad = bad or (lineno, "not a JSON object")
            continue
        if bad is not None:  # a crash cuts the end of an append-only file, never its middle
            raise JournalError(f"{path}:{bad[0]}: not a journal record: {bad[1]}")
        records.append((lineno, record))
    dropped = None
    if bad is not None:
        dropped = f"line {bad[0]} on: not whole records (dropped)"
    elif tail.strip(b"\0 \t\r"):
        dropped = f"line {len(raw) + 1}: a partial last line of {len(tail)} bytes (dropped)"
    return records, dropped


def read_journal(folder: str | os.PathLike[str]) -> JournalRecords:
    """Read ``folder``'s journal (or the journal file itself); a partial last line is dropped and
    reported in :attr:`JournalRecords.dropped`. :class:`JournalError` (one line: file, line, field) for
    anything else that is wrong."""
    path = Path(folder)
    if path.is_dir() or not path.name.endswith(".jsonl"):
        path = path / JOURNAL
    records, dropped = _lines(path)
    if not records or records[0][1].get("kind") != "start":
        where = f"{path}:{records[0][0]}" if records else str(path)
        raise JournalError(f"{where}: field 'kind': expected a start line first (not an aviary journal)")
    start = records[0][1]
    if start.get("journal") != VERSION:
        raise JournalError(f"{path}:1: field 'journal': version {start.get('journal')!r}, expected {VERSION}")
    jobs: list[JournalJob] = []
    seen: set[int] = set()
    end = None
    for lineno, record in records[1:]:
        kind = record.get("kind")
        if end is not None:
            raise JournalError(f"{path}:{lineno}: field 'kind': a {kind!r} line after the end line")
        if kind == "job":
            job = _job(path, lineno, record)
            if job.job_id in seen:
                raise JournalError(f"{path}:{lineno}: field 'job_id': job {job.job_id} twice")
            seen.add(job.job_id)
            jobs.append(job)
        elif kind == "end":
            end = record
    return JournalRecords(path, start, jobs, end, dropped)


def has_records(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a journal with a line after its start line (a run that finished some
    job): reads up to its second line only."""
    try:
        with open(Path(folder) / JOURNAL, "rb") as f:
            first = f.readline()
            return bool(first.endswith(b"\n") and f.readline().strip(b"\0 \t\r\n"))
    except OSError:
        return False
