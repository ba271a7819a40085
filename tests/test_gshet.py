"""The GS_HET-like workload (TetriSched, spec §1.12) and its replay with the SLO metrics."""

import itertools
import json
import math
import statistics
from collections import Counter

import pytest

from aviary.common.gshet import SLOT, gshet_attributes, gshet_jobs, rayon_admission
from aviary.common.model import JobSpec, Stage
from aviary.common.results import DEADLINE_SLACK, jobs_rows
from aviary.common.workload import WorkloadError

N = 800


@pytest.fixture(scope="module")
def jobs():
    return gshet_jobs(7, N)


def test_mix_follows_the_recipe(jobs):
    slo = [j for j in jobs if j.deadline is not None]
    be = [j for j in jobs if j.deadline is None]
    assert abs(len(slo) / N - 0.75) < 0.05
    assert abs(sum(j.preference == "gpu" for j in slo) / len(slo) - 0.5) < 0.06
    assert {j.preference for j in slo} == {"gpu", "rack"} and {j.preference for j in be} == {None}
    assert {j.slo for j in slo} <= {"accepted", "noreserve"} and {j.slo for j in be} == {"be"}
    assert all(j.gang for j in jobs) and [j.job_id for j in jobs] == list(range(N))
    assert {j.slowdown for j in slo} == {1.5} and {j.slowdown for j in be} == {1.0}
    for j in jobs:
        assert j.stages == [Stage(j.tasks, j.estimate, SLOT)] and j.estimate == j.durations[0]
        assert len(set(j.durations)) == 1 and not j.long
        j.check()


def test_sizes_and_deadlines_follow_the_recipe(jobs):
    slo = [j for j in jobs if j.deadline is not None]
    be = [j for j in jobs if j.deadline is None]
    assert set(Counter(j.tasks for j in slo)) == set(range(2, 11))
    assert set(Counter(j.tasks for j in be)) == set(range(1, 5))
    assert all(20 <= j.durations[0] <= 120 for j in slo) and all(10 <= j.durations[0] <= 60 for j in be)
    assert abs(statistics.mean(j.tasks for j in slo) - 6) < 0.4
    assert abs(statistics.mean(j.durations[0] for j in slo) - 70) < 4
    assert abs(statistics.mean(j.durations[0] for j in be) - 35) < 3
    slack = [j.deadline / j.durations[0] - 1 for j in slo if j.deadline is not None]
    assert min(slack) >= 0.5 and max(slack) <= 2.0 and abs(statistics.mean(slack) - 1.25) < 0.06


def test_arrivals_are_poisson_at_the_offered_load(jobs):
    submits = [j.submit for j in jobs]
    assert submits[0] == 0.0 and submits == sorted(submits)
    gaps = [b - a for a, b in itertools.pairwise(submits)]
    work = math.fsum(j.tasks * j.durations[0] for j in jobs)
    expected = work / N / 80  # mean slot-seconds per job over 80 slots at load 1
    assert abs(statistics.mean(gaps) / expected - 1) < 0.1
    assert abs(statistics.stdev(gaps) / statistics.mean(gaps) - 1) < 0.12  # exponential: CV 1
    # Twice the load: the same jobs, arrivals twice as dense; a batch: everything at 0.
    dense = gshet_jobs(7, N, load=2.0)
    assert [j.durations for j in dense] == [j.durations for j in jobs]
    assert all(math.isclose(a.submit, b.submit / 2) for a, b in zip(dense, jobs, strict=True))
    assert {j.submit for j in gshet_jobs(7, 20, load=None)} == {0.0}


def test_a_seed_gives_the_same_jobs():
    a, b, c = gshet_jobs(3, 100), gshet_jobs(3, 100), gshet_jobs(4, 100)
    assert a == b and a != c


def test_mix_and_sizes_are_parameters():
    jobs = gshet_jobs(
        1, 200, slo_share=1.0, gpu_share=0.0, slo_tasks=(3, 3), slo_duration=(5, 5), slack=(1, 1)
    )
    assert {(j.preference, j.tasks, j.durations[0], j.deadline) for j in jobs} == {("rack", 3, 5.0, 10.0)}
    be = gshet_jobs(1, 50, slo_share=0.0, be_tasks=(2, 2), be_duration=(1, 2))
    assert {j.slo for j in be} == {"be"} and {j.tasks for j in be} == {2}


