"""The probe-based cores (Hawk, Eagle, Kairos, the central LWL, their node monitors) on the mechanisms
that mutation testing found no test pinning down (issue 12; docs/mutation.md lists the mutants each
test kills). Each test walks one mechanism of the thesis (``../shared/papers/``, the section is in its
docstring) event by event. No sockets, no sleeps: cores are called directly."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from helpers import sent

from aviary.central.kairos import KairosCentralCore
from aviary.central.lwl import CentralLwlCore, LwlIndex
from aviary.common.effects import Effect, Kill, Launch, Resume, Send, SetTimer, Suspend
from aviary.common.messages import (
    AssignTask,
    CancelProbes,
    GetTask,
    Heartbeat,
    JobDone,
    LongTask,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    ProbeRejected,
    QueueReport,
    QueueTask,
    RemainingUpdate,
    StealReply,
    StealRequest,
    SubmitJob,
    TaskFinished,
    TaskStarted,
)
from aviary.distributed.dlwl import DlwlSchedulerCore
from aviary.distributed.eagle import EagleSchedulerCore
from aviary.distributed.hawk import HawkSchedulerCore
from aviary.worker.hybrid import HybridNodeCore
from aviary.worker.las import QUANTUM, KairosNodeCore
from aviary.worker.queues import BLOCK, Entry, HybridQueue
from aviary.worker.stealing import Stealer

# --- Hawk's distributed scheduler: long jobs without the central scheduler ------------------------------


def test_hawk_without_central_probes_a_job_at_the_cutoff_as_long_over_the_general_partition_only():
    """Thesis §2.3.3 ("jobs for which the estimated task runtime is smaller than the cutoff are scheduled
    in a distributed fashion": one at the cutoff is long), §2.3.4 (long tasks only on the general
    partition) and §2.4.4 (Hawk without centralized scheduling: long jobs are probed too). The long
    probes are batched per node, say they are long, and are cancelled like Sparrow's once the job's
    last task is handed out (§2.3.5)."""
    nodes = [f"n{i}" for i in range(6)]
    s = HawkSchedulerCore("s", nodes, ["n0", "n1"], cutoff=100.0, seed=0)
    out = s.on_message(0, "fe", SubmitJob(1, [100.0] * 3, 100.0))
    # 2 x 3 = 6 probes over the 2 general nodes: 3 reservations each, in one message per node.
    assert sorted(sent(out, Probe)) == [
        ("n0", Probe(1, 100.0, 3, 3, long=True)),
        ("n1", Probe(1, 100.0, 3, 3, long=True)),
    ]
    c = s.counters
    assert (c["jobs_long"], c["probes_long"], c["jobs"], c["probes"]) == (1, 6, 0, 0)
    s.on_message(1, "n0", GetTask(1))
    s.on_message(1, "n1", GetTask(1))
    out = s.on_message(2, "n0", GetTask(1))  # the last task: both nodes still hold reservations
    assert sorted(to for to, _ in sent(out, CancelProbes)) == ["n0", "n1"]
    # A job just below the cutoff is short: Sparrow over every node.
    out = s.on_message(3, "fe", SubmitJob(2, [99.0] * 3, 99.0))
    assert sum(p.count for _, p in sent(out, Probe)) == 6 and not any(p.long for _, p in sent(out, Probe))
    assert (c["jobs"], c["probes"], c["jobs_long"]) == (1, 6, 1)


def test_hawk_re_probes_a_dead_node_s_long_reservations_in_the_general_partition_and_uses_it_again():
    """§2.3.4 under failures (issue 14): a long job's reservations lost with a dead general node are
    probed again over the live general nodes only, as long probes; the node is a target again once it
    rejoins."""
    nodes = ["g0", "g1", "s0", "s1"]
    s = HawkSchedulerCore("s", nodes, ["g0", "g1"], cutoff=10.0, seed=0)
    out = s.on_message(0, "fe", SubmitJob(1, [50.0], 50.0))
    assert sorted(to for to, _ in sent(out, Probe)) == ["g0", "g1"]  # 2 probes for 1 task
    out = s.on_message(1, "fe", PeerDown("g0"))
    assert sent(out, Probe) == [("g1", Probe(1, 50.0, 1, 1, long=True))]
    assert s.counters["probes_long"] == 3
    assert s.general == ["g1"]
    # A short job's reservations lost with a node are probed again as short ones, over every live node.
    out = s.on_message(1.5, "fe", SubmitJob(3, [1.0, 1.0], 1.0))
    assert sorted(to for to, _ in sent(out, Probe)) == ["g1", "s0", "s1"]  # 4 probes over 3 live nodes
    holder = next(to for to, p in sent(out, Probe) if p.count == 2)
    out = s.on_message(1.6, "fe", PeerDown(holder))
    assert sum(p.count for _, p in sent(out, Probe) if p.job_id == 3) == 2
    assert not any(p.long for _, p in sent(out, Probe) if p.job_id == 3)
    s.on_message(1.7, "fe", PeerUp(holder))
    s.on_message(2, "fe", PeerUp("g0"))
    out = s.on_message(3, "fe", SubmitJob(2, [50.0], 50.0))
    assert sorted(to for to, _ in sent(out, Probe)) == ["g0", "g1"]
    # A short node dying changes nothing in the general partition.
    s.on_message(4, "fe", PeerDown("s0"))
    assert sorted(s.general) == ["g0", "g1"]


# --- Eagle's distributed scheduler: long jobs without the central scheduler, and failures ------------


def test_eagle_probes_a_long_job_it_receives_over_the_general_partition_without_the_minimum():
    """§3.3.3: long jobs are placed "on nodes in the general partition"; the minimum of K probes is for
    short jobs ("to improve the completion times of short jobs with very few tasks"). A long job that
    reaches a distributed scheduler (no central one) gets 2t long probes over the general nodes; when a
    general node dies its reservations are probed again over the live general nodes, and the node is
    a target again once it rejoins."""
    nodes = ["g0", "g1", "g2", "s0", "s1"]
    s = EagleSchedulerCore("s", nodes, ["s0", "s1"], min_probes=20, cutoff=10.0, seed=0)
    out = s.on_message(0, "fe", SubmitJob(1, [50.0] * 3, 50.0))
    probes = sent(out, Probe)
    assert {to for to, _ in probes} == {"g0", "g1", "g2"}
    assert all(p.long and p.remaining == 3 and p.estimate == 50.0 for _, p in probes)
    assert sum(p.count for _, p in probes) == 6
    c = s.counters
    assert (c["jobs_long"], c["probes_long"], c["jobs"], c["probes"]) == (1, 6, 0, 0)
    out = s.on_message(1, "fe", PeerDown("g0"))
    again = sent(out, Probe)
    assert again and {to for to, _ in again} <= {"g1", "g2"} and all(p.long for _, p in again)
    assert sum(p.count for _, p in again) == 2 and c["probes_long"] == 8
    # Short jobs no longer reach g0 either; once it rejoins they do again.
    reached = set()
    for j in range(2, 40):
        reached |= {to for to, _ in sent(s.on_message(2, "fe", SubmitJob(j, [1.0], 1.0)), Probe)}
    assert reached == {"g1", "g2", "s0", "s1"}
    s.on_message(3, "fe", PeerUp("g0"))
    out = s.on_message(4, "fe", SubmitJob(99, [1.0], 1.0))
    assert {to for to, _ in sent(out, Probe)} == set(nodes)  # 20 probes over 5 nodes: every one


def bitvector(busy: set[int], n: int) -> bytes:
    """The central scheduler's SSS bitvector: bit i (little-endian bytes) set while node i holds long work."""
    return sum(1 << i for i in busy).to_bytes((n + 7) // 8, "little")


def test_eagle_re_sends_rejected_probes_to_the_few_nodes_free_of_long_work_in_a_large_cluster():
    """§3.3.3: "target nodes are drawn uniformly at random from the set of nodes that are not currently
    serving a long job according to the selected bitvector", with the short partition always free. Here
    200 nodes (a bitvector of 25 bytes): every re-sent probe goes to a free one, as round 1, carrying the
    job's estimate, remaining count and the rejected reservations (drawn with replacement, so both may go
    to one node). With free nodes this rare, the draw often falls back to listing them."""
    nodes = [f"g{i}" for i in range(199)] + ["s0"]
    free = {f"g{i}" for i in range(8, 16)} | {"s0"}
    busy = bitvector({i for i in range(199) if f"g{i}" not in free}, len(nodes))
    s = EagleSchedulerCore("s", nodes, ["s0"], probe_ratio=1, min_probes=0, seed=3)
    ((first, _),) = sent(s.on_message(0, "fe", SubmitJob(1, [4.0], 4.0)), Probe)
    targets = []
    for k in range(60):
        s.jobs[1].probed[first] = 2  # it holds the two reservations it rejects (as after a re-send)
        out = s.on_message(1 + k, first, ProbeRejected(1, 2, 0, busy, 10.0))
        probes = sent(out, Probe)
        assert all(p == Probe(1, 4.0, 1, p.count, attempt=1) for _, p in probes)
        assert sum(p.count for _, p in probes) == 2
        targets += [to for to, p in probes for _ in range(p.count)]
    assert set(targets) <= free and "s0" in targets and len(set(targets)) >= 5
    assert s.counters["probes_to_free"] == 120 and s.counters["probes_to_short"] == 0
    # No short partition, one free node among 200: found whether the draw hits it or lists it.
    nodes = [f"g{i}" for i in range(200)]
    busy = bitvector(set(range(200)) - {150}, 200)
    s = EagleSchedulerCore("s", nodes, probe_ratio=1, min_probes=0, seed=3)
    ((first, _),) = sent(s.on_message(0, "fe", SubmitJob(1, [4.0], 4.0)), Probe)
    for k in range(10):
        s.jobs[1].probed[first] = 1
        out = s.on_message(1 + k, first, ProbeRejected(1, 1, 0, busy, 10.0))
        assert sent(out, Probe) == [("g150", Probe(1, 4.0, 1, 1, attempt=1))]


def test_eagle_keeps_the_freshest_bitvector_and_cancels_and_updates_the_nodes_its_re_sent_probes_hold():
    """§3.3.3: the re-sent probes use "the freshest available bitvector" (an older one arriving later is
    ignored). §3.4.3: "upon assigning a new task to a node, the distributed scheduler updates the number
    of remaining tasks at all nodes where it has located probes" (re-sent ones included, not the node
    that got the task), and once every task is handed out they are cancelled (Sparrow, §2.3.5)."""
    nodes = [f"n{i}" for i in range(8)]  # no short partition: only n7 is free by the fresh bitvector
    s = EagleSchedulerCore("s", nodes, probe_ratio=1, min_probes=0, update_ratio=0.0, seed=0)
    probed = [to for to, _ in sent(s.on_message(0, "fe", SubmitJob(1, [5.0] * 3, 5.0)), Probe)]
    a, b, c = (n for n in probed)
    fresh, old = bitvector(set(range(7)) - {7}, 8), bitvector(set(range(1, 8)), 8)
    out = s.on_message(1, a, ProbeRejected(1, 1, 0, fresh, 20.0))
    assert sent(out, Probe) == [("n7", Probe(1, 5.0, 3, 1, attempt=1))]
    out = s.on_message(2, b, ProbeRejected(1, 1, 0, old, 10.0))  # older: n0 would be free by it
    assert sent(out, Probe) == [("n7", Probe(1, 5.0, 3, 1, attempt=1))]
    assert s.stamp == 20.0
    out = s.on_message(3, c, GetTask(1))
    assert sent(out, RemainingUpdate) == [("n7", RemainingUpdate(1, 2))]
    assert s.counters["remaining_updates"] == 1
    s.on_message(4, "n7", GetTask(1))
    out = s.on_message(5, "n7", GetTask(1))  # the last task
    assert sorted(sent(out, CancelProbes)) == sorted([(c, CancelProbes(1)), ("n7", CancelProbes(1))])
    assert s.counters["probes_leftover_cancelled"] == 3  # c's, and n7's two (sticky: kept after use)
    # A late request after the job finished is answered NoTask.
    for i, node in enumerate([c, "n7", "n7"]):
        s.on_message(6, node, TaskFinished(1, i))
    assert 1 not in s.jobs
    assert s.on_message(7, "n7", GetTask(1)) == [Send("n7", NoTask(1))]


def test_eagle_never_re_sends_to_dead_nodes_and_re_probes_a_short_job_s_lost_reservations_as_short():
    """§3.3.3 with failures (issue 14): a node declared dead is never free of long work for the
    re-placement (every death counts, not only the last), and a short job's reservations lost with a
    node are probed again as short ones."""
    nodes = ["g0", "g1", "g2", "s0"]
    s = EagleSchedulerCore("s", nodes, ["s0"], probe_ratio=2, min_probes=0, seed=5)
    out = s.on_message(0, "fe", SubmitJob(1, [1.0, 1.0], 1.0))
    assert sorted(to for to, _ in sent(out, Probe)) == sorted(nodes)  # 4 probes over 4 nodes
    out = s.on_message(1, "fe", PeerDown("g1"))
    assert sum(p.count for _, p in sent(out, Probe)) == 1
    assert not any(p.long for _, p in sent(out, Probe)) and "g1" not in {to for to, _ in sent(out, Probe)}
    s.on_message(1, "fe", PeerDown("g2"))
    busy = bitvector({0}, 4)  # only g0 holds long work: g1 and g2 would be free, but they are dead
    for k in range(20):
        s.jobs[1].probed["g0"] = 1  # g0 holds the reservation it rejects
        out = s.on_message(2 + k, "g0", ProbeRejected(1, 1, 0, busy, 5.0))
        assert [to for to, _ in sent(out, Probe)] == ["s0"]


def test_eagle_without_sbp_counts_the_reservations_a_node_holds_one_task_at_a_time():
    """§3.6.3 (Eagle without sticky batch probing): a probe is used up by the task it brings, so a node
    holding two reservations of a job still holds one after its first task, and gets the job's cancel
    (with the right count of leftover reservations); a node whose one reservation was used does not."""
    nodes = ["a", "b"]
    s = EagleSchedulerCore("s", nodes, probe_ratio=2, min_probes=0, sticky=False, updates=False, seed=0)
    out = s.on_message(0, "fe", SubmitJob(1, [1.0, 1.0, 1.0], 1.0))  # 6 probes: 3 on each node
    assert sorted((to, p.count) for to, p in sent(out, Probe)) == [("a", 3), ("b", 3)]
    s.on_message(1, "a", GetTask(1))
    s.on_message(1, "a", GetTask(1))
    out = s.on_message(1, "b", GetTask(1))  # the last task: a holds 1 reservation, b 2
    assert sorted(to for to, _ in sent(out, CancelProbes)) == ["a", "b"]
    assert s.counters["probes_leftover"] == 3
    s.on_message(0, "fe", SubmitJob(2, [1.0], 1.0))  # 2 probes: one on each node
    out = s.on_message(1, "a", GetTask(2))
    assert sent(out, CancelProbes) == [("b", CancelProbes(2))]  # a used its one reservation


# --- Hawk's randomized stealing, the thief's side (§2.3.6) -----------------------------------------------


def rounds(stealer: Stealer, *, answers: int = 100) -> list[str]:
    """Run one stealing round in which no victim has anything to give; the victims asked in order."""
    asked = [e.to for e in stealer.start()]
    while asked and len(asked) < answers:
        nxt = stealer.failed(still_idle=True)
        if not nxt:
            break
        asked += [e.to for e in nxt]
    return asked


def test_a_thief_with_few_general_nodes_asks_each_other_one_once_never_itself_nor_a_dead_one():
    """§2.3.6: "it randomly contacts a number of other servers": up to N (10) distinct general nodes,
    never itself; with fewer candidates than attempts the round ends when every one was asked. A node
    declared dead (issue 14) is never asked."""
    stealer = Stealer("g0", ["g0", "g1"], 10, random.Random(0))
    assert rounds(stealer) == ["g1"]
    stealer = Stealer("s0", ["g0"], 10, random.Random(0))  # a short-partition thief, one general node
    assert rounds(stealer) == ["g0"]
    stealer = Stealer("g0", ["g0", "g1", "g2", "g3"], 10, random.Random(0))
    stealer.down("g2", still_idle=True)
    for _ in range(20):
        asked = rounds(stealer)
        assert sorted(asked) == ["g1", "g3"]
    stealer.up("g2")
    assert sorted(rounds(stealer)) == ["g1", "g2", "g3"]


def test_a_single_attempt_asks_one_victim_and_a_round_in_progress_is_not_restarted():
    """§2.3.6 / §2.4.9 (sensitivity to the number of stealing attempts): N = 1 still steals once; a node
    that runs out of work again while its round is on does not start a second one."""
    stealer = Stealer("a", ["a", "b", "c", "d"], 1, random.Random(3))
    first = stealer.start()
    assert len(first) == 1 and first[0].to != "a"
    assert stealer.start() == []  # the round is on
    assert stealer.failed(still_idle=True) == []  # one attempt only: the round ends
    assert len(stealer.start()) == 1  # and the next idle period starts a new one


def test_a_node_steals_again_the_next_time_it_runs_out_of_work_whatever_ended_the_last_round():
    """§2.3.6 "whenever a server is out of tasks to execute": a round ends when the victims ran out,
    when the node got work meanwhile, or when a victim gave probes; each time the next idle period starts
    a new round (docs/policies.md: no periodic retries, as in the thesis' simulator)."""
    victims = [f"g{i}" for i in range(12)]
    stealer = Stealer("me", victims, 3, random.Random(1))
    assert len(rounds(stealer)) == 3  # nobody had anything
    assert len(stealer.start()) == 1  # a new round
    assert stealer.failed(still_idle=False) == []  # got work meanwhile: the round stops
    assert len(stealer.start()) == 1
    stealer.succeeded()  # a victim gave probes
    assert len(stealer.start()) == 1


def test_a_victim_that_dies_while_asked_is_skipped_at_once_and_a_death_elsewhere_sends_nothing():
    """§2.3.6 with failures (issue 14): the thief waits for one victim at a time; if that one dies it asks
    the next at once (if still idle), while a node dying elsewhere does not start a request."""
    victims = [f"g{i}" for i in range(12)]
    stealer = Stealer("me", victims, 10, random.Random(2))
    (first,) = stealer.start()
    other = next(v for v in victims if v not in (first.to, "me"))
    assert stealer.down(other, still_idle=True) == []
    (nxt,) = stealer.down(first.to, still_idle=True)
    assert nxt.to not in (first.to, other)
    assert stealer.down(nxt.to, still_idle=False) == []  # busy again: the round stops
    assert stealer.start() != []


# --- Eagle's node queue: SRPT with bypass counters over long queues (§3.4.3, Algorithm 1) ----------------


class Kept:
    """An entry's state as kept by hand: estimate, long, reservations, slots held, bypass counter."""

    def __init__(self, entry: Entry) -> None:
        self.entry, self.estimate, self.long = entry, entry.estimate, entry.long
        self.count, self.active, self.bypass = entry.count, 0, 0.0


def algorithm_1(
    kept: list[Kept], remaining: dict[int, int], threshold: float, stop_at_long: bool
) -> Entry | None:
    """GetProbeFromQueue of Algorithm 1 with the anti-starvation check, over the live entries head first:
    the entry of least remaining work (remaining tasks x estimate) whose task estimate fits in threshold x
    estimate - bypass counter of every entry in front of it; else the first entry that can take a slot."""
    best, best_work, slack = None, math.inf, math.inf
    for k in kept:
        if stop_at_long and k.long:
            break
        work = remaining[k.entry.job_id] * k.estimate
        if k.active < k.count and work < best_work and k.estimate <= slack:
            best, best_work = k.entry, work
        slack = min(slack, threshold * k.estimate - k.bypass)
    if best is None:
        best = next((k.entry for k in kept if k.active < k.count), None)
    return best


@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("floor", [3 * BLOCK // 2, 6 * BLOCK])
@pytest.mark.parametrize("stop_at_long", [True, False])
def test_srpt_with_bypass_counters_matches_algorithm_1_kept_by_hand_over_queues_of_many_blocks(
    stop_at_long, floor, seed
):
    """§3.4.3: "whenever a probe P is about to be bypassed by a task T, P's bypass counter is incremented
    by the estimated execution time of T. Eagle does not allow T to bypass P if the estimated execution
    time of T would make the bypass counter of P exceed a threshold value" (5 task estimates, §3.5). The
    node's queue keeps those counters lazily per block of entries, and the remaining counts it is told
    are written in later; here everything is kept entry by entry, and every choice, every counter and
    every reservation count must agree, over queues of hundreds of entries (Eagle's SRPT; with
    ``stop_at_long`` off, DLWL's, §3.6.2)."""
    rng = random.Random(seed)
    q = HybridQueue(threshold=5.0)
    kept: list[Kept] = []
    remaining: dict[int, int] = {}  # job -> remaining tasks last told
    job = 0
    for step in range(6000):
        op = rng.random()
        if op < 0.3 or len(kept) < floor:
            job += 1
            long = rng.random() < 0.05
            est = rng.choice([0.5, 1.0, 2.0, 5.0, 10.0]) * (20 if long else 1)
            remaining[job] = rng.randint(1, 30)
            e = Entry("s", job, est, probe=not long, long=long, remaining=remaining[job],
                      count=1 if long else rng.choice([1, 1, 2, 3]))  # fmt: skip
            q.push(e)
            kept.append(Kept(e))
        elif op < 0.45:
            k = rng.choice(kept)
            remaining[k.entry.job_id] = rng.randint(0, 30)
            q.set_remaining("s", k.entry.job_id, remaining[k.entry.job_id])
        elif op < 0.55:
            k = rng.choice(kept)
            if not k.long and k.active < k.count and rng.random() < 0.5:
                q.activate(k.entry, 1)  # a sticky probe takes a slot
                k.active += 1
            elif k.active > 0:
                q.activate(k.entry, -1)  # ... and gives it back
                k.active -= 1
        elif op < 0.6:
            q.remove(kept.pop(rng.randrange(len(kept))).entry)
        else:
            chosen = q.srpt(stop_at_long=stop_at_long)
            assert chosen is algorithm_1(kept, remaining, q.threshold, stop_at_long), step
            if chosen is None:
                continue
            q.charge_bypass(chosen)
            i = next(i for i, k in enumerate(kept) if k.entry is chosen)
            for k in kept[:i]:
                k.bypass += chosen.estimate
            if kept[i].active == 0 and kept[i].count > 1 and rng.random() < 0.5:
                q.consume(chosen)  # one reservation of a non-sticky probe is used
                kept[i].count -= 1
            elif (r := rng.random()) < 0.4 or kept[i].long:
                q.remove(chosen)  # a placed task started, or a probe's job ran out
                kept.pop(i)
            elif r < 0.7:
                q.activate(chosen, 1)  # a sticky probe: it holds the slot its task runs in
                kept[i].active += 1
            else:  # ... and gives it back at once (its task ended before the next choice)
                q.activate(chosen, 1)
                q.activate(chosen, -1)
        if step % 50 == 0:
            assert [e for e in q] == [k.entry for k in kept], step
            assert all(q.bypass_of(k.entry) == pytest.approx(k.bypass) for k in kept), step
            assert q.reservations == sum(k.count for k in kept) and len(q) == len(kept), step
            assert all(k.entry.count == k.count and k.entry.active == k.active for k in kept), step


# --- Hawk's stealing on the node cores (§2.3.6): thief and victim ------------------------------------------


def hawk_node(name: str, victims: list[str], slots: int = 1, attempts: int = 10) -> HybridNodeCore:
    return HybridNodeCore(
        name, slots, stealer=Stealer(name, victims, attempts, random.Random(0)), victim=True
    )


def steal_requests(effects: list[Effect]) -> list[str]:
    return [to for to, _ in sent(effects, StealRequest)]


def test_a_victim_running_a_short_task_gives_the_group_after_its_first_long_entry():
    """Figure 2.3, case a1: "a server currently is executing a short job. The short tasks that it provides
    for stealing come after the first long job in the queue" (not the short probes at its head)."""
    v = hawk_node("v", [])
    v.on_message(0, "s", Probe(1, 1.0, 1))
    v.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0))  # runs a short task
    v.on_message(0, "s", Probe(2, 1.0, 1))  # S at the head
    v.on_message(0, "central", LongTask(9, 0, 50.0, 50.0))  # L
    v.on_message(0, "s", Probe(3, 1.0, 1))  # S behind L: the one given
    ((_, reply),) = sent(v.on_message(1, "thief", StealRequest()), StealReply)
    assert [p[1] for p in reply.probes] == [3] and v.counters["probes_given"] == 1
    assert [e.job_id for e in v.queue] == [2, 9]


def test_a_thief_serves_every_stolen_reservation_and_steals_again_after_a_success():
    """§2.3.6: stolen probes are queued on the thief as its own (a probe of two reservations asks its
    scheduler twice); a round that got probes ends, and the next time the thief runs out of work it
    starts a new one (Table 3.2's stealing counters: ``steal_successes`` per successful round)."""
    thief = hawk_node("t", ["t", "a", "b", "c"])
    thief.on_message(0, "s", Probe(1, 1.0, 1))
    thief.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0))
    (victim,) = steal_requests(thief.on_task_exit(1, (1, 0), True))
    out = thief.on_message(2, victim, StealReply([["s", 5, 1.0, 2, 2]]))
    assert sent(out, GetTask) == [("s", GetTask(5))] and steal_requests(out) == []
    thief.on_message(2, "s", AssignTask(5, 0, 1.0, 1.0))
    out = thief.on_task_exit(3, (5, 0), True)
    assert sent(out, GetTask) == [("s", GetTask(5))]  # the second reservation
    thief.on_message(3, "s", AssignTask(5, 1, 1.0, 1.0))
    assert (thief.counters["steals"], thief.counters["steal_successes"]) == (2, 1)
    (victim,) = steal_requests(thief.on_task_exit(4, (5, 1), True))  # out of work again: a new round
    thief.on_message(5, victim, StealReply([["s", 6, 1.0, 1, 1]]))
    assert (thief.counters["steals"], thief.counters["steal_successes"]) == (3, 2)


