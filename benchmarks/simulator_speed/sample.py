"""Simulator benchmark: the whole bundled 10,000-job Google sample on 5,000 single-slot nodes.

Sparrow with probe ratio 2, the trace's own arrival times, durations in trace seconds (time scale 1)
and no task-count scaling: 312,558 tasks. Prints wall seconds, events, events/s and peak RSS; the
target is at most 120 s of wall time and under 4 GB on a 2-core machine.

    python -m aviary.benchmarks.simulator_speed sample [--jobs N] [--nodes N] [--schedulers N]
        [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import time
from pathlib import Path

from aviary.common.model import JobSpec
from aviary.common.trace import read_trace
from aviary.common.workload import build_workload
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import policy_cluster

TRACE = Path(__file__).resolve().parents[2] / "experiments" / "traces" / "google_10k.tr"


def load_jobs(path: Path, limit: int | None) -> list[JobSpec]:
    """The trace as a replay at time scale 1 with the trace's own arrivals (first job at 0)."""
    return build_workload(read_trace(path), jobs=limit, start=0, keep_arrivals=True, scale_tasks=False)


def peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs only (default: all)")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--schedulers", type=int, default=10)
    ap.add_argument("--probe-ratio", type=float, default=2.0)
    ap.add_argument("--net-delay", type=float, default=0.0005)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", type=Path, default=None, help="run under cProfile, write stats here")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    jobs = load_jobs(args.trace, args.jobs)
    load_s = time.perf_counter() - t
    cluster = policy_cluster(
        "sparrow",
        nodes=args.nodes,
        schedulers=args.schedulers,
        seed=args.seed,
        params={"probe_ratio": args.probe_ratio},
        bind_ports=False,
    )
    tasks = sum(j.tasks for j in jobs)
    print(
        f"{len(jobs)} jobs, {tasks} tasks, {args.nodes} nodes, {args.schedulers} schedulers "
        f"(trace read in {load_s:.1f} s)",
        flush=True,
    )

    last = [time.perf_counter()]

    def progress(frontend, now: float) -> None:
        if args.quiet or time.perf_counter() - last[0] < 5:
            return
        last[0] = time.perf_counter()
        print(
            f"  virtual {now:,.0f} s: {frontend.finished}/{len(frontend.jobs)} jobs done, "
            f"{frontend.submitted} submitted",
            flush=True,
        )

    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    out = simulate(cluster, jobs, net_delay=args.net_delay, progress=progress)
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.profile)
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(25)

    unfinished = out.frontend.unfinished()
    print(f"wall seconds     {out.wall_seconds:.1f}")
    print(f"events           {out.events:,}")
    print(f"events/s         {out.events / out.wall_seconds:,.0f}")
    print(f"virtual seconds  {out.virtual_seconds:,.0f}")
    print(f"peak RSS         {peak_rss_mb():,.0f} MB")
    print(f"jobs finished    {len(jobs) - len(unfinished)}/{len(jobs)}")
    print("messages         " + ", ".join(f"{k}={v:,}" for k, v in sorted(out.messages.items())))
    return 0 if not unfinished else 1


if __name__ == "__main__":
    raise SystemExit(main())
