"""Issue 26, in-process: process names refused at read time, resource nodes that count PeerDown/PeerUp,
and fairness windows whose cost does not grow with a run's span."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from aviary.common.cluster import ClusterError, load_cluster, write_cluster
from aviary.common.messages import PeerDown, PeerUp
from aviary.common.resources import Resources
from aviary.common.usage import TaskRecord, fairness_over_windows
from aviary.launch.policies.registry import policy_cluster
from aviary.worker.resource_node import ResourceNodeCore


@pytest.mark.parametrize(
    "bad", ["", "node>1", "node@1", "node#1", "node 1", "node\\t1", "node\\u00071", "n" * 65]
)
def test_a_bad_process_name_is_one_line_naming_file_line_and_field(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "c.toml"
    write_cluster(policy_cluster("sparrow", nodes=2, schedulers=1), path)
    path.write_text(path.read_text().replace('name = "node-1"', f'name = "{bad}"'))
    number = 1 + path.read_text().splitlines().index(f'name = "{bad}"')
    with pytest.raises(ClusterError) as info:
        load_cluster(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{number}: [[process]] #") and "field 'name'" in message
    assert "is not a process name (1 to 64 bytes" in message and "\n" not in message


def test_resource_nodes_count_peer_down_and_up_and_carry_on() -> None:
    node = ResourceNodeCore("node-0", Resources(cores=4, mem=16, disk=1, net=1))
    assert node.on_message(0.0, "frontend", PeerDown("central")) == []
    assert node.on_message(1.0, "frontend", PeerUp("central")) == []
    assert node.counters["peer_down"] == 1 and node.counters["peer_up"] == 1
    assert not any(k.startswith("unexpected") for k in node.counters)


def test_fairness_over_a_huge_span_costs_what_a_short_one_does() -> None:
    """A task of 1e308 s (what a runtime of 1e308 ms once fed it) and a run of 1e9 s in 60 s windows:
    well under a second and a few MB (the window-by-window version took 3.7 GB for the 1e9 s run)."""
    d = Resources(cores=1, mem=4)
    cap = Resources(cores=10, mem=40, disk=1, net=1)
    tasks = [TaskRecord(0, 0.0, 1e9, d), TaskRecord(1, 5.0, 1e9, d.times(2)), TaskRecord(2, 0.0, 1e308, d)]
    tracemalloc.start()
    started = time.perf_counter()
    got = fairness_over_windows(tasks, cap, 60.0)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 5 and peak < 10_000_000, (seconds, peak)
    # Windows scored: those with two jobs or more, up to 1e9 s; job 2 alone after that scores none.
    assert got["windows"] == 16_666_667
    assert got["min"] == pytest.approx(8 / 9) and got["max"] <= 1.0
