"""The simulator driver (launch/drivers/sim.py): the real cores on virtual time."""

from __future__ import annotations

import random
from typing import Any

import pytest

from aviary.common.cluster import local_cluster
from aviary.common.core import Core
from aviary.common.effects import CancelTimer, Kill, Launch, Resume, Send, SetTimer, Suspend
from aviary.common.frontend import FrontendCore
from aviary.common.messages import GetTask, NoTask
from aviary.common.model import JobSpec
from aviary.launch.drivers.sim import CoreError, Simulator, simulate
from aviary.launch.policies.registry import policy_cluster


def job(job_id: int, submit: float, *durations: float) -> JobSpec:
    return JobSpec(job_id, submit, list(durations), sum(durations) / len(durations), long=False)


def completion(out: Any) -> dict[int, float]:
    return {i: t.finish - t.submit for i, t in out.frontend.times.items()}


# --- whole runs on the real cores ------------------------------------------------------------------


def test_tiny_sparrow_cluster_runs_jobs_to_completion() -> None:
    cluster = local_cluster(nodes=3, slots=2, schedulers=2, seed=1)
    jobs = [job(0, 0.0, 1.0, 2.0, 0.5), job(1, 0.1, 3.0), job(2, 0.2, 0.3, 0.3, 0.3, 0.3), job(3, 5.0, 1.5)]
    d = 0.01
    out = simulate(cluster, jobs, net_delay=d)
    assert out.frontend.done and out.frontend.unfinished() == []
    # Sparrow needs SubmitJob, Probe, GetTask, AssignTask, TaskFinished, JobDone: six network hops.
    for j in jobs:
        t = out.frontend.times[j.job_id]
        assert t.finish - t.submit >= max(j.durations) + 6 * d - 1e-9
        assert t.submit <= t.first_start <= t.finish
    tasks = sum(j.tasks for j in jobs)
    assert out.messages["SubmitJob"] == out.messages["JobDone"] == len(jobs)
    assert out.messages["AssignTask"] == out.messages["TaskFinished"] == tasks
    assert out.counters["tasks_launched"] == out.counters["tasks_finished"] == tasks
    assert not any(k in out.messages for k in ("Hello", "Register", "GetStats", "Shutdown", "Stats"))
    # The run stops at the last JobDone.
    assert out.virtual_seconds == max(t.finish for t in out.frontend.times.values())
    assert out.events > 0 and out.wall_seconds > 0
    assert set(out.cores) == {p.name for p in cluster.processes}


def test_lone_job_on_an_idle_cluster_takes_its_longest_task_plus_the_round_trips() -> None:
    d = 0.25
    out = simulate(local_cluster(nodes=4, slots=1, schedulers=1), [job(0, 0.0, 2.0, 7.0)], net_delay=d)
    assert completion(out)[0] == pytest.approx(7.0 + 6 * d)
    # The scheduler measures the first start from the job's arrival there: Probe and GetTask.
    assert out.frontend.times[0].first_start == pytest.approx(2 * d)
    out = simulate(
        local_cluster(nodes=2, slots=1, schedulers=0, policy="fifo", central=True),
        [job(0, 0.0, 2.0, 7.0)],
        net_delay=d,
    )
    assert completion(out)[0] == pytest.approx(7.0 + 4 * d)  # SubmitJob, PlaceTask, TaskFinished, JobDone


def contended(seed: int) -> Any:
    rng = random.Random(7)
    jobs = [job(i, i * 0.05, *(rng.uniform(0.1, 3.0) for _ in range(rng.randint(1, 4)))) for i in range(40)]
    return simulate(
        policy_cluster("sparrow", nodes=6, slots=1, schedulers=2, seed=seed, bind_ports=False),
        jobs,
        net_delay=0.001,
    )


def test_runs_are_deterministic_and_the_seed_changes_probe_choices() -> None:
    a, b, c = contended(0), contended(0), contended(1)
    assert completion(a) == completion(b)
    assert a.messages == b.messages and a.counters == b.counters and a.events == b.events
    probes = {n: core.counters["probes"] for n, core in a.cores.items() if n.startswith("node")}
    assert probes == {n: core.counters["probes"] for n, core in b.cores.items() if n.startswith("node")}
    # Another cluster seed: other probe targets, hence other times.
    assert probes != {n: core.counters["probes"] for n, core in c.cores.items() if n.startswith("node")}
    assert completion(a) != completion(c)


