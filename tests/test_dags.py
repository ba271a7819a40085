"""DAG workloads: the Alibaba and TPC-H readers, demand synthesis, task merging, dominant-resource load."""

import hashlib
import json
import math
import random
import statistics
from pathlib import Path

import pytest

from aviary.common.dag_shapes import tpcds_like_jobs
from aviary.common.dags import (
    ALIBABA_CSV,
    DEFAULT_MACHINE,
    DEMAND_MAX,
    DEMAND_MIN,
    TPCH_JSON,
    TPCH_LINE_STRIDE,
    TPCH_MIX,
    TPCH_MIXES,
    TPCH_PROFILE,
    DagTraceError,
    DagTraceJob,
    DagTraceStage,
    build_dag_workload,
    check_dag_workload,
    google_dag_jobs,
    offered_load,
    poisson_mean_gap,
    read_alibaba,
    read_tpch,
    resource_seconds,
    synthesize_demands,
    tpch_label,
    tpch_mix,
    tpch_profiles,
)
from aviary.common.model import JobSpec, Stage
from aviary.common.resources import Resources
from aviary.common.trace import TraceJob, read_trace
from aviary.common.workload import WorkloadError, build_workload

GOOGLE = Path(__file__).resolve().parent.parent / "experiments" / "traces" / "google_10k.tr"
CLUSTER = DEFAULT_MACHINE.times(100)


@pytest.fixture(scope="module")
def alibaba() -> list[DagTraceJob]:
    return read_alibaba()


@pytest.fixture(scope="module")
def tpch() -> dict[str, DagTraceJob]:
    return read_tpch()


@pytest.fixture(scope="module")
def google() -> list[TraceJob]:
    return read_trace(GOOGLE)


def topological(job: DagTraceJob) -> bool:
    return all(0 <= p < i for i, s in enumerate(job.stages) for p in s.parents)


# --- readers on the shipped files ---------------------------------------------------------------------


def test_alibaba_counts_match_the_traces_readme(alibaba):
    assert len(alibaba) == 6535
    assert sum(len(j.stages) for j in alibaba) == 24729
    assert sum(j.tasks for j in alibaba) == 3_051_810
    assert sum(len(s.parents) for j in alibaba for s in j.stages) == 19409
    assert max(len(j.stages) for j in alibaba) == 72
    assert max(j.tasks for j in alibaba) == 175_991
    submits = [j.submit for j in alibaba]
    assert submits == sorted(submits)
    assert 168 <= (submits[-1] - submits[0]) / 3600 < 168.5
    assert all(topological(j) for j in alibaba)
    assert min(s.mean for j in alibaba for s in j.stages) > 0
    assert len({j.name for j in alibaba}) == 6535
    first = alibaba[0]
    assert (first.name, first.line, first.submit) == ("j_343160", 2, 85660.0)
    s = first.stages[2]  # J3_1_2: 3 tasks after stages 1 and 2
    assert (s.name, s.tasks, s.parents, s.cores) == ("3", 3, (0, 1), 1.0)
    assert s.mem_share == pytest.approx(0.0059)


def test_tpch_has_22_topologically_ordered_queries_and_16_profiles(tpch):
    assert list(tpch) == [f"Q{i}" for i in range(1, 23)]
    assert len(tpch_profiles()) == 16
    raw = json.loads(TPCH_JSON.read_text())
    for key, job in tpch.items():
        assert topological(job), key
        assert job.submit is None and job.line == int(key[1:])
        # The renumbering keeps the graph: the same edges between the same stage names.
        names = [s.name for s in job.stages]
        edges = {(int(names[p]), int(names[i])) for i, s in enumerate(job.stages) for p in s.parents}
        assert edges == {tuple(e) for e in raw[key]["edges"]}, key
    q2 = tpch["Q2"]
    assert len(q2.stages) == 17
    assert (q2.stages[0].tasks, q2.stages[0].mean) == (50, pytest.approx(8.36348))  # ms -> s
    for profile in tpch_profiles():
        assert len(read_tpch(profile=profile)) == 22


