"""Scaled replay workloads: sampling, task merging that keeps task-seconds, classes, arrivals."""

import itertools
import math
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aviary.common.model import GOOGLE_CUTOFF
from aviary.common.trace import TraceJob, read_trace
from aviary.common.workload import (
    WorkloadError,
    build_workload,
    merge_tasks,
    poisson_single_task_jobs,
    task_count,
)

BUNDLED = Path(__file__).resolve().parent.parent / "experiments" / "traces" / "google_10k.tr"


@pytest.fixture(scope="module")
def google() -> list[TraceJob]:
    return read_trace(BUNDLED)


def job(line: int, submit: float, durations: list[float]) -> TraceJob:
    return TraceJob(line=line, submit=submit, durations=durations, mean=math.fsum(durations) / len(durations))


SMALL = [job(i + 1, 10.0 * i + 100.0, [float(i + 1)] * (i + 1)) for i in range(20)]


# --- task merging -------------------------------------------------------------------------------------


@given(
    st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=300),
    st.floats(min_value=1e-4, max_value=2.0),
)
def test_merge_keeps_task_seconds_exactly_for_integer_durations(ints, factor):
    durations = [float(x) for x in ints]
    m = task_count(len(durations), factor)
    merged = merge_tasks(durations, m)
    assert len(merged) == m == min(len(durations), max(1, round(len(durations) * factor)))
    assert sum(merged) == sum(durations)  # integers below 2**53: exact


