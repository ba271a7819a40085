"""Kairos on the simulator: whole replays with preemption, exact suspended-time accounting, no estimates."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from typing import Any

import pytest

from aviary.common.effects import Launch, Resume, Suspend
from aviary.common.frontend import FrontendCore
from aviary.common.model import JobSpec
from aviary.launch.cli.main import main
from aviary.launch.drivers.sim import Simulator, simulate
from aviary.launch.policies.registry import build_core, get_policy, policy_cluster
from aviary.worker.las import KairosNodeCore


def heavy_tailed_jobs(n: int, seed: int, *, gap: float = 0.4, estimate_factor: float = 1.0) -> list[JobSpec]:
    """Jobs of 1-4 tasks with Pareto(1.2) durations (mean ~1.2 s, some of 10+ s), Poisson arrivals."""
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += rng.expovariate(1.0 / gap) if i else 0.0
        ds = [min(40.0, 0.2 * rng.paretovariate(1.2)) for _ in range(rng.randint(1, 4))]
        factor = rng.uniform(0.1, 10.0)  # drawn always, so that the factor changes nothing else
        est = sum(ds) / len(ds) * (estimate_factor * factor if estimate_factor != 1.0 else 1.0)
        jobs.append(JobSpec(i, t, ds, est, long=False))
    return jobs


class Recorder:
    """Wraps the Kairos node cores of a simulation and records every executor effect with its time."""

    def __init__(self) -> None:
        self.launch: dict[Any, tuple[float, float]] = {}  # task -> (time, duration)
        self.stops: dict[Any, list[float]] = defaultdict(list)
        self.starts: dict[Any, list[float]] = defaultdict(list)
        self.exits: dict[Any, tuple[float, float]] = {}  # task -> (time, attained as the core saw it)

    def wrap(self, core: KairosNodeCore) -> None:
        def record(fn):
            def wrapped(now, *args):
                effects = fn(now, *args)
                for e in effects:
                    if type(e) is Launch:
                        self.launch[e.task_id] = (now, e.duration)
                    elif type(e) is Suspend:
                        self.stops[e.task_id].append(now)
                    elif type(e) is Resume:
                        self.starts[e.task_id].append(now)
                return effects

            return wrapped

        exit_fn = record(core.on_task_exit)

        def on_exit(now, task_id, ok):
            self.exits[task_id] = (now, core.tasks[task_id].live(now))
            return exit_fn(now, task_id, ok)

        core.on_message = record(core.on_message)
        core.on_timer = record(core.on_timer)
        core.on_task_exit = on_exit


def run_recorded(jobs: list[JobSpec], **params: Any) -> tuple[FrontendCore, Simulator, Recorder]:
    cluster = policy_cluster("kairos", nodes=3, slots=2, bind_ports=False, seed=1, params=params)
    rec = Recorder()
    cores = [build_core(p, cluster) for p in cluster.processes if p.role != "frontend"]
    for core in cores:
        if isinstance(core, KairosNodeCore):
            rec.wrap(core)
    frontend = FrontendCore("frontend", jobs, get_policy("kairos").route(cluster))
    sim = Simulator([*cores, frontend], net_delay=0.001)
    sim.run(frontend=frontend)
    return frontend, sim, rec


def test_kairos_replay_finishes_every_job_and_suspended_tasks_finish_later_by_their_suspension():
    jobs = heavy_tailed_jobs(150, seed=4)
    frontend, sim, rec = run_recorded(jobs, quantum=1.0, kairos_q=2, heartbeat_interval=0.25)
    assert frontend.unfinished() == []
    counters = sim.counters()
    tasks = sum(j.tasks for j in jobs)
    assert counters["tasks_finished"] == counters["tasks_launched"] == len(rec.exits) == tasks
    assert counters["preemptions"] > 20
    parts = ("preemptions_arrival", "preemptions_quantum", "preemptions_starvation")
    assert counters["preemptions"] == sum(counters[k] for k in parts)
    assert counters["preemptions"] == sum(len(v) for v in rec.stops.values())
    assert counters["heartbeats"] == counters["heartbeats_received"] > 0
    preempted = 0
    for task_id, (end, attained) in rec.exits.items():
        start, duration = rec.launch[task_id]
        stops, starts = rec.stops[task_id], rec.starts[task_id]
        assert len(stops) == len(starts)  # every suspension was resumed before the end
        suspended = sum(b - a for a, b in zip(stops, starts, strict=True))
        assert all(a <= b for a, b in zip(stops, starts, strict=True))
        # The task finished later by exactly the time it spent suspended ...
        assert end - start - suspended == pytest.approx(duration, abs=1e-9)
        # ... and the node's account of its attained service is exactly its running time.
        assert attained == pytest.approx(duration, abs=1e-9)
        preempted += bool(stops)
    assert preempted > 10


def test_starvation_guard_kicks_in_under_a_stream_of_young_tasks_and_everything_finishes():
    jobs = heavy_tailed_jobs(150, seed=4, gap=0.3)
    frontend, sim, _ = run_recorded(jobs, quantum=0.5, kairos_q=4, starvation_quanta=1)
    assert frontend.unfinished() == []
    assert sim.counters()["starvation_guards"] > 0


def test_decisions_do_not_depend_on_estimates():
    cluster = policy_cluster("kairos", nodes=3, slots=2, bind_ports=False, params={"quantum": 1.0})
    a = simulate(cluster, heavy_tailed_jobs(100, seed=9), net_delay=0.001)
    b = simulate(cluster, heavy_tailed_jobs(100, seed=9, estimate_factor=3.0), net_delay=0.001)
    assert [j.estimate for j in a.frontend.jobs] != [j.estimate for j in b.frontend.jobs]
    assert a.frontend.times == b.frontend.times and a.counters == b.counters


def test_tie_break_variants_run_and_differ(tmp_path):
    jobs = heavy_tailed_jobs(120, seed=2, gap=0.25)
    out = {}
    for name in ("kairos", "kairos-random", "kairos-sum"):
        cluster = policy_cluster(name, nodes=4, slots=2, bind_ports=False, seed=3, params={"quantum": 1.0})
        res = simulate(cluster, jobs, net_delay=0.001)
        assert res.frontend.unfinished() == []
        out[name] = res.frontend.times
    assert out["kairos"] != out["kairos-random"] and out["kairos"] != out["kairos-sum"]


def test_cli_sim_replay_counts_preemptions_in_the_summary(tmp_path):
    out = tmp_path / "k"
    flags = ["replay", "--runtime", "sim", "--policy", "kairos", "--nodes", "4", "--slots", "2",
             "--jobs", "300", "--start", "3000", "--time-scale", "1000", "--task-scale", "0.002",
             "--load", "1.0", "--seed", "2", "--quiet", "--out", str(out)]  # fmt: skip
    assert main(flags) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == summary["jobs"] == 300
    assert summary["counters"]["preemptions"] > 0
    assert summary["extra"]["params"]["quantum"] == pytest.approx(10.0)  # 10,000 trace s / 1000
    assert summary["extra"]["params"]["kairos_q"] == 2