def test_stages_are_renumbered_topologically_and_stably(tmp_path):
    csv = tmp_path / "a.csv"
    csv.write_text(
        "job,stage,parents,instances,start_s,duration_s,plan_cpu,plan_mem\n"
        "j,3,1 2,4,10,5,100,0.3\n"  # a child listed before its parents
        "j,1,,2,0,1,50,0.2\n"
        "j,2,1,1,3,2,50,0.2\n"
        "j,9,,1,0,0,50,0.2\n"  # an independent root, duration 0
    )
    (job,) = read_alibaba(csv)
    assert [s.name for s in job.stages] == ["1", "2", "3", "9"]
    assert [s.parents for s in job.stages] == [(), (0,), (0, 1), ()]
    assert job.submit == 0 and job.line == 2
    assert job.stages[3].mean == pytest.approx(1e-3)  # zero durations become 1 ms
    doc = {
        "Q": {
            "stages": [0, 1, 2],
            "edges": [[2, 0], [1, 0]],
            "profiles": {"p": [[0, 1, 1000.0], [1, 2, 500.0], [2, 3, 250.0]]},
        }
    }
    (tmp_path / "t.json").write_text(json.dumps(doc))
    q = read_tpch(tmp_path / "t.json", profile="p")["Q"]
    assert [(s.name, s.tasks, s.parents) for s in q.stages] == [("1", 2, ()), ("2", 3, ()), ("0", 1, (0, 1))]


# --- bad input: one-line errors naming file, line and field -------------------------------------------

HEADER = "job,stage,parents,instances,start_s,duration_s,plan_cpu,plan_mem\n"


@pytest.mark.parametrize(
    ("text", "where", "field"),
    [
        ("job,stage,parents,instances,start_s,duration_s,plan_cpu\nj,1,,1,0,1,50\n", ":1:", "plan_mem"),
        (HEADER + "j,1,,1,0,1,50,0.2\nj,2,1,x,0,1,50,0.2\n", ":3:", "instances"),
        (HEADER + "j,1,,1,0,1,50,0.2\nj,2,1,0,0,1,50,0.2\n", ":3:", "instances"),
        (HEADER + "j,1,,1,0,-1,50,0.2\n", ":2:", "duration_s"),
        (HEADER + "j,1,,1,0,1,nan,0.2\n", ":2:", "plan_cpu"),
        (HEADER + "j,1,,1,0,1,50\n", ":2:", "plan_mem"),
        (HEADER + "j,1,,1,0,1,50,0.2\nj,2,7,1,0,1,50,0.2\n", ":3:", "parents"),
        (HEADER + "j,1,2,1,0,1,50,0.2\nj,2,1,1,0,1,50,0.2\n", ":2:", "parents"),  # a cycle
        (HEADER + "j,1,1,1,0,1,50,0.2\n", ":2:", "parents"),  # its own parent
        (HEADER + "j,1,,1,0,1,50,0.2\nj,1,,1,0,1,50,0.2\n", ":3:", "stage"),  # duplicate
    ],
)
def test_bad_alibaba_csv_raises_one_line(tmp_path, text, where, field):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DagTraceError) as err:
        read_alibaba(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}{where}") and f"field '{field}'" in message, message


def tpch_doc(**change):
    query = {"stages": [0, 1], "edges": [[0, 1]], "profiles": {"p": [[0, 2, 100.0], [1, 1, 50.0]]}}
    query.update(change)
    return {"Q1": {"stages": [0], "edges": [], "profiles": {"p": [[0, 1, 1.0]]}}, "Q7": query}