def test_a_probe_stolen_by_a_node_with_a_free_slot_beside_a_long_task_is_rescued_not_behind_long():
    """Table 3.2 (§3.6.1): a stolen probe that runs at once on its thief did not wait behind long work
    (``short_ran_behind_long`` stays 0), though it was queued on a node holding long work
    (``probes_behind_long``, as any probe queued there). The thief here has two slots, one running a
    long task, and nothing queued: it is out of tasks to execute."""
    thief = hawk_node("t", ["t", "a", "b"], slots=2)
    out = thief.on_message(0, "central", LongTask(9, 0, 100.0, 100.0))
    assert [e for e in out if isinstance(e, Launch)] == [Launch((9, 0), 100.0)]
    thief.on_message(5, "s", Probe(1, 1.0, 1))
    thief.on_message(5, "s", AssignTask(1, 0, 1.0, 1.0))
    (victim,) = steal_requests(thief.on_task_exit(6, (1, 0), True))  # a free slot, nothing queued
    out = thief.on_message(7, victim, StealReply([["s", 2, 1.0, 1, 1]]))
    assert sent(out, GetTask) == [("s", GetTask(2))]
    thief.on_message(7, "s", AssignTask(2, 0, 1.0, 1.0))
    assert thief.counters["probes_behind_long"] == 2  # job 1's probe and the stolen one
    assert thief.counters["short_ran_behind_long"] == 0


