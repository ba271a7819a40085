"""summary.json's workload record: the trace and its hash, the jobs actually replayed (a random start as
drawn), the scaling, arrivals, seed and cluster; the policy and versions beside it, not checked."""

import hashlib
import json
import shutil

import pytest

from aviary.common.dags import GOOGLE_TRACE
from aviary.common.trace import read_trace
from aviary.common.workload import build_workload
from aviary.launch.cli.main import main
from aviary.launch.replay.provenance import describe_workload, index_ranges, workload_differences

SIM = ["replay", "--runtime", "sim", "--nodes", "10", "--slots", "2", "--load", "0.8", "--quiet"]


def replay(tmp_path, name, *flags, sim=SIM):
    out = tmp_path / name
    assert main([*sim, *flags, "--out", str(out)]) == 0
    return json.loads((out / "summary.json").read_text())


def test_a_random_start_is_recorded_as_drawn(tmp_path):
    summary = replay(tmp_path, "random", "--jobs", "20", "--seed", "5")  # no --start: a seeded random one
    assert summary["extra"]["start"] is None  # what was asked
    w = summary["workload"]
    start = w["jobs"]["start"]
    assert isinstance(start, int) and w["jobs"]["indices"] == f"{start}-{start + 19}"
    # The recorded start is the trace index of the first job replayed: the same jobs, rebuilt from it.
    trace = read_trace(GOOGLE_TRACE)
    rebuilt = build_workload(
        trace, jobs=20, start=start, seed=5, nodes=10, slots=2, load=0.8, scale_tasks=False
    )
    assert w["jobs"]["lines"] == f"{rebuilt[0].line}-{rebuilt[-1].line}"
    assert w["jobs"]["trace_tasks"] == sum(j.tasks for j in trace[start : start + 20]) == w["jobs"]["tasks"]
    # Replaying from that start explicitly is the same workload, to the bit.
    again = replay(tmp_path, "again", "--jobs", "20", "--seed", "5", "--start", str(start))
    assert workload_differences([w, again["workload"]], ["random", "again"]) == []
    assert again["workload"]["jobs"]["digests"] == w["jobs"]["digests"]


def test_a_random_sample_records_every_index(tmp_path):
    w = replay(tmp_path, "r", "--jobs", "12", "--sample", "random", "--seed", "2")["workload"]
    indices = [int(x) for part in w["jobs"]["indices"].split(",") for x in part.split("-")]
    assert w["jobs"]["start"] is None and w["jobs"]["count"] == 12 and len(indices) >= 2


def test_the_trace_file_and_its_hash_are_recorded(tmp_path):
    summary = replay(tmp_path, "a", "--jobs", "10", "--start", "6000")
    w = summary["workload"]
    data = GOOGLE_TRACE.read_bytes()
    assert w["trace"] == {
        "path": "experiments/traces/google_10k.tr",  # the bundled sample, relative to the repository
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    assert w["kind"] == "google" and w["arrivals"] == "poisson" and w["load"] == 0.8 and w["seed"] == 0
    assert (w["time_scale"], w["nodes"], w["slots"]) == (1.0, 10, 2)
    assert (
        w["task_scale"] == summary["extra"]["task_scale"] and w["jobs"]["tasks"] == w["jobs"]["trace_tasks"]
    )
    params = {"time_scale": 1.0, "probe_ratio": 2.0, "cancel_probes": "on"}
    assert w["policy"] == {"name": "sparrow", "params": params}
    assert w["runtime"] == "sim" and w["versions"]["python"].count(".") == 2 and w["versions"]["aviary"]
    line = describe_workload(w)  # the task scale, when recorded, in the middle
    assert line.startswith("google_10k.tr: 10 jobs [6000-6009], load 0.8, time scale 1, ")
    assert line.endswith(", 10 nodes x 2 slots, seed 0")
    # The same bytes elsewhere: the same workload (the path is not compared); other bytes: another one.
    copy = tmp_path / "copy.tr"
    shutil.copyfile(GOOGLE_TRACE, copy)
    same = replay(tmp_path, "b", str(copy), "--jobs", "10", "--start", "6000")["workload"]
    assert same["trace"]["path"] == str(copy.resolve()) and workload_differences([w, same], ["a", "b"]) == []
    with copy.open("a") as f:
        f.write("# one more line\n")
    changed = replay(tmp_path, "c", str(copy), "--jobs", "10", "--start", "6000")["workload"]
    assert changed["trace"]["sha256"] == hashlib.sha256(copy.read_bytes()).hexdigest()
    name, text = workload_differences([w, changed], ["a", "c"])[0]
    assert name == "trace sha256" and text == (
        f"trace sha256 {w['trace']['sha256'][:12]} (a) vs {changed['trace']['sha256'][:12]} (c)"
    )


def test_policies_and_their_parameters_are_recorded_but_not_compared(tmp_path):
    flags = ["--jobs", "10", "--start", "6000", "--seed", "3"]
    a = replay(tmp_path, "a", *flags, "--policy", "eagle")["workload"]
    b = replay(tmp_path, "b", *flags, "--policy", "kairos", "--quantum", "5")["workload"]
    assert a["policy"]["name"] == "eagle" and b["policy"]["params"]["quantum"] == 5.0
    assert workload_differences([a, b], ["a", "b"]) == []
    # What shapes the jobs is: the names come in the order they are checked.
    c = replay(tmp_path, "c", *flags, "--time-scale", "10", "--misestimate", "0.5", "2")["workload"]
    names = [name for name, _ in workload_differences([a, c], ["a", "c"])]
    assert names[0] == "time scale" and "estimates (misestimate)" in names
    assert workload_differences([a, c], ["a", "c"])[0][1] == "time scale 1 (a) vs 10 (c)"


def test_generated_and_dag_workloads(tmp_path):
    tpch = replay(tmp_path, "t", "--workload", "tpch", "--policy", "drf", "--jobs", "6")["workload"]
    assert tpch["trace"]["path"] == "experiments/traces/tpch_dags.json" and len(tpch["trace"]["sha256"]) == 64
    assert "indices" not in tpch["jobs"] and tpch["jobs"]["lines"]  # queries drawn, by their position
    tpcds = replay(tmp_path, "d", "--workload", "tpcds", "--policy", "drf", "--jobs", "4")["workload"]
    assert tpcds["trace"] is None and tpcds["capacity"] == {"16,64,1,1": 10}
    assert workload_differences([tpch, tpcds], ["t", "d"])[0] == ("kind", "kind tpch (t) vs tpcds (d)")


def test_index_ranges():
    assert index_ranges([5, 3, 4, 9, 11, 12, 3]) == "3-5,9,11-12"
    assert index_ranges([]) == "" and index_ranges([7]) == "7"


@pytest.mark.integration
def test_the_real_runtime_records_the_same_workload_as_the_simulator(tmp_path, capsys, no_leftover_children):
    flags = ["--jobs", "8", "--start", "6000", "--nodes", "3", "--time-scale", "50000",
             "--task-scale", "0.001", "--load", "0.8", "--seed", "1", "--quiet"]  # fmt: skip
    real = replay(tmp_path, "real", *flags, sim=["replay", "--runtime", "real"])["workload"]
    sim = replay(tmp_path, "sim", *flags, sim=["replay", "--runtime", "sim"])["workload"]
    assert (real["runtime"], sim["runtime"]) == ("real", "sim") and real["jobs"]["start"] == 6000
    assert workload_differences([real, sim], ["real", "sim"]) == []
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "real"), str(tmp_path / "sim")]) == 0
    assert capsys.readouterr().err == ""
