"""The simulator's shortcuts give exactly the plain delivery: multicasts (one message object sent to
several targets), held ``Core.latest_wins`` messages, and the node queue's deferred remaining counts."""

from __future__ import annotations

import ast
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aviary import speedups
from aviary.common.core import Core
from aviary.common.effects import Launch, Multicast, Send, SetTimer
from aviary.common.messages import GetTask, RemainingUpdate
from aviary.common.model import JobSpec
from aviary.launch.drivers.sim import Simulator, _Proc, simulate
from aviary.launch.policies.registry import policy_cluster
from aviary.worker.queues import Entry, HybridQueue


class Logger(Core):
    """Runs a script of effects at given times and logs every input in one shared list."""

    def __init__(self, name: str, log: list[Any], script: dict[float, list[Any]] | None = None) -> None:
        super().__init__(name)
        self.log = log
        self.script = script or {}

    def start(self, now: float) -> list[Any]:
        return [SetTimer(("at", t), t) for t in self.script]

    def on_timer(self, now: float, key: Any) -> list[Any]:
        self.log.append((now, self.name, "timer", key))
        return list(self.script.get(key[1], [])) if key[0] == "at" else []

    def on_task_exit(self, now: float, task_id: Any, ok: bool) -> list[Any]:
        self.log.append((now, self.name, "exit", task_id))
        return []

    def on_message(self, now: float, sender: str, msg: Any) -> list[Any]:
        self.log.append((now, self.name, sender, msg))
        return []


def test_a_multicast_is_delivered_in_the_order_of_separate_sends() -> None:
    def run(shared: bool) -> list[Any]:
        log: list[Any] = []
        m = GetTask(7)

        def msg() -> GetTask:
            return m if shared else GetTask(7)

        script = {
            0.0: [
                Send("b", msg()),
                Send("c", msg()),
                Launch((0, 0), 0.25),
                Send("b", msg()),
                Send("c", msg()),
            ],
            0.25: [Send("c", msg()), Send("b", msg())],
        }
        sim = Simulator([Logger("a", log, script), Logger("b", log), Logger("c", log)], net_delay=0.25)
        sim.run()
        return log

    assert run(shared=True) == run(shared=False)
    assert [e[1] for e in run(shared=True) if e[2] == "a"] == ["b", "c", "b", "c", "c", "b"]


class Holder(Logger):
    latest_wins = frozenset({RemainingUpdate})


def test_held_messages_arrive_before_the_next_input_and_only_the_last_per_job() -> None:
    log: list[Any] = []
    a = Logger(
        "a",
        log,
        {
            0.0: [
                Send("b", RemainingUpdate(1, 5)),
                Send("b", RemainingUpdate(1, 4)),
                Send("b", RemainingUpdate(2, 9)),
            ],
            1.0: [Send("b", GetTask(3)), Send("b", RemainingUpdate(1, 1))],
        },
    )
    b = Holder("b", log, {0.1: [], 0.5: []})
    sim = Simulator([a, b], net_delay=0.25)
    sim.run()
    got = [(e[0], e[3]) for e in log if e[1] == "b"]
    assert got == [
        (0.1, ("at", 0.1)),  # sent at 0, not arrived yet
        (0.25, RemainingUpdate(1, 4)),  # the last about job 1, then job 2's, before the next input
        (0.25, RemainingUpdate(2, 9)),
        (0.5, ("at", 0.5)),
        (1.25, GetTask(3)),
        (1.25, RemainingUpdate(1, 1)),  # delivered when the run ends
    ]
    assert sim.messages()["RemainingUpdate"] == 4
    assert sim.events == 4 + 4 + 1  # timers of a and b, updates (held ones too), GetTask


def test_a_multicast_effect_is_a_send_to_each_of_its_targets() -> None:
    """Held and plain targets, an unknown one, in the loop and outside it (Simulator.apply)."""

    def run(multi: bool) -> tuple[Any, ...]:
        log: list[Any] = []
        targets = ["b", "nobody", "c", "d"]

        def fan(msg: Any) -> list[Any]:
            return [Multicast(targets, msg)] if multi else [Send(t, msg) for t in targets]

        script = {
            0.0: [*fan(RemainingUpdate(1, 3)), *fan(GetTask(7)), Launch((0, 0), 0.1)],
            0.1: fan(RemainingUpdate(1, 2)),
            0.3: [*fan(GetTask(8)), *fan(RemainingUpdate(2, 1))],
        }
        cores = [Logger("a", log, script), Holder("b", log, {0.2: []}), Logger("c", log), Holder("d", log)]
        sim = Simulator(cores, net_delay=0.25)
        sim.apply("a", fan(GetTask(9)))
        sim.run()
        return log, sim.messages(), dict(sim.errors), sim.events

    log, messages, errors, _ = got = run(multi=True)
    assert got == run(multi=False)
    assert messages == {"RemainingUpdate": 9, "GetTask": 9}
    assert errors["error.unknown-peer"] == 6
    b = [(e[0], e[3]) for e in log if e[1] == "b"]
    assert b[:3] == [(0.2, ("at", 0.2)), (0.25, GetTask(9)), (0.25, RemainingUpdate(1, 3))]
    assert b[3] == (0.25, GetTask(7))  # the held update came just before it
    c = [(e[0], e[3]) for e in log if e[1] == "c" and isinstance(e[3], RemainingUpdate)]
    assert c == [(0.25, RemainingUpdate(1, 3)), (0.35, RemainingUpdate(1, 2)), (0.55, RemainingUpdate(2, 1))]


