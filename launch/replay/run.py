"""``aviary replay``: a trace sample against a real testbed or the simulator, to results files.

The same workload, the same cores and the same results files on both runtimes (DESIGN §2, §7):
``--runtime real`` starts a local testbed (or uses one with ``--connect``) and drives it from a
frontend in this process; ``--runtime sim`` runs every core in this process on virtual time.

Know before you wait: a real replay is first simulated (the same cluster and jobs on virtual time,
usually well under a second), which gives its wall time and utilization in advance. That prediction
picks the time scale that fits ``--duration`` (by default, without ``--time-scale``, one minute), and a
replay predicted to run longer than ``--max-wall`` (5 min) is refused with one line naming the
``--time-scale``, ``--jobs`` or ``--task-scale`` that would fit, unless ``--yes``.

Never lose a run: SIGINT (Ctrl-C) or SIGTERM during a replay stops it cleanly (the testbed's processes
are asked for their counters, then stopped) and still writes ``jobs.csv`` and ``summary.json`` for what
finished, with ``extra.interrupted`` true, ``extra.interrupted_by`` the signal and the unfinished jobs in
``unfinished``; the command then exits 130 (SIGINT) or 143 (SIGTERM). A second signal stops at once.
Killed outright (``kill -9``, the OOM killer, a machine that went down), it keeps what finished too: each
job's record goes to the folder's journal as it finishes (:mod:`aviary.common.journal`), which ``aviary
report``, ``aviary compare`` and :class:`aviary.Run` read as a partial run.

This module runs a replay set up by :func:`~.resolve.setup_replay` (:func:`run_replay`): on the
simulator or on real processes (:mod:`aviary.launch.drivers`), then writes the results; the progress bar
and the stop signals come from :mod:`~.progress`.
"""

from __future__ import annotations

import bisect
import math
import signal
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import uvloop
from rich.console import Console

from ...common.cluster import Cluster
from ...common.frontend import FrontendCore
from ...common.journal import Journal
from ...common.model import JobSpec
from ...common.resources import Resources, vector_sum
from ...common.results import (
    JOBS_CSV,
    SUMMARY_JSON,
    JobRecord,
    StreamedResults,
    format_summary_table,
    write_results,
)
from ...common.tasktable import TASKS_CSV
from ...common.usage import DEFAULT_FAIRNESS_WINDOW, TaskRecord
from ..drivers.dashboard import Dashboard, serve
from ..drivers.local import LocalTestbed
from ..drivers.real import ReplayError, run_real
from ..drivers.sim import CORE_RAISED, STALLED, quiet_limit, simulate
from ..flags.spec import RunFailed, UsageError
from .connect import testbed_down
from .folder import point_latest
from .predict import human, print_prediction
from .progress import ProgressBar, StopSignals
from .resolved import ReplaySetup


def job_records(frontend: FrontendCore, policy: str) -> list[JobRecord]:
    records = []
    for job in frontend.jobs:
        t = frontend.times[job.job_id]
        submit = job.submit if t.submit is None else t.submit
        records.append(JobRecord(job.job_id, job.cls, job.tasks, submit, t.first_start, t.finish, policy))
    return records


def open_journal(setup: ReplaySetup, workload: dict[str, Any]) -> Journal | None:
    """The replay's journal in its folder (None when ``setup.journal`` is off), its start line written:
    what runs (``workload``: its record). An earlier run's ``jobs.csv`` and ``summary.json`` there
    (``--force``) go now, so that a folder never holds this run's journal beside another run's results."""
    if not setup.journal and setup.stream is None:  # a stream's finished jobs leave through the journal
        return None
    for name in (SUMMARY_JSON, JOBS_CSV, TASKS_CSV):
        (setup.out / name).unlink(missing_ok=True)
    start = {
        "policy": setup.policy.name,
        "runtime": setup.runtime,
        "nodes": len(setup.cluster.nodes),
        "slots": max(p.slots for p in setup.cluster.nodes),
        "jobs": setup.count,
        "tasks": setup.tasks,
        "workload": workload,
        "extra": setup.extra,
    }
    sink = None if setup.stream is None else StreamedResults(setup.out, setup.policy.name)
    return Journal(setup.out, start, tasks=setup.jobs if setup.task_table else None, sink=sink)