@pytest.mark.parametrize(
    ("doc", "profile", "where", "field"),
    [
        (tpch_doc(), "nope", "Q1", "profiles"),
        (tpch_doc(edges=[[5, 1]]), "p", "Q7 stage 1", "edges"),
        (tpch_doc(edges=[[0, 1], [1, 0]]), "p", "Q7 stage", "edges"),
        (tpch_doc(profiles={"p": [[0, "x", 100.0], [1, 1, 50.0]]}), "p", "Q7 stage 0", "profiles.p.tasks"),
        (tpch_doc(profiles={"p": [[0, 2, -1], [1, 1, 50.0]]}), "p", "Q7 stage 0", "profiles.p.mean"),
        (tpch_doc(profiles={"p": [[0, 2, 100.0]]}), "p", "Q7 stage 1", "profiles.p"),
        (tpch_doc(stages=None), "p", "Q7", "stages"),
    ],
)
def test_bad_tpch_json_raises_one_line(tmp_path, doc, profile, where, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(DagTraceError) as err:
        read_tpch(path, profile=profile)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {where}") and f"field '{field}" in message, message


def test_missing_files_raise_one_line(tmp_path):
    for reader in (read_alibaba, read_tpch):
        with pytest.raises(DagTraceError, match="cannot read trace"):
            reader(tmp_path / "absent")


# --- workloads ----------------------------------------------------------------------------------------


def build(kind, trace, **kw):
    args = {"jobs": 200, "seed": 3, "time_scale": 1000.0, "load": 0.9, "capacity_total": CLUSTER} | kw
    return build_dag_workload(kind, trace, **args)


def fingerprint(specs: list[JobSpec]):
    return [(s.submit, s.line, s.durations, s.stages) for s in specs]


@pytest.mark.parametrize("kind", ["alibaba", "tpch", "google"])
def test_deterministic_per_seed_and_different_across_seeds(kind, alibaba, tpch, google):
    trace = {"alibaba": alibaba, "tpch": tpch, "google": google}[kind]
    a, b, c = build(kind, trace), build(kind, trace), build(kind, trace, seed=4)
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a) != fingerprint(c)
    # The load changes only the arrivals: the same jobs with the same demands.
    d = build(kind, trace, load=0.5)
    assert [(s.line, s.durations, s.stages) for s in a] == [(s.line, s.durations, s.stages) for s in d]
    check_dag_workload(a)
    assert [s.job_id for s in a] == list(range(200))


def test_merging_keeps_each_stage_task_seconds(alibaba, tpch):
    for kind, trace in (("alibaba", alibaba), ("tpch", tpch)):
        extra = {"sample": "random"} if kind == "alibaba" else {}
        specs = build(kind, trace, jobs=300, task_scale=0.05, **extra)
        pool = {j.line: j for j in (alibaba if kind == "alibaba" else tpch.values())}
        for spec in specs:
            tj = pool[spec.line]
            at = 0
            for s, ts in zip(spec.stages, tj.stages, strict=True):
                ds = spec.durations[at : at + s.tasks]
                at += s.tasks
                assert s.tasks == min(ts.tasks, max(1, round(ts.tasks * 0.05)))
                assert math.fsum(ds) * 1000.0 == pytest.approx(ts.tasks * ts.mean, rel=1e-12)
                assert s.estimate == pytest.approx(ds[0]) and len(set(ds)) == 1  # n/m times the mean
                assert min(ds) > 0
            assert spec.estimate == pytest.approx(math.fsum(spec.durations) / spec.tasks)
            assert spec.long == (tj.mean >= 1129.532)


def test_google_kind_is_build_workload_plus_a_demand(google):
    ours = build_dag_workload(
        "google", google, jobs=500, seed=5, time_scale=1000.0, task_scale=0.01, keep_arrivals=True
    )
    theirs = build_workload(google, jobs=500, seed=5, time_scale=1000.0, task_scale=0.01, keep_arrivals=True)
    assert [(s.submit, s.durations, s.long, s.line) for s in ours] == [
        (s.submit, s.durations, s.long, s.line) for s in theirs
    ]
    assert all(len(s.stages) == 1 and s.stages[0].parents == () for s in ours)
    assert google_dag_jobs(google[:1])[0].mean == google[0].mean


def test_synthesized_demands_are_log_uniform_in_the_spec_ranges(tpch):
    stages = [DagTraceStage(1, 1.0)] * 4000
    demands = synthesize_demands(stages, random.Random(1))
    for k, (lo, hi) in enumerate(zip(DEMAND_MIN, DEMAND_MAX, strict=True)):
        xs = [d[k] for d in demands]
        assert lo <= min(xs) and max(xs) <= hi
        assert statistics.median(xs) == pytest.approx(math.sqrt(lo * hi), rel=0.1)  # the geometric mean
    assert len(set(demands)) == len(demands)  # independent draws
    assert all(d.fits_in(DEFAULT_MACHINE) for d in demands)
    # In a workload: one demand per stage, drawn per job (two runs of one query differ).
    specs = build("tpch", tpch, jobs=300)
    q = [s for s in specs if s.line == 2]
    assert len(q) >= 2 and q[0].stages[0].demand != q[1].stages[0].demand
    drawn = [st.demand for s in specs for st in s.stages]
    assert all(DEMAND_MIN.fits_in(d) and d.fits_in(DEMAND_MAX) for d in drawn)


