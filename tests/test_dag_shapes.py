"""DAG shape statistics and the TPC-DS-like generator against Carbyne §2.2 Tables 1 and 2."""

import math
import random
import statistics

import pytest

from aviary.common.dag_shapes import (
    GB_MAX,
    GB_MIN,
    INPUT_WORK_TABLE1,
    MAX_STAGE_TASKS,
    TPCDS_TABLE1,
    WORK_PER_GB,
    DagShape,
    dag_statistics,
    input_work,
    percentile,
    shape_percentiles,
    tpcds_like_jobs,
)
from aviary.common.dags import DagTraceJob, DagTraceStage, read_tpch
from aviary.common.workload import WorkloadError

P95_TOLERANCE = {"stages": 2, "barriers": 1, "critical_path": 1, "disjoint_paths": 2}
"""The stated tolerance over 2,000 jobs: every median exact, every p95 within ±10 % of the table's
(at least ±1): what the module docstring of ``dag_shapes`` promises."""


def shapes(jobs: list[DagTraceJob]) -> list[DagShape]:
    return [dag_statistics([s.parents for s in j.stages]) for j in jobs]


# --- statistics on hand-drawn DAGs --------------------------------------------------------------------


def test_a_chain():
    # 0 -> 1 -> 2 -> 3: no barrier, the whole chain is the critical path and one path.
    assert dag_statistics([[], [0], [1], [2]]) == DagShape(4, 0, 4, 1)


def test_a_diamond():
    # 0 -> {1, 2} -> 3: stage 3 is a barrier; two sequences (0 1 3 and 2) run in parallel.
    assert dag_statistics([[], [0], [0], [1, 2]]) == DagShape(4, 1, 3, 2)


def test_an_in_tree_of_joins():
    # Four scans 0-3, joins 4 = 0 x 1 and 5 = 2 x 3, join 6 = 4 x 5, aggregation 7 = f(6).
    # Barriers 4, 5, 6; longest path 0 4 6 7; one path per scan.
    assert dag_statistics([[], [], [], [], [0, 1], [2, 3], [4, 5], [6]]) == DagShape(8, 3, 4, 4)


def test_an_out_tree():
    # 0 -> {1, 2}, 1 -> {3, 4}, 2 -> 5: no barrier, depth 3, one path per leaf (0 1 3, 4, 2 5).
    assert dag_statistics([[], [0], [0], [1], [1], [2]]) == DagShape(6, 0, 3, 3)


def test_a_fork_next_to_a_join_shares_a_path():
    # Spine 0 -> 1 -> 2 -> 3, branch 4 joins 2, fork 5 leaves 1: not three paths, since the two
    # sequences 0 1 5 and 4 2 3 cover every stage.
    assert dag_statistics([[], [0], [1, 4], [2], [], [1]]).disjoint_paths == 2


def test_small_and_unordered_dags():
    assert dag_statistics([]) == DagShape(0, 0, 0, 0)
    assert dag_statistics([[]]) == DagShape(1, 0, 1, 1)
    assert dag_statistics([[], []]) == DagShape(2, 0, 1, 2)
    # Any order, duplicates ignored: 1 -> 0 -> 2, and 2 also after 1.
    assert dag_statistics([[1], [], [0, 1, 0]]) == DagShape(3, 1, 3, 1)


@pytest.mark.parametrize(
    ("parents", "match"),
    [([[], [5]], "parent 5"), ([[0]], "parent 0"), ([[1], [0]], "cycle"), ([[], [-1]], "parent -1")],
)
def test_bad_dags_raise_one_line(parents, match):
    with pytest.raises(ValueError, match=match) as info:
        dag_statistics(parents)
    assert "\n" not in str(info.value)


def test_input_work_and_percentile_by_hand():
    job = DagTraceJob("j", (DagTraceStage(10, 2.0), DagTraceStage(1, 5.0), DagTraceStage(4, 10.0, (0, 1))))
    assert input_work(job) == pytest.approx(25 / 65)
    assert percentile([3, 1, 2, 4], 0.5) == 2 and percentile(range(1, 101), 0.95) == 95
    assert percentile([7], 0.95) == 7
    with pytest.raises(ValueError):
        percentile([], 0.5)


