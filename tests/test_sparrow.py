"""Sparrow scheduler core: probe count, late binding, cancel, JobDone. No sockets, no sleeps."""

import random
from collections import Counter

from helpers import sent as sends

from aviary.common.effects import Send
from aviary.common.messages import (
    AssignTask,
    CancelProbes,
    GetTask,
    JobDone,
    NoTask,
    Probe,
    SubmitJob,
    TaskFinished,
)
from aviary.distributed.sparrow import SparrowCore, sample_nodes

NODES = [f"n{i}" for i in range(20)]


def probes(effects):
    return {e.to: e.msg for e in effects if isinstance(e, Send) and isinstance(e.msg, Probe)}


def test_sends_d_times_m_probes_to_distinct_random_nodes():
    s = SparrowCore("s", NODES, probe_ratio=2, seed=1)
    out = s.on_message(0, "fe", SubmitJob(1, [1.0, 2.0, 3.0], 2.0))
    sent = probes(out)
    assert len(sent) == 6 and sum(p.count for p in sent.values()) == 6
    assert all(p == Probe(1, 2.0, 3, 1) for p in sent.values())


def test_probe_ratio_is_a_parameter():
    s = SparrowCore("s", NODES, probe_ratio=1.5, seed=1)
    assert sum(p.count for p in probes(s.on_message(0, "fe", SubmitJob(1, [1.0] * 4, 1.0))).values()) == 6


def test_more_probes_than_nodes_are_batched_per_node():
    picks = sample_nodes(random.Random(0), ["a", "b", "c"], 8)
    assert sum(picks.values()) == 8 and set(picks) == {"a", "b", "c"}
    assert sorted(picks.values()) == [2, 3, 3]


def test_seeded_choices_are_reproducible_and_differ_across_seeds():
    def targets(seed):
        return sorted(
            probes(SparrowCore("s", NODES, seed=seed).on_message(0, "fe", SubmitJob(1, [1.0] * 3, 1.0)))
        )

    assert targets(3) == targets(3)
    assert targets(3) != targets(4)


def test_late_binding_hands_out_each_task_once_then_no_task_and_cancels_leftovers():
    s = SparrowCore("s", NODES, seed=2)
    sent = probes(s.on_message(0, "fe", SubmitJob(5, [1.0, 2.0], 1.5)))
    first, second, third, *rest = sorted(sent)
    out = s.on_message(1, first, GetTask(5))
    assert [e.msg for e in out] == [AssignTask(5, 0, 1.0, 1.5)]
    out = s.on_message(2, second, GetTask(5))
    assigned = [e.msg for e in out if isinstance(e.msg, AssignTask)]
    cancels = sorted(to for to, _ in sends(out, CancelProbes))
    assert assigned == [AssignTask(5, 1, 2.0, 1.5)]
    # Only the nodes still holding a reservation are told to cancel.
    assert cancels == sorted([third, *rest])
    assert [e.msg for e in s.on_message(3, third, GetTask(5))] == [NoTask(5)]


def test_job_done_after_last_task_finishes_with_first_start_delay():
    s = SparrowCore("s", NODES, seed=2)
    sent = sorted(probes(s.on_message(10.0, "fe", SubmitJob(5, [1.0, 2.0], 1.5))))
    s.on_message(10.5, sent[0], GetTask(5))
    s.on_message(10.7, sent[1], GetTask(5))
    assert s.on_message(11.5, sent[0], TaskFinished(5, 0)) == []
    out = s.on_message(12.7, sent[1], TaskFinished(5, 1))
    assert out == [Send("fe", JobDone(5, 0.5))]
    assert 5 not in s.jobs


def test_every_task_handed_out_exactly_once_under_random_interleaving():
    rng = random.Random(9)
    s = SparrowCore("s", NODES, seed=9)
    pending = [(e.to, e.msg.count) for e in s.on_message(0, "fe", SubmitJob(1, [1.0] * 7, 1.0))]
    requests = [node for node, n in pending for _ in range(n)]
    rng.shuffle(requests)
    handed = Counter()
    for node in requests:
        for e in s.on_message(0, node, GetTask(1)):
            if isinstance(e.msg, AssignTask):
                handed[e.msg.task_index] += 1
    assert handed == Counter(range(7))


# --- leftover probes: cancelled (Sparrow, thesis §2.3.5) or kept (the authors' simulator) -------------


def test_leftover_probes_are_cancelled_by_default_or_kept_and_counted_either_way():
    for cancel in (True, False):
        s = SparrowCore("s", NODES, cancel=cancel, seed=2)
        sent = sorted(probes(s.on_message(0, "fe", SubmitJob(5, [1.0, 2.0], 1.5))))
        s.on_message(1, sent[0], GetTask(5))
        out = s.on_message(2, sent[1], GetTask(5))
        cancels = sorted(to for to, _ in sends(out, CancelProbes))
        assert cancels == (sent[2:] if cancel else [])
        # A kept probe that reaches a free slot gets NoTask: one round trip instead of a cancel.
        assert [e.msg for e in s.on_message(3, sent[2], GetTask(5))] == [NoTask(5)]
        c = s.counters
        assert c["probes_leftover"] == 2
        assert (c["probes_leftover_cancelled"], c["probes_leftover_kept"]) == ((2, 0) if cancel else (0, 2))


def test_cancel_probes_is_a_declared_parameter_and_the_summary_says_which_mode_ran(tmp_path):
    import json

    from aviary.launch.cli.main import main

    args = ["replay", "--runtime", "sim", "--policy", "sparrow", "--jobs", "30", "--start", "6000",
            "--nodes", "40", "--load", "0.8", "--quiet"]  # fmt: skip
    summaries = {}
    for mode in ("on", "off"):
        assert main([*args, "--cancel-probes", mode, "--out", str(tmp_path / mode)]) == 0
        summaries[mode] = json.loads((tmp_path / mode / "summary.json").read_text())
    on, off = summaries["on"], summaries["off"]
    assert on["extra"]["params"]["cancel_probes"] == "on" and off["extra"]["params"]["cancel_probes"] == "off"
    assert on["counters"]["probes_leftover_kept"] == 0 < on["counters"]["probes_leftover_cancelled"]
    assert off["counters"]["probes_leftover_cancelled"] == 0 < off["counters"]["probes_leftover_kept"]
    assert on["messages"]["CancelProbes"] > 0 and "CancelProbes" not in off["messages"]