def test_alibaba_plan_demands_are_nearly_uniform(alibaba, tpch):
    specs = build("alibaba", alibaba, jobs=None, demands="alibaba-plan", task_scale=0.001)
    stages = [st for s in specs for st in s.stages]
    assert len(stages) == 24729
    assert sum(st.demand.cores in (0.5, 1.0) for st in stages) / len(stages) > 0.999
    assert all(st.demand.disk == st.demand.net == 0 for st in stages)
    assert statistics.median(st.demand.mem for st in stages) == pytest.approx(0.003 * 64)
    assert max(st.demand.mem for st in stages) == pytest.approx(0.0235 * 64)
    with pytest.raises(WorkloadError, match="alibaba-plan"):
        build("tpch", tpch, demands="alibaba-plan")


# --- offered load -------------------------------------------------------------------------------------


def test_dominant_resource_load_on_a_hand_computed_example():
    a = JobSpec(0, 0.0, [10.0, 10.0], 10.0, False, stages=[Stage(2, 10.0, Resources(1, 4, 0, 0))])
    b = JobSpec(1, 0.0, [20.0], 20.0, False, stages=[Stage(1, 20.0, Resources(4, 1, 0.5, 0))])
    assert resource_seconds(a) == (20, 80, 0, 0) and resource_seconds(b) == (80, 20, 10, 0)
    capacity = Resources(10, 100, 2, 1)
    # mean per job <50, 50, 5, 0> / capacity = <5, 0.5, 2.5, 0>: cores dominate; gap = 5 / load.
    assert poisson_mean_gap([a, b], capacity, 0.5) == pytest.approx(10.0)
    # Over 20 s (two gaps of 10 s): <100/200, 100/2000, 10/40, 0>.
    assert offered_load([a, b], capacity, 20.0) == pytest.approx((0.5, 0.05, 0.25, 0.0))
    with pytest.raises(WorkloadError, match="disk"):
        poisson_mean_gap([b], Resources(10, 100, 0, 1), 0.5)


@pytest.mark.parametrize("load", [0.5, 0.9])
def test_poisson_arrivals_reach_the_asked_load(tpch, load):
    n = 4000
    specs = build("tpch", tpch, jobs=n, seed=11, load=load, task_scale=0.1)
    span = specs[-1].submit * n / (n - 1)  # n gaps' worth of time
    realized = offered_load(specs, CLUSTER, span)
    assert max(realized) == pytest.approx(load, rel=0.05)
    # With the spec §6.2 ranges, disk and network dominate (mean 0.215 of a machine per task).
    assert max(realized) in (realized.disk, realized.net)


def test_keep_arrivals_scales_the_trace_submit_times(alibaba, tpch):
    specs = build("alibaba", alibaba, start=100, load=None, keep_arrivals=True, capacity_total=None)
    chosen = alibaba[100:300]
    assert [s.submit for s in specs] == [(j.submit - chosen[0].submit) / 1000.0 for j in chosen]
    with pytest.raises(WorkloadError, match="submit"):
        build("tpch", tpch, load=None, keep_arrivals=True)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"keep_arrivals": True}, "one arrival process"),
        ({"load": None}, "one arrival process"),
        ({"capacity_total": None}, "capacity_total"),
        ({"kind": "bigbench"}, "kind"),
        ({"demands": "uniform"}, "demands"),
        ({"time_scale": 0}, "time_scale"),
        ({"task_scale": -1}, "task_scale"),
        ({"kind": "tpch", "jobs": None}, "tpch"),
        ({"kind": "tpch", "start": 3}, "tpch"),
        ({"jobs": 10**6}, "only"),
    ],
)
def test_bad_parameters_raise(alibaba, kw, match):
    kind = kw.pop("kind", "alibaba")
    trace = None if kind == "tpch" else alibaba
    with pytest.raises(WorkloadError, match=match):
        build(kind, trace, **kw)


def test_check_rejects_a_demand_that_does_not_fit():
    job = JobSpec(0, 0.0, [1.0], 1.0, False, stages=[Stage(1, 1.0, Resources(17, 1, 0, 0))])
    with pytest.raises(WorkloadError, match="does not fit"):
        check_dag_workload([job])
    assert ALIBABA_CSV.exists() and TPCH_JSON.exists()