def test_a_round_stops_when_the_thief_got_work_meanwhile():
    """§2.3.6: only a server out of tasks steals; one that got a task while waiting for a victim's
    answer asks no further victim, even with no free slot and an empty queue."""
    thief = hawk_node("t", [f"g{i}" for i in range(10)])
    thief.on_message(0, "s", Probe(1, 1.0, 1))
    thief.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0))
    (victim,) = steal_requests(thief.on_task_exit(1, (1, 0), True))
    thief.on_message(1.5, "s", Probe(2, 1.0, 1))
    thief.on_message(1.5, "s", AssignTask(2, 0, 1.0, 1.0))  # busy: free 0, nothing queued
    assert steal_requests(thief.on_message(2, victim, StealReply([]))) == []


def test_a_hawk_node_whose_scheduler_dies_kills_its_tasks_frees_its_slots_and_steals():
    """Issue 14 on a Hawk node (it has a stealer): the tasks of a dead scheduler are killed and the slots
    held for its pending ``GetTask`` freed, every one of them; left with nothing, the node steals
    (§2.3.6). A victim that dies is never asked; if it was being asked, the next one is, at once."""
    node = hawk_node("n", ["n", "a", "b", "c"], slots=3)
    node.on_message(0, "s", Probe(1, 1.0, 1))
    node.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0))  # runs
    node.on_message(0, "s", Probe(2, 1.0, 2, count=2))  # two GetTask pending
    assert node.free == 0
    out = node.on_message(1, "fe", PeerDown("s"))
    assert [e for e in out if isinstance(e, Kill)] == [Kill((1, 0))]
    assert node.free == 2  # the two slots held for job 2; job 1's slot frees when its task exits
    (victim,) = steal_requests(out)
    out = node.on_message(1, "fe", PeerDown(victim))  # the victim being asked dies: the next one
    asked = [victim]
    while requests := steal_requests(out):
        asked += requests
        out = node.on_message(2, requests[0], StealReply([]))
    assert sorted(asked) == ["a", "b", "c"]  # each once, the dead one not again
    # The killed task's exit: the node is out of work again, and the dead victim is not asked.
    out = node.on_task_exit(3, (1, 0), True)
    assert sent(out, TaskFinished) == []  # nobody to tell
    asked = []
    while requests := steal_requests(out):
        asked += requests
        out = node.on_message(6, requests[0], StealReply([]))
    assert sorted(asked) == sorted({"a", "b", "c"} - {victim})