@given(
    st.lists(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), min_size=1, max_size=300),
    st.integers(min_value=1, max_value=300),
)
def test_merge_groups_are_contiguous_and_near_equal(durations, m):
    m = min(m, len(durations))
    merged = merge_tasks(durations, m)
    n = len(durations)
    bounds = [i * n // m for i in range(m + 1)]
    sizes = [b - a for a, b in itertools.pairwise(bounds)]
    assert bounds[-1] == n and min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    for i, value in enumerate(merged):
        assert value == math.fsum(durations[bounds[i] : bounds[i + 1]])
    assert math.fsum(merged) == pytest.approx(math.fsum(durations), rel=1e-12, abs=1e-9)


def test_task_count_rounds_and_caps():
    assert task_count(4950, 0.01) == 50
    assert task_count(1, 0.01) == 1
    assert task_count(149, 0.01) == 1
    assert task_count(151, 0.01) == 2
    assert task_count(7, 5.0) == 7
    with pytest.raises(WorkloadError):
        merge_tasks([1.0, 2.0], 3)


def test_google_replay_on_100_nodes_keeps_each_jobs_task_seconds(google):
    specs = build_workload(google, time_scale=1000, nodes=100, slots=1, load=0.8, seed=3)
    assert len(specs) == 10_000
    assert max(s.tasks for s in specs) == 50  # the largest job keeps its share of the cluster
    by_line = {j.line: j for j in google}
    for s in specs:
        tj = by_line[s.line]
        assert math.fsum(s.durations) == pytest.approx(tj.task_seconds / 1000, rel=1e-12)
        assert s.estimate == pytest.approx(tj.task_seconds / tj.tasks / 1000, rel=1e-12)  # unmerged mean
        assert s.long == (tj.mean >= GOOGLE_CUTOFF)
    assert sum(s.long for s in specs) == 905


def test_task_scale_overrides_cluster_ratio_and_can_be_disabled():
    big = [job(1, 0.0, [1.0] * 100)]
    assert build_workload(big, task_scale=0.1, nodes=1, load=1.0)[0].tasks == 10
    assert build_workload(big, nodes=20, reference_nodes=100, load=1.0)[0].tasks == 20
    assert build_workload(big, nodes=20, reference_nodes=100, scale_tasks=False, load=1.0)[0].tasks == 100
    assert build_workload(big, nodes=1, slots=5, reference_nodes=100, load=1.0)[0].tasks == 5


def test_class_uses_original_trace_mean_not_scaled_or_merged_durations():
    # Mean 1200 s is long and mean 1000 s is short, whatever the time scale and task merging do.
    tj = [job(1, 0.0, [1200.0, 1200.0]), job(2, 1.0, [1000.0] * 10)]
    specs = build_workload(tj, time_scale=1000, task_scale=0.1, nodes=1, keep_arrivals=True)
    assert specs[0].long and specs[0].durations == [2.4]
    assert not specs[1].long and specs[1].durations == [10.0]  # one merged task of 10,000 trace seconds
    assert build_workload(tj, cutoff=1000.0, keep_arrivals=True)[1].long


# --- sampling -----------------------------------------------------------------------------------------


def test_consecutive_sample_is_seeded_and_reproducible():
    a = build_workload(SMALL, jobs=5, seed=1, load=0.5)
    b = build_workload(SMALL, jobs=5, seed=1, load=0.5)
    assert a == b
    lines = [s.line for s in a]
    assert lines == list(range(lines[0], lines[0] + 5))
    assert [s.job_id for s in a] == list(range(5))
    starts = {build_workload(SMALL, jobs=5, seed=seed, load=0.5)[0].line for seed in range(20)}
    assert len(starts) > 3
    assert [s.line for s in build_workload(SMALL, jobs=3, start=4, load=0.5)] == [5, 6, 7]
    assert [s.line for s in build_workload(SMALL, start=18, load=0.5)] == [19, 20]


def test_random_sample_keeps_trace_order_and_is_reproducible():
    a = build_workload(SMALL, jobs=8, sample="random", seed=7, keep_arrivals=True)
    assert a == build_workload(SMALL, jobs=8, sample="random", seed=7, keep_arrivals=True)
    lines = [s.line for s in a]
    assert lines == sorted(lines) and len(set(lines)) == 8
    samples = {
        tuple(s.line for s in build_workload(SMALL, jobs=8, sample="random", seed=seed, keep_arrivals=True))
        for seed in range(10)
    }
    assert len(samples) > 5
    assert [s.job_id for s in a] == list(range(8))


def test_sampling_does_not_depend_on_load():
    a = build_workload(SMALL, jobs=6, sample="random", seed=2, load=0.3, misestimate=(0.5, 2.0))
    b = build_workload(SMALL, jobs=6, sample="random", seed=2, load=0.9, misestimate=(0.5, 2.0))
    assert [(s.line, s.estimate) for s in a] == [(s.line, s.estimate) for s in b]


# --- arrivals -----------------------------------------------------------------------------------------


def test_keep_arrivals_shifts_to_zero_and_scales():
    specs = build_workload(SMALL, jobs=3, start=2, time_scale=10, keep_arrivals=True)
    assert [s.submit for s in specs] == [0.0, 1.0, 2.0]


def test_poisson_arrivals_give_the_offered_load(google):
    nodes, slots, rho = 100, 2, 0.7
    specs = build_workload(google, time_scale=1000, nodes=nodes, slots=slots, load=rho, seed=11)
    assert specs[0].submit == 0.0
    work = math.fsum(math.fsum(s.durations) for s in specs) / len(specs)
    expected_gap = work / (rho * nodes * slots)
    gaps = [b.submit - a.submit for a, b in itertools.pairwise(specs)]
    assert min(gaps) >= 0
    assert statistics.fmean(gaps) == pytest.approx(expected_gap, rel=0.05)  # 9,999 gaps: sd ~1 %
    assert statistics.stdev(gaps) == pytest.approx(expected_gap, rel=0.1)  # exponential: sd = mean


# --- estimates ----------------------------------------------------------------------------------------


def test_misestimate_factor_is_within_range_and_seeded():
    exact = build_workload(SMALL, seed=5, load=0.5)
    wrong = build_workload(SMALL, seed=5, load=0.5, misestimate=(0.5, 1.5))
    factors = [w.estimate / e.estimate for w, e in zip(wrong, exact, strict=True)]
    assert all(0.5 <= f <= 1.5 for f in factors)
    assert len(set(factors)) == len(factors)
    assert [w.durations for w in wrong] == [e.durations for e in exact]
    assert wrong == build_workload(SMALL, seed=5, load=0.5, misestimate=(0.5, 1.5))


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"load": 0.0}, "load must be a positive number"),
        ({"load": -1.0}, "load must be a positive number"),
        ({}, "choose an arrival process"),
        ({"load": 0.5, "keep_arrivals": True}, "not both"),
        ({"load": 0.5, "jobs": 21}, "asked for 21 jobs but the trace has only 20"),
        ({"load": 0.5, "jobs": 0}, "jobs must be at least 1"),
        ({"load": 0.5, "jobs": 5, "start": 18}, "run past the end"),
        ({"load": 0.5, "start": 20}, "outside the trace"),
        ({"load": 0.5, "sample": "every"}, "sample must be"),
        ({"load": 0.5, "sample": "random", "start": 1}, "start applies only"),
        ({"load": 0.5, "time_scale": 0}, "time_scale must be"),
        ({"load": 0.5, "task_scale": 0}, "task_scale must be"),
        ({"load": 0.5, "nodes": 0}, "nodes and slots"),
        ({"load": 0.5, "misestimate": (2.0, 1.0)}, "misestimate range"),
        ({"load": 0.5, "misestimate": (0.0, 1.0)}, "misestimate range"),
    ],
)
def test_impossible_parameters_give_one_line(kwargs, needle):
    with pytest.raises(WorkloadError) as info:
        build_workload(SMALL, **kwargs)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_empty_trace_is_an_error():
    with pytest.raises(WorkloadError, match="no jobs"):
        build_workload([], load=0.5)