def test_batch_arrivals_put_every_job_at_time_zero():
    specs = build_dag_workload("tpch", jobs=20, seed=1, batch=True)
    assert [s.submit for s in specs] == [0.0] * 20
    with pytest.raises(WorkloadError, match="one arrival process"):
        build_dag_workload("tpch", jobs=5, batch=True, load=0.5, capacity_total=DEFAULT_MACHINE)


# --- TPC-H input sizes (issue 24) ---------------------------------------------------------------------


PROFILES = tpch_profiles()


def profile_of(spec: JobSpec) -> str:
    return PROFILES[spec.line // TPCH_LINE_STRIDE]


def test_the_default_mix_is_the_four_sizes_at_50_cores_equally_likely():
    assert TPCH_MIX == "sizes"
    assert dict(TPCH_MIXES["sizes"]) == {f"{gb}g_maxCores_50": 1.0 for gb in (50, 100, 250, 500)}
    assert dict(TPCH_MIXES["50g"]) == {TPCH_PROFILE: 1.0}
    assert all(p in tpch_profiles() for mix in TPCH_MIXES.values() for p in mix)
    assert tpch_profiles()[0] == TPCH_PROFILE  # index 0: the old lines are the bare query positions
    assert tpch_label(5) == "Q5@50g_maxCores_50" and tpch_label(805) == "Q5@250g_maxCores_50"
    assert tpch_label(1222) == "Q22@500g_maxCores_50"
    for line in (0, 23, 1600):
        with pytest.raises(WorkloadError, match=f"line {line}"):
            tpch_label(line)


def test_tpch_profiles_are_drawn_with_the_seed_and_the_same_jobs_every_time():
    a, b = build("tpch", None, jobs=60, task_scale=0.1), build("tpch", None, jobs=60, task_scale=0.1)
    assert fingerprint(a) == fingerprint(b)
    c = build("tpch", None, jobs=60, task_scale=0.1, seed=4)
    assert [profile_of(s) for s in a] != [profile_of(s) for s in c]
    # Each job is its query at its drawn profile: task counts and task-seconds of that profile.
    tables = {p: read_tpch(profile=p) for p in TPCH_MIXES["sizes"]}
    for spec in a:
        tj = tables[profile_of(spec)][f"Q{spec.line % TPCH_LINE_STRIDE}"]
        assert [s.tasks for s in spec.stages] == [
            min(t.tasks, max(1, round(t.tasks * 0.1))) for t in tj.stages
        ]
        assert math.fsum(spec.durations) * 1000.0 == pytest.approx(tj.task_seconds, rel=1e-12)
    # The mix changes only the sizes: the same queries with the same demands as the single profile.
    old = build("tpch", None, jobs=60, task_scale=0.1, tpch_mix="50g")
    assert [s.line % TPCH_LINE_STRIDE for s in a] == [s.line for s in old]
    assert [[st.demand for st in s.stages] for s in a] == [[st.demand for st in s.stages] for s in old]
    # The load changes only the arrivals.
    d = build("tpch", None, jobs=60, task_scale=0.1, load=0.5)
    assert [(s.line, s.durations, s.stages) for s in a] == [(s.line, s.durations, s.stages) for s in d]


@pytest.mark.parametrize(
    ("mix", "weights"),
    [
        ("sizes", {f"{gb}g_maxCores_50": 0.25 for gb in (50, 100, 250, 500)}),
        ("50g_maxCores_50:3, 500g_maxCores_200", {"50g_maxCores_50": 0.75, "500g_maxCores_200": 0.25}),
    ],
)
def test_tpch_profiles_follow_the_declared_weights(mix, weights):
    n = 4000  # fixed seed: the counts are fixed; the bound is 4 standard deviations of a binomial
    specs = build_dag_workload("tpch", jobs=n, seed=7, batch=True, task_scale=0.001, tpch_mix=mix)
    counts = {p: 0 for p in weights}
    for spec in specs:
        counts[profile_of(spec)] += 1
    for p, w in weights.items():
        assert abs(counts[p] - n * w) <= 4 * math.sqrt(n * w * (1 - w)), (p, counts)
    queries = {s.line % TPCH_LINE_STRIDE for s in specs}
    assert queries == set(range(1, 23))  # every query at every size of the mix, too
    assert {(profile_of(s), s.line % TPCH_LINE_STRIDE) for s in specs} == {
        (p, q) for p in weights for q in range(1, 23)
    }


OLD_JOBS = "28d054e90b236f98"
"""The jobs of ``old_jobs_digest`` built by the code before the mixes (commit 6d7865e)."""


def old_jobs_digest(**kw) -> str:
    specs = build_dag_workload(
        "tpch", jobs=40, seed=3, time_scale=1000.0, load=0.9, capacity_total=CLUSTER, task_scale=0.1, **kw
    )
    seen = [(s.submit, s.line, s.durations, s.stages, s.long, s.estimate) for s in specs]
    return hashlib.sha256(repr(seen).encode()).hexdigest()[:16]


@pytest.mark.parametrize("mix", ["50g", TPCH_PROFILE, f" {TPCH_PROFILE}:2 ", {TPCH_PROFILE: 1.0}])
def test_a_single_profile_mix_reproduces_the_old_jobs_exactly(tpch, mix):
    assert old_jobs_digest(tpch_mix=mix) == OLD_JOBS
    assert old_jobs_digest(trace=tpch) == OLD_JOBS  # jobs read at one profile take no mix
    assert old_jobs_digest(trace=TPCH_JSON, tpch_mix=mix) == OLD_JOBS
    assert old_jobs_digest() != OLD_JOBS  # the default is the mix


@pytest.mark.parametrize(
    ("mix", "match"),
    [
        ("nope", "unknown mix or profile 'nope'"),
        ("", "empty"),
        (" , ", "empty"),
        ({}, "empty"),
        ("50g_maxCores_50:x", "weight must be a positive number, got 'x'"),
        ("50g_maxCores_50:0", "weight must be a positive number, got '0'"),
        ("50g_maxCores_50:-1", "weight must be a positive number"),
        ("50g_maxCores_50:nan", "weight must be a positive number"),
        ({"50g_maxCores_50": True}, "weight must be a positive number"),
        ("50g_maxCores_50,100g_maxCores_50,50g_maxCores_50", "listed twice"),
        ("50G_maxCores_50", "unknown mix or profile '50G_maxCores_50'"),
        (3, "expected a mix name"),
    ],
)
def test_bad_tpch_mixes_raise_one_line_naming_the_field(mix, match):
    with pytest.raises(WorkloadError, match=match) as info:
        build_dag_workload("tpch", jobs=3, batch=True, tpch_mix=mix)
    assert str(info.value).startswith("tpch_mix: ") and "\n" not in str(info.value)
    with pytest.raises(WorkloadError, match=match):
        tpch_mix(mix, tpch_profiles())


def test_a_tpch_mix_needs_the_tpch_file(tpch, alibaba):
    with pytest.raises(WorkloadError, match="tpch_mix applies to kind 'tpch', not 'alibaba'"):
        build("alibaba", alibaba, tpch_mix="sizes")
    with pytest.raises(WorkloadError, match="tpch_mix: needs the TPC-H file"):
        build("tpch", tpch, tpch_mix="sizes")
    assert tpch_mix("sizes", tpch_profiles()) == dict(TPCH_MIXES["sizes"])
    assert tpch_mix("a:2,b", ["a", "b"]) == {"a": 2.0, "b": 1.0}


def test_the_offered_load_follows_the_drawn_sizes():
    n, load = 2000, 0.8
    mixed = build_dag_workload(
        "tpch", jobs=n, seed=11, load=load, capacity_total=CLUSTER, time_scale=1000.0, task_scale=0.01
    )
    single = build_dag_workload(
        "tpch",
        jobs=n,
        seed=11,
        load=load,
        capacity_total=CLUSTER,
        time_scale=1000.0,
        task_scale=0.01,
        tpch_mix="50g",
    )

    # The mean gap is the dominant resource's mean resource-seconds per job of the jobs drawn / load.
    def gap(specs):
        mean = [math.fsum(resource_seconds(s)[r] for s in specs) / n for r in range(4)]
        return max(m / c for m, c in zip(mean, CLUSTER, strict=True)) / load

    assert poisson_mean_gap(mixed, CLUSTER, load) == pytest.approx(gap(mixed), rel=1e-12)
    # The sizes' mean work is 5.4x the 50 GB one's (module docstring): the arrivals spread out as much.
    assert gap(mixed) / gap(single) == pytest.approx(38155 / 4 / 1772, rel=0.1)
    for specs in (mixed, single):
        realized = offered_load(specs, CLUSTER, specs[-1].submit * n / (n - 1))
        assert max(realized) == pytest.approx(load, rel=0.05)


# --- TPC-DS-like (aviary.common.dag_shapes) -----------------------------------------------------------


def test_tpcds_workload_builds_and_passes_the_check():
    specs = build_dag_workload("tpcds", jobs=50, load=0.8, capacity_total=CLUSTER, seed=2)
    check_dag_workload(specs)
    assert [s.job_id for s in specs] == list(range(50)) and specs[0].submit == 0.0 < specs[-1].submit
    # Every job is a draw of the generator on the sampling stream (the first of the seed's three),
    # its stage task-seconds kept at task_scale 1; the stream does not depend on the load.
    drawn = tpcds_like_jobs(random.Random(random.Random(2).getrandbits(64)), 50)
    for spec, tj in zip(specs, drawn, strict=True):
        assert spec.line == tj.line and [s.parents for s in spec.stages] == [s.parents for s in tj.stages]
        assert [s.tasks for s in spec.stages] == [s.tasks for s in tj.stages]
        assert math.fsum(spec.durations) == pytest.approx(tj.task_seconds, rel=1e-12)
    other = build_dag_workload("tpcds", jobs=50, load=0.4, capacity_total=CLUSTER, seed=2)
    assert [(s.durations, s.stages) for s in other] == [(s.durations, s.stages) for s in specs]
    assert other[-1].submit == pytest.approx(2 * specs[-1].submit)  # same draws, twice the gaps
    assert [s.submit for s in build_dag_workload("tpcds", jobs=5, batch=True)] == [0.0] * 5


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"jobs": None}, "kind 'tpcds' needs jobs >= 1"),
        ({"jobs": 0}, "kind 'tpcds' needs jobs >= 1"),
        ({"start": 3}, "do not apply to kind 'tpcds'"),
        ({"sample": "random"}, "do not apply to kind 'tpcds'"),
        ({"trace": []}, "takes no trace"),
        ({"kind": "bigbench"}, "kind must be one of alibaba, tpch, tpcds, google"),
    ],
)
def test_bad_tpcds_parameters_raise_one_line(kw, match):
    args = {"kind": "tpcds", "trace": None, "jobs": 10, "batch": True} | kw
    with pytest.raises(WorkloadError, match=match) as info:
        build_dag_workload(**args)
    assert "\n" not in str(info.value)


