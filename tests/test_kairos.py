"""Kairos cores walked event by event: the node's LAS (thesis Alg. 2) and the central dispatcher (Alg. 3).

No sockets, no sleeps: every event is a method call with an explicit ``now``.
"""

from __future__ import annotations

import math
import random

import pytest

from aviary.central.kairos import KairosCentralCore
from aviary.common.effects import CancelTimer, Launch, Resume, Send, SetTimer, Suspend
from aviary.common.messages import Heartbeat, JobDone, PlaceTask, SubmitJob, TaskFinished
from aviary.worker.las import HEARTBEAT, QUANTUM, KairosNodeCore

W = 10.0


def node(slots: int = 1, **kw) -> KairosNodeCore:
    kw.setdefault("quantum", W)
    return KairosNodeCore("n", slots, central="c", **kw)


def place(core: KairosNodeCore, now: float, job: int, duration: float = 100.0, index: int = 0):
    return core.on_message(now, "c", PlaceTask(job, index, duration, 0.0))


def q(slot: int) -> tuple[str, int]:
    return (QUANTUM, slot)


def T(job: int) -> tuple[int, int]:
    return (job, 0)


# --- Alg. 2: arrivals ----------------------------------------------------------------------------------


def test_arrival_with_a_free_slot_starts_at_once_with_a_quantum_timer():
    n = node(slots=2)
    assert place(n, 0.0, 1, 5.0) == [Launch(T(1), 5.0), SetTimer(q(0), W)]
    assert place(n, 1.0, 2, 7.0) == [Launch(T(2), 7.0), SetTimer(q(1), W)]
    assert n.free == 0 and n.idle == {}
    assert n.counters["preemptions"] == 0


def test_arrival_without_a_free_slot_preempts_the_running_task_with_most_attained_service():
    n = node(slots=2)
    place(n, 0.0, 1)  # slot 0
    place(n, 1.0, 2)  # slot 1
    # At t=4 task 1 has attained 4 s, task 2 3 s: task 1 is suspended, charged, and 3 takes its slot.
    out = place(n, 4.0, 3)
    assert out == [Suspend(T(1)), Launch(T(3), 100.0), SetTimer(q(0), W)]
    assert n.tasks[T(1)].attained == pytest.approx(4.0) and T(1) in n.idle
    assert n.attained(4.0) == pytest.approx({T(1): 4.0, T(2): 3.0, T(3): 0.0})
    # The next arrival preempts task 2 (3.5 s) rather than task 3 (0.5 s).
    out = place(n, 4.5, 4)
    assert out[0] == Suspend(T(2)) and out[1] == Launch(T(4), 100.0) and out[2] == SetTimer(q(1), W)
    assert (n.counters["preemptions"], n.counters["preemptions_arrival"]) == (2, 2)


def test_estimates_are_never_read():
    a, b = node(slots=1), node(slots=1)
    for core, est in ((a, 0.0), (b, math.nan)):
        core.on_message(0.0, "c", PlaceTask(1, 0, 9.0, est))
        core.on_message(2.0, "c", PlaceTask(2, 0, 3.0, est * 1e9 if est else 1e9))
    assert a.attained(3.0) == b.attained(3.0)
    assert [type(e) for e in a.on_timer(12.0, q(0))] == [type(e) for e in b.on_timer(12.0, q(0))]


# --- Alg. 2: quantum expiry ----------------------------------------------------------------------------


def test_quantum_expiry_without_a_younger_task_charges_the_quantum_and_goes_on():
    n = node(slots=1)
    place(n, 0.0, 1)
    assert n.on_timer(W, q(0)) == [SetTimer(q(0), W)]
    assert n.tasks[T(1)].attained == pytest.approx(W)
    assert n.on_timer(2 * W, q(0)) == [SetTimer(q(0), W)]
    assert n.tasks[T(1)].attained == pytest.approx(2 * W)