def random_fan_out(seed: int, multi: bool) -> tuple[Any, ...]:
    """Two senders multicast updates about three jobs to changing, reordered target lists (held nodes
    join, leave and come back; unknown and plain targets among them) while the nodes act at random
    times, some while updates are on their way; one node is killed half-way."""
    rng = random.Random(seed)
    holders = [f"h{i}" for i in range(6)]
    peers = [*holders, "p0", "p1", "nobody"]
    log: list[Any] = []
    scripts: dict[str, dict[float, list[Any]]] = {"s0": {}, "s1": {}}
    for script in scripts.values():
        for step in range(40):
            t = round(step * 0.1 + rng.choice([0.0, 0.03, 0.05]), 2)
            targets = rng.sample(peers, rng.randint(0, len(peers)))
            if rng.random() < 0.7:  # mostly the order of a Counter's keys, as Eagle's targets
                targets.sort(key=peers.index)
            msg = RemainingUpdate(rng.randrange(3), rng.randrange(100))
            effects = [Multicast(targets, msg)] if multi else [Send(x, msg) for x in targets]
            script.setdefault(t, []).extend(effects)
    cores: list[Core] = [Logger(name, log, script) for name, script in scripts.items()]
    for name in peers[:-1]:
        times = {round(rng.uniform(0.0, 4.5), 3): [] for _ in range(12)}
        cores.append((Holder if name in holders else Logger)(name, log, times))
    sim = Simulator(cores, net_delay=0.05)
    sim.run(until=2.0)
    sim.kill("h2")
    sim.run()
    return log, sim.messages(), dict(sim.errors), sim.events, sim.pending


@pytest.mark.parametrize("seed", range(12))
def test_multicasts_of_held_messages_are_sends_to_each_target(seed: int) -> None:
    got = random_fan_out(seed, multi=True)
    assert got == random_fan_out(seed, multi=False)
    log = got[0]
    assert any(e[1] == "h0" and isinstance(e[3], RemainingUpdate) for e in log)  # held ones were handed
    assert got[2]["error.sent-to-dead"] > 0  # the killed node is sent to after its death


def test_deferred_remaining_counts_reach_the_entries_that_were_there() -> None:
    q = HybridQueue()
    old = Entry("s", 1, 1.0, probe=True, remaining=10)
    q.push(old)
    q.set_remaining("s", 1, 6)
    new = Entry("s", 1, 1.0, probe=True, remaining=4)  # a probe sent after the update
    q.push(new)
    assert (old.remaining, new.remaining) == (6, 4)
    q.set_remaining("s", 1, 3)
    assert [e.remaining for e in q.entries_of("s", 1)] == [3, 3]
    q.set_remaining("s", 2, 1)  # no entry of that job: nothing to remember
    assert q.srpt() is old


def eagle_times(nodes: int, seed: int) -> dict[int, tuple[float, float, float]]:
    rng = random.Random(seed)
    jobs = []
    t = 0.0
    for i in range(120):
        t += rng.expovariate(4.0)
        n = rng.choice([1, 2, 5, 30, 80])
        durations = [rng.uniform(0.1, 3.0) * (400 if i % 9 == 0 else 1) for _ in range(n)]
        jobs.append(JobSpec(i, t, durations, sum(durations) / n, long=i % 9 == 0))
    cluster = policy_cluster(
        "eagle", nodes=nodes, schedulers=3, seed=seed, params={"cutoff": 100.0}, bind_ports=False
    )
    out = simulate(cluster, jobs, net_delay=0.01)
    assert out.frontend.done
    return {i: (x.submit, x.first_start, x.finish) for i, x in out.frontend.times.items()}


def plain_eagle_times(tasks: int, seed: int) -> dict[int, Any]:
    """``eagle_times`` with every update delivered and written at once (the shortcuts patched out)."""
    plain = _Proc.__init__

    def no_holding(self: _Proc, core: Core) -> None:
        plain(self, core)
        self.lazy = frozenset()

    def write_now(self: HybridQueue, scheduler: str, job_id: int, remaining: int) -> None:
        job = self._by_job.get((scheduler, job_id))
        if job is not None:
            job.told = remaining
            self._write(job)

    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(_Proc, "__init__", no_holding)
        patch.setattr(HybridQueue, "set_remaining", write_now)
        return eagle_times(tasks, seed)
    finally:
        patch.undo()


@pytest.mark.parametrize("seed", [0, 1])
def test_eagle_runs_the_same_with_and_without_held_updates(seed: int) -> None:
    fast = eagle_times(40, seed)
    if speedups.ACTIVE == "pure":
        assert plain_eagle_times(40, seed) == fast
        return
    # Compiled classes cannot be patched (speedups.py): the plain run is made on the pure-Python
    # sources in a process of its own.
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_sim_fast as t; "
        f"print(repr(t.plain_eagle_times(40, {seed})))"
    )
    env = {**os.environ, speedups.ENV_PURE: "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert ast.literal_eval(out.stdout.strip()) == fast