def test_a_long_probe_of_hawk_without_central_is_long_work_on_its_node():
    """§2.4.4 (Hawk without centralized scheduling: long jobs are probed) with §2.3.6: a long job's probe
    queued on a node is long work there, so the short probes behind it are "behind a long task": a thief
    gets them (Figure 2.3, case a1) and they count as queued behind long work (Table 3.2)."""
    v = hawk_node("v", [])
    v.on_message(0, "s", Probe(1, 1.0, 1))
    v.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0))  # runs a short task
    v.on_message(0, "s", Probe(2, 500.0, 1, long=True))  # a long job's probe
    v.on_message(0, "s", Probe(3, 1.0, 1))
    assert v.holds_long_work and v.counters["probes_behind_long"] == 1
    ((_, reply),) = sent(v.on_message(1, "thief", StealRequest()), StealReply)
    assert [p[1] for p in reply.probes] == [3]


def test_dlwl_srpt_charges_placed_tasks_to_the_bypass_counters_so_a_big_task_is_not_starved():
    """§3.6.2 (DLWL+SRPT: the node reorders its whole queue by SRPT) with §3.4.3's anti-starvation rule:
    a task placed early may be bypassed by shorter ones only until its counter would pass 5 x its
    estimate; here a task of estimate 2 lets ten tasks of 1 go first, then runs."""
    node = HybridNodeCore("n", srpt=True, stop_at_long=False, threshold=5.0)
    node.on_message(0, "s", QueueTask(100, 0, 1.0, 1.0, 1))  # runs
    node.on_message(0, "s", QueueTask(1, 0, 2.0, 2.0, 10))  # remaining work 20
    launched = []
    for i in range(1, 13):
        node.on_message(i - 0.5, "s", QueueTask(100 + i, 0, 1.0, 1.0, 1))  # remaining work 1
        running = next(iter(node.running))
        out = node.on_task_exit(i, running, True)
        launched += [e.task_id[0] for e in out if isinstance(e, Launch)]
    assert launched[:11] == [101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 1]