def test_quantum_expiry_with_a_younger_suspended_task_swaps_it_in():
    n = node(slots=1)
    place(n, 0.0, 1)
    assert place(n, 4.0, 2)[:1] == [Suspend(T(1))]  # task 1: 4 s attained, idle
    # Task 2's quantum ends at 14: it has 10 s > 4 s, so task 1 (younger) is resumed.
    assert n.on_timer(14.0, q(0)) == [Suspend(T(2)), Resume(T(1)), SetTimer(q(0), W)]
    assert n.attained(14.0) == pytest.approx({T(1): 4.0, T(2): 10.0})
    # At 24 task 1 has 14 s > 10 s: back to task 2.
    assert n.on_timer(24.0, q(0)) == [Suspend(T(1)), Resume(T(2)), SetTimer(q(0), W)]
    assert n.counters["preemptions_quantum"] == 2 and n.counters["resumes"] == 2


def test_quantum_expiry_swaps_on_equal_attained_service_line_34():
    n = node(slots=1)
    place(n, 0.0, 1)
    place(n, 10.0, 2)  # task 1 suspended with exactly 10 s
    assert n.on_timer(20.0, q(0))[:2] == [Suspend(T(2)), Resume(T(1))]  # 10 <= 10: swap


def test_quantum_expiry_keeps_an_older_idle_task_waiting():
    n = node(slots=1)
    place(n, 0.0, 1)
    n.on_timer(W, q(0))
    n.on_timer(2 * W, q(0))  # task 1: 20 s
    place(n, 25.0, 2)  # task 1 suspended with 25 s
    assert n.on_timer(35.0, q(0)) == [SetTimer(q(0), W)]  # task 2 has 10 s < 25 s: goes on
    assert n.on_timer(45.0, q(0)) == [SetTimer(q(0), W)]  # 20 s < 25 s


# --- Alg. 2: task end ----------------------------------------------------------------------------------


def test_task_end_reports_and_resumes_the_youngest_idle_task_or_frees_the_slot():
    n = node(slots=1)
    place(n, 0.0, 1)
    place(n, 3.0, 2)  # 1 idle with 3 s
    place(n, 5.0, 3)  # 2 idle with 2 s
    out = n.on_task_exit(6.0, T(3), True)
    assert out == [Send("c", TaskFinished(3, 0, True)), Resume(T(2)), SetTimer(q(0), W)]
    out = n.on_task_exit(7.0, T(2), True)
    assert out == [Send("c", TaskFinished(2, 0, True)), Resume(T(1)), SetTimer(q(0), W)]
    out = n.on_task_exit(8.0, T(1), True)
    assert out == [Send("c", TaskFinished(1, 0, True)), CancelTimer(q(0))]
    assert n.free == 1 and n.tasks == {} and n.counters["tasks_finished"] == 3


def test_a_task_that_exits_while_suspended_is_reported_and_frees_no_slot():
    n = node(slots=1)
    place(n, 0.0, 1)
    place(n, 1.0, 2)  # 1 suspended (on the real runtime its exit can race the SIGSTOP)
    assert n.on_task_exit(1.001, T(1), True) == [Send("c", TaskFinished(1, 0, True))]
    assert n.running[0] is not None and n.running[0].task_id == T(2)
    assert n.counters["exit_while_suspended"] == 1
    assert n.on_task_exit(2.0, (9, 9), True) == [] and n.counters["unknown_task_exit"] == 1


def test_stale_quantum_timer_and_duplicate_task_are_harmless():
    n = node(slots=2)
    assert n.on_timer(5.0, q(1)) == []
    place(n, 0.0, 1)
    assert place(n, 1.0, 1) == [] and n.counters["duplicate_task"] == 1


# --- starvation guard ----------------------------------------------------------------------------------


def test_starvation_guard_runs_a_task_that_missed_three_quanta_unpreempted_for_a_multiple_of_w():
    n = node(slots=1, starvation_quanta=3, starvation_multiple=2.0)
    place(n, 0.0, 1)
    for k in range(1, 6):
        n.on_timer(k * W, q(0))  # alone: 50 s attained
    place(n, 51.0, 2)  # task 1 suspended with 51 s
    assert n.on_timer(61.0, q(0)) == [SetTimer(q(0), W)]  # task 2: 10 s < 51 s, missed 1 quantum
    assert n.on_timer(71.0, q(0)) == [SetTimer(q(0), W)]  # 20 s < 51 s, missed 2
    # 3 quanta (30 s) without running: task 1 gets the slot for 2 W, although task 2 is younger.
    out = n.on_timer(81.0, q(0))
    assert out == [Suspend(T(2)), Resume(T(1)), SetTimer(q(0), 2 * W)]
    assert n.counters["starvation_guards"] == 1
    # Protected: a new arrival does not preempt it and waits (not launched yet).
    assert place(n, 85.0, 3) == []
    assert T(3) in n.idle and not n.tasks[T(3)].launched and n.counters["arrivals_waiting"] == 1
    # The guard ends at 81 + 2 W: task 1 is charged 20 s, and the youngest (task 3) is launched.
    out = n.on_timer(101.0, q(0))
    assert out == [Suspend(T(1)), Launch(T(3), 100.0), SetTimer(q(0), W)]
    assert n.attained(101.0) == pytest.approx({T(1): 71.0, T(2): 30.0, T(3): 0.0})