def test_misestimate_and_time_scale():
    base = gshet_jobs(5, 100)
    off = gshet_jobs(5, 100, misestimate=(1.5, 1.5))
    assert [j.durations for j in off] == [j.durations for j in base]
    assert all(math.isclose(j.estimate, 1.5 * b.estimate) for j, b in zip(off, base, strict=True))
    assert all(j.stages[0].estimate == j.estimate for j in off)
    spread = gshet_jobs(5, 100, misestimate=(0.5, 1.5))
    assert all(0.5 <= j.estimate / j.durations[0] <= 1.5 for j in spread)
    scaled = gshet_jobs(5, 100, time_scale=10.0)
    for s, b in zip(scaled, base, strict=True):
        assert math.isclose(s.durations[0], b.durations[0] / 10) and math.isclose(s.submit, b.submit / 10)
        assert (s.deadline is None) == (b.deadline is None)
        if s.deadline is not None and b.deadline is not None:
            assert math.isclose(s.deadline, b.deadline / 10)
        assert s.slo == b.slo  # the admission quantum scales too


def slo_job(job_id, submit, k, d, deadline):
    return JobSpec(job_id, submit, [d] * k, d, False, deadline=deadline, slo="accepted")


def test_rayon_admission_books_the_latest_start_that_fits():
    jobs = [
        slo_job(0, 0.0, 10, 8.0, 8.0),  # the whole cluster over [0, 8)
        slo_job(1, 0.0, 1, 4.0, 8.0),  # nothing left before 8
        slo_job(2, 0.0, 5, 4.0, 12.0),  # latest start 8: fits
        slo_job(3, 0.0, 6, 4.0, 12.0),  # [8, 12) holds 5 already
        JobSpec(4, 0.0, [1.0], 1.0, False, slo="be"),
        slo_job(5, 1.0, 5, 4.0, 11.0),  # quanta from ceil(1/4) = 1 to floor(8/4) = 2: [8, 12) has 5 free
    ]
    assert rayon_admission(jobs, capacity=10, quantum=4.0) == [True, False, True, False, False, True]


def test_admission_classes():
    def classes(admission, load):
        return Counter(j.slo for j in gshet_jobs(2, 300, load=load, admission=admission))

    assert set(classes("all", 1.0)) == {"accepted", "be"}
    assert set(classes("none", 1.0)) == {"noreserve", "be"}
    light, heavy = classes("rayon", 0.3), classes("rayon", None)  # a batch overloads the plan
    assert light["noreserve"] < heavy["noreserve"] and heavy["accepted"] > 0
    # Accepted reservations never overbook the scalar plan (recomputed on the quanta).
    jobs = gshet_jobs(2, 300, load=3.0)
    accepted = [j for j in jobs if j.slo == "accepted"]
    assert accepted and any(j.slo == "noreserve" for j in jobs)
    assert rayon_admission(accepted, 80, 4.0) == [True] * len(accepted)