# --- the generator ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated() -> list[DagTraceJob]:
    return tpcds_like_jobs(random.Random(2016), 2000)


def test_generated_statistics_match_carbyne_table1(generated):
    got = shape_percentiles(shapes(generated))
    for name, (median, p95) in TPCDS_TABLE1.items():
        assert got[name][0] == median, (name, got[name])
        assert abs(got[name][1] - p95) <= P95_TOLERANCE[name], (name, got[name])
    work = [input_work(j) for j in generated]
    assert percentile(work, 0.5) == pytest.approx(INPUT_WORK_TABLE1[0], abs=0.03)
    assert percentile(work, 0.95) == pytest.approx(INPUT_WORK_TABLE1[1], abs=0.05)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_tolerance_holds_for_other_seeds(seed):
    got = shape_percentiles(shapes(tpcds_like_jobs(random.Random(seed), 2000)))
    for name, (median, p95) in TPCDS_TABLE1.items():
        assert got[name][0] == median and abs(got[name][1] - p95) <= P95_TOLERANCE[name], (name, got)


def test_generated_dags_are_valid(generated):
    for j in generated:
        assert j.stages and j.submit is None
        roots_done = False
        for i, s in enumerate(j.stages):
            assert list(s.parents) == sorted(set(s.parents)) and all(0 <= p < i for p in s.parents)
            assert 1 <= s.tasks <= MAX_STAGE_TASKS
            assert s.mean > 0 and math.isfinite(s.mean)
            roots_done = roots_done or bool(s.parents)
            assert bool(s.parents) or not roots_done  # the roots come first
        # Connected: every stage reaches the last one or is reached from the first (one DAG, not two).
        linked = {0}
        for _ in j.stages:
            for i, s in enumerate(j.stages):
                if i in linked or linked & set(s.parents):
                    linked |= {i, *s.parents}
        assert linked == set(range(len(j.stages)))
    assert [j.line for j in generated] == list(range(1, 2001))
    assert len({j.name for j in generated}) == 2000


def test_generated_work_and_durations_are_tpc_like(generated):
    work = [j.task_seconds for j in generated]
    assert all(WORK_PER_GB * GB_MIN * 0.999 <= w <= WORK_PER_GB * GB_MAX * 1.001 for w in work)
    # Log-uniform input size: the median job is the geometric mean of the range (100 GB).
    assert statistics.median(work) == pytest.approx(WORK_PER_GB * math.sqrt(GB_MIN * GB_MAX), rel=0.1)
    means = [s.mean for j in generated for s in j.stages]
    assert 6.0 <= statistics.median(means) <= 10.0  # TPC-H 250 GB input stages: 8.47 s
    assert percentile(means, 0.95) < 60.0
    tasks = [j.tasks for j in generated]
    assert 1000 <= statistics.median(tasks) <= 2500  # TPC-H 250 GB: median 1,997 tasks per query


def test_the_constants_follow_the_measured_tpch_profiles():
    big = read_tpch(profile="250g_maxCores_100").values()
    roots = [s.mean for j in big for s in j.stages if not s.parents]
    assert statistics.median(roots) == pytest.approx(8.47, abs=0.01)
    per_gb = statistics.median(j.task_seconds for j in big) / 250
    assert per_gb == pytest.approx(WORK_PER_GB, rel=0.1)
    assert max(s.tasks for j in read_tpch(profile="500g_maxCores_200").values() for s in j.stages) == 3013


def test_deterministic_for_a_seed():
    a = tpcds_like_jobs(random.Random(7), 50)
    assert a == tpcds_like_jobs(random.Random(7), 50)
    assert a != tpcds_like_jobs(random.Random(8), 50)
    rng = random.Random(7)  # the stream continues: two calls draw what one call does
    assert [j.stages for j in tpcds_like_jobs(rng, 20) + tpcds_like_jobs(rng, 30)] == [j.stages for j in a]
    assert tpcds_like_jobs(random.Random(7), 0) == []


@pytest.mark.parametrize("count", [-1, 2.5, True, "3"])
def test_bad_count_raises_one_line(count):
    with pytest.raises(WorkloadError, match="count must be an integer >= 0"):
        tpcds_like_jobs(random.Random(0), count)
