"""The experiments that start real processes (a local testbed, docker containers, a dashboard) or
measure the wire run at a tiny size in the build a user gets, each writing to a folder of the test's
own, and so do the benchmarks of the same kind (``aviary.benchmarks``): together with
``test_experiments_tiny.py`` (the simulated ones) every experiments module and every benchmark runs in
the suite, so one that only breaks when it is run cannot land."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import docker_engine


def experiment(name: str, *args: str, timeout: float = 240) -> str:
    """``python -m aviary.experiments.NAME ARGS``'s output; ``name`` ``benchmarks.QUESTION [WHAT]``:
    ``python -m aviary.benchmarks.QUESTION [WHAT] ARGS`` (a benchmark's command as its page names it)."""
    env = {k: v for k, v in os.environ.items() if k != "AVIARY_PURE_PYTHON"}
    module, *what = name.split()
    cmd = [
        sys.executable,
        "-m",
        f"aviary.{module if '.' in module else 'experiments.' + module}",
        *what,
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_hawk_eagle_real_runs_both_policies_on_a_testbed_and_on_the_simulator(tmp_path):
    experiment(
        "hawk_eagle_real", "--nodes", "6", "--schedulers", "2", "--jobs", "30", "--time-scale", "100000",
        "--seeds", "0", "--quiet", "--results", str(tmp_path),
    )  # fmt: skip
    for policy in ("hawk", "eagle"):
        for runtime, suffix in (("real", ""), ("sim", "-sim")):
            s = summary(tmp_path / "hawk_eagle_real" / f"{policy}-load0.8{suffix}")
            assert (s["runtime"], s["nodes"], s["finished"], s["jobs"]) == (runtime, 6, 30, 30)
    report = (tmp_path / "hawk_eagle_real.md").read_text()
    assert "| 0.8 | real | 1 |" in report and "| 0.8 | sim | 1 |" in report  # Eagle / Hawk per runtime
    for policy in ("hawk", "eagle"):  # real over simulated, every real job finished
        (row,) = [line for line in report.splitlines() if line.startswith(f"| 0.8 | {policy} | 1 |")]
        assert row.endswith("| 30/30 |"), row


def test_packing_real_runs_each_policy_on_a_testbed_and_in_its_simulated_band(tmp_path):
    experiment(
        "packing_real", "--nodes", "4", "--jobs", "6", "--time-scale", "1000", "--policies", "drf", "tetris",
        "--seeds", "0", "--results", str(tmp_path),
    )  # fmt: skip
    runs = tmp_path / "packing_real"
    for policy in ("drf", "tetris"):
        real = summary(runs / f"{policy}-real")
        assert (real["runtime"], real["nodes"], real["finished"]) == ("real", 4, 6)
        assert {p.name for p in runs.glob(f"{policy}-sim*")} == {f"{policy}-sim", f"{policy}-sim-delay2ms",
                                                                  f"{policy}-sim-delay5ms"}  # fmt: skip
    report = (tmp_path / "packing_real.md").read_text()
    assert "4 node monitors" in report and "--nodes 4 --jobs 6" in report
    assert sum(line.startswith(("| drf | 6/6", "| tetris | 6/6")) for line in report.splitlines()) == 2


def test_soak_survives_its_failures_and_samples_every_process(tmp_path):
    experiment(
        "benchmarks.scale_and_memory soak",
        "--minutes",
        "0.1",
        "--nodes",
        "6",
        "--every",
        "2",
        "--out",
        str(tmp_path),
    )
    s = summary(tmp_path / "run")
    assert s["finished"] == s["jobs"] > 0
    assert (tmp_path / "rss.csv").read_text().count("\n") > 2 and (tmp_path / "soak.md").exists()


def test_bench_nodes_packs_node_monitors_into_processes(tmp_path):
    out = experiment(
        "benchmarks.scale_and_memory nodes", "--nodes", "20", "--nodes-per-process", "10", "--jobs", "20",
        "--policies", "sparrow", "--time-scale", "10000", "--results", str(tmp_path), "--transports", "zmq",
        "tcp",
    )  # fmt: skip
    lines = (tmp_path / "bench_nodes.md").read_text().splitlines()
    rows = [line for line in lines if line.startswith("| sparrow")]
    assert [row.split(" | ")[1] for row in rows] == ["zmq", "tcp"], out
    for row in rows:
        assert " | 20 (10 per process, " in row and "| 20/20 |" in row, (row, out)
        assert float(row.split(" | ")[-1].rstrip(" |")) > 0, row  # the testbed's CPU, in cores


def test_bench_messages_counts_every_policy_s_messages(tmp_path):
    experiment(
        "benchmarks.wire messages",
        "--nodes",
        "20",
        "--jobs",
        "20",
        "--codec-rounds",
        "500",
        "--out",
        str(tmp_path),
    )
    table = (tmp_path / "messages.md").read_text()
    assert table.count("\n| ") >= 5 and (tmp_path / "codec.md").exists()


def test_bench_transport_times_every_transport():
    out = experiment("benchmarks.runtime_overhead transport", "--rounds", "200")
    assert "| ZeroMQ ROUTER-ROUTER on uvloop |" in out and "| asyncio TCP on uvloop |" in out
    assert "| Aviary's tcp transport, keyed |" in out and "Aviary's zmq / tcp transport:" in out


def test_bench_floor_times_the_bare_path_and_the_timers():
    out = experiment("benchmarks.floors", "--rounds", "20", "--gap-ms", "1")
    assert out.count(" ms: ") == 4 and "block  gap 1 ms" in out and "uvloop gap 0 ms" in out
    assert "time.sleep" in out and "call_later" in out
    assert "one msgpack decode, p50 (us): back to back " in out and "after 1 ms idle" in out


def test_bench_hops_follows_each_job_s_path_step_by_step():
    out = experiment(
        "benchmarks.runtime_overhead hops", "--jobs", "20", "--gap-ms", "2", "--policies", "fifo,sparrow"
    )
    fifo, sparrow = out.split("sparrow: ")
    steps = [line.split("  ")[1:3] for line in fifo.splitlines()[1:-1]]
    assert [[s.strip() for s in step] for step in steps] == [
        ["frontend > central", "SubmitJob"], ["central", "SubmitJob > PlaceTask"],
        ["central > node", "PlaceTask"], ["node", "PlaceTask > TaskFinished"],
        ["node > central", "TaskFinished"], ["central", "TaskFinished > JobDone"],
        ["central > frontend", "JobDone"],
    ]  # fmt: skip
    assert "sched > node  AssignTask" in sparrow and "node > sched  GetTask" in sparrow


def test_dashboard_cost_replays_with_and_without_the_dashboard(tmp_path):
    out = experiment(
        "benchmarks.runtime_overhead dashboard", "--nodes", "6", "--jobs", "20", "--duration", "2s",
        "--rounds", "1", "--modes", "off,idle", "--shots", str(tmp_path),
    )  # fmt: skip
    assert "idle / off: cpu_s" in out


def test_bench_docker_starts_tasks_in_containers(tmp_path):
    docker_engine()  # skips without an engine (fails in CI: AVIARY_REQUIRE_DOCKER=1)
    experiment(
        "benchmarks.runtime_overhead docker_executor", "--repeat", "1", "--out", str(tmp_path / "docker.json")
    )
    results = json.loads((tmp_path / "docker.json").read_text())
    assert {"overhead", "startup", "suspension_error", "cpu_per_task_second", "burst_seconds"} <= set(results)
