"""What the journal and the task table cost (common/journal.py, common/tasktable.py): the same replays
with and without, alternated, in one run.

    python -m aviary.benchmarks.runtime_overhead journal  # 10,000-job simulated replay x 3, bench x 3
    python -m aviary.benchmarks.runtime_overhead journal --rounds 5 --skip-bench
    python -m aviary.benchmarks.runtime_overhead journal --what tasks  # the task table on / off, journal on

Simulated: ``aviary replay --runtime sim --jobs 10000`` (the bundled Google sample on 10 nodes), run in
this process with the journal on and off (``ReplaySetup.journal``), the two alternated ``--rounds`` times;
reported: the simulation's wall seconds (``summary.json``'s ``wall_seconds``), the whole
``run_replay`` (the results files and the journal's end included) and its CPU seconds (``cpu_s``, the
least sensitive to other work on the machine), each run's and the median ratio on / off. Alternated runs
on a shared machine differ by more than the journal costs, so each run with the journal also times the
journal's own calls (``journal_share``: their seconds over the simulation's); ``1 / (1 - share)`` is the
slowdown they make.

Real: the bench's round trip (300 one-task no-op jobs 5 ms apart) and no-op throughput (50 jobs of 100
no-op tasks) on a local testbed of 4 timer nodes (Sparrow, ZeroMQ), the frontend session with and
without a journal, alternated on the same testbed; reported: round trip p50 and p99 (ms), no-op tasks
per second, and their ratios on / off. Ratios, not times: the machine is shared.

``--what tasks`` measures the task table the same way: the journal on in every run, its task table on
and off (``ReplaySetup.task_table``; on the real testbed the nodes' ``TaskRecords`` batches too), and
``journal_share`` then includes the table's rows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from aviary.common.frontend import round_robin
from aviary.common.journal import Journal
from aviary.common.model import JobSpec
from aviary.launch.drivers.local import LocalTestbed
from aviary.launch.drivers.real import FrontendSession
from aviary.launch.flags.spec import ReplaySpec
from aviary.launch.replay.resolve import setup_replay, testbed_cluster
from aviary.launch.replay.run import run_replay


class TimedJournal(Journal):
    """A journal that adds up the seconds spent in its calls (what the driver's thread pays)."""

    spent = 0.0
    inside = False

    def note(self, frontend: Any) -> None:
        self._timed(super().note, frontend)

    def poll(self) -> None:
        self._timed(super().poll)

    def _timed(self, call: Any, *args: Any) -> None:
        if TimedJournal.inside:  # note() polls: counted once
            call(*args)
            return
        TimedJournal.inside = True
        started = time.perf_counter()
        try:
            call(*args)
        finally:
            TimedJournal.spent += time.perf_counter() - started
            TimedJournal.inside = False


def simulated(on: bool, jobs: int, root: Path, what: str = "journal") -> dict[str, float]:
    from aviary.launch.replay import run

    out = Path(tempfile.mkdtemp(dir=root))
    setup = setup_replay(ReplaySpec(runtime="sim", jobs=jobs, out=out, force=True), quiet=True)
    setup.journal = on or what == "tasks"
    setup.task_table = on
    TimedJournal.spent = 0.0
    run.Journal = TimedJournal  # type: ignore[misc]  # the replay's journal, timed
    started, cpu = time.perf_counter(), time.process_time()
    try:
        summary = run_replay(setup, quiet=True)
    finally:
        run.Journal = Journal  # type: ignore[misc]
    total, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert summary["finished"] == jobs and (out / "tasks.csv").exists() == on
    figures = {"sim_s": summary["wall_seconds"], "replay_s": round(total, 3), "cpu_s": round(cpu, 3)}
    if setup.journal:
        figures["journal_share"] = round(TimedJournal.spent / summary["wall_seconds"], 5)
    return figures


async def bench_once(cluster: Any, jobs: list[JobSpec], dead: Any, journal: Journal | None) -> Any:
    route = round_robin([p.name for p in cluster.processes if p.role == "scheduler"])  # Sparrow's
    async with FrontendSession(cluster, jobs, route, dead=dead, journal=journal) as session:
        await session.registered()
        await session.replay(stall_timeout=30.0, tick=0.005)  # as the bench's measure_replay
        if session.problems:
            raise RuntimeError("; ".join(session.problems))
    if journal is not None:
        journal.close()
    return session.core


def real(on: bool, bed: LocalTestbed, cluster: Any, root: Path, what: str = "journal") -> dict[str, float]:
    def journal(jobs: list[JobSpec]) -> Journal | None:
        if not on and what == "journal":
            return None
        return Journal(
            tempfile.mkdtemp(dir=root), {"bench": True}, tasks=jobs if on and what == "tasks" else None
        )

    jobs = [JobSpec(i, 0.005 * i, [0.0], 0.0, False) for i in range(300)]
    core = asyncio.run(bench_once(cluster, jobs, bed.dead, journal(jobs)))
    rtts = sorted((t.finish - t.submit) * 1000 for t in core.times.values())
    jobs = [JobSpec(i, 0.0, [0.0] * 100, 0.0, False) for i in range(50)]
    core = asyncio.run(bench_once(cluster, jobs, bed.dead, journal(jobs)))
    makespan = max(t.finish or 0.0 for t in core.times.values())
    return {
        "roundtrip_p50_ms": round(statistics.median(rtts), 3),
        "roundtrip_p99_ms": round(rtts[int(0.99 * (len(rtts) - 1))], 3),
        "noop_tasks_per_s": round(5000 / makespan, 1),
    }


def ratios(runs: list[tuple[bool, dict[str, float]]]) -> dict[str, float]:
    """Each figure's median with the journal over its median without."""
    out = {}
    for key in runs[-1][1]:  # the last run is without the journal: its figures only
        on = statistics.median(r[key] for j, r in runs if j)
        off = statistics.median(r[key] for j, r in runs if not j)
        out[key] = round(on / off, 4) if off else float("nan")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="each of on and off this many times (default 3)")
    ap.add_argument("--jobs", type=int, default=10_000, help="the simulated replay's jobs (default 10000)")
    ap.add_argument("--skip-bench", action="store_true", help="the simulated replay only")
    ap.add_argument("--what", choices=("journal", "tasks"), default="journal", help="what is on and off")
    args = ap.parse_args(argv)
    what = args.what
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="aviary-journal-cost-") as tmp:
        root = Path(tmp)
        sim: list[tuple[bool, dict[str, float]]] = []
        for _ in range(args.rounds):
            for on in (True, False):
                sim.append((on, simulated(on, args.jobs, root, what)))
                print(f"sim {what}={'on ' if on else 'off'} {sim[-1][1]}", flush=True)
        share = statistics.median(r["journal_share"] for j, r in sim if j)
        report["sim"] = {"runs": sim, "on_over_off": ratios(sim) | {"journal_share": share}}
        if not args.skip_bench:
            spec = ReplaySpec(policy="sparrow", nodes=4, slots=1, schedulers=1, executor="timer")
            cluster = testbed_cluster(spec, bind_ports=True)
            bench: list[tuple[bool, dict[str, float]]] = []
            with LocalTestbed(cluster, root / "testbed") as bed:
                for _ in range(args.rounds):
                    for on in (True, False):
                        bench.append((on, real(on, bed, cluster, root, what)))
                        print(f"bench {what}={'on ' if on else 'off'} {bench[-1][1]}", flush=True)
            report["bench"] = {"runs": bench, "on_over_off": ratios(bench)}
    print(json.dumps({k: v["on_over_off"] for k, v in report.items()}, indent=2))


if __name__ == "__main__":
    main()
