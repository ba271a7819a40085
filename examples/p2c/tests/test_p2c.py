"""Power of d choices, walked by hand through its core (no sockets, no sleeps), then one simulated replay."""

from __future__ import annotations

import pytest
from aviary_p2c import POLICY, PowerOfChoices

from aviary.policy import JobDone, PeerDown, PlaceTask, Send, SubmitJob, TaskFinished, unit_context


def make(nodes: int = 4, choices: int = 2, seed: int = 0) -> PowerOfChoices:
    ctx = unit_context(POLICY, "scheduler", nodes=nodes, seed=seed, params={"choices": choices})
    core = POLICY.scheduler(ctx)
    assert isinstance(core, PowerOfChoices)
    return core


def places(effects) -> list[Send]:
    return [e for e in effects if isinstance(e, Send) and isinstance(e.msg, PlaceTask)]


def test_each_task_goes_to_the_less_loaded_of_the_two_drawn():
    core = make(nodes=4)
    core.load.update({"node-0": 5, "node-1": 0, "node-2": 3, "node-3": 1})
    draws = iter([["node-0", "node-2"], ["node-3", "node-1"], ["node-2", "node-0"]])
    core.rng.sample = lambda population, k: next(draws)  # the draws, fixed
    sent = places(core.on_message(0.0, "frontend", SubmitJob(1, [1.0, 1.0, 1.0], 1.0)))
    assert [e.to for e in sent] == ["node-2", "node-1", "node-2"]  # 3 < 5; 0 < 1; then 4 < 5
    assert core.load == {"node-0": 5, "node-1": 1, "node-2": 5, "node-3": 1}


def test_a_tie_goes_to_the_first_drawn():
    core = make(nodes=2)
    core.rng.sample = lambda population, k: ["node-1", "node-0"]
    (sent,) = places(core.on_message(0.0, "frontend", SubmitJob(1, [1.0], 1.0)))
    assert sent.to == "node-1"


@pytest.mark.parametrize("d", [1, 2, 3])
def test_d_nodes_are_drawn_per_task_and_one_choice_is_random_placement(d):
    core = make(nodes=8, choices=d)
    drawn = []
    sample = core.rng.sample
    core.rng.sample = lambda population, k: drawn.append(k) or sample(population, k)
    core.on_message(0.0, "frontend", SubmitJob(1, [1.0] * 5, 1.0))
    assert drawn == [d] * 5


def test_many_tasks_spread_evenly_with_two_choices():
    core = make(nodes=10, choices=2, seed=3)
    core.on_message(0.0, "frontend", SubmitJob(1, [1.0] * 100, 1.0))
    assert max(core.load.values()) - min(core.load.values()) <= 2  # the power of two choices


def test_the_job_is_done_after_its_last_task_and_a_stranger_is_ignored():
    core = make()
    first, last = places(core.on_message(0.0, "frontend", SubmitJob(7, [1.0, 2.0], 1.5)))
    stranger = next(n for n in core.nodes if n not in (first.to, last.to))
    assert core.on_message(0.5, stranger, TaskFinished(7, first.msg.task_index)) == []
    assert core.on_message(1.0, first.to, TaskFinished(7, first.msg.task_index)) == []
    assert core.on_message(2.0, last.to, TaskFinished(7, last.msg.task_index)) == [
        Send("frontend", JobDone(7, 0.0))
    ]
    assert core.load == dict.fromkeys(core.nodes, 0)


def test_a_dead_nodes_tasks_are_placed_again_on_live_nodes():
    core = make(nodes=3)
    sent = places(core.on_message(0.0, "frontend", SubmitJob(1, [1.0] * 6, 1.0)))
    victim = sent[0].to
    lost = sorted(e.msg.task_index for e in sent if e.to == victim)
    again = places(core.on_message(1.0, "frontend", PeerDown(victim)))
    assert sorted(e.msg.task_index for e in again) == lost
    assert victim not in {e.to for e in again}


def test_a_simulated_replay_finishes_every_job(tmp_path):
    import aviary

    run = aviary.replay(policy="aviary_p2c:POLICY", runtime="sim", jobs=30, nodes=8, out=tmp_path / "run")
    assert run.summary["finished"] == run.summary["jobs"] == 30
    assert run.summary["policy"] == "p2c"