def test_attributes_of_80_nodes():
    attrs = gshet_attributes(80)
    assert len(attrs) == 80 and all(set(a) == {"rack", "gpu"} for a in attrs)
    assert Counter(a["rack"] for a in attrs) == {f"r{i}": 10 for i in range(8)}
    assert [a["rack"] for a in attrs[:21:10]] == ["r0", "r1", "r2"]
    assert {a["rack"] for a in attrs if a["gpu"]} == {"r0", "r1"} and sum(a["gpu"] for a in attrs) == 20
    small = gshet_attributes(25)  # racks of 10, 10 and 5; round(3/4) = 1 GPU rack
    assert Counter(a["rack"] for a in small) == {"r0": 10, "r1": 10, "r2": 5}
    assert {a["rack"] for a in small if a["gpu"]} == {"r0"}
    assert all(a["gpu"] for a in gshet_attributes(4))  # one rack: at least one GPU rack
    assert not any(a["gpu"] for a in gshet_attributes(40, gpu_racks=0.0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"count": 0}, "count"),
        ({"slo_share": 1.5}, "slo_share"),
        ({"gpu_share": -0.1}, "gpu_share"),
        ({"load": 0.0}, "load"),
        ({"load": math.inf}, "load"),
        ({"nodes": 0}, "nodes"),
        ({"slots": 0}, "slots"),
        ({"slo_tasks": (0, 3)}, "slo_tasks"),
        ({"slo_tasks": (5, 3)}, "slo_tasks"),
        ({"be_tasks": (1.5, 3)}, "be_tasks"),
        ({"slo_duration": (0, 10)}, "slo_duration"),
        ({"be_duration": (10, 5)}, "be_duration"),
        ({"slack": (-1, 2)}, "slack"),
        ({"slowdown": 0.9}, "slowdown"),
        ({"misestimate": (0, 1)}, "misestimate"),
        ({"admission": "maybe"}, "admission"),
        ({"quantum": 0}, "quantum"),
        ({"time_scale": -1}, "time_scale"),
        ({"nodes": 8}, "cannot run as gangs"),  # SLO gangs of up to 10 tasks
    ],
)
def test_bad_parameters_give_one_line(kwargs, match):
    args = {"seed": 0, "count": 10, **kwargs}
    with pytest.raises(WorkloadError, match=match) as info:
        gshet_jobs(**args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("args", "match"), [((0,), "nodes"), ((10,), "rack_size"), ((10,), "gpu_racks")])
def test_bad_attribute_parameters_give_one_line(args, match):
    kwargs = {"rack_size": 0} if match == "rack_size" else {"gpu_racks": 2.0} if match == "gpu_racks" else {}
    with pytest.raises(WorkloadError, match=match) as info:
        gshet_attributes(*args, **kwargs)
    assert "\n" not in str(info.value)


def read_jobs_csv(path):
    return {int(r["job_id"]): r for r in jobs_rows(path)}