def run_replay(
    setup: ReplaySetup, *, quiet: bool = False, console: Console | None = None, progress_every: float = 10.0
) -> dict[str, Any]:
    """Run the replay and write the results; returns the summary. A real replay first prints its
    prediction. Progress: a bar on a terminal, else a line every ``progress_every`` seconds (unless
    ``quiet``). Interrupted by SIGINT or SIGTERM, it still writes the results of what finished
    (``extra.interrupted``, ``extra.interrupted_by``, the jobs left in ``unfinished``), prints them,
    and raises ``KeyboardInterrupt`` (SIGINT: the command exits 130) or ``SystemExit(143)`` (SIGTERM).
    Every finished job is journaled as it finishes (:func:`open_journal`); the journal's end line follows
    the results files."""
    from .provenance import workload_record

    workload = workload_record(setup)  # what ran, as it starts (the journal's and the summary's)
    journal = open_journal(setup, workload)
    try:
        return _run_replay(setup, workload, journal, quiet, console or Console(stderr=True), progress_every)
    finally:
        if journal is not None:
            journal.close()  # without its end line if the run did not get there: a cut run
            if not journal.ended and journal.noted == 0:
                journal.path.unlink(missing_ok=True)  # it failed before any job finished: nothing to keep


def _run_replay(
    setup: ReplaySetup,
    workload: dict[str, Any],
    journal: Journal | None,
    quiet: bool,
    console: Console,
    progress_every: float,
) -> dict[str, Any]:
    """:func:`run_replay`'s run and results."""
    begun = time.monotonic()
    cluster, jobs, stream = setup.cluster, setup.jobs, setup.stream
    policy = setup.policy
    label = f"{policy.name} ({setup.runtime}, {len(cluster.nodes)} nodes)"
    problems: list[str] = []
    if setup.connect is not None and (down := testbed_down(setup.connect, cluster)):
        raise UsageError(down)  # at once, not after the registration wait
    if setup.runtime == "real":
        print_prediction(setup, console)
    end = None if setup.prediction is None else setup.prediction.wall
    if stream is not None:
        arrivals = stream.last_submit
        span = max(arrivals, stream.work / sum(p.slots for p in cluster.nodes))
    else:
        arrivals = max(j.submit for j in jobs)
        span = max(arrivals, work_bound(cluster, jobs)) if setup.runtime == "sim" else arrivals
    bar = ProgressBar(
        setup.count,
        label,
        not quiet,
        end=end,
        virtual=setup.runtime == "sim",
        last_arrival=arrivals or None,  # a batch: no arrivals to show the clock against
        every=progress_every,
        console=console,
    )
    with StopSignals(raise_first=False) as stop, bar:
        if setup.runtime == "sim":
            estimated = quiet

            def progress(fe: FrontendCore, now: float) -> None:
                # The simulator stops here, in its own frame: a KeyboardInterrupt raised by the signal
                # handler could land in a gc callback, where Python only prints it.
                nonlocal estimated
                elapsed = time.monotonic() - started
                if not shares or elapsed - shares[-1][0] >= SHARE_EVERY:
                    shares.append((elapsed, share_done(fe, now, span, launched(), tasks)))
                    left = time_left(shares)
                    bar.left = None if left is None else left + after
                    if not estimated and (line := wall_estimate(shares, before, after)):
                        estimated = True
                        bar.console.print(line)
                bar.update(fe, now)
                if stop.reason is not None:
                    raise KeyboardInterrupt

            started = time.monotonic()
            shares: list[tuple[float, float]] = []  # (wall seconds, share done), every SHARE_EVERY s
            tasks = setup.tasks
            before = started - setup.begun if setup.begun else 0.0  # its set-up: resolved, predicted
            after = RESULTS_SECONDS_PER_TASK * tasks if policy.dag else 0.0  # the usage metrics
            watched: list[Any] = []

            def launched() -> int:
                return watched[0].launched if watched else 0

            outcome = simulate(
                cluster,
                jobs if stream is None else stream,
                net_delay=setup.net_delay,
                progress=progress,
                interruptible=True,
                failures=setup.failures,
                stall_detect=setup.liveness[0] * setup.liveness[1],
                journal=journal,
                watch=watched.append,
                link_faults=setup.link_faults,
            )
            wall = time.monotonic() - started
            frontend, messages, counters = outcome.frontend, outcome.messages, outcome.counters
            log = [entry for core in outcome.cores.values() for entry in core.task_log()]
            cycles = [entry for core in outcome.cores.values() for entry in core.cycle_log()]
            if setup.link_faults and watched and watched[0].plan is not None:
                setup.extra["link_faults_hit"] = {k: v for k, v in watched[0].plan.hit.items() if v}
                setup.extra["links"] = watched[0].link_counters()
            setup.extra["events"] = outcome.events
            setup.extra["events_per_s"] = round(outcome.events / max(wall, 1e-9))
            setup.extra["virtual_seconds"] = outcome.virtual_seconds
            interrupted = None if outcome.stopped is None else stop.reason or outcome.stopped
            error = outcome.error
            left = (
                setup.count - frontend.finished
            )  # (a stream's unfinished jobs are taken from it once, later)
            if interrupted == STALLED:  # gave up, as a real replay does when no job finishes
                interrupted = None
                limit = quiet_limit(jobs) if stream is None else 10 * stream.work + 3600.0
                problems.append(
                    f"gave up at virtual time {outcome.virtual_seconds:,.1f} s: no job finished for "
                    f"{limit:,.0f} s (ten times all the jobs' work); "
                    f"{left} of {setup.count} jobs did not finish"
                )
            if interrupted is not None and error is None:
                problems.append(
                    f"interrupted by {interrupted} at virtual time {outcome.virtual_seconds:,.1f} s: "
                    f"{left} of {setup.count} jobs did not finish"
                )
        else:
            result = _run_real(setup, bar, console, stop, journal)
            frontend, wall, messages, counters = (
                result.frontend,
                result.wall_seconds,
                result.messages,
                result.counters,
            )
            problems = result.problems
            if setup.link_faults:  # as the simulator's: segments sent and what the links' ends counted
                setup.extra["links"] = {k[6:]: v for k, v in counters.items() if k.startswith("links.") and v}
            log = result.task_log
            cycles = result.cycles
            interrupted, error = result.interrupted, result.error
            if error is not None:
                interrupted = CORE_RAISED
    writing = time.monotonic()  # the summary step, said and timed on its own (never a silence)
    if not quiet:
        console.print(f"{label}: writing results…", soft_wrap=True)
    if frontend.dead or frontend.resubmitted:  # which processes died when, and the jobs that moved
        setup.extra["declared_dead"] = {name: round(at, 3) for name, at in frontend.dead.items()}
        setup.extra["resubmitted"] = sorted(frontend.resubmitted)
    dag: dict[str, Any] = {}
    if policy.dag:
        dag = {
            "task_log": [TaskRecord(e[0], e[2], e[3], Resources(*e[4]), *e[5:6]) for e in log],
            "capacity_total": vector_sum(n.resources for n in cluster.nodes),
            "fairness_window": DEFAULT_FAIRNESS_WINDOW / float(setup.extra["time_scale"]),
        }
    if interrupted is not None:
        setup.extra["interrupted"], setup.extra["interrupted_by"] = True, interrupted
    slo = {j.job_id: (j.slo, j.deadline) for j in jobs if j.slo is not None or j.deadline is not None}
    if journal is not None and journal.error is not None:
        problems.append(f"journal: {journal.error}; it stopped (the results below are whole)")

    common: dict[str, Any] = {
        "workload": workload,
        "runtime": setup.runtime,
        "nodes": len(cluster.nodes),
        "slots": max(p.slots for p in cluster.nodes),
        "wall_seconds": wall,
        "messages": Counter(messages),
        "counters": Counter(counters),
        "extra": {**setup.extra, "problems": problems},
    }
    if stream is not None:  # the finished jobs' rows are written; the unfinished ones' now
        assert journal is not None and isinstance(journal.sink, StreamedResults)
        journal.take()
        sink = journal.sink
        sink.add_unfinished(frontend)
        summary = sink.write(
            task_seconds=stream.work if interrupted is None else sink.finished_work(), **common
        )
    else:
        ran = (
            jobs if interrupted is None else [j for j in jobs if frontend.times[j.job_id].finish is not None]
        )
        summary = write_results(
            setup.out,
            job_records(frontend, policy.name),
            policy=policy.name,
            task_seconds=math.fsum(math.fsum(j.durations) for j in ran),  # interrupted: the finished jobs'
            slo=slo or None,
            cycles=cycles,
            **dag,
            **common,
        )
    # In the returned summary, not summary.json (whose own writing is part of the step timed here).
    summary["results_wall_seconds"] = round(time.monotonic() - writing, 3)
    summary["run_wall_seconds"] = round(time.monotonic() - begun, 3)
    if not quiet:
        console.print(f"{label}: results written in {summary['results_wall_seconds']:.1f} s", soft_wrap=True)
    if journal is not None:
        journal.end({"finished": summary["finished"], "jobs": summary["jobs"], "interrupted_by": interrupted})
    if setup.latest:
        point_latest(setup.out)
    for problem in problems:
        console.print(f"[yellow]{problem}[/yellow]")
    if error is not None:
        print_summary(summary, setup.out)
        raise RunFailed(
            f"policy {policy.name!r}: {error}; partial results of the {summary['finished']} jobs finished "
            f"of {summary['jobs']} in {setup.out}"
        )
    if interrupted is not None:
        print_summary(summary, setup.out)
        console.print(
            f"interrupted by {interrupted}: partial results of the {summary['finished']} finished jobs "
            f"of {summary['jobs']} (the others are listed as unfinished)"
        )
        if interrupted == "SIGTERM":
            raise SystemExit(128 + signal.SIGTERM)
        raise KeyboardInterrupt
    return summary