def test_tpcds_replays_on_the_simulator_through_the_cli(tmp_path, capsys):
    from aviary.launch.cli.main import main
    from aviary.launch.flags.spec import ReplaySpec
    from aviary.launch.replay.jobs import DEFAULT_TPCH_JOBS
    from aviary.launch.replay.resolve import setup_replay, time_scale

    base = [
        "replay",
        "--runtime",
        "sim",
        "--workload",
        "tpcds",
        "--policy",
        "drf",
        "--nodes",
        "10",
        "--quiet",
    ]
    for name in ("a", "b"):
        assert main([*base, "--jobs", "8", "--out", str(tmp_path / name)]) == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["finished"] == summary["jobs"] == 8 and summary["unfinished"] == []
    assert summary["counters"]["tasks_finished"] == summary["tasks"]
    assert summary["extra"]["workload"] == "tpcds" and summary["extra"]["load"] == 0.8
    assert (tmp_path / "a" / "jobs.csv").read_bytes() == (tmp_path / "b" / "jobs.csv").read_bytes()
    # No --jobs: as many as a TPC-H replay; on real processes, seconds become 0.1 s.
    spec = ReplaySpec(policy="drf", workload="tpcds", runtime="sim", batch=True)
    assert len(setup_replay(spec).jobs) == DEFAULT_TPCH_JOBS
    assert time_scale(ReplaySpec(policy="drf", workload="tpcds")) == 10.0
    # A trace file, or a slot-based policy: one line, status 2.
    trace = tmp_path / "some.tr"
    trace.write_text("0 1 1.0 1.0\n")
    capsys.readouterr()
    assert main([*base, "--jobs", "5", str(trace), "--out", str(tmp_path / "c")]) == 2
    assert main(["replay", "--runtime", "sim", "--workload", "tpcds", "--policy", "sparrow", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "takes no trace file" in err[0] and "does not schedule DAG jobs" in err[1], err