def test_progress_is_reported_with_the_frontend_and_virtual_time() -> None:
    seen: list[tuple[int, float]] = []
    jobs = [job(i, float(i), 0.5) for i in range(50)]
    simulate(
        policy_cluster("sparrow", nodes=2, schedulers=1, bind_ports=False),
        jobs,
        progress=lambda f, now: seen.append((f.finished, now)),
        progress_every=10,
    )
    assert len(seen) >= 10
    assert [s[1] for s in seen] == sorted(s[1] for s in seen)
    assert seen[-1][0] > seen[0][0]


def test_a_frontend_sending_nowhere_leaves_jobs_unfinished_and_counts_the_error() -> None:
    frontend = FrontendCore("frontend", [job(0, 0.0, 1.0), job(1, 1.0, 1.0)], lambda j, n: "ghost")
    sim = Simulator([frontend])
    sim.run(frontend=frontend)
    assert frontend.unfinished() == [0, 1]
    assert sim.counters()["error.unknown-peer"] == 2
    assert sim.messages() == {}


def test_unbound_cluster_matches_local_cluster_names() -> None:
    a = policy_cluster(
        "sparrow", nodes=5, slots=2, schedulers=3, seed=4, short_partition=0.2, bind_ports=False
    )
    b = local_cluster(nodes=5, slots=2, schedulers=3, seed=4, short_partition=0.2)
    assert [(p.name, p.role, p.slots, p.partition) for p in a.processes] == [
        (p.name, p.role, p.slots, p.partition) for p in b.processes
    ]
    assert [p.role for p in policy_cluster("fifo", nodes=2, bind_ports=False).processes] == [
        "frontend",
        "central",
        "node",
        "node",
    ]


# --- the driver on fake cores --------------------------------------------------------------------------


class Script(Core):
    """Runs a script: ``{time: [effects]}`` applied at those virtual times; records what it sees."""

    def __init__(self, name: str, script: dict[float, list[Any]]) -> None:
        super().__init__(name)
        self.script = script
        self.exits: list[tuple[float, Any, bool]] = []
        self.fired: list[tuple[float, Any]] = []
        self.got: list[tuple[float, str, Any]] = []

    def start(self, now: float) -> list[Any]:
        return [SetTimer(("at", t), t) for t in self.script]

    def on_timer(self, now: float, key: Any) -> list[Any]:
        self.fired.append((now, key))
        return list(self.script.get(key[1], [])) if key[0] == "at" else []

    def on_task_exit(self, now: float, task_id: Any, ok: bool) -> list[Any]:
        self.exits.append((now, task_id, ok))
        return []

    def on_message(self, now: float, sender: str, msg: Any) -> list[Any]:
        self.got.append((now, sender, msg))
        return []


def run_script(script: dict[float, list[Any]]) -> tuple[Script, Simulator]:
    node = Script("n", script)
    sim = Simulator([node])
    sim.run()
    return node, sim


T = (0, 0)


def test_a_task_suspended_for_x_finishes_x_later_exactly() -> None:
    node, _ = run_script({0.0: [Launch(T, 5.0)], 1.0: [Suspend(T)], 3.0: [Resume(T)]})
    assert node.exits == [(7.0, T, True)]
    node, _ = run_script(
        {0.5: [Launch(T, 4.0)], 1.5: [Suspend(T)], 2.0: [Resume(T)], 3.0: [Suspend(T)], 13.0: [Resume(T)]}
    )
    assert node.exits == [(0.5 + 4.0 + 0.5 + 10.0, T, True)]


def test_kill_ends_a_task_at_once_and_its_exit_never_comes() -> None:
    node, sim = run_script({0.0: [Launch(T, 5.0), Launch((0, 1), 1.0)], 2.0: [Kill(T)]})
    assert node.exits == [(1.0, (0, 1), True), (2.0, T, False)]
    assert sim.counters()["executor.killed"] == 1
    node, _ = run_script({0.0: [Launch(T, 5.0)], 1.0: [Suspend(T)], 2.0: [Kill(T)], 3.0: [Resume(T)]})
    assert node.exits == [(2.0, T, False)]