def test_a_sticky_probe_holds_one_slot_at_a_time_per_reservation():
    """SBP (§3.4.1): after each task the node asks the same job for another one; a probe of one
    reservation never runs two tasks at once, even with a second slot free."""
    node = HybridNodeCore("n", 2, srpt=True, sticky=True)
    out = node.on_message(0, "s", Probe(1, 1.0, 5))
    assert sent(out, GetTask) == [("s", GetTask(1))]
    assert sent(node.on_message(0, "s", AssignTask(1, 0, 1.0, 1.0, 4)), GetTask) == []
    out = node.on_task_exit(1, (1, 0), True)
    assert sent(out, GetTask) == [("s", GetTask(1))] and node.free == 1
    assert sent(node.on_message(1, "s", AssignTask(1, 1, 1.0, 1.0, 3)), GetTask) == []


def test_a_dlwl_heartbeat_carries_queued_estimates_plus_what_is_left_of_the_running_tasks_per_slot():
    """§3.6.2 (DLWL): the node's estimated queue waiting time: estimates of the queued tasks plus the
    remaining estimated part of the running ones (an overdue task counts 0), divided over its slots."""
    node = HybridNodeCore("n", 2, srpt=True, stop_at_long=False, heartbeat_to=["s"], heartbeat=1.0)
    node.on_message(0, "s", QueueTask(1, 0, 10.0, 10.0, 1))  # runs: 6 left at t = 4
    node.on_message(0, "s", QueueTask(2, 0, 1.0, 1.0, 1))  # runs: overdue at t = 4
    node.on_message(0, "s", QueueTask(3, 0, 5.0, 5.0, 1))
    node.on_message(0, "s", QueueTask(4, 0, 3.0, 3.0, 1))
    assert node.estimated_wait(4.0) == pytest.approx((6.0 + 0.0 + 5.0 + 3.0) / 2)


# --- central LWL (Hawk §2.3.7, Eagle §3.3.3) ------------------------------------------------------------


