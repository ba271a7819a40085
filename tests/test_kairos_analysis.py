"""The Table 4.1 workload variants and the staged simulation of ``experiments/kairos_analysis/``."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from aviary.experiments.kairos_analysis.staged import SimJob, published_jobs, simulate
from aviary.experiments.kairos_workload import CATEGORIES, GeneratedJob, job_stages, table41_jobs


def test_uniform_arrivals_keep_categories_and_bound_gaps() -> None:
    poisson = table41_jobs(200, seed=3, mean_gap=60.0)
    uniform = table41_jobs(200, seed=3, mean_gap=60.0, arrivals="uniform")
    assert [j.category for j in uniform] == [j.category for j in poisson]
    gaps = [b.submit - a.submit for a, b in itertools.pairwise(uniform)]
    assert uniform[0].submit == 0.0
    assert all(42.0 <= g <= 78.0 for g in gaps)
    assert 57.0 < sum(gaps) / len(gaps) < 63.0
    with pytest.raises(ValueError):
        table41_jobs(10, arrivals="periodic")  # type: ignore[arg-type]


@pytest.mark.parametrize("category", CATEGORIES, ids=lambda c: c.name)
def test_job_stages_barrier_and_spread_keep_task_seconds(category) -> None:
    job = GeneratedJob(0.0, category)
    (bag,) = job_stages(job)
    assert bag == [category.task_duration] * category.tasks
    maps, reduces = job_stages(job, barrier=True)
    assert (len(maps), len(reduces)) == (category.maps, category.reduces)
    spread = job_stages(job, barrier=True, spread=0.9, rng=random.Random(7))
    flat = [d for stage in spread for d in stage]
    assert [len(s) for s in spread] == [category.maps, category.reduces]
    assert math.isclose(math.fsum(flat), category.tasks * category.task_duration, rel_tol=1e-12)
    assert len(set(flat)) == category.tasks  # every task its own duration
    assert spread == job_stages(job, barrier=True, spread=0.9, rng=random.Random(7))
    with pytest.raises(ValueError):
        job_stages(job, spread=0.5)  # no rng
    with pytest.raises(ValueError):
        job_stages(job, spread=1.0, rng=random.Random(1))


def test_reduce_stage_starts_when_the_maps_are_done() -> None:
    jobs = [SimJob(0.0, 1, [[10.0] * 3, [5.0] * 2]), SimJob(1.0, 1, [[2.0]])]
    for policy in ("fifo", "kairos"):
        run = simulate(jobs, policy)
        assert run.submitted[1] == pytest.approx(10.0, abs=0.01)  # stage 1 of job 0 (id 0 * 4 + 1)
        assert run.jct[0] == pytest.approx(15.0, abs=0.01)
        assert run.jct[1] == pytest.approx(2.0, abs=0.01)
        assert all(run.placed[t] <= run.finished[t] for t in run.finished)


def test_tie_counts() -> None:
    # 30 equal tasks on 30 idle nodes: every placement tied, none consequential (one task per node).
    run = simulate([SimJob(0.0, 1, [[5.0] * 30])], "kairos", ties=True)
    assert run.ties["placements"] == run.ties["tied"] == 30
    assert run.ties["consequential"] == 0
    # A 1-task job first: the next job's 29 first tasks fill the 29 idle nodes (no choice), its other 16
    # go to 16 of 30 nodes in different states: those 16 placements are consequential.
    run = simulate([SimJob(0.0, 1, [[100.0]]), SimJob(1.0, 1, [[5.0] * 45])], "kairos", ties=True)
    assert run.ties["placements"] == 46
    assert run.ties["consequential"] == 16


def test_published_jobs(tmp_path) -> None:
    path = tmp_path / "workload"
    path.write_text(
        "61  30   default /random100char-256mb-medium   out.medium 500 500\n"
        "56  15   default /random100char-256mb-small   out.small 0 0\n"
        "\n"
        "58  15   default /random100char-256mb-small   out.small 500 500\n"
        "70  60   default /random100char-1gb-long   out.long 1000 1000\n"
    )
    jobs, gap = published_jobs(path)
    assert [j.category for j in jobs] == [3, 1, 2, 5]
    assert [j.arrival for j in jobs] == [0.0, 56.0, 114.0, 184.0]
    assert gap == pytest.approx(184.0 / 3)
    assert jobs[3].stages == [[CATEGORIES[4].task_duration] * CATEGORIES[4].tasks]
    path.write_text("61 30 default /random100char-256mb-huge out 0 0\n")
    with pytest.raises(ValueError, match="workload:1"):
        published_jobs(path)