def _dashboard(setup: ReplaySetup, console: Console) -> Callable[[Any], Dashboard]:
    """What starts the replay's dashboard on its frontend session and prints its URL."""

    def start(session: Any) -> Dashboard:
        port, address = setup.dashboard or 0, setup.dashboard_address
        say = partial(console.print, soft_wrap=True, markup=False, highlight=False)
        return serve(session, setup.cluster, port, address, say)

    return start


def _run_real(
    setup: ReplaySetup, bar: ProgressBar, console: Console, stop: StopSignals, journal: Journal | None
) -> Any:
    """The replay on real processes: a testbed of its own, or the running one of ``setup.connect``;
    a signal recorded by ``stop`` ends it early."""
    cluster = setup.cluster
    route = setup.policy.route(cluster)
    bed = None if setup.connect else LocalTestbed(cluster, setup.out / "testbed", keys=setup.keys)
    started = time.monotonic()
    try:
        if bed is not None:
            bed.start()
        try:
            outcome = uvloop.run(
                run_real(
                    cluster,
                    setup.jobs,
                    route,
                    stall_timeout=setup.stall_timeout,
                    shutdown=bed is not None,  # a running testbed outlives the replay
                    dead=dict if bed is None else bed.dead,
                    progress=bar.update,
                    stop=lambda: stop.reason,
                    failures=setup.failures,
                    fail=None if bed is None else bed.fail,
                    restart=None if bed is None else bed.restart,
                    liveness=setup.liveness,
                    watch=None if setup.dashboard is None else _dashboard(setup, console),
                    journal=journal,
                    link_faults=[f.text for f in setup.link_faults],
                )
            )
            if outcome.registered_at is not None:  # from the first process started to the last registered
                setup.extra["startup_seconds"] = round(outcome.registered_at - started, 3)
            return outcome
        except ReplayError as exc:
            if bed is None:
                raise UsageError(f"{setup.connect}: {exc}") from None
            dead = sorted(bed.dead())
            tail = f"; last lines of {dead[0]}'s log:\n{bed.log_tail(dead[0])}" if dead else ""
            raise UsageError(f"{exc}{tail}") from None
        finally:
            if bed is not None:
                bed.wait(5.0)
    finally:
        if bed is not None:
            bed.stop()