def test_lwl_index_always_picks_a_node_with_the_least_work_left_under_long_churn():
    """§2.3.7: "the waiting time is the sum of the estimated execution time for all long tasks in that
    server's queue plus the remaining estimated execution time of any long task that currently may be
    executing", the task going to the node with the smallest. Checked against that plain definition
    over thousands of placements, starts, finishes and DLWL reports (§3.6.2)."""
    rng = random.Random(7)
    n = 6
    lwl = LwlIndex(n, list(range(n)))
    queued = [[] for _ in range(n)]  # estimates placed, not started
    running = [[] for _ in range(n)]  # (expected end, estimate) of started tasks
    reported: list[float | None] = [None] * n  # expected end of a reported backlog (DLWL)
    now = 0.0

    def wait(i: int) -> float:
        ends = [e for e, _ in running[i]] + ([reported[i]] if reported[i] is not None else [])
        return sum(queued[i]) + max(0.0, max(ends, default=-math.inf) - now)

    for step in range(4000):
        now += rng.choice([0.0, 0.0, 0.5, 3.0])
        op = rng.random()
        if op < 0.45:
            k = lwl.least(now)
            waits = [wait(i) for i in range(n)]
            assert waits[k] <= min(waits) + 1e-6, (step, k, waits)
            est = rng.choice([1.0, 5.0, 20.0])
            lwl.add(k, est, now)
            queued[k].append(est)
        elif op < 0.7:
            i = rng.randrange(n)
            if queued[i]:
                est = queued[i].pop(0)
                lwl.start(i, est, now)
                running[i].append((now + est, est))
        elif op < 0.95:
            i = rng.randrange(n)
            if running[i]:
                end, est = running[i].pop(rng.randrange(len(running[i])))
                lwl.finish(i, est, end, now)
        else:
            i = rng.randrange(n)
            w = rng.choice([0.0, 0.5, 4.0])
            lwl.report(i, w, now)
            queued[i], running[i] = [], []
            reported[i] = now + w if w > 0 else None


def test_lwl_index_counts_the_running_task_the_same_after_compacting_its_heaps():
    """§2.3.7's waiting time (queued estimates plus the remaining part of the running long task) once the
    index has dropped its stale entries: many small tasks placed and finished on one node without a
    placement in between make it rebuild its heaps, and a node running a long task with more queued
    behind it must still count both."""
    lwl = LwlIndex(2, [0, 1])
    lwl.add(0, 100.0, 0.0)
    lwl.start(0, 100.0, 0.0)  # node 0 runs a task expected to end at 100
    lwl.add(0, 50.0, 0.0)  # ... with 50 queued behind it: 150 at t = 0
    lwl.add(1, 120.0, 0.0)  # node 1: 120 queued
    for _ in range(60):  # small tasks come and go on node 1, placed and finished before they started
        lwl.add(1, 1.0, 0.0)
        lwl.finish(1, 1.0, None, 0.0)
    assert len(lwl.idle) + len(lwl.busy) > 8 * 2 + 64  # the next question rebuilds
    assert lwl.least(0.0) == 1
    assert len(lwl.idle) + len(lwl.busy) == 2
    assert lwl.least(40.0) == 0  # 50 queued + 60 left = 110 < 120


def test_a_reported_backlog_below_one_second_still_counts():
    """§3.6.2 (DLWL's queue estimates, as LWL's): a node that reports 0.5 s of work is more loaded than an
    idle one, whatever the unit (replays divide trace seconds by the time scale, so waits are small)."""
    lwl = LwlIndex(2, [0, 1])  # ties would go to node 0
    lwl.report(0, 0.5, 10.0)
    assert lwl.least(10.0) == 1
    assert lwl.least(10.4) == 1
    assert lwl.least(10.5) == 0  # the backlog is over: a tie again


def test_lwl_sss_bits_over_many_nodes_stay_set_while_a_node_holds_any_long_task():
    """§3.3.3: "bit i indicating whether or not worker i currently has a long task assigned to it
    (either running or enqueued)": with 16 nodes (two bytes, little-endian as the nodes and schedulers
    read it) and two tasks of a job on one node, the bit stays set until both finished. §2.3.7: a task
    that finishes before its estimate leaves no remaining work behind."""
    nodes = [f"n{i}" for i in range(16)]
    c = CentralLwlCore("central", nodes, ["n12"], sss=True, seed=0)
    out = c.on_message(0.0, "fe", SubmitJob(1, [100.0, 100.0], 100.0))
    assert [to for to, _ in sent(out, LongTask)] == ["n12", "n12"]
    assert all(int.from_bytes(m.bitvector, "little") == 1 << 12 for _, m in sent(out, LongTask))
    c.on_message(1.0, "n12", TaskStarted(1, 0))
    c.on_message(10.0, "n12", TaskFinished(1, 0))  # early: 90 s before its estimate
    assert c.bits == 1 << 12  # task 1 is still queued there
    assert c.lwl.wait(0, 10.0) == 100.0  # the queued task only, nothing left of the finished one
    c.on_message(10.0, "n12", TaskStarted(1, 1))
    c.on_message(20.0, "n12", TaskFinished(1, 1))
    assert c.bits == 0 and c.lwl.wait(0, 20.0) == 0.0


def test_lwl_places_a_dead_node_s_long_tasks_again_and_moves_their_sss_bit():
    """§2.3.7 and §3.3.3 under failures (issue 14): the long tasks of a node declared dead are placed
    again by LWL on the live targets, queued there until they start, and the bitvector piggybacked on
    the new ``LongTask`` (with the scheduler's clock) marks the node that holds them now and no longer
    the dead one; bits clear as the tasks finish."""
    nodes = ["g0", "g1", "g2", "s0"]
    c = CentralLwlCore("central", nodes, ["g0", "g1", "g2"], sss=True, seed=0)
    out = c.on_message(0.0, "fe", SubmitJob(1, [30.0, 30.0], 30.0))
    ((first, m0), (second, m1)) = sent(out, LongTask)
    c.on_message(0.0, first, TaskStarted(1, m0.task_index))
    (free,) = {"g0", "g1", "g2"} - {first, second}
    out = c.on_message(5.0, "fe", PeerDown(first))
    ((to, msg),) = sent(out, LongTask)
    assert to == free and msg.task_index == m0.task_index and msg.stamp == 5.0
    bit = {n: 1 << i for i, n in enumerate(nodes)}
    assert int.from_bytes(msg.bitvector, "little") == bit[free] | bit[second]
    # The re-placed task is queued on its new node until it says it started: another job's task goes
    # to the node with less work left (the second node is behind by its own queued task only).
    assert c.lwl.wait(c.index[free], 5.0) == 30.0
    c.on_message(6.0, free, TaskStarted(1, m0.task_index))
    c.on_message(36.0, free, TaskFinished(1, m0.task_index))
    assert c.bits == bit[second]
    c.on_message(40.0, second, TaskFinished(1, m1.task_index))
    assert c.bits == 0
    # The dead node rejoins empty: with half a second of work queued on each other node, it is the
    # one with the least work left.
    out = c.on_message(41.0, "fe", SubmitJob(2, [0.5, 0.5], 0.5))
    assert sorted(to for to, _ in sent(out, LongTask)) == sorted({"g0", "g1", "g2"} - {first})
    c.on_message(41.0, "fe", PeerUp(first))
    out = c.on_message(42.0, "fe", SubmitJob(3, [10.0], 10.0))
    assert [to for to, _ in sent(out, LongTask)] == [first]