def test_starvation_guard_also_applies_when_a_slot_frees():
    n = node(slots=1, starvation_quanta=1, starvation_multiple=3.0)
    place(n, 0.0, 1)
    n.on_timer(W, q(0))  # 10 s
    place(n, 12.0, 2)  # task 1 idle since 12 with 12 s
    place(n, 20.0, 3)  # task 2 idle since 20 with 8 s
    # Task 3 ends at 23: task 1 has waited 11 s >= 1 quantum: it runs guarded, not task 2 (younger).
    out = n.on_task_exit(23.0, T(3), True)
    assert out[1:] == [Resume(T(1)), SetTimer(q(0), 3 * W)]
    place(n, 24.0, 4)  # guarded: waits
    assert n.running[0].task_id == T(1) and T(4) in n.idle


# --- heartbeats ----------------------------------------------------------------------------------------


def test_heartbeat_carries_task_count_variance_and_sum_of_attained_service():
    n = node(slots=2, heartbeat_interval=1.0)
    assert n.start(0.0) == [SetTimer(HEARTBEAT, 1.0)]
    place(n, 0.0, 1)
    place(n, 2.0, 2)
    place(n, 5.0, 3)  # preempts task 1 (5 s)
    out = n.on_timer(6.0, HEARTBEAT)
    assert out[0] == SetTimer(HEARTBEAT, 1.0)
    (hb,) = [e.msg for e in out if isinstance(e, Send)]
    values = [5.0, 4.0, 1.0]  # task 1 idle, task 2 running since 2, task 3 since 5
    mean = sum(values) / 3
    assert hb.tasks == 3 and hb.free == 0
    assert hb.variance == pytest.approx(sum((v - mean) ** 2 for v in values) / 3)
    assert hb.attained_sum == pytest.approx(10.0)
    assert out[1].to == "c"


def test_an_idle_node_says_so_once():
    n = node(slots=1, heartbeat_interval=1.0)
    sent = [e for e in n.on_timer(1.0, HEARTBEAT) if isinstance(e, Send)]
    assert sent == [Send("c", Heartbeat(0, 0.0, 0.0, 1))]
    assert [e for e in n.on_timer(2.0, HEARTBEAT) if isinstance(e, Send)] == []
    place(n, 2.5, 1, duration=0.1)
    assert len([e for e in n.on_timer(3.0, HEARTBEAT) if isinstance(e, Send)]) == 1
    n.on_task_exit(3.1, T(1), True)
    assert len([e for e in n.on_timer(4.0, HEARTBEAT) if isinstance(e, Send)]) == 1
    assert [e for e in n.on_timer(5.0, HEARTBEAT) if isinstance(e, Send)] == []


def test_bad_parameters_are_refused():
    for kw in ({"quantum": 0.0}, {"starvation_quanta": 0}, {"starvation_multiple": 0.0}, {"slots": 0}):
        with pytest.raises(ValueError):
            KairosNodeCore("n", **{"slots": 1, **kw})


# --- Alg. 3: central dispatcher ------------------------------------------------------------------------


def placed(effects):
    return [(e.to, e.msg.job_id, e.msg.task_index) for e in effects if isinstance(e.msg, PlaceTask)]


def hb(c: KairosCentralCore, node: str, tasks: int, var: float, total: float = 0.0) -> None:
    assert c.on_message(0.0, node, Heartbeat(tasks, var, total)) == []