CALIBRATION = 10.0
"""Seconds of a simulated replay after which it estimates its own wall time: by then the multi-resource
baselines' queues have built up (their cost per task doubles within the first seconds of a 300-job TPC-H
replay), and a replay done sooner needs no estimate (``benchmarks/estimates.py``)."""
RESULTS_SECONDS_PER_TASK = 2e-5
"""What a DAG replay's summary costs a task (its usage metrics, common/usage.py: 2.8 s for the 170,000
tasks of 100 TPC-H jobs, compiled); a flat replay's summary, by jobs, takes a fraction of a second."""
LONG_SIMULATION = 180.0
"""A simulated replay estimated to take longer than this (s) is flagged."""
SHARE_EVERY = 0.5
"""Seconds of wall time between two readings of a simulated replay's share done (:func:`time_left`)."""


def work_bound(cluster: Cluster, jobs: list[JobSpec]) -> float:
    """The least virtual time the jobs' work takes on the cluster: the busiest resource's work (each
    task's duration times its demand, summed) over the cluster's capacity of it. A batch's makespan is
    at least this; with contention, DAG barriers and fragmentation it is more (1.0-1.5x in the packing
    experiments)."""
    capacity = vector_sum(p.resources for p in cluster.nodes)
    work = [0.0, 0.0, 0.0, 0.0]
    for job in jobs:
        offset = 0
        for stage in job.dag():
            seconds = sum(job.durations[offset : offset + stage.tasks])
            offset += stage.tasks
            for r, d in enumerate(stage.demand):
                work[r] += seconds * d
    return max((w / c for w, c in zip(work, capacity, strict=True) if c > 0), default=0.0)