def test_a_long_task_placed_again_before_it_started_starts_its_job_when_its_new_node_says_so():
    """§2.3.7: the central scheduler learns that a long task started from its node; a task placed again
    because its node died before starting it (issue 14) is queued on the new node, and the job's first
    start (``JobDone``'s delay) is when that node starts it, not when it was placed again."""
    c = CentralLwlCore("central", ["g0", "g1"], ["g0", "g1"], sss=True, seed=0)
    ((node, m),) = sent(c.on_message(0.0, "fe", SubmitJob(1, [30.0], 30.0)), LongTask)
    ((again, _),) = sent(c.on_message(5.0, "fe", PeerDown(node)), LongTask)
    assert again != node
    c.on_message(8.0, again, TaskStarted(1, m.task_index))
    done = c.on_message(38.0, again, TaskFinished(1, m.task_index))
    assert sent(done, JobDone) == [("fe", JobDone(1, 8.0))]


def test_dlwl_places_a_dead_node_s_tasks_again_by_least_work_and_ignores_its_late_reports():
    """§3.6.2 (DLWL: each task on the node with the least estimated wait) under failures (issue 14): the
    tasks placed on a node declared dead, started or not, are placed again on the live nodes, with the
    job's count of tasks not started back up (what node SRPT reads); the dead node gets no remaining
    update, its late start and finish count for nothing, and once it rejoins it is a target again."""
    s = DlwlSchedulerCore("s", ["a", "b", "c"], ["a", "b", "c"], heartbeat=0.0, update_ratio=0.0, seed=0)
    for node, wait in (("a", 0.0), ("b", 1.0), ("c", 50.0)):
        s.on_message(0, node, QueueReport(wait))
    out = s.on_message(0, "fe", SubmitJob(1, [4.0] * 3, 4.0))
    assert [to for to, _ in sent(out, QueueTask)] == ["a", "b", "a"]
    s.on_message(1, "a", TaskStarted(1, 0))  # a runs task 0, task 2 waits there
    out = s.on_message(2, "fe", PeerDown("a"))
    again = sent(out, QueueTask)
    assert [(to, m.task_index) for to, m in again] == [("b", 0), ("b", 2)]
    assert [m.remaining for _, m in again] == [3, 3]  # task 0 is not started any more
    assert s.counters["tasks_rerun"] == 2 and s.counters["rerun_lost_ms"] == 1000
    assert s.on_message(3, "a", TaskStarted(1, 2)) == [] and s.counters["late_results_ignored"] == 1
    out = s.on_message(3, "b", TaskStarted(1, 1))
    assert sent(out, RemainingUpdate) == [("b", RemainingUpdate(1, 2))]  # b still holds 0 and 2
    s.on_message(4, "a", TaskFinished(1, 0))
    assert s.counters["late_results_ignored"] == 2 and 0 in s.jobs[1].placed
    s.on_message(5, "fe", PeerUp("a"))
    assert [to for to, _ in sent(s.on_message(6, "fe", SubmitJob(2, [1.0], 1.0)), QueueTask)] == ["a"]


# --- Kairos central dispatcher (§4.3.3, Algorithm 3) ------------------------------------------------------


def placed(effects: list[Effect]) -> list[str]:
    return [e.to for e in effects if isinstance(e, Send) and isinstance(e.msg, PlaceTask)]


def test_random_tie_break_fills_every_node_up_to_n_plus_q_fewest_tasks_first():
    """Alg. 3 lines 11-17 with Figure 4.6's random tie-break: the levels i = 0 .. N + Q are scanned in
    order, so once every node holds a task the next ones go to nodes holding one, and so on up to the
    cap N + Q (admission control), whatever breaks the ties."""
    c = KairosCentralCore("c", {"a": 1, "b": 1, "c": 1}, q=2, tiebreak="random", seed=4)
    out = c.on_message(0.0, "fe", SubmitJob(1, [1.0] * 10, 1.0))
    to = placed(out)
    assert len(to) == 9 and sorted(to[:3]) == sorted(to[3:6]) == sorted(to[6:]) == ["a", "b", "c"]
    assert c.counts() == {"a": 3, "b": 3, "c": 3} and len(c.queue) == 1


def test_a_node_keeps_its_place_in_the_variance_order_through_many_heartbeats():
    """§4.3.3, the Var tie-break: the node with the lowest reported variance among those with the fewest
    tasks gets the task, also after hundreds of heartbeats changed every node's variance (the dispatcher
    drops its stale entries now and then)."""
    c = KairosCentralCore("c", {"a": 1, "b": 1, "c": 1}, q=0)
    rng = random.Random(1)
    for _ in range(300):
        for n in "abc":
            c.on_message(0.0, n, Heartbeat(0, rng.uniform(1.0, 9.0), 0.0))
    c.on_message(0.0, "b", Heartbeat(0, 0.5, 0.0))
    c.on_message(0.0, "a", Heartbeat(0, 0.7, 0.0))
    c.on_message(0.0, "c", Heartbeat(0, 0.9, 0.0))
    assert placed(c.on_message(1.0, "fe", SubmitJob(1, [1.0] * 3, 1.0))) == ["b", "a", "c"]


def test_kairos_queues_each_task_of_a_staged_job_once_as_its_stages_are_released():
    """Alg. 3's central queue (line 5: every task of a job is pushed once) for a staged job (the map and
    reduce stages of §4.5's Hadoop jobs; here a DAG): a stage joins the queue when its parents finish,
    and a stage whose tasks are still partly queued is not queued again when another stage is released."""
    c = KairosCentralCore("c", {"a": 2}, q=0)
    # Stage 0: 1 task (index 0); stage 1: 3 tasks (1-3); stage 2 after 0: index 4; stage 3 after 2: 5.
    stages = [[1, 1.0, [1], []], [3, 1.0, [1], []], [1, 1.0, [1], [0]], [1, 1.0, [1], [2]]]
    out = c.on_message(0.0, "fe", SubmitJob(1, [1.0] * 6, 1.0, stages))
    assert [(e.to, e.msg.task_index) for e in out] == [("a", 0), ("a", 1)]
    assert list(c.queue) == [(1, 2), (1, 3)]
    out = c.on_message(1.0, "a", TaskFinished(1, 0))  # stage 2 released: behind stage 1's two
    assert [e.msg.task_index for e in out if isinstance(e.msg, PlaceTask)] == [2]
    assert list(c.queue) == [(1, 3), (1, 4)]
    done = []
    for now in range(2, 8):
        if not c.state.placed:
            break
        (job, index) = next(iter(c.state.placed))
        out = c.on_message(float(now), "a", TaskFinished(job, index))
        done += [e.msg.task_index for e in out if isinstance(e.msg, PlaceTask)]
    assert sorted(done) == [3, 4, 5] and c.counters["tasks_placed"] == 6