# --- M/M/1 generator ----------------------------------------------------------------------------------


def test_poisson_single_task_jobs():
    specs = poisson_single_task_jobs(20_000, load=0.5, mean_duration=0.01, seed=4)
    assert specs == poisson_single_task_jobs(20_000, load=0.5, mean_duration=0.01, seed=4)
    assert specs[0].submit == 0.0 and all(s.tasks == 1 and not s.long for s in specs)
    assert [s.job_id for s in specs] == list(range(20_000))
    gaps = [b.submit - a.submit for a, b in itertools.pairwise(specs)]
    assert statistics.fmean(gaps) == pytest.approx(0.02, rel=0.03)
    assert statistics.fmean(s.durations[0] for s in specs) == pytest.approx(0.01, rel=0.03)
    assert all(s.estimate == s.durations[0] for s in specs)
    four = poisson_single_task_jobs(20_000, load=0.5, mean_duration=0.01, seed=4, slots=4)
    assert four[-1].submit == pytest.approx(specs[-1].submit / 4, rel=0.05)
    with pytest.raises(WorkloadError):
        poisson_single_task_jobs(10, load=0, mean_duration=1, seed=0)


def test_reporting_classes_use_the_reference_cutoff_whatever_cutoff_the_policy_schedules_with(tmp_path):
    from aviary.launch.flags.spec import ReplaySpec
    from aviary.launch.replay.resolve import setup_replay

    def long_jobs(**kw):
        spec = ReplaySpec(runtime="sim", policy="hawk", nodes=50, jobs=300, start=4000, out=tmp_path, **kw)
        return [j.job_id for j in setup_replay(spec).jobs if j.long]

    reference = long_jobs()
    assert reference and long_jobs(cutoff=300.0) == reference


def test_merged_tasks_keep_the_jobs_trace_mean_as_their_estimate():
    # 40 tasks of 10 s merged 20x: 2 tasks of 200 s; the job stays short and its estimate 10 s / scale.
    trace = [TraceJob(1, 0.0, [10.0] * 40, 10.0), TraceJob(2, 5.0, [2000.0] * 2, 2000.0)]
    jobs = build_workload(trace, jobs=2, start=0, time_scale=10.0, task_scale=0.05, keep_arrivals=True)
    short, long = jobs
    assert short.durations == [20.0, 20.0] and short.estimate == pytest.approx(1.0) and not short.long
    assert long.durations == [400.0] and long.estimate == pytest.approx(200.0) and long.long
