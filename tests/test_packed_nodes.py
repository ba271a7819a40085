"""Many node monitors per OS process (issue 27, ``--nodes-per-process``): the description's packs, a pack
on real processes (each member its own endpoint, failed alone or with its pack), and what a testbed
process imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aviary.common.cluster import ClusterError, dump_cluster, load_cluster, local_cluster, write_cluster
from aviary.launch.cli.main import main
from aviary.launch.drivers.hosts import spread


def names(units: dict) -> dict[str, list[str]]:
    return {unit: [p.name for p in members] for unit, members in units.items()}


def test_nodes_are_packed_per_host_in_runs_of_k_and_the_rest_stay_alone():
    cluster = local_cluster(nodes=7, slots=1, schedulers=1, central=True, bind_ports=False)
    cluster.nodes_per_process = 3
    assert names(cluster.units()) == {
        "frontend": ["frontend"],
        "central": ["central"],
        "sched-0": ["sched-0"],
        "pack-0": ["node-0", "node-1", "node-2"],
        "pack-1": ["node-3", "node-4", "node-5"],
        "pack-2": ["node-6"],
    }
    spread(cluster, ["hostA", "hostB"], base_port=7000)  # nodes go round-robin: a pack never spans two hosts
    units = names(cluster.units())
    assert units["pack-0"] == ["node-0", "node-2", "node-4"] and units["pack-1"] == ["node-6"]
    assert units["pack-2"] == ["node-1", "node-3", "node-5"]
    assert {p.host for p in cluster.units()["pack-2"]} == {"hostB"}


def test_one_node_per_process_is_today_s_testbed():
    cluster = local_cluster(nodes=3, slots=1, schedulers=1, bind_ports=False)
    assert names(cluster.units()) == {p.name: [p.name] for p in cluster.processes}
    assert "nodes_per_process" not in dump_cluster(cluster)  # the file of a one-per-process testbed


def test_packing_changes_no_process_of_the_description(tmp_path):
    """Same names, roles, addresses and ports: only the [cluster] line says how they are hosted."""
    cluster = local_cluster(nodes=5, slots=2, schedulers=2, bind_ports=False)
    alone = dump_cluster(cluster)
    cluster.nodes_per_process = 4
    write_cluster(cluster, tmp_path / "c.toml")
    packed = (tmp_path / "c.toml").read_text()
    assert [line for line in packed.splitlines() if line != "nodes_per_process = 4"] == alone.splitlines()
    assert load_cluster(tmp_path / "c.toml").nodes_per_process == 4


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("seed = 0", "seed = 0\nnodes_per_process = 0"),
            ":5: [cluster]: field 'nodes_per_process': must be >= 1",
        ),
        (("seed = 0", 'seed = 0\nnodes_per_process = "ten"'), "field 'nodes_per_process': expected a whole"),
        (
            ('name = "node-1"', 'name = "pack-1"'),
            "field 'name': 'pack-1': names starting with 'pack-' are for packs",
        ),
    ],
)
def test_a_bad_pack_setting_is_one_line_naming_file_line_and_field(tmp_path, edit, message):
    path = tmp_path / "c.toml"
    path.write_text(
        dump_cluster(local_cluster(nodes=2, slots=1, schedulers=1, bind_ports=False)).replace(*edit)
    )
    with pytest.raises(ClusterError) as err:
        load_cluster(path)
    assert message in str(err.value) and str(err.value).startswith(str(path))


def test_a_testbed_process_imports_only_what_its_role_needs():
    """A node's or a scheduler's process (every policy): none of the launcher's, the analysis' or the
    solver's libraries in its memory (the central process of TetriSched needs HiGHS; the others not), nor
    psutil, which only the process and docker executors use."""
    script = """
import sys
from aviary.launch.drivers import process
from aviary.launch.policies.registry import POLICIES, build_core, policy_cluster
for name in sorted(POLICIES):
    cluster = policy_cluster(name, nodes=2, bind_ports=False)
    for spec in cluster.processes:
        if spec.role in ("node", "scheduler"):
            build_core(spec, cluster)
