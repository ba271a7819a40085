"""Know before you wait: a real replay predicted on the simulator.

The same cluster and jobs on virtual time (usually well under a second) give a real replay's wall time
and utilization in advance (:func:`predict`), one-line notes when the utilization falls far below
``--load`` or the tasks are too short for real processes (:func:`prediction_notes`), and the line
refusing a replay above ``--max-wall`` with the ``--time-scale``, ``--jobs`` or ``--task-scale`` that
would fit, each checked on the simulator (:func:`refusal`).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from itertools import accumulate, takewhile

from rich.console import Console

from ...common.frontend import FrontendCore
from ...common.model import JobSpec
from ...common.workload import merge_tasks, task_count
from ..drivers.sim import simulate
from ..flags.spec import ReplaySpec, RunFailed, UsageError
from .jobs import TAIL_SHARE, TASK_SCALES, arrival_span, google_trace
from .progress import ProgressBar
from .resolved import Prediction, ReplaySetup

PREDICT_LIMIT = 30.0
"""At most this many seconds of wall time for a prediction; a longer one gives a lower bound."""

LOAD_SHORTFALL = 0.75
"""A predicted utilization below this share of ``--load`` gets a note saying why and what to change."""

CONTAINER_START = 0.3
"""Seconds from a docker task's launch to its first instruction on this class of machine (0.2-0.3 s,
``worker/executors.py``): the docker executor counts them as running time, so a task runs at least
this long; the prediction of a ``--executor docker`` replay holds every task to it."""

MIN_TASK = 0.002
"""A median task shorter than this (replay seconds) gets a note: the real runtime's per-task overhead
(about a millisecond) would weigh."""


def started_tasks(setup: ReplaySetup) -> list[JobSpec]:
    """The jobs as the executor will run them: with docker, no task shorter than a container's start
    (:data:`CONTAINER_START`); otherwise as they are."""
    if setup.cluster.executor != "docker":
        return setup.jobs
    return [replace(j, durations=[max(d, CONTAINER_START) for d in j.durations]) for j in setup.jobs]


def predict(setup: ReplaySetup, *, quiet: bool = True, limit: float = PREDICT_LIMIT) -> Prediction:
    """The replay on the simulator: its end (the real replay's wall time, start-up aside) and
    utilization. Cut after ``limit`` seconds of wall time (a lower bound); a transient progress bar on
    stderr when it takes over a second, unless ``quiet``."""
    started = time.monotonic()
    quiet = quiet or not Console(stderr=True).is_terminal  # a transient bar needs a terminal
    with ExitStack() as stack:
        bar: ProgressBar | None = None

        def progress(frontend: FrontendCore, now: float) -> None:
            nonlocal bar
            if bar is None and not quiet and time.monotonic() - started > 1.0:
                arrivals = max(j.submit for j in setup.jobs)
                label = "predicting"
                bar = ProgressBar(
                    len(setup.jobs), label, True, virtual=True, last_arrival=arrivals, transient=True
                )
                stack.enter_context(bar)
            if bar is not None:
                bar.update(frontend, now)

        outcome = simulate(
            setup.cluster,
            started_tasks(setup),
            net_delay=setup.net_delay,
            progress=progress,
            progress_every=5_000,
            wall_limit=limit,
        )
    if outcome.error is not None:  # a bug of the policy: no process is started for it
        raise RunFailed(
            f"policy {setup.policy.name!r}: {outcome.error} (predicting the run on the simulator: no process "
            "was started)"
        )
    times = outcome.frontend.times
    finishes = [times[j.job_id].finish for j in setup.jobs]
    done = [f for f in finishes if f is not None]
    wall = outcome.virtual_seconds if outcome.stopped else max(done, default=0.0)
    utilization = None  # the DAG policies' is the dominant resource's: not estimated here
    if wall > 0 and not setup.policy.dag:
        work = math.fsum(math.fsum(j.durations) for j in setup.jobs)
        utilization = work / (sum(p.slots for p in setup.cluster.nodes) * wall)
    return Prediction(wall, utilization, finishes, time.monotonic() - started, outcome.stopped is None)


def human(seconds: float) -> str:
    """A duration for people: 850 ms, 18.5 s, 4.2 min, 34.2 h."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def as_flag(seconds: float) -> str:
    """A duration as ``--duration`` / ``--max-wall`` take it: 90s, 5m, 2h."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _round_up(x: float) -> float:
    """``x`` rounded up to two significant digits."""
    if x <= 0:
        return x
    step = 10 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / step - 1e-9) * step


def trace_index(spec: ReplaySpec, jobs: list[JobSpec]) -> int | None:
    """The index in the Google trace of the first replayed job (None if not found)."""
    first = min(jobs, key=lambda j: j.job_id).line
    return next((i for i, tj in enumerate(google_trace(spec.trace)) if tj.line == first), None)


def _flat(spec: ReplaySpec, setup: ReplaySetup) -> bool:
    """The replay is of the Google trace's flat jobs (a slot-based policy)."""
    return spec.workload == "google" and not setup.policy.dag


def prediction_notes(spec: ReplaySpec, setup: ReplaySetup, prediction: Prediction) -> list[str]:
    """One line each: the predicted utilization far below ``--load`` (why, and what to change), tasks
    too short for real processes."""
    jobs, notes = setup.jobs, []
    load, util = setup.extra.get("load"), prediction.utilization
    flat = _flat(spec, setup)
    if load is not None and util is not None and prediction.complete and util < LOAD_SHORTFALL * load:
        head = f"predicted utilization {util:.0%}, not the --load {load:g} asked"
        span = arrival_span(jobs)
        long_job = max(jobs, key=lambda j: max(j.durations))
        longest = max(long_job.durations)
        factor = setup.extra.get("task_scale")
        if flat and factor is not None and factor < 1 and longest > TAIL_SHARE * span:
            by_line = {tj.line: tj for tj in google_trace(spec.trace)}
            sampled = [by_line[j.line] for j in jobs]
            scale = float(setup.extra["time_scale"])

            def longest_at(f: float) -> float:
                return max(max(merge_tasks(t.durations, task_count(t.tasks, f))) for t in sampled) / scale

            fits = next((f for f in TASK_SCALES if f > factor and longest_at(f) <= TAIL_SHARE * span), None)
            what = (
                f"--task-scale {fits:g} splits them (or pick another --start)"
                if fits is not None
                else "even unmerged they do: pick another --start, or more --jobs"
            )
            notes.append(
                f"{head}: task merging (--task-scale {factor:g}) makes tasks of up to "
                f"{human(longest)} (job {long_job.job_id}, trace line {long_job.line}), "
                f"longer than a quarter of the sample's {human(span)} of arrivals; {what}"
            )
        else:
            done = [(f, j) for f, j in zip(prediction.finishes, jobs, strict=True) if f is not None]
            last = max(done, key=lambda fj: fj[0])[1] if done else long_job
            where = f" (trace line {last.line})" if flat else ""
            notes.append(
                f"{head}: job {last.job_id}{where} with {human(math.fsum(last.durations))} of task time "
                f"keeps the cluster busy {human(max(0.0, prediction.wall - span))} after the last arrival, "
                "mostly idle; pick another --start, or more --jobs"
            )
    if setup.cluster.executor == "docker":
        short = sum(d < CONTAINER_START for j in jobs for d in j.durations)
        tasks = sum(len(j.durations) for j in jobs)
        if short:
            notes.append(
                f"{short} of {tasks} tasks are shorter than a container's start "
                f"(~{CONTAINER_START:g} s with --executor docker): the prediction runs them that long"
            )
    median = statistics.median(d for j in jobs for d in j.durations)
    if median < MIN_TASK:
        notes.append(
            f"the median task runs {human(median)} at --time-scale {setup.extra['time_scale']:g}, near the "
            "real runtime's per-task overhead (about 1 ms): the run may take longer than predicted and "
            "its times are noisy; fewer --jobs or a longer --duration"
        )
    return notes


def refusal(
    spec: ReplaySpec,
    setup: ReplaySetup,
    prediction: Prediction,
    limit: float,
    *,
    rebuild: Callable[[ReplaySpec], ReplaySetup],
    rescalable: bool,
) -> str:
    """The one line refusing a replay predicted to outlast ``limit``: the ``--time-scale`` (if
    ``rescalable``: not a running testbed whose parameters are for its own), ``--jobs`` (from the same
    start) or ``--task-scale`` that would fit, each checked on the simulator with the set-up ``rebuild``
    makes of the changed spec."""
    target = 0.8 * limit
    cheap = prediction.seconds < 0.5  # each check is one more prediction
    fits: list[str] = []

    def check(changed: ReplaySpec) -> Prediction | None:
        try:
            return predict(rebuild(changed), limit=min(PREDICT_LIMIT, 5.0))
        except UsageError:
            return None

    scale = float(setup.extra["time_scale"])
    want = _round_up(scale * prediction.wall / target)
    if rescalable:
        for _ in range(3 if cheap else 0):
            again = check(replace(spec, time_scale=want, duration=None))
            if again is None or (again.complete and again.wall <= limit):
                break
            want = _round_up(want * again.wall / target)
        fits.append(f"--time-scale {want:g}")
    if _flat(spec, setup) and cheap and spec.sample == "consecutive" and len(setup.jobs) > 1:
        start = trace_index(spec, setup.jobs)
        ends = accumulate((math.inf if f is None else f for f in prediction.finishes), max)
        count = sum(1 for _ in takewhile(lambda end: end <= target, ends))  # the first jobs done in time
        for _ in range(3):
            if count < 2 or start is None:
                break
            again = check(replace(spec, jobs=count, start=start, time_scale=scale, duration=None))
            if again is not None and again.complete and again.wall <= limit:
                fits.append(f"--jobs {count} --start {start}")
                break
            count //= 2
        factor = setup.extra.get("task_scale")
        for bigger in [f for f in TASK_SCALES if factor is not None and f > factor][:3]:
            again = check(replace(spec, task_scale=bigger, time_scale=scale, duration=None))
            if again is not None and again.complete and again.wall <= limit:
                fits.append(f"--task-scale {bigger:g}")
                break
    bound = "" if prediction.complete else "at least "
    fit = f"{' or '.join(fits)} would fit" if fits else "fewer --jobs would fit"
    return (
        f"predicted {bound}{human(prediction.wall)} of replay (simulated in {prediction.seconds:.1f} s), "
        f"above --max-wall {as_flag(limit)}: {fit} (or --duration {as_flag(target)} picks the time "
        "scale; --max-wall raises the limit; --yes runs anyway)"
    )


STARTUP_SECONDS = (1.5, 0.02)
"""A local testbed's start, from the first process started to every one registered: this much, plus
this much a process (``extra.startup_seconds``: about 2 s for 11 processes, 16-26 s for 1,000 nodes)."""


def whole_wall(setup: ReplaySetup) -> float | None:
    """The whole real run's wall time to expect: the predicted replay, the testbed's start (none with
    ``--connect``) and the results (a second)."""
    pred = setup.prediction
    if pred is None:
        return None
    base, each = STARTUP_SECONDS
    start = 0.0 if setup.connect else base + each * (len(setup.cluster.units()) - 1)
    return pred.wall + start + 1.0


def print_prediction(setup: ReplaySetup, console: Console) -> None:
    """The prediction of a real replay, and its notes, before it starts."""
    pred = setup.prediction
    if pred is None:
        return
    bound = "" if pred.complete else "at least "
    util = "" if pred.utilization is None else f", utilization {pred.utilization:.0%}"
    load = setup.extra.get("load")
    asked = "" if load is None or pred.utilization is None else f" (--load {load:g})"
    starting = (
        "" if setup.connect else f" plus a few seconds to start {len(setup.cluster.units()) - 1} processes"
    )
    console.print(
        f"predicted on the simulator in {human(pred.seconds)}: {bound}{human(pred.wall)} of replay for "
        f"{len(setup.jobs)} jobs at --time-scale {setup.extra['time_scale']:g}{starting}{util}{asked}"
    )
    total = whole_wall(setup)
    if total is not None:
        console.print(f"estimate: about {human(total)} of wall time in all (start, replay, results)")
    for note in pred.notes:
        console.print(f"[yellow]note: {note}[/yellow]")
