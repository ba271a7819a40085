"""``aviary trace convert|generate|sample|info`` (``docs/traces.md``): each streams its input and writes
its output as it goes, into a temporary file renamed at the end (an interrupted run leaves no half
trace); a progress bar with an ETA on a terminal."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ...common.trace import TraceError, TraceJob, format_job
from ..flags.spec import UsageError
from .trace_out import progress_bar, write_lines


def cmd_generate(args: argparse.Namespace) -> int:
    from ...common.traces.generate import generate_like, header

    jobs = generate_like(args.like, args.jobs, args.seed)
    with progress_bar("generate", args.jobs, args.quiet) as show:

        def shown() -> Iterator[TraceJob]:
            for job in jobs:
                yield job
                if job.line % 1000 == 0:
                    show(job.line)

        lines = (format_job(job) for job in shown())
        n = write_lines(args.out, header(str(args.like), args.jobs, args.seed), lines)
    print(f"written: {args.out} ({n:,} synthetic jobs like {args.like}, seed {args.seed})")
    return 0


def _fmt(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:,.1f}"


def cmd_info(args: argparse.Namespace) -> int:
    from ...common.traces.stats import RELATIVE_ERROR, trace_stats

    s = trace_stats(args.trace, args.cutoff)
    if not s.jobs:
        raise UsageError(f"{args.trace}: no jobs")
    qs = (0.5, 0.9, 0.99)
    data: dict[str, Any] = {
        "trace": str(args.trace),
        "synthetic": s.synthetic,
        "jobs": s.jobs,
        "tasks": s.tasks,
        "cutoff_s": s.cutoff,
        "long_jobs": s.long_jobs,
        "long_tasks": s.long_tasks,
        "task_seconds": s.task_seconds,
        "long_task_seconds_share": s.long_task_seconds / s.task_seconds if s.task_seconds else 0.0,
        "submit_span_s": s.span,
        "largest_job": s.largest_job,
        "jobs_with_demands": s.with_demands,
        "task_duration_s": {f"p{round(q * 100)}": s.duration_quantile(q) for q in qs},
        "short_task_duration_s": {f"p{round(q * 100)}": s.duration_quantile(q, short_only=True) for q in qs},
        "tasks_per_job": {f"p{round(q * 100)}": s.size_quantile(q) for q in qs},
        "duration_quantile_relative_error": RELATIVE_ERROR,
        "offered_load": {
            "nodes": args.nodes,
            "slots": args.slots,
            "load": s.offered_load(args.nodes, args.slots),
        },
    }
    plot = None if args.no_plot else (args.plot or args.trace.with_name(args.trace.name + ".png"))
    if plot is not None:
        draw(s, plot)
        data["figure"] = str(plot)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{args.trace}{' (SYNTHETIC)' if s.synthetic else ''}")
    print(f"  jobs {s.jobs:,}, tasks {s.tasks:,}; largest job {s.largest_job:,} tasks")
    print(
        f"  long jobs (mean task duration >= {s.cutoff:g} s): {s.long_jobs:,} "
        f"({100 * s.long_jobs / s.jobs:.2f} %), {100 * data['long_task_seconds_share']:.1f} % of task-seconds"
    )
    print(f"  task-seconds {s.task_seconds:.4g}; submit times span {s.span:,.0f} s")
    d, sd, tp = data["task_duration_s"], data["short_task_duration_s"], data["tasks_per_job"]
    print(
        f"  task duration s   p50 {_fmt(d['p50'])}  p90 {_fmt(d['p90'])}  p99 {_fmt(d['p99'])}  "
        f"(±{RELATIVE_ERROR:.1%})"
    )
    print(f"    short jobs' only p50 {_fmt(sd['p50'])}  p90 {_fmt(sd['p90'])}  p99 {_fmt(sd['p99'])}")
    print(f"  tasks per job     p50 {tp['p50']:,.0f}  p90 {tp['p90']:,.0f}  p99 {tp['p99']:,.0f}")
    load = data["offered_load"]["load"]
    print(
        f"  offered load on {args.nodes:,} nodes x {args.slots} slots at the trace's arrivals: {load:.3f} "
        f"({load * args.nodes:,.0f} single-slot nodes kept busy)"
    )
    if s.with_demands:
        print(f"  jobs with cpu/mem requests: {s.with_demands:,}")
    if plot is not None:
        print(f"  figure: {plot}")
    return 0


def draw(s: Any, path: Path) -> None:
    """CDFs of task durations (all, short jobs', long jobs') and of tasks per job."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...common.traces.stats import _middle

    def cdf(counts: Any, value: Callable[[int], float]) -> tuple[list[float], list[float]]:
        total = sum(counts.values()) or 1
        xs, ys, seen = [], [], 0
        for key in sorted(counts):
            seen += counts[key]
            xs.append(max(value(key), 1e-3))
            ys.append(seen / total)
        return xs, ys

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for label, counts in (
        ("all", s.durations),
        ("short jobs", s.short_durations),
        ("long jobs", s.long_durations()),
    ):
        if counts:
            a.step(*cdf(counts, _middle), where="post", label=label)
    a.axvline(s.cutoff, color="grey", linestyle=":", label=f"cutoff {s.cutoff:g} s")
    a.set(xscale="log", xlabel="task duration (s)", ylabel="CDF of tasks", title="Task durations")
    a.legend()
    b.step(*cdf(s.sizes, float), where="post", label="all")
    b.set(xscale="log", xlabel="tasks per job", ylabel="CDF of jobs", title="Job sizes")
    fig.suptitle(f"{path.stem}: {s.jobs:,} jobs, {s.tasks:,} tasks" + (" (synthetic)" if s.synthetic else ""))
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write the figure: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)


def cmd_trace(args: argparse.Namespace) -> int:
    """``aviary trace ACTION``: a bad input is one line naming file, line and field (exit 2)."""
    action = {"generate": cmd_generate, "info": cmd_info, "convert": cmd_convert, "sample": cmd_sample}
    try:
        return action[args.trace_command](args)
    except TraceError as exc:
        raise UsageError(str(exc)) from None


def cmd_convert(args: argparse.Namespace) -> int:
    from .trace_convert import convert

    return convert(args)


def cmd_sample(args: argparse.Namespace) -> int:
    from .trace_convert import sample

    return sample(args)