def test_unknown_and_redundant_executor_requests_are_ignored_and_counted() -> None:
    node, sim = run_script(
        {
            0.0: [Suspend(T), Resume(T), Kill(T), Launch(T, 2.0), Launch(T, 9.0), Resume(T)],
            1.0: [Suspend(T), Suspend(T)],
        }
    )
    assert node.exits == []  # suspended forever
    c = sim.counters()
    assert (c["executor.unknown_suspend"], c["executor.unknown_resume"], c["executor.unknown_kill"]) == (
        1,
        1,
        1,
    )
    assert (
        c["executor.duplicate_launch"],
        c["executor.redundant_resume"],
        c["executor.redundant_suspend"],
    ) == (
        1,
        1,
        1,
    )


def test_an_exit_is_an_event_of_its_own_after_the_effects() -> None:
    node, _ = run_script({1.0: [Launch(T, 0.0), Launch((0, 1), -3.0)]})
    assert node.exits == [(1.0, T, True), (1.0, (0, 1), True)]


def test_timers_are_replaced_and_cancelled_by_key() -> None:
    node, sim = run_script(
        {0.0: [SetTimer("x", 5.0), SetTimer("x", 1.0), SetTimer("y", 2.0)], 1.5: [CancelTimer("y")]}
    )
    assert [f for f in node.fired if f[1] in ("x", "y")] == [(1.0, "x")]
    assert sim.now == 1.5


def test_messages_between_a_pair_keep_their_order_and_take_net_delay() -> None:
    a = Script("a", {0.0: [Send("b", GetTask(1)), Send("b", GetTask(2))], 0.5: [Send("b", NoTask(3))]})
    b = Script("b", {})
    sim = Simulator([a, b], net_delay=0.25)
    sim.run()
    assert b.got == [(0.25, "a", GetTask(1)), (0.25, "a", GetTask(2)), (0.75, "a", NoTask(3))]
    assert sim.messages() == {"GetTask": 2, "NoTask": 1}
    sim = Simulator(
        [
            Script("a", {0.0: [Send(name, GetTask(i)) for i, name in enumerate("bbbb")]}),
            b0 := Script("b", {}),
        ],
        net_delay=0.0,
    )
    sim.run()
    assert [m.job_id for _, _, m in b0.got] == [0, 1, 2, 3]


def test_run_until_stops_before_later_events_and_can_resume() -> None:
    node = Script("n", {0.0: [Launch(T, 5.0)]})
    sim = Simulator([node])
    sim.run(until=4.0)
    assert node.exits == [] and sim.now <= 4.0
    sim.run()
    assert node.exits == [(5.0, T, True)]


def test_an_exception_in_a_core_stops_the_run_naming_the_core_and_its_input() -> None:
    class Broken(Script):
        def on_timer(self, now: float, key: Any) -> list[Any]:
            raise RuntimeError("bug")

    with pytest.raises(
        CoreError, match=r"core of x raised RuntimeError: bug, at virtual time 1.000 s"
    ) as raised:
        Simulator([Broken("x", {1.0: []})]).run()
    assert "handling the timer ('at', 1.0)" in str(raised.value)
    assert isinstance(raised.value.raised, RuntimeError)


# --- physics -------------------------------------------------------------------------------------------


def mm1_jobs(n: int, seed: int) -> list[JobSpec]:
    """Poisson arrivals of rate lambda = 0.5 (mean gap 2.0), exponential service of rate mu = 1."""
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(n):
        if i:
            t += rng.expovariate(0.5)
        jobs.append(job(i, t, rng.expovariate(1.0)))
    return jobs


def lindley_mean(jobs: list[JobSpec]) -> float:
    """Exact mean sojourn time of these jobs in a FIFO single-server queue."""
    free = total = 0.0
    for j in jobs:
        free = max(free, j.submit) + j.durations[0]
        total += free - j.submit
    return total / len(jobs)


