"""``aviary trace convert swf``: the Standard Workload Format of the Parallel Workloads Archive
(Feitelson et al., https://www.cs.huji.ac.il/labs/parallel/workload/swf.html) to Aviary trace jobs.

One job per line, 18 whitespace-separated fields; ``;`` lines are the header's comments; -1 is a missing
value: 1 job number, 2 submit time (s), 3 wait time, 4 run time (s), 5 allocated processors, 6 average
CPU time, 7 used memory, 8 requested processors, 9 requested time, 10 requested memory, 11 status,
12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding job, 18 think time.

What a job becomes (``docs/traces.md``, "SWF"): N processors (field 5, else the requested field 8)
become N tasks of its run time (field 4), with ``gang=1`` (they start together, for the policies that
have gangs); ``job=`` its number, ``class=`` its queue, ``after=`` its preceding job (field 17). Status
(field 11): 1 completed and 0 failed jobs are kept with their run time (a failed job held its processors
that long), so is a 5 cancelled job that ran (run time > 0); a cancelled job that never ran is dropped;
the lines 2, 3 and 4 (partial executions of a checkpointed or swapped job) detail a job whose summary
line is already read: skipped and counted. A job whose run time or processors are missing is dropped and
counted. Memory is per processor in KB of machines the format does not describe: no ``mem=`` is written.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..trace import MAX_DURATION, MAX_JOB_TASKS, MAX_TIME, TraceError, TraceJob
from .rows import BadRows, Bytes, open_text

__all__ = ["FIELDS", "SwfCounts", "convert_swf"]

FIELDS = (
    "job number", "submit time", "wait time", "run time", "allocated processors", "average CPU time",
    "used memory", "requested processors", "requested time", "requested memory", "status", "user ID",
    "group ID", "executable number", "queue number", "partition number", "preceding job number",
    "think time",
)  # fmt: skip


_USED = frozenset((0, 1, 3, 4, 7, 10, 14, 16))
"""The fields read (0-based); the others are not checked: a value there cannot make a job wrong."""


@dataclass
class SwfCounts:
    """What the conversion did, for its summary."""

    jobs_written: int = 0
    tasks_written: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    bad: BadRows = field(default_factory=BadRows)

    def lines(self) -> list[str]:
        out = [f"jobs written: {self.jobs_written:,}, tasks {self.tasks_written:,}"]
        out += [f"dropped ({why}): {n:,}" for why, n in self.dropped.most_common()]
        if self.bad.total:
            kinds = ", ".join(f"{n} in '{f}'" for f, n in self.bad.counts.most_common())
            out.append(f"bad rows skipped: {self.bad.total:,} ({kinds}); the first: {self.bad.first}")
        return out


def _number(where: str, i: int, token: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise TraceError(f"{where}: field '{FIELDS[i]}': not a number: {token!r}") from None
    if not math.isfinite(value) or (value < 0 and value != -1):
        raise TraceError(f"{where}: field '{FIELDS[i]}': must be >= 0 or -1 (missing), got {token}")
    return value


def _job(where: str, parts: list[str], counts: SwfCounts) -> TraceJob | None:
    if len(parts) != 18:
        raise TraceError(
            f"{where}: field '{FIELDS[min(len(parts), 17)]}': expected 18 fields, found {len(parts)}"
        )
    v = [_number(where, i, token) if i in _USED else -1.0 for i, token in enumerate(parts)]
    status = int(v[10])
    if status in (2, 3, 4):
        counts.dropped["a partial execution line"] += 1
        return None
    procs = v[4] if v[4] > 0 else v[7]
    if v[3] < 0 or procs <= 0 or v[1] < 0:
        counts.dropped["run time, processors or submit time missing"] += 1
        return None
    if status == 5 and v[3] <= 0:
        counts.dropped["cancelled before it ran"] += 1
        return None
    for i, limit in ((1, MAX_TIME), (3, MAX_DURATION), (4 if v[4] > 0 else 7, MAX_JOB_TASKS)):
        if v[i] > limit:
            raise TraceError(f"{where}: field '{FIELDS[i]}': {parts[i]} is above the limit of {limit:g}")
    if not procs.is_integer():
        raise TraceError(f"{where}: field '{FIELDS[4 if v[4] > 0 else 7]}': not an integer: {procs:g}")
    n = int(procs)
    return TraceJob(
        line=0,
        submit=v[1],
        durations=[v[3]] * n,
        mean=v[3],
        sched_class=int(v[14]) if v[14] >= 0 else None,
        name=str(int(v[0])),
        after=(str(int(v[16])),) if v[16] > 0 else (),
        gang=n > 1,
    )


def convert_swf(
    path: Path, *, bad: BadRows | None = None, progress: Bytes | None = None, counts: SwfCounts | None = None
) -> Iterator[TraceJob]:
    """Yield the jobs of an SWF file (plain or ``.gz``) in file order. Raises :class:`TraceError` (one
    line naming file, line and field) on a bad line unless ``bad.skip``."""
    counts = counts if counts is not None else SwfCounts()
    bad = bad if bad is not None else counts.bad
    progress = progress if progress is not None else Bytes()
    progress.total = path.stat().st_size if path.exists() else 0
    text, raw = open_text(path)
    try:
        for lineno, line in enumerate(text, 1):
            if lineno % 4096 == 0 and progress.on_progress is not None:
                progress.on_progress(raw.tell())
            parts = line.split()
            if not parts or parts[0].startswith(";"):
                continue
            try:
                job = _job(f"{path}:{lineno}", parts, counts)
            except TraceError as exc:
                bad.bad(str(exc), str(exc).split("field '", 1)[-1].split("'", 1)[0])
                continue
            if job is not None:
                counts.jobs_written += 1
                counts.tasks_written += job.tasks
                yield job
    except (OSError, EOFError) as exc:
        raise TraceError(f"{path}: cannot read: {exc}") from None
    finally:
        progress.done = progress.total
        text.close()
        raw.close()
