"""``ReplaySpec``: a replay described in code is the replay the same flags describe, and ``aviary demo``
builds its runs without the command line."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from aviary.common.dags import TPCH_LINE_STRIDE, build_dag_workload, read_tpch
from aviary.common.model import GOOGLE_CUTOFF
from aviary.common.resources import vector_sum
from aviary.launch.cli import demo
from aviary.launch.cli.main import main
from aviary.launch.flags.parser import build_parser
from aviary.launch.flags.spec import ReplaySpec, UsageError
from aviary.launch.replay.resolve import setup_replay
from aviary.launch.replay.run import run_replay


def spec_of(*flags: str) -> ReplaySpec:
    return ReplaySpec.from_args(build_parser().parse_args(["replay", *flags]))


@pytest.mark.parametrize("policy", ["sparrow", "eagle"])
def test_the_demo_spec_is_the_demo_flags(tmp_path, policy):
    direct = demo.demo_spec(policy, tmp_path)
    flags = spec_of(*demo.DEMO_FLAGS, "--policy", policy, "--out", str(tmp_path / policy))
    assert direct == flags
    a, b = setup_replay(direct), setup_replay(flags)
    assert a.jobs == b.jobs and len(a.jobs) == 300
    # A newcomer's first command: the utilization is the --load asked for, no note, well under a minute.
    assert a.prediction is not None and a.prediction.notes == []
    assert a.prediction.utilization == pytest.approx(0.8, abs=0.05) and a.prediction.wall < 20
    assert a.cluster.params == b.cluster.params and a.extra == b.extra
    assert [(p.name, p.role, p.slots, p.partition) for p in a.cluster.processes] == [
        (p.name, p.role, p.slots, p.partition) for p in b.cluster.processes
    ]


@pytest.mark.parametrize("policy", ["sparrow", "eagle"])
def test_a_spec_built_directly_replays_the_same_jobs_as_the_cli(tmp_path, policy):
    spec = replace(demo.demo_spec(policy, tmp_path), runtime="sim", out=tmp_path / "spec")
    run_replay(setup_replay(spec), quiet=True)
    flags = [
        *demo.DEMO_FLAGS,
        "--policy",
        policy,
        "--runtime",
        "sim",
        "--quiet",
        "--out",
        str(tmp_path / "cli"),
    ]
    assert main(["replay", *flags]) == 0
    assert (tmp_path / "spec" / "jobs.csv").read_bytes() == (tmp_path / "cli" / "jobs.csv").read_bytes()


def test_demo_does_not_import_the_command_line():
    source = Path(demo.__file__).read_text()
    imported = [node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)]
    assert not [m for m in imported if m == "cli" or m.endswith(".cli")]
    code = "import sys, aviary.launch.cli.demo; sys.exit('aviary.launch.cli.main' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_spec_params_are_the_policys_declared_ones():
    with pytest.raises(UsageError) as err:
        ReplaySpec(policy="eagle", params={"quantum": 2.0})
    assert str(err.value) == "params: field 'quantum': policy 'eagle' has no such parameter"
    with pytest.raises(UsageError, match="params: field 'steal_attempts': steal_attempts must be >= 0"):
        ReplaySpec(policy="hawk", params={"steal_attempts": -1})
    with pytest.raises(UsageError, match="runtime must be one of real, sim, got 'simulated'"):
        ReplaySpec(runtime="simulated")
    spec = ReplaySpec(policy="hawk", time_scale=10.0, params={"steal_attempts": 3, "short_partition": 50})
    cluster = setup_replay(replace(spec, jobs=5, runtime="sim")).cluster
    assert cluster.params == {
        "time_scale": 10.0,
        "cutoff": GOOGLE_CUTOFF / 10,
        "probe_ratio": 2.0,
        "steal_attempts": 3,
        "stealers": "all",
        "cancel_probes": "on",
    }
    assert sum(n.partition == "short" for n in cluster.nodes) == 5


def test_the_cutoff_sets_the_scheduling_cutoff_unless_params_name_another_never_the_classes():
    spec = ReplaySpec(policy="eagle", runtime="sim", jobs=50, start=4000, cutoff=10_000.0, time_scale=4.0)
    setup = setup_replay(spec)
    assert setup.cluster.params["cutoff"] == 2500.0
    assert {j.long for j in setup.jobs} == {True, False}
    reference = GOOGLE_CUTOFF / 4.0  # reporting classes: the trace's reference cutoff, scaled like estimates
    assert all(j.long == (j.estimate >= reference) for j in setup.jobs if abs(j.estimate - reference) > 1e-6)
    other = setup_replay(replace(spec, params={"cutoff": 400.0}))
    assert other.cluster.params["cutoff"] == 100.0 and other.jobs == setup.jobs
    assert setup_replay(replace(spec, cutoff=20_000.0)).jobs == setup.jobs
    assert setup_replay(replace(spec, policy="fifo")).jobs == setup.jobs


def test_up_flags_make_a_spec_too():
    args = build_parser().parse_args(["up", "--policy", "kairos", "--nodes", "3", "--quantum", "4"])
    spec = ReplaySpec.from_args(args)
    assert (spec.policy, spec.nodes, spec.runtime, spec.params) == ("kairos", 3, "real", {"quantum": 4.0})


def test_the_tpch_mix_flag_reaches_the_jobs():
    base = ["--runtime", "sim", "--workload", "tpch", "--policy", "drf", "--nodes", "10", "--jobs", "8"]
    assert spec_of(*base).tpch_mix is None  # the default mix
    spec = spec_of(*base, "--tpch-mix", "50g")
    assert spec.tpch_mix == "50g"
    old = setup_replay(spec).jobs  # the single profile of replays before the mixes: the old jobs
    capacity = vector_sum(n.resources for n in setup_replay(spec).cluster.nodes)
    assert old == build_dag_workload(
        "tpch", read_tpch(), jobs=8, seed=0, time_scale=1.0, load=0.8, capacity_total=capacity
    )
    mixed = setup_replay(spec_of(*base)).jobs
    assert mixed == setup_replay(spec_of(*base, "--tpch-mix", "sizes")).jobs
    assert [j.line % TPCH_LINE_STRIDE for j in mixed] == [j.line for j in old]  # same queries
    assert any(j.line >= TPCH_LINE_STRIDE for j in mixed)  # other sizes
    # A bad mix, or a mix for another workload: one line naming the field.
    with pytest.raises(UsageError, match=r"^tpch_mix: unknown mix or profile 'big'") as info:
        setup_replay(spec_of(*base, "--tpch-mix", "big"))
    assert "\n" not in str(info.value)
    other = ["--runtime", "sim", "--workload", "tpcds", "--policy", "drf", "--jobs", "3", "--tpch-mix", "50g"]
    with pytest.raises(UsageError, match=r"^--tpch-mix applies to --workload tpch, not tpcds$"):
        setup_replay(spec_of(*other))