@pytest.mark.parametrize("policy", ["fifo", "sparrow"])
def test_single_node_at_load_half_is_an_mm1_queue(policy: str) -> None:
    # M/M/1 with lambda = 0.5, mu = 1: mean sojourn time 1 / (mu - lambda) = 2.0. With 20,000 jobs the
    # standard error of the sample mean is about 2-3 % (2.25 %, measured over 400 seeds: sojourn times
    # are correlated, so it is ~3x the naive 2/sqrt(20000)); a 5 % band is a ~2.2-sigma check that a
    # wrong executor or queue (say, 10 % slower service or lost work) would fail. Seed 0 was not picked
    # for luck: its exact sample mean (Lindley recursion below) is 2.013.
    jobs = mm1_jobs(20_000, seed=0)
    d = 1e-6  # six hops and a 2-hop idle gap per task add < 1e-4 on average
    cluster = policy_cluster(policy, nodes=1, slots=1, schedulers=1, bind_ports=False)
    out = simulate(cluster, jobs, net_delay=d)
    assert out.frontend.unfinished() == []
    mean = sum(completion(out).values()) / len(jobs)
    assert mean == pytest.approx(2.0, rel=0.05)
    # And the simulated queue is exactly the textbook FIFO queue on the same jobs, up to the delays.
    assert mean == pytest.approx(lindley_mean(jobs), abs=1e-3)


def test_an_observer_sees_every_input_and_its_effects_and_changes_nothing() -> None:
    cluster = local_cluster(nodes=3, slots=2, schedulers=2, seed=1)
    jobs = [job(0, 0.0, 1.0, 2.0, 0.5), job(1, 0.1, 3.0), job(2, 0.2, 0.3, 0.3, 0.3, 0.3)]
    seen: list[tuple[str, str]] = []
    launches: list[Any] = []

    def observer(now: float, core: Core, input: tuple[Any, ...], effects: list[Any]) -> None:
        seen.append((core.name, input[0]))
        launches.extend(e for e in effects if isinstance(e, Launch))

    plain = simulate(cluster, jobs)
    observed = simulate(cluster, jobs, observer=observer)
    assert completion(plain) == completion(observed) and plain.events == observed.events
    # Every core started once; every event was one input seen (the frontend's submissions are timers).
    assert sorted(n for n, kind in seen if kind == "start") == sorted(p.name for p in cluster.processes)
    assert len(seen) == observed.events + len(cluster.processes)
    kinds = {kind for _, kind in seen}
    assert kinds == {"start", "message", "timer", "exit"}
    assert sorted(e.task_id for e in launches) == sorted((j.job_id, i) for j in jobs for i in range(j.tasks))


def test_a_paused_process_handles_what_came_meanwhile_at_its_resume_in_order() -> None:
    """``Simulator.pause`` / ``resume`` (a stall, ``--fail NAME@T+PAUSE``): messages, timers and task
    exits that reach a stopped process wait, and it handles them, in order, when it goes on."""

    class Sender(Core):
        def start(self, now: float) -> list[Any]:
            return [SetTimer("send", 1.0)]

        def on_timer(self, now: float, key: Any) -> list[Any]:
            return [Send("b", NoTask(7))]

        def on_message(self, now: float, sender: str, msg: Any) -> list[Any]:
            return []

    class Recorder(Core):
        role = "node"

        def __init__(self, name: str) -> None:
            super().__init__(name)
            self.seen: list[tuple[float, str]] = []

        def start(self, now: float) -> list[Any]:
            return [SetTimer("tick", 0.5), Launch((1, 0), 1.5)]

        def on_timer(self, now: float, key: Any) -> list[Any]:
            self.seen.append((now, "tick"))
            return []

        def on_message(self, now: float, sender: str, msg: Any) -> list[Any]:
            self.seen.append((now, type(msg).__name__))
            return []

        def on_task_exit(self, now: float, task_id: Any, ok: bool) -> list[Any]:
            self.seen.append((now, "exit"))
            return []

    b = Recorder("b")
    sim = Simulator([Sender("a"), b], net_delay=0.25)
    sim.run(until=0.2)
    sim.pause("b")
    sim.run(until=3.0)  # the tick (0.5 s), the exit (1.5 s) and the message (1.25 s) come meanwhile
    assert b.seen == []
    sim.now = 3.0
    sim.resume("b")
    assert b.seen == [(3.0, "tick"), (3.0, "NoTask"), (3.0, "exit")]
    sim.run()
    assert b.seen == [(3.0, "tick"), (3.0, "NoTask"), (3.0, "exit")]  # nothing handled twice