heavy = ("matplotlib", "rich", "highspy", "dask", "distributed", "asyncssh", "docker", "numpy", "psutil")
print(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_node_process_loads_no_scheduler_and_reading_the_flags_loads_no_core():
    """Builders import their core when they build it: a node process of every policy holds no central or
    distributed scheduler's module, and a command that only parses its flags holds no core at all (a
    process starts in about half the time it took when the registry imported every policy)."""
    script = """
import sys
from aviary.launch.flags.parser import build_parser
build_parser().parse_args(["replay", "--policy", "eagle"])
schedulers = ("aviary.central.", "aviary.distributed.")
print(sorted(m for m in sys.modules if m.startswith((*schedulers, "aviary.worker."))))
from aviary.launch.drivers import process
from aviary.launch.policies.registry import POLICIES, build_core, policy_cluster
for name in sorted(POLICIES):
    cluster = policy_cluster(name, nodes=2, bind_ports=False)
    build_core(cluster.nodes[0], cluster)
print(sorted(m for m in sys.modules if m.startswith(schedulers)))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "[]"], out.stdout


FLAGS = ["--jobs", "100", "--start", "6000", "--nodes", "10", "--duration", "6s", "--load", "0.8",
         "--seed", "3", "--quiet", "--yes", "--nodes-per-process", "5", "--schedulers", "2"]  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize(  # over tcp: -m slow (tests/test_tcp_transport.py replays over keyed tcp)
    "wire", [[], pytest.param(["--transport", "tcp"], marks=pytest.mark.slow)], ids=["zmq", "tcp"]
)
def test_a_packed_node_fails_or_stalls_alone_or_with_its_pack_and_every_job_finishes(
    tmp_path, no_leftover_children, wire
):
    """10 nodes in two OS processes of 5: killing node-1 leaves its four pack mates running (they keep
    answering, so only it is declared dead); killing pack-1 is a SIGKILL of the process: its five too.
    ``node-2@1s+4s``: its pack freezes node-2 alone for 4 s, as SIGSTOP would (it answers no Hello, its
    tasks' exits wait), so it is declared dead after 3 s, its work runs elsewhere, and it rejoins when it
    answers again. The same over the plain-TCP transport (``--transport tcp``), whose links must find
    a killed node gone and a stalled one back."""
    out = tmp_path / "run"
    failures = "node-1@1.5s,pack-1@2.5s,node-2@1s+4s"
    assert main(["replay", *FLAGS, *wire, "--fail", failures, "--duration", "8s", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["finished"] == s["jobs"] == 100 and s["messages"]["JobDone"] == 100
    dead = ["node-1", *(f"node-{i}" for i in range(5, 10))]
    c = s["counters"]
    assert c["processes_declared_dead"] == 7 and c["processes_rejoined"] == 1  # node-2 too, and back
    assert sorted(s["extra"]["declared_dead"]) == sorted(dead)  # dead at the end
    assert s["extra"]["nodes_per_process"] == 5 and ["node-2", 1.0, 4.0] in s["extra"]["failures"]
    problems = " ".join(s["extra"]["problems"])
    assert all(f"process {name} exited with code -9" in problems for name in dead)
    assert "node-2 exited" not in problems
    logs = out / "testbed" / "logs"
    assert sorted(p.stem for p in logs.iterdir()) == ["pack-0", "pack-1", "sched-0", "sched-1"]
    log = (logs / "pack-0.log").read_text()
    assert "node-1: killed (a failure injected by the launcher)" in log
    assert "node-2: stopped (a failure injected" in log and "node-2: continued (a failure injected" in log


@pytest.mark.integration
def test_three_hundred_real_node_monitors_in_six_processes_finish_a_google_sample(
    tmp_path, no_leftover_children
):
    """The system test of the 1,000-node benchmark (``python -m aviary.benchmarks.scale_and_memory
    nodes``) at 300 nodes: every node registers at its own address (the replay starts only then) and every
    job finishes."""
    out = tmp_path / "run"
    flags = ["--policy", "sparrow", "--nodes", "300", "--nodes-per-process", "50", "--jobs", "100", "--quiet"]
    assert main(["replay", *flags, "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["finished"] == s["jobs"] == 100 and s["nodes"] == 300
    assert s["counters"]["processes_declared_dead"] == 0
    cluster = load_cluster(out / "testbed" / "cluster.toml")
    assert len({p.address for p in cluster.nodes}) == 300 and len(cluster.units()) == 1 + 6 + 2
    assert len(list((out / "testbed" / "logs").iterdir())) == 6 + 2


def test_the_simulator_fails_a_pack_as_its_members(tmp_path):
    out = tmp_path / "run"
    flags = ["--runtime", "sim", "--nodes", "10", "--nodes-per-process", "5", "--jobs", "50", "--quiet"]
    assert main(["replay", *flags, "--fail", "pack-1@1s", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["extra"]["failures"] == [[f"node-{i}", 1.0] for i in range(5, 10)]
    assert s["counters"]["processes_declared_dead"] == 5 and s["finished"] == 50


def test_the_simulator_stalls_a_node_as_real_processes_do(tmp_path):
    """``--fail node-1@1s+5s`` on the simulator: stopped longer than the liveness limit (3 s), node-1 is
    declared dead at 4 s and rejoins at 6 s; a 2 s stall is waited out; every job finishes either way."""
    flags = ["--runtime", "sim", "--nodes", "10", "--nodes-per-process", "5", "--jobs", "50", "--quiet"]
    for fail, declared in (("node-1@1s+5s", 1), ("node-1@1s+2s", 0), ("pack-0@1s+5s", 5)):
        out = tmp_path / fail
        assert main(["replay", *flags, "--fail", fail, "--out", str(out)]) == 0
        s = json.loads((out / "summary.json").read_text())
        c = s["counters"]
        assert s["finished"] == 50 and c["processes_declared_dead"] == c["processes_rejoined"] == declared
    assert s["extra"]["failures"] == [[f"node-{i}", 1.0, 5.0] for i in range(5)]  # a pack: its members