def test_fewest_tasks_first_up_to_n_plus_q():
    c = KairosCentralCore("c", {"a": 1, "b": 1}, q=2)
    out = c.on_message(0.0, "fe", SubmitJob(1, [1.0] * 8, 123.0))
    assert [p[0] for p in placed(out)] == ["a", "b", "a", "b", "a", "b"]  # N + Q = 3 each
    assert c.counts() == {"a": 3, "b": 3} and len(c.queue) == 2
    assert placed(c.on_message(1.0, "b", TaskFinished(1, 1))) == [("b", 1, 6)]
    assert placed(c.on_message(1.0, "fe", SubmitJob(2, [1.0], 1.0))) == []  # still full
    assert placed(c.on_message(2.0, "a", TaskFinished(1, 0))) == [("a", 1, 7)]


def test_cap_follows_each_nodes_slots_and_q():
    c = KairosCentralCore("c", {"big": 4, "small": 1}, q=0)
    out = c.on_message(0.0, "fe", SubmitJob(1, [1.0] * 9, 1.0))
    assert sorted(p[0] for p in placed(out)).count("big") == 4
    assert c.counts() == {"big": 4, "small": 1}


def test_ties_go_to_the_lowest_variance_and_the_count_comes_first():
    c = KairosCentralCore("c", {"a": 2, "b": 2, "c": 2}, q=2)
    hb(c, "a", 0, 5.0)
    hb(c, "b", 0, 1.0)
    hb(c, "c", 0, 3.0)
    out = c.on_message(0.0, "fe", SubmitJob(1, [1.0] * 4, 1.0))
    assert [p[0] for p in placed(out)] == ["b", "c", "a", "b"]
    # New variances: a lowest now, but b holds 2 tasks: a and c (1 task each) come first.
    hb(c, "a", 1, 0.5)
    hb(c, "c", 1, 9.0)
    hb(c, "b", 2, 0.0)
    out = c.on_message(1.0, "fe", SubmitJob(2, [1.0] * 3, 1.0))
    assert [p[0] for p in placed(out)] == ["a", "c", "b"]


def test_sum_tie_break_uses_the_sum_of_attained_service():
    c = KairosCentralCore("c", {"a": 1, "b": 1, "c": 1}, q=0, tiebreak="sum")
    hb(c, "a", 0, 0.0, 30.0)
    hb(c, "b", 0, 9.0, 10.0)
    hb(c, "c", 0, 1.0, 20.0)
    out = c.on_message(0.0, "fe", SubmitJob(1, [1.0] * 3, 1.0))
    assert [p[0] for p in placed(out)] == ["b", "c", "a"]


def test_random_tie_break_is_uniform_among_the_tied_nodes_and_seeded():
    def picks(seed: int) -> list[str]:
        c = KairosCentralCore("c", {n: 1 for n in "abcd"}, q=0, tiebreak="random", seed=seed)
        ((holder, _, _),) = placed(c.on_message(0.0, "fe", SubmitJob(0, [1.0], 1.0)))  # stays busy
        out = []
        for i in range(1, 401):
            ((to, job, _),) = placed(c.on_message(float(i), "fe", SubmitJob(i, [1.0], 1.0)))
            assert to != holder  # only among the nodes with the fewest tasks
            out.append(to)
            c.on_message(float(i), to, TaskFinished(job, 0))
        return out

    a = picks(1)
    assert a == picks(1) and a != picks(2)
    counts = {n: a.count(n) for n in set(a)}
    assert len(counts) == 3 and min(counts.values()) > 90  # ~133 each


def test_job_done_with_first_start_delay_and_no_estimate_on_the_wire():
    c = KairosCentralCore("c", {"a": 1}, q=0)
    out = c.on_message(1.0, "fe", SubmitJob(1, [2.0, 3.0], 777.0))
    assert [e.msg for e in out] == [PlaceTask(1, 0, 2.0, 0.0)]
    assert c.on_message(3.0, "a", TaskFinished(1, 0)) == [Send("a", PlaceTask(1, 1, 3.0, 0.0))]
    assert c.on_message(6.0, "a", TaskFinished(1, 1)) == [Send("fe", JobDone(1, 0.0))]
    # A job that waits in the central queue gets its first start when its first task is placed.
    c.on_message(7.0, "fe", SubmitJob(2, [5.0], 1.0))
    c.on_message(7.5, "fe", SubmitJob(3, [1.0], 1.0))
    c.on_message(12.0, "a", TaskFinished(2, 0))
    assert c.on_message(13.0, "a", TaskFinished(3, 0)) == [Send("fe", JobDone(3, 4.5))]