def share_done(frontend: FrontendCore, now: float, span: float, launched: int = 0, tasks: int = 0) -> float:
    """How much of a simulated replay is done: of the ``tasks`` the ``launched`` ones (a simulated task
    costs about the same early and late in a run, where jobs and virtual time do not: long jobs finish
    last, and queues that build up make a virtual second dearer), else the larger of the jobs finished and
    the virtual time over ``span``."""
    if tasks > 0 and launched > 0:
        return min(1.0, launched / tasks)
    by_time = now / span if span > 0 else 0.0
    return min(1.0, max(frontend.finished / max(1, frontend.total), by_time))


def time_left(shares: list[tuple[float, float]]) -> float | None:
    """Seconds of simulation left, by the ``shares`` done so far (``(wall seconds, share)``, in order):
    the rest at the rate of the second half of the time so far (from the last reading at or before half
    the elapsed time); None before :data:`CALIBRATION` seconds or with nothing done yet. The progress
    bar's ETA, and :func:`wall_estimate`'s."""
    if not shares:
        return None
    elapsed, done = shares[-1]
    if elapsed < CALIBRATION or done <= 0:
        return None
    half = bisect.bisect_right(shares, elapsed / 2, key=lambda s: s[0]) - 1
    since = shares[half] if half >= 0 else (0.0, 0.0)
    rate = (done - since[1]) / (elapsed - since[0]) if elapsed > since[0] else 0.0
    return (1.0 - done) / rate if rate > 0 else elapsed / done - elapsed


def wall_estimate(shares: list[tuple[float, float]], before: float = 0.0, after: float = 0.0) -> str | None:
    """Once a simulated replay ran :data:`CALIBRATION` seconds, one line estimating its whole wall time
    from its ``shares`` done so far (``(wall seconds, share)`` at each progress check, in order), with a
    warning when it looks long; None before then or with nothing done yet. The whole: ``before`` (the
    seconds its set-up took), the simulation, and ``after`` (what writing its results will take).

    The rate is the one of the second half of the time so far (from the last check at or before half
    the elapsed time): a run whose tasks grow dearer once its queues build up (the multi-resource
    baselines over-allocate their nodes, and the fluid model's cost grows with the tasks a node holds)
    shows it there, where the average since the start would still hold the cheap first seconds."""
    left = time_left(shares)
    if left is None:
        return None
    elapsed, done = shares[-1]
    total = before + elapsed + left + after
    line = f"estimate: about {human(total)} of wall time in all (after {human(elapsed)}, {done:.0%} done)"
    if total > LONG_SIMULATION:
        line += (
            " [yellow]— a long simulation: fewer --jobs or --nodes, or 'aviary sweep' to use every core"
            "[/yellow]"
        )
    return line


def print_summary(summary: dict[str, Any], out: Path, console: Console | None = None) -> None:
    """The summary table; its wall clock is the whole run (replay and writing results) when the summary
    came from :func:`run_replay` in this process, with the two parts on a line of their own."""
    console = console or Console()
    run, results = summary.get("run_wall_seconds"), summary.get("results_wall_seconds")
    if run is None or results is None:
        console.print(format_summary_table(summary))
    else:
        console.print(format_summary_table({**summary, "wall_seconds": run}))
        console.print(
            f"wall clock {run:.1f} s in all: replay {run - results:.1f} s, writing results {results:.1f} s"
        )
    console.print(f"results: {out}/jobs.csv, {out}/summary.json")


__all__ = ["print_summary", "run_replay"]
