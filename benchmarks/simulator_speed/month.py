"""The simulator at the scale of the whole Google month: a trace streamed, not loaded.

A trace of the month's size (about 670,000 jobs and 21-25 million tasks: ``aviary trace generate --like
experiments/traces/google_10k.tr --jobs 670000 --out /tmp/month.tr``, since the real 2011 trace cannot be
downloaded here) replayed as ``aviary replay --runtime sim`` would replay it (the same cluster, the same
scaled jobs: time scale 1, no task merging, Poisson arrivals at ``--load``), but with its jobs read as
the replay advances (:func:`~aviary.common.workload.stream_workload`), each finished job written to the
journal and to the rows of ``jobs.csv`` and then forgotten (:class:`~aviary.common.results.StreamedResults`),
and no task table. Prints CPU seconds, peak RSS and the cost per task and per event; writes the results
folder (``jobs.csv``, ``summary.json``, ``journal.jsonl``) to ``--out``.

    python -m aviary.benchmarks.simulator_speed month TRACE --policy eagle [--nodes 12500] [--load 0.8]
        [--jobs N] [--out DIR] [--check]

``--check`` also replays the same jobs as a list (``aviary replay``'s way: every job held) and says whether
``jobs.csv`` and the summary (but its wall seconds) are the same, byte for byte: for small ``--jobs``.
Measure it with ``/usr/bin/time -v`` for the peak RSS of the whole process; a benchmark, not a test
(``docs/measurements.md``, "The simulator at the scale of the whole Google month").
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from aviary.common.frontend import FrontendCore
from aviary.common.journal import Journal
from aviary.common.model import GOOGLE_CUTOFF
from aviary.common.results import SUMMARY_JSON, StreamedResults, write_results
from aviary.common.trace import read_trace
from aviary.common.workload import build_workload, stream_workload
from aviary.launch.drivers.sim import simulate
from aviary.launch.flags.spec import ReplaySpec
from aviary.launch.replay.resolve import testbed_cluster
from aviary.launch.replay.run import job_records


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20


def replay(args: argparse.Namespace, out: Path, *, streamed: bool) -> dict[str, Any]:
    """One replay of the trace, streamed or as a list; its summary (with ``bench``: the costs)."""
    spec = ReplaySpec(policy=args.policy, runtime="sim", nodes=args.nodes, seed=args.seed, load=args.load)
    cluster = testbed_cluster(spec)
    nodes, slots = len(cluster.nodes), max(p.slots for p in cluster.nodes)
    settings: dict[str, Any] = {
        "jobs": args.jobs,
        "sample": "consecutive",
        "start": 0,
        "seed": args.seed,
        "time_scale": 1.0,
        "task_scale": 1.0,
        "nodes": nodes,
        "slots": slots,
        "reference_nodes": spec.reference_nodes,
        "load": args.load,
        "cutoff": GOOGLE_CUTOFF,
    }
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    if streamed:
        jobs: Any = stream_workload(args.trace, **settings)
        count, tasks, work = jobs.count, jobs.tasks, jobs.work
    else:
        jobs = build_workload(read_trace(args.trace), **settings)
        count, tasks = len(jobs), sum(j.tasks for j in jobs)
        work = math.fsum(math.fsum(j.durations) for j in jobs)
    prepared = cpu_seconds() - cpu0
    start = {
        "policy": args.policy,
        "runtime": "sim",
        "nodes": nodes,
        "slots": slots,
        "jobs": count,
        "tasks": tasks,
    }
    sink = StreamedResults(out, args.policy) if streamed else None
    last = [time.perf_counter()]

    def progress(fe: FrontendCore, now: float) -> None:
        if args.quiet or time.perf_counter() - last[0] < 30:
            return
        last[0] = time.perf_counter()
        print(
            f"  {time.perf_counter() - t0:6.0f} s: virtual {now:,.0f} s, {fe.finished:,}/{fe.total:,} jobs "
            f"done, {fe.submitted:,} submitted, {peak_rss_mb():,.0f} MB peak",
            flush=True,
        )

    with Journal(out, start, sink=sink) as journal:
        outcome = simulate(cluster, jobs, progress=progress, journal=journal)
        simulated = cpu_seconds() - cpu0 - prepared
        cpu1 = cpu_seconds()
        journal.take()
        frontend = outcome.frontend
        finished = outcome.stopped is None
        common: dict[str, Any] = {
            "runtime": "sim",
            "nodes": nodes,
            "slots": slots,
            "wall_seconds": outcome.wall_seconds,
            "messages": outcome.messages,
            "counters": Counter(outcome.counters),
            "extra": {"events": outcome.events, "streamed": streamed},
        }
        if sink is not None:
            sink.add_unfinished(frontend)
            summary = sink.write(task_seconds=work if finished else sink.finished_work(), **common)
        else:
            records = job_records(frontend, args.policy)
            summary = write_results(out, records, policy=args.policy, task_seconds=work, **common)
        summary_cpu = cpu_seconds() - cpu1
        journal.end(
            {"finished": summary["finished"], "jobs": summary["jobs"], "interrupted_by": outcome.stopped}
        )
    summary["bench"] = {
        "jobs": count,
        "tasks": tasks,
        "events": outcome.events,
        "prepare_cpu_s": round(prepared, 2),
        "simulate_cpu_s": round(simulated, 2),
        "results_cpu_s": round(summary_cpu, 2),
        "cpu_s": round(cpu_seconds() - cpu0, 2),
        "us_per_task": round((cpu_seconds() - cpu0) / tasks * 1e6, 2),
        "events_per_s": round(outcome.events / simulated),
        "peak_rss_mb": round(peak_rss_mb()),
    }
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--policy", default="sparrow")
    ap.add_argument("--nodes", type=int, default=12500)
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--jobs", type=int, default=None, help="the first N jobs of the trace (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="results folder (default: a temporary one)")
    ap.add_argument("--check", action="store_true", help="also replay as a list: are the results the same?")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="aviary-month-") as tmp:
        out = args.out or Path(tmp) / "streamed"
        summary = replay(args, out, streamed=True)
        bench = summary["bench"]
        print(
            f"{args.policy}, {args.nodes:,} nodes, load {args.load:g}: {bench['jobs']:,} jobs, "
            f"{bench['tasks']:,} tasks, {bench['events']:,} events; {summary['finished']:,} finished"
        )
        print(
            f"cpu {bench['cpu_s']:.1f} s (trace pass {bench['prepare_cpu_s']:.1f}, simulation "
            f"{bench['simulate_cpu_s']:.1f}, results {bench['results_cpu_s']:.1f}); "
            f"{bench['us_per_task']:.2f} us a task, {bench['events_per_s']:,} events/s; "
            f"peak RSS {bench['peak_rss_mb']:,} MB"
        )
        print(
            "jct short p50/p90/p99: "
            + ", ".join(f"{summary['jct']['short'][p]}" for p in ("p50", "p90", "p99"))
        )
        if not args.check:
            return 0
        listed = Path(tmp) / "listed"
        replay(args, listed, streamed=False)
        same_csv = (out / "jobs.csv").read_bytes() == (listed / "jobs.csv").read_bytes()
        a, b = (json.loads((d / SUMMARY_JSON).read_text()) for d in (out, listed))
        for s in (a, b):
            s.pop("wall_seconds")
            s["extra"].pop("streamed")
        print(f"same jobs.csv: {same_csv}; same summary (but wall seconds): {a == b}")
        return 0 if same_csv and a == b else 1


if __name__ == "__main__":
    raise SystemExit(main())