def test_unknown_senders_and_duplicates_are_counted():
    c = KairosCentralCore("c", {"a": 1})
    assert c.on_message(0.0, "ghost", Heartbeat(1, 1.0)) == []
    assert c.on_message(0.0, "a", TaskFinished(5, 0)) == []
    c.on_message(0.0, "fe", SubmitJob(1, [1.0], 1.0))
    assert c.on_message(0.0, "fe", SubmitJob(1, [1.0], 1.0)) == []
    assert c.on_message(0.0, "fe", SubmitJob(2, [], 1.0)) == [Send("fe", JobDone(2, 0.0))]
    assert (c.counters["unknown_heartbeat"], c.counters["unknown_task_finished"]) == (1, 1)
    assert c.counters["duplicate_job"] == 1


def test_many_nodes_with_churn_never_exceed_the_cap_and_always_pick_a_minimum():
    rng = random.Random(5)
    slots = {f"n{i}": rng.randint(1, 3) for i in range(40)}
    for tiebreak in ("var", "sum", "random"):
        c = KairosCentralCore("c", slots, q=2, tiebreak=tiebreak, seed=3)
        live: list[tuple[str, int]] = []
        submitted = placements = 0
        for step in range(3000):
            if live and rng.random() < 0.5:
                to, job = live.pop(rng.randrange(len(live)))
                effects = c.on_message(step, to, TaskFinished(job, 0))
            elif rng.random() < 0.1:
                name = rng.choice(list(slots))
                hb(c, name, 0, rng.random(), rng.random())
                continue
            else:
                before = c.counts()
                effects = c.on_message(step, "fe", SubmitJob(step, [1.0], 1.0))
                submitted += 1
                for to, _, _ in placed(effects):
                    under = [k for n, k in before.items() if k < slots[n] + 2]
                    assert before[to] == min(under)
            live += [(to, job) for to, job, _ in placed(effects)]
            placements += len(placed(effects))
            assert all(k <= slots[n] + 2 for n, k in c.counts().items())
            assert sum(c.counts().values()) == len(live)
        # Every submitted one-task job is placed, at once or when a task finishes, or still waits in the
        # queue (an empty dispatch would pass the checks above); most are placed.
        assert placements + len(c.queue) == submitted and placements > submitted // 2


# --- parameters from the command line ---------------------------------------------------------------------


def test_cli_flags_reach_the_cores():
    from aviary.launch.flags.parser import build_parser
    from aviary.launch.flags.spec import ReplaySpec
    from aviary.launch.policies.registry import build_core
    from aviary.launch.replay.resolve import testbed_cluster

    flags = ["replay", "--runtime", "sim", "--policy", "kairos-sum", "--nodes", "3", "--slots", "2",
             "--quantum", "2", "--kairos-q", "3", "--starvation-quanta", "4", "--starvation-multiple", "1.5",
             "--heartbeat-interval", "0.5"]  # fmt: skip
    args = build_parser().parse_args(flags)
    cluster = testbed_cluster(ReplaySpec.from_args(args))
    central = build_core(cluster.central, cluster)
    node = build_core(cluster.nodes[0], cluster)
    assert isinstance(central, KairosCentralCore) and isinstance(node, KairosNodeCore)
    assert (central.q, central.tiebreak) == (3, "sum") and [n.cap for n in central.nodes] == [5, 5, 5]
    assert (node.slots, node.quantum, node.starvation_wait, node.guard) == (2, 2.0, 8.0, 3.0)
    assert node.heartbeat_interval == 0.5 and node.central == cluster.central.name
    # Defaults: W = 10,000 trace seconds over the time scale, heartbeats every W / 10, Q = 2.
    args = build_parser().parse_args(["replay", "--policy", "kairos", "--time-scale", "500"])
    cluster = testbed_cluster(ReplaySpec.from_args(args))
    node = build_core(cluster.nodes[0], cluster)
    assert (node.quantum, node.heartbeat_interval) == (20.0, 2.0)
    assert build_core(cluster.central, cluster).q == 2
    args = build_parser().parse_args(["up", "--policy", "kairos"])
    assert testbed_cluster(ReplaySpec.from_args(args)).params["quantum"] == 10.0