def test_a_sim_replay_through_the_cli_finishes_and_reports_the_slo_metrics(tmp_path):
    from aviary.launch.cli.main import main
    from aviary.launch.flags.spec import ReplaySpec
    from aviary.launch.replay.resolve import setup_replay, time_scale

    out = tmp_path / "drf"
    argv = ["replay", "--runtime", "sim", "--workload", "gshet", "--jobs", "30", "--policy", "drf"]
    assert main([*argv, "--nodes", "80", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == summary["jobs"] == 30 and summary["unfinished"] == []
    assert summary["extra"]["workload"] == "gshet" and summary["extra"]["load"] == 1.0
    assert summary["extra"]["gshet"]["slo_share"] == 0.75 and summary["slots"] == 1
    # The workload of the replay is gshet_jobs' with the recipe's defaults on 80 one-slot nodes.
    jobs = gshet_jobs(0, 30, nodes=80, load=1.0)
    rows = read_jobs_csv(out / "jobs.csv")
    assert [int(r["tasks"]) for r in rows.values()] == [j.tasks for j in jobs]
    met = {"all": [], "accepted": [], "noreserve": []}
    be = []
    for j in jobs:
        r = rows[j.job_id]
        jct = float(r["finish"]) - float(r["submit"])
        if j.deadline is None:
            be.append(jct)
        else:
            ok = jct <= j.deadline + DEADLINE_SLACK
            met["all"].append(ok)
            met[j.slo].append(ok)
    att = summary["slo_attainment"]
    assert math.isclose(att["all"], sum(met["all"]) / len(met["all"]), abs_tol=1e-6)
    for name, cls in (("accepted", "accepted"), ("no_reservation", "noreserve")):
        assert att[name] == (None if not met[cls] else pytest.approx(sum(met[cls]) / len(met[cls]), abs=1e-6))
    assert summary["slo_jobs"] == {
        "all": 30 - len(be),
        "accepted": len(met["accepted"]),
        "no_reservation": len(met["noreserve"]),
    }
    assert summary["be_mean_latency"] == pytest.approx(statistics.mean(be), abs=1e-5)
    # The cluster: 80 one-core nodes in 8 racks of 10, racks 0-1 GPU-labelled.
    setup = setup_replay(ReplaySpec(policy="drf", workload="gshet", runtime="sim", nodes=80, jobs=30))
    assert [n.attributes for n in setup.cluster.nodes] == gshet_attributes(80)
    assert {n.resources.cores for n in setup.cluster.nodes} == {1.0}
    assert setup.jobs == jobs
    two = setup_replay(ReplaySpec(policy="drf", workload="gshet", runtime="sim", nodes=40, slots=2, jobs=5))
    assert {n.resources.cores for n in two.cluster.nodes} == {2.0}
    assert time_scale(ReplaySpec(policy="drf", workload="gshet")) == 10.0  # real: 2-12 s SLO tasks


def test_a_replay_of_a_workload_without_slo_jobs_has_no_slo_metrics(tmp_path):
    from aviary.launch.cli.main import main

    argv = ["replay", "--runtime", "sim", "--workload", "tpcds", "--jobs", "5", "--policy", "drf", "--quiet"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert not {"slo_attainment", "slo_jobs", "be_mean_latency"} & set(summary)


def test_bad_gshet_replays_give_one_line(tmp_path, capsys):
    from aviary.launch.cli.main import main

    base = ["replay", "--runtime", "sim", "--workload", "gshet", "--jobs", "5", "--quiet"]
    trace = tmp_path / "some.tr"
    trace.write_text("0 1 1.0 1.0\n")
    bad = [
        ["--policy", "sparrow"],
        ["--policy", "drf", str(trace)],
        ["--policy", "drf", "--keep-arrivals"],
        ["--policy", "drf", "--start", "3"],
        ["--policy", "drf", "--nodes", "5"],  # gangs of up to 10 slots on 5
    ]
    capsys.readouterr()
    for extra in bad:
        assert main([*base, *extra, "--out", str(tmp_path / "x")]) == 2, extra
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == len(bad), err
    for line, what in zip(
        err, ("DAG jobs", "trace file", "--keep-arrivals", "--start", "gangs"), strict=True
    ):
        assert what in line, line


def test_a_cluster_description_for_gshet_carries_the_attributes(tmp_path, capsys):
    from aviary.common.cluster import load_cluster
    from aviary.launch.cli.main import main

    plain, gshet = tmp_path / "plain.toml", tmp_path / "gshet.toml"
    base = ["cluster", "--policy", "drf", "--hosts", "127.0.0.1", "--nodes", "20"]
    assert main([*base, "--out", str(plain)]) == 0
    assert main([*base, "--workload", "gshet", "--out", str(gshet)]) == 0
    nodes = load_cluster(gshet).nodes
    assert [n.attributes for n in nodes] == gshet_attributes(20) and {n.resources.cores for n in nodes} == {
        1.0
    }
    capsys.readouterr()
    argv = ["replay", "--runtime", "real", "--workload", "gshet", "--policy", "drf", "--quiet"]
    assert main([*argv, "--connect", str(plain), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no rack attribute" in err[0], err


def test_the_gshet_flag_sets_the_mix_and_refuses_unknown_keys_in_one_line(tmp_path, capsys):
    from aviary.launch.cli.main import main

    flags = ["replay", "--runtime", "sim", "--workload", "gshet", "--policy", "drf", "--jobs", "40",
             "--nodes", "20", "--quiet"]  # fmt: skip
    out = tmp_path / "run"
    assert main([*flags, "--gshet", "slo_share=1,slack=0.2:0.4", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["extra"]["gshet"]["slo_share"] == 1.0 and summary["extra"]["gshet"]["slack"] == [0.2, 0.4]
    assert summary["slo_jobs"]["all"] == 40  # every job an SLO job
    for bad, field in (("slak=1", "slak"), ("slack=1", "slack"), ("slo_share=x", "slo_share")):
        assert main([*flags, "--gshet", bad, "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"field '{field}'" in err[0]