def test_a_kairos_node_that_rejoins_takes_tasks_again_up_to_its_n_plus_q():
    """Alg. 3's admission control (at most N + Q tasks per node) for a node declared dead (issue 14) that
    rejoins: its cap is N + Q again, and queued tasks go to it at once."""
    c = KairosCentralCore("c", {"a": 2, "b": 1}, q=1)
    c.on_message(0.0, "fe", PeerDown("a"))
    out = c.on_message(1.0, "fe", SubmitJob(1, [1.0] * 6, 1.0))
    assert placed(out) == ["b", "b"] and len(c.queue) == 4
    assert placed(c.on_message(2.0, "fe", PeerUp("a"))) == ["a", "a", "a"]
    assert c.counts() == {"a": 3, "b": 2} and len(c.queue) == 1


# --- Kairos node: LAS with preemption and the starvation guard (§4.3.2, Algorithm 2) ---------------------


W = 10.0


def kairos_node(slots: int = 1, **kw: Any) -> KairosNodeCore:
    kw.setdefault("quantum", W)
    return KairosNodeCore("n", slots, central="c", **kw)


def place(node: KairosNodeCore, now: float, job: int) -> list[Effect]:
    return node.on_message(now, "c", PlaceTask(job, 0, 100.0, 0.0))


def test_an_arrival_preempts_an_unguarded_task_when_another_slot_holds_a_guarded_one():
    """Alg. 2 lines 10-15 with the starvation guard: a new task preempts the running task with the most
    attained service *among those not protected*; a protected task in the first slot does not make it
    wait."""
    n = kairos_node(slots=2, starvation_quanta=1, starvation_multiple=3.0)
    place(n, 0.0, 1)  # slot 0
    place(n, 0.0, 2)  # slot 1
    place(n, 1.0, 3)  # preempts task 1 (1 s, the first of the two with the most): slot 0
    place(n, 2.0, 4)  # preempts task 2 (2 s against task 3's 1 s): slot 1
    out = n.on_timer(11.0, (QUANTUM, 0))  # task 1 waited W: starving, it takes slot 0, guarded
    assert out == [Suspend((3, 0)), Resume((1, 0)), SetTimer((QUANTUM, 0), 3 * W)]
    # Slot 1's task 4 (9.5 s, unguarded) is preempted by an arrival; slot 0's guarded task 1 is not.
    out = place(n, 11.5, 5)
    assert out == [Suspend((4, 0)), Launch((5, 0), 100.0), SetTimer((QUANTUM, 1), W)]
    assert n.counters["arrivals_waiting"] == 0


def test_the_starvation_guard_waits_exactly_its_number_of_quanta_also_with_a_small_quantum():
    """§4.3.2: "if a task is not able to run for a given number of consecutive quanta" (3 by default):
    with W = 0.1 s (replays divide the thesis' W by the time scale) a task idle for 0.25 s is not
    starving yet; at 0.3 s it is."""
    n = kairos_node(slots=1, quantum=0.1)
    place(n, 0.0, 1)
    for k in range(1, 6):
        n.on_timer(k * 0.1, (QUANTUM, 0))  # alone: 0.5 s attained
    place(n, 0.5, 2)  # task 1 suspended at 0.5
    assert n.on_timer(0.6, (QUANTUM, 0)) == [SetTimer((QUANTUM, 0), 0.1)]
    assert n.on_timer(0.75, (QUANTUM, 0)) == [SetTimer((QUANTUM, 0), 0.1)]  # idle 0.25 s: not yet
    out = n.on_timer(0.8, (QUANTUM, 0))  # idle 0.3 s = 3 quanta: the guard
    assert out == [Suspend((2, 0)), Resume((1, 0)), SetTimer((QUANTUM, 0), 0.2)]


def test_a_heartbeat_of_two_tasks_carries_their_variance():
    """Alg. 2 line 48: the variance of the attained service of the node's tasks, which Alg. 3 breaks ties
    with; two tasks already have one (population variance, as for three)."""
    n = kairos_node(slots=2, heartbeat_interval=1.0)
    place(n, 0.0, 1)
    place(n, 4.0, 2)
    (hb,) = [e.msg for e in n.on_timer(6.0, "heartbeat") if isinstance(e, Send)]
    assert (hb.tasks, hb.variance, hb.attained_sum) == (2, pytest.approx(4.0), pytest.approx(8.0))


def test_a_failed_task_is_reported_as_failed_and_one_that_exited_suspended_is_never_resumed():
    """Alg. 2 line 19 (a task finishes) for the two cases the thesis leaves out: a failed task is reported
    failed (``ok`` False) and counted apart; a task that exited while suspended (the real runtime's
    race with SIGSTOP) leaves the idle set, so the next free slot goes to a live task."""
    n = kairos_node(slots=1)
    place(n, 0.0, 1)
    out = n.on_task_exit(1.0, (1, 0), False)
    assert sent(out, TaskFinished) == [("c", TaskFinished(1, 0, False))]
    assert (n.counters["tasks_failed"], n.counters["tasks_finished"]) == (1, 0)
    place(n, 2.0, 2)
    place(n, 3.0, 3)  # task 2 suspended
    n.on_task_exit(3.5, (2, 0), True)  # ... and exits meanwhile
    assert n.idle == {}
    out = n.on_task_exit(4.0, (3, 0), True)  # the slot frees: nothing left to resume
    assert not [e for e in out if isinstance(e, (Resume, Launch))] and n.free == 1


def test_kairos_node_parameter_edges():
    """Alg. 2's N and W, and the guard's multiple: W must be positive (0 refused even with an explicit
    heartbeat period), a guard shorter than one quantum is allowed, a zero heartbeat period is refused;
    each refusal names the node and the parameter."""
    with pytest.raises(ValueError, match="node n: quantum"):
        KairosNodeCore("n", 1, quantum=0.0, heartbeat_interval=1.0)
    with pytest.raises(ValueError, match="node n: heartbeat_interval"):
        KairosNodeCore("n", 1, heartbeat_interval=0.0)
    with pytest.raises(ValueError, match="node n: slots"):
        KairosNodeCore("n", 0)
    with pytest.raises(ValueError, match="node n: starvation_quanta"):
        KairosNodeCore("n", 1, starvation_quanta=0)
    with pytest.raises(ValueError, match="node n: starvation_multiple"):
        KairosNodeCore("n", 1, starvation_multiple=0.0)
    assert KairosNodeCore("n", 1, starvation_multiple=0.5).guard == pytest.approx(0.5 * 10.0)
    with pytest.raises(ValueError, match="central scheduler c: no nodes"):
        KairosCentralCore("c", {})
    with pytest.raises(ValueError, match="central scheduler c: kairos_q"):
        KairosCentralCore("c", {"a": 1}, q=-1)
    with pytest.raises(ValueError, match="central scheduler c: tie-break"):
        KairosCentralCore("c", {"a": 1}, tiebreak="lowest")
