"""Kairos as its testbed ran it: the options the authors' YARN code calls for, each rule walked event by
event (docs/kairos.md, "The testbed as the authors' code ran it"): the swap margin, the starvation guard
as the code behaves and off, suspended tasks progressing at a share of a core (simulator, timer executor,
the docker executor's CPU quota), application masters under FIFO and Kairos, the launching core, the
per-job overhead."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from aviary.central.fifo import CentralFifoCore
from aviary.central.kairos import KairosCentralCore
from aviary.common.core import Core
from aviary.common.effects import Effect, Launch, Resume, Send, SetTimer, Suspend
from aviary.common.messages import PlaceTask, SubmitJob, TaskFinished
from aviary.experiments.kairos_workload import CATEGORIES, JOB_OVERHEAD, task_duration
from aviary.launch.drivers.sim import Simulator
from aviary.launch.policies.registry import build_core, policy_cluster
from aviary.worker.executors import TimerExecutor, make_executor
from aviary.worker.las import QUANTUM, KairosNodeCore

W = 10.0


def node(slots: int = 1, **kw: Any) -> KairosNodeCore:
    kw.setdefault("quantum", W)
    return KairosNodeCore("n", slots, central="c", **kw)


def place(core: KairosNodeCore, now: float, job: int, duration: float = 100.0) -> list[Effect]:
    return core.on_message(now, "c", PlaceTask(job, 0, duration, 0.0))


def q(slot: int) -> tuple[str, int]:
    return (QUANTUM, slot)


def T(job: int) -> tuple[int, int]:
    return (job, 0)


# --- swap margin (ContainerManagerImpl.java:1574) -----------------------------------------------------------


def test_swap_margin_swaps_only_when_the_running_task_is_older_by_the_margin():
    n = node(swap_margin=0.5)  # W / 2 = 5 s
    place(n, 0.0, 1)
    place(n, 6.0, 2)  # task 1 suspended with 6 s
    # t=16: task 2 has 10 s, task 1 6 s: older by 4 < 5 s, no swap (Alg. 2's <= would swap)
    assert n.on_timer(16.0, q(0)) == [SetTimer(q(0), W)]
    # t=26: task 2 has 20 s, older by 14 >= 5: swap
    assert n.on_timer(26.0, q(0)) == [Suspend(T(2)), Resume(T(1)), SetTimer(q(0), W)]
    # exactly the margin swaps (>=, as the code)
    m = node(swap_margin=0.5)
    place(m, 0.0, 1)
    place(m, 5.0, 2)  # task 1: 5 s
    assert m.on_timer(15.0, q(0))[:2] == [Suspend(T(2)), Resume(T(1))]  # 10 - 5 = 5 >= 5


def test_default_swap_margin_is_alg2_line_34():
    n = node()
    place(n, 0.0, 1)
    place(n, 10.0, 2)
    assert n.on_timer(20.0, q(0))[:2] == [Suspend(T(2)), Resume(T(1))]  # 10 <= 10


# --- starvation guard: as the code behaves, and off ---------------------------------------------------


def test_code_guard_extends_a_running_task_suspended_more_than_allowed_and_arrivals_still_preempt_it():
    n = node(slots=1, starvation="code", starvation_quanta=2, starvation_multiple=2.0)
    place(n, 0.0, 1)
    # three arrivals each preempt the oldest running task; task 1 is suspended by the first one
    place(n, 1.0, 2)  # task 1 suspended (count 1), task 2 runs
    assert n.tasks[T(1)].suspensions == 1
    n.on_timer(11.0, q(0))  # task 2 (10 s) swapped for task 1 (1 s): task 2's count restarts at 1
    assert n.tasks[T(2)].suspensions == 1 and n.running[0] is n.tasks[T(1)]
    place(n, 12.0, 3)  # task 1 (2 s) suspended by an arrival: count 2
    n.on_timer(22.0, q(0))  # task 3 (10 s) -> task 1 (2 s) back
    place(n, 23.0, 4)  # task 1 (3 s) suspended again: count 3 > 2
    assert n.tasks[T(1)].suspensions == 3
    n.on_timer(33.0, q(0))  # task 4 (10 s) -> task 1 (3 s), the youngest
    assert n.running[0] is n.tasks[T(1)]
    # task 1's quantum ends: it has been suspended 3 > 2 times: no swap, 2 W more, count reset
    assert n.on_timer(43.0, q(0)) == [SetTimer(q(0), 2 * W)]
    assert n.tasks[T(1)].suspensions == 0 and n.counters["starvation_guards"] == 1
    # ... and an arrival still preempts it (the code gives it no protection)
    assert place(n, 44.0, 5)[:1] == [Suspend(T(1))]


def test_code_guard_never_fires_on_quantum_swaps_alone():
    n = node(slots=1, starvation="code", starvation_quanta=1)
    place(n, 0.0, 1)
    place(n, 0.5, 2)  # task 1 suspended by an arrival (count 1)
    t = 0.5
    for _ in range(20):  # the two swap every quantum: each quantum suspension restarts the count at 1
        t += W
        n.on_timer(t, q(0))
    assert n.counters["starvation_guards"] == 0


def test_guard_off_lets_an_old_idle_task_wait_forever():
    for mode, guards in (("text", True), ("off", False)):
        n = node(slots=1, starvation=mode, starvation_quanta=1)
        place(n, 0.0, 1)
        n.on_timer(W, q(0))  # task 1: 10 s
        place(n, 10.5, 2)  # task 1 idle with 10.5 s
        for k in range(1, 4):  # task 2 and newcomers stay younger than task 1
            place(n, 10.5 + k * 3, 10 + k)
        out = n.on_timer(20.5, q(0))
        assert (Resume(T(1)) in out) is guards, mode


def test_starvation_mode_is_checked():
    with pytest.raises(ValueError, match="starvation"):
        node(starvation="sometimes")
    with pytest.raises(ValueError, match="suspended_share"):
        node(suspended_share=1.0)


# --- a suspended task's share of a core ----------------------------------------------------------------


class _Script(Core):
    """A node that launches, suspends and resumes task (1, 0) at set times (the simulator's executor)."""

    role = "node"

    def __init__(self, share: float, steps: list[tuple[float, type]]) -> None:
        super().__init__("n")
        self.suspended_share = share
        self.steps = steps
        self.exits: list[float] = []

    def start(self, now: float) -> list[Effect]:
        return [SetTimer(i, t) for i, (t, _) in enumerate(self.steps)]

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        kind = self.steps[key][1]
        return [Launch((1, 0), 10.0)] if kind is Launch else [kind((1, 0))]

    def on_task_exit(self, now: float, task_id: Any, ok: bool) -> list[Effect]:
        self.exits.append(now)
        return []


@pytest.mark.parametrize(
    ("share", "steps", "end"),
    [
        (0.0, [(0.0, Launch), (2.0, Suspend), (12.0, Resume)], 20.0),  # suspended 10 s: 10 s later
        (0.1, [(0.0, Launch), (2.0, Suspend), (12.0, Resume)], 19.0),  # 1 s done while suspended
        (0.5, [(0.0, Launch), (2.0, Suspend)], 18.0),  # 8 s left at 0.5: ends while suspended
        (0.5, [(0.0, Launch), (2.0, Suspend), (4.0, Resume), (5.0, Suspend), (6.0, Resume)], 11.5),
    ],
)
def test_simulator_runs_a_suspended_task_at_its_share(share, steps, end):
    core = _Script(share, steps)
    sim = Simulator([core])
    sim.run()
    assert core.exits == [pytest.approx(end)]
    assert sim.errors["executor.redundant_resume"] == 0


def test_timer_executor_runs_a_suspended_task_at_its_share():
    async def go() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        done: dict[Any, float] = {}
        ex = TimerExecutor(loop, lambda tid, ok: done.setdefault(tid, time.monotonic()), 0.5)
        t0 = time.monotonic()
        ex.launch("a", 0.2)
        ex.launch("b", 0.2)
        await asyncio.sleep(0.1)
        ex.suspend("a")  # 0.1 s left at 0.5: ends at ~0.3 while suspended
        ex.suspend("b")
        await asyncio.sleep(0.1)
        ex.resume("b")  # 0.05 s done meanwhile: 0.05 s left, ends at ~0.25
        await asyncio.sleep(0.3)
        await ex.close()
        return done["a"] - t0, done["b"] - t0

    a, b = asyncio.run(go())
    assert 0.29 <= a < 0.45 and 0.24 <= b < 0.29 + 0.1


def test_process_executor_refuses_a_share():
    async def go() -> None:
        make_executor("process", asyncio.get_running_loop(), lambda *a: None, suspended_share=0.1)

    with pytest.raises(ValueError, match="--suspended-share"):
        asyncio.run(go())


# --- application masters and the launching core ----------------------------------------------------------


def test_fifo_application_master_holds_a_slot_for_the_job_life():
    c = CentralFifoCore("c", {"n1": 2}, am_tasks=True)
    out = c.on_message(0.0, "fe", SubmitJob(1, [5.0, 5.0], 5.0))
    assert [e.msg.task_index for e in out if isinstance(e, Send)] == [0]  # the master took a slot
    assert c.counters["am_placed"] == 1 and c.gauges()["am_slots"] == 1
    out = c.on_message(5.0, "n1", TaskFinished(1, 0, True))
    assert [e.msg.task_index for e in out if type(e.msg) is PlaceTask] == [1]
    c.on_message(10.0, "n1", TaskFinished(1, 1, True))  # the job's end: its master's slot frees
    assert c.gauges()["am_slots"] == 0 and len(c.free) == 2


def test_kairos_application_master_holds_one_of_a_nodes_n_plus_q_places():
    c = KairosCentralCore("c", {"n1": 1}, q=1, am_tasks=True)  # cap 2
    out = c.on_message(0.0, "fe", SubmitJob(1, [5.0, 5.0, 5.0], 5.0))
    assert [e.msg.task_index for e in out if isinstance(e, Send)] == [0]  # master + 1 task = 2
    assert c.counts() == {"n1": 2}
    from aviary.common.messages import Heartbeat

    c.on_message(1.0, "n1", Heartbeat(1, 0.0, 0.0, 0))  # the node runs one task: its count, less the master
    assert c.counters["heartbeat_count_mismatch"] == 0
    c.on_message(5.0, "n1", TaskFinished(1, 0, True))
    c.on_message(6.0, "n1", TaskFinished(1, 1, True))
    c.on_message(7.0, "n1", TaskFinished(1, 2, True))
    assert c.counts() == {"n1": 0}


def _kairos(**params: Any) -> list[Core]:
    cluster = policy_cluster("kairos", nodes=1, slots=2, bind_ports=False, params=params)
    return [build_core(p, cluster) for p in cluster.processes if p.role != "frontend"]


def test_share_and_masters_need_the_launching_core():
    with pytest.raises(ValueError, match="launch-core"):
        _kairos(suspended_share=0.1)
    with pytest.raises(ValueError, match="launch-core"):
        _kairos(am_tasks="on")
    cores = _kairos(suspended_share=0.1, am_tasks="on", launch_core="on", starvation="off", swap_margin=0.5)
    n = next(c for c in cores if isinstance(c, KairosNodeCore))
    central = next(c for c in cores if isinstance(c, KairosCentralCore))
    assert (n.suspended_share, n.starvation, n.margin, central.am_tasks) == (
        0.1,
        "off",
        0.5 * n.quantum,
        True,
    )


def test_overhead_taken_out_of_the_tasks():
    c1, c5 = CATEGORIES[0], CATEGORIES[4]
    assert task_duration(c1) == 42.5 and task_duration(c1, JOB_OVERHEAD) == (85.0 - JOB_OVERHEAD) / 2
    assert task_duration(c5, JOB_OVERHEAD) == (1175.0 - JOB_OVERHEAD) / 3


# --- the docker executor: a CPU quota instead of a pause (system: needs a docker engine) ----------------


@pytest.mark.system
def test_docker_executor_throttles_a_suspended_task_to_its_share():
    """A 2 s task throttled to 0.5 of a core at 0.5 s for 1 s: not paused, CPU quota 50 ms / 100 ms, and
    it did 0.5 s meanwhile, so it ends at ~2.5 s (not 3.0); a 1 s task throttled at 0.2 s for good ends
    while suspended, at ~0.2 + 0.8 / 0.5 = 1.8 s."""
    from helpers import docker_engine

    from aviary.worker.executors import DockerExecutor

    client = docker_engine()

    async def go() -> tuple[float, float, dict[str, Any]]:
        loop = asyncio.get_running_loop()
        done: dict[Any, tuple[bool, float]] = {}
        ex = make_executor("docker", loop, lambda tid, ok: done.setdefault(tid, (ok, time.monotonic())), 0.5)
        assert isinstance(ex, DockerExecutor)
        await asyncio.wait([ex._ready])
        t0 = time.monotonic()
        ex.launch((1, 0), 2.0)
        ex.launch((2, 0), 1.0)
        while time.monotonic() - t0 < 10 and not (ex.container_id((1, 0)) and ex.container_id((2, 0))):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2 - (time.monotonic() - t0))
        ex.suspend((2, 0))
        await asyncio.sleep(0.5 - (time.monotonic() - t0))
        ex.suspend((1, 0))
        await asyncio.sleep(0.3)
        state = await asyncio.to_thread(client.api.inspect_container, ex.container_id((1, 0)))
        await asyncio.sleep(1.5 - (time.monotonic() - t0))
        ex.resume((1, 0))
        while len(done) < 2 and time.monotonic() - t0 < 15:
            await asyncio.sleep(0.01)
        await ex.close()
        assert done[1, 0][0] and done[2, 0][0], ex.counters
        return done[1, 0][1] - t0, done[2, 0][1] - t0, state

    try:
        a, b, state = asyncio.run(go())
    finally:
        client.close()
    assert not state["State"]["Paused"] and state["HostConfig"]["CpuQuota"] == 50_000
    assert 2.45 <= a <= 2.65, f"finished {a:.3f} s after launch"
    assert 1.75 <= b <= 1.95, f"finished {b:.3f} s after launch"
