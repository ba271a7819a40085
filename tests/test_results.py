"""Results files: percentiles, jobs.csv and summary.json round trip, agree, and are written atomically."""

import itertools
import json
from dataclasses import replace

import pytest
from rich.console import Console

from aviary.common.resources import ONE_CORE, Resources
from aviary.common.results import (
    JOBS_HEADER,
    OLD_JOBS_HEADER,
    JobRecord,
    ResultsError,
    format_summary_table,
    jct_stats,
    jobs_rows,
    percentile,
    read_jobs,
    read_summary,
    write_results,
)
from aviary.common.usage import TaskRecord, fairness_over_windows, jain_index, utilization_by_resource


def test_percentile_is_linear_interpolation():
    xs = [1.0, 2.0, 3.0, 4.0]
    assert percentile(xs, 0.0) == 1.0 and percentile(xs, 1.0) == 4.0
    assert percentile(xs, 0.5) == 2.5
    assert percentile(xs, 0.9) == pytest.approx(3.7)
    assert percentile([5.0], 0.99) == 5.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_percentile_agrees_with_numpy_default():
    np = pytest.importorskip("numpy")
    import random

    rng = random.Random(1)
    for n in (1, 2, 7, 100, 1001):
        xs = sorted(rng.expovariate(1.0) for _ in range(n))
        for q in (0.5, 0.9, 0.99):
            assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, 100 * q)), rel=1e-12)


def test_jct_stats_of_nothing_is_none():
    assert jct_stats([]) == {"p50": None, "p90": None, "p99": None, "mean": None, "count": 0}


def records() -> list[JobRecord]:
    recs = [
        JobRecord(job_id=i, cls="long" if i % 4 == 0 else "short", tasks=1 + i % 3, submit=0.5 * i,
                  first_start=0.5 * i + 0.1, finish=0.5 * i + 1.0 + (i % 5))
        for i in range(20)
    ]  # fmt: skip
    recs.append(JobRecord(job_id=20, cls="short", tasks=2, submit=10.0))  # never started
    recs.append(JobRecord(job_id=21, cls="long", tasks=1, submit=10.5, first_start=11.0))  # never finished
    return recs[::-1]  # written sorted by id whatever the order given


def write(out, recs=None, **kw):
    args = {
        "policy": "sparrow",
        "runtime": "sim",
        "nodes": 4,
        "slots": 2,
        "wall_seconds": 1.25,
        "task_seconds": 30.0,
        "messages": {"Probe": 40, "AssignTask": 20, "GetTask": 30},
        "counters": {"steals": 2, "preemptions": 0},
        "extra": {"seed": 0},
    }
    args.update(kw)
    return write_results(out, records() if recs is None else recs, **args)


def test_files_round_trip_and_agree(tmp_path):
    out = tmp_path / "run"
    summary = write(out)
    assert read_summary(out) == summary
    rows = read_jobs(out)
    assert [r.job_id for r in rows] == list(range(22))
    assert rows == [replace(r, policy="sparrow") for r in sorted(records(), key=lambda r: r.job_id)]
    assert summary["jobs"] == len(rows) == 22
    assert summary["tasks"] == sum(r.tasks for r in rows)
    assert summary["finished"] == sum(r.finish is not None for r in rows) == 20
    assert summary["unfinished"] == [20, 21] and summary["unfinished_count"] == 2
    for cls in ("short", "long"):
        assert summary["jct"][cls]["count"] == sum(r.cls == cls and r.jct is not None for r in rows)
    assert summary["jct"]["all"]["count"] == 20
    jcts = sorted(r.jct for r in rows if r.jct is not None)
    assert summary["jct"]["all"]["p50"] == pytest.approx(percentile(jcts, 0.5))
    assert summary["jct"]["all"]["mean"] == pytest.approx(sum(jcts) / len(jcts))
    assert summary["makespan"] == pytest.approx(9.5 + 1.0 + 4)  # job 19: submit 9.5, +1, +19 % 5
    assert summary["utilization"] == pytest.approx(30.0 / (4 * 2 * 14.5))
    assert summary["messages"] == {"AssignTask": 20, "GetTask": 30, "Probe": 40, "total": 90,
                                   "per_task": 90 / summary["tasks"]}  # fmt: skip
    assert summary["counters"] == {"preemptions": 0, "steals": 2}
    assert summary["wall_seconds"] == 1.25 and summary["extra"] == {"seed": 0}
    assert summary["policy"] == "sparrow" and summary["runtime"] == "sim"
    assert (summary["nodes"], summary["slots"]) == (4, 2)


def test_csv_format_is_fixed(tmp_path):
    write(tmp_path)
    lines = (tmp_path / "jobs.csv").read_text().splitlines()
    assert (
        lines[0]
        == ",".join(JOBS_HEADER)
        == (  # the times' unit: seconds of the replay clock
            "job_id,class,tasks,submit_replay_s,first_start_replay_s,finish_replay_s,jct_replay_s,policy"
        )
    )
    assert lines[1] == "0,long,1,0.000000,0.100000,1.000000,1.000000,sparrow"
    assert lines[21] == "20,short,2,10.000000,,,,sparrow"
    assert lines[22] == "21,long,1,10.500000,11.000000,,,sparrow"


def test_jobs_csv_written_before_the_units_were_named_still_reads(tmp_path):
    write(tmp_path / "new")
    text = (tmp_path / "new" / "jobs.csv").read_text()
    old = tmp_path / "old"
    old.mkdir()
    (old / "jobs.csv").write_text(text.replace(",".join(JOBS_HEADER), ",".join(OLD_JOBS_HEADER), 1))
    assert (
        (old / "jobs.csv").read_text().startswith("job_id,class,tasks,submit,first_start,finish,jct,policy\n")
    )
    assert read_jobs(old) == read_jobs(tmp_path / "new") and len(read_jobs(old)) == 22
    # Scripts reading the columns themselves get the short names from either header.
    rows = jobs_rows(old / "jobs.csv")
    assert rows == jobs_rows(tmp_path / "new" / "jobs.csv") and len(rows) == 22
    assert rows[0] == {"job_id": "0", "class": "long", "tasks": "1", "submit": "0.000000",
                       "first_start": "0.100000", "finish": "1.000000", "jct": "1.000000",
                       "policy": "sparrow"}  # fmt: skip
    (old / "jobs.csv").write_text("a,b\n")
    with pytest.raises(ResultsError, match=r"jobs\.csv:1: header"):
        jobs_rows(old / "jobs.csv")


def test_identical_inputs_give_identical_bytes_and_no_temp_files(tmp_path):
    write(tmp_path / "a")
    write(tmp_path / "b", messages={"GetTask": 30, "Probe": 40, "AssignTask": 20})  # other dict order
    for name in ("jobs.csv", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    write(tmp_path / "a")  # overwrite in place
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["jobs.csv", "summary.json"]
    json.loads((tmp_path / "a" / "summary.json").read_text())


def test_no_finished_jobs_and_no_task_seconds(tmp_path):
    summary = write(tmp_path, recs=[JobRecord(0, "short", 1, 0.0)], task_seconds=None, messages=None)
    assert summary["finished"] == 0 and summary["makespan"] is None and summary["utilization"] is None
    assert summary["jct"]["all"] == {"p50": None, "p90": None, "p99": None, "mean": None, "count": 0}
    assert summary["messages"] == {"total": 0, "per_task": 0.0}
    assert read_jobs(tmp_path)[0].jct is None


def test_unfinished_list_is_truncated(tmp_path):
    recs = [JobRecord(i, "short", 1, 0.0) for i in range(250)]
    summary = write(tmp_path, recs=recs)
    assert summary["unfinished"] == list(range(100)) and summary["unfinished_count"] == 250


def test_record_policy_wins_over_default(tmp_path):
    write(tmp_path, recs=[JobRecord(0, "short", 1, 0.0, 0.0, 1.0, policy="hawk")])
    assert read_jobs(tmp_path)[0].policy == "hawk"


def test_bad_class_rejected():
    with pytest.raises(ValueError, match="class"):
        JobRecord(0, "medium", 1, 0.0)


def test_missing_or_bad_files_give_one_line(tmp_path):
    with pytest.raises(ResultsError, match=r"summary\.json: not found") as info:
        read_summary(tmp_path)
    assert "\n" not in str(info.value)
    with pytest.raises(ResultsError, match=r"jobs\.csv: not found"):
        read_jobs(tmp_path)
    (tmp_path / "summary.json").write_text("{oops")
    with pytest.raises(ResultsError, match=r"summary\.json:1: not valid JSON"):
        read_summary(tmp_path)
    (tmp_path / "jobs.csv").write_text(",".join(JOBS_HEADER) + "\n0,short,1,zero,,,,x\n")
    with pytest.raises(ResultsError, match=r"jobs\.csv:2: field 'submit_replay_s': not a number"):
        read_jobs(tmp_path)
    (tmp_path / "jobs.csv").write_text(",".join(OLD_JOBS_HEADER) + "\n0,short,1,,,,,x\n")
    with pytest.raises(ResultsError, match=r"jobs\.csv:2: field 'submit': missing"):
        read_jobs(tmp_path)
    (tmp_path / "jobs.csv").write_text("a,b\n")
    with pytest.raises(ResultsError, match=r"jobs\.csv:1: header"):
        read_jobs(tmp_path)


def test_summary_table_renders(tmp_path):
    summary = write(tmp_path, recs=[r for r in records() if r.cls == "short"])
    console = Console(record=True, width=140)
    console.print(format_summary_table(summary))
    text = console.export_text()
    assert "sparrow (sim, 4 nodes x 2 slots)" in text
    assert "short" in text and "long" in text and "n/a" in text  # no long jobs
    assert "messages/task" in text and "steals\u00a02" in text  # a counter's name and value never part

    # Units: the times are replay seconds, and the caption says what one is in trace seconds.
    def words(summary) -> str:
        console = Console(record=True, width=140)
        console.print(format_summary_table(summary))
        return " ".join(console.export_text().split())  # the caption wraps

    text = words(summary)
    assert "job completion time in replay s" in text and "makespan 14.0 replay s" in text
    assert "wall clock 1.2 s" in text and "time scale not recorded" in text  # extra has no time_scale
    for scale, note in ((1000.0, "replay s = trace s / 1,000 (time scale)"), (1.0, "replay s = trace s")):
        assert note in words({**summary, "extra": {"time_scale": scale}})
    assert "replay s = trace s / 50 (time scale)" in words({**summary, "workload": {"time_scale": 50.0}})


# --- multi-resource usage: utilization per resource, Jain's index, fairness over windows -------------

CAP = Resources(cores=10.0, mem=10.0)


def test_utilization_by_resource_by_hand():
    cap = Resources(cores=4.0, mem=8.0, disk=1.0)  # no net: skipped
    tasks = [
        TaskRecord(1, 0.0, 10.0, Resources(2.0, 4.0, 0.5)),
        TaskRecord(2, 5.0, 10.0, Resources(cores=1.0)),
    ]
    util = utilization_by_resource(tasks, cap, 10.0)
    assert util == pytest.approx({"cores": 25 / 40, "mem": 40 / 80, "disk": 5 / 10})
    assert list(util) == ["cores", "mem", "disk"]
    assert utilization_by_resource(tasks[::-1], cap, 10.0) == util
    assert utilization_by_resource([], cap, 10.0) == {"cores": 0.0, "mem": 0.0, "disk": 0.0}
    with pytest.raises(ValueError, match="span"):
        utilization_by_resource(tasks, cap, 0.0)
    with pytest.raises(ValueError, match="interval"):
        utilization_by_resource([TaskRecord(1, 2.0, 1.0, ONE_CORE)], cap, 10.0)


def test_jain_textbook_values():
    assert jain_index([3.0, 3.0, 3.0]) == 1.0
    assert jain_index([0.1] * 7) == 1.0  # no float residue above or below 1
    assert jain_index([5.0, 0.0, 0.0, 0.0]) == pytest.approx(1 / 4)  # one of n gets everything
    assert jain_index([1.0, 2.0, 3.0]) == pytest.approx(36 / 42)
    assert jain_index([2.0]) == 1.0
    assert jain_index([]) == 1.0 and jain_index([0.0, 0.0]) == 1.0  # defined: nobody gets less
    with pytest.raises(ValueError):
        jain_index([1.0, -1.0])


def test_fairness_equal_shares_is_one():
    tasks = [TaskRecord(j, 0.0, 120.0, Resources(cores=2.0)) for j in (1, 2)]
    assert fairness_over_windows(tasks, CAP, 60.0) == {"windows": 2, "mean": 1.0, "min": 1.0, "max": 1.0}


def test_fairness_known_values():
    # Window [0, 60): 6 cores against 2 cores -> x = 0.6, 0.2 -> Jain 0.64 / (2 * 0.4) = 0.8.
    # Window [60, 120): 3 cores each -> 1.0.
    tasks = [
        TaskRecord(1, 0.0, 60.0, Resources(cores=6.0)),
        TaskRecord(2, 0.0, 60.0, Resources(cores=2.0)),
        TaskRecord(1, 60.0, 120.0, Resources(cores=3.0)),
        TaskRecord(2, 60.0, 120.0, Resources(cores=3.0)),
    ]
    got = fairness_over_windows(tasks, CAP, 60.0)
    assert got["windows"] == 2 and got["min"] == pytest.approx(0.8) and got["max"] == 1.0
    assert got["mean"] == pytest.approx(0.9)


def test_fairness_uses_time_averaged_dominant_share():
    # Job 1: two 3-core tasks for half the window (average 3 cores = 0.3); job 2: 1 core and 3 GB
    # for the whole window (dominant share: memory, 0.3). Equal -> 1.0.
    tasks = [
        TaskRecord(1, 0.0, 30.0, Resources(cores=3.0)),
        TaskRecord(1, 0.0, 30.0, Resources(cores=3.0)),
        TaskRecord(2, 0.0, 60.0, Resources(cores=1.0, mem=3.0)),
    ]
    assert fairness_over_windows(tasks, CAP, 60.0)["mean"] == pytest.approx(1.0)
    # A third job waiting through the window (active, nothing running) counts with 0:
    # (0.3 + 0.3 + 0)^2 / (3 * 0.18) = 2/3.
    active = {1: (0.0, 30.0), 2: (0.0, 60.0), 3: (0.0, 60.0)}
    got = fairness_over_windows(tasks, CAP, 60.0, active)
    assert got["windows"] == 1 and got["mean"] == pytest.approx(2 / 3)


def test_fairness_skips_windows_with_one_job_and_handles_no_tasks():
    tasks = [
        TaskRecord(1, 0.0, 100.0, Resources(cores=5.0)),  # alone in [60, 120) and [120, 180)
        TaskRecord(2, 0.0, 50.0, Resources(cores=5.0)),
        TaskRecord(1, 100.0, 150.0, Resources(cores=1.0)),
    ]
    got = fairness_over_windows(tasks, CAP, 60.0)
    assert got["windows"] == 1  # [0, 60): x1 = 0.5, x2 = 5 * 50 / 600
    x1, x2 = 0.5, 250 / 600
    assert got["mean"] == pytest.approx((x1 + x2) ** 2 / (2 * (x1 * x1 + x2 * x2)))
    empty = {"windows": 0, "mean": None, "min": None, "max": None}
    assert fairness_over_windows(tasks[:1], CAP, 60.0) == empty
    assert fairness_over_windows([], CAP, 60.0) == empty
    with pytest.raises(ValueError, match="window"):
        fairness_over_windows(tasks, CAP, 0.0)


def _fairness_by_brute_force(tasks, cap, window):
    """Reference: every window cut at every event, each job's share taken at the piece's midpoint."""
    t0, t_end = min(t.start for t in tasks), max(t.end for t in tasks)
    spans = {}
    for t in tasks:
        a, f = spans.get(t.job_id, (t.start, t.end))
        spans[t.job_id] = (min(a, t.start), max(f, t.end))
    cuts = sorted({t.start for t in tasks} | {t.end for t in tasks})
    scores, w0 = [], t0
    while w0 < t_end - 1e-9:
        w1 = min(w0 + window, t_end)
        pts = sorted({w0, w1} | {c for c in cuts if w0 < c < w1})
        jobs = [j for j, (a, f) in spans.items() if a < w1 and f > w0]
        xs = []
        for j in jobs:
            integral = 0.0
            for a, b in itertools.pairwise(pts):
                mid = (a + b) / 2
                dem = Resources()
                for t in tasks:
                    if t.job_id == j and t.start <= mid < t.end:
                        dem = dem.plus(t.demand)
                integral += dem.dominant_share(cap) * (b - a)
            xs.append(integral / (w1 - w0))
        if len(xs) >= 2:
            scores.append(jain_index(xs))
        w0 += window
    return scores


def test_fairness_sweep_agrees_with_brute_force():
    import random

    rng = random.Random(7)
    cap = Resources(16.0, 64.0, 2.0, 2.0)
    for _ in range(20):
        tasks = []
        for _ in range(rng.randint(2, 40)):
            start = rng.uniform(0, 300)
            demand = Resources(rng.choice([1, 2, 4]), rng.uniform(0, 16), rng.uniform(0, 0.5), 0.0)
            tasks.append(TaskRecord(rng.randint(0, 5), start, start + rng.expovariate(1 / 40), demand))
        want = _fairness_by_brute_force(tasks, cap, 30.0)
        got = fairness_over_windows(tasks, cap, 30.0)
        assert got["windows"] == len(want)
        if want:
            assert got["mean"] == pytest.approx(sum(want) / len(want))
            assert (got["min"], got["max"]) == pytest.approx((min(want), max(want)))


def usage_log():
    log = []
    for r in records():
        if r.first_start is not None:
            end = r.finish if r.finish is not None else 14.0
            log += [TaskRecord(r.job_id, r.first_start, end, Resources(1.0, 2.0, 0.1))] * r.tasks
    return log


def test_summary_has_makespan_mean_jct_and_usage(tmp_path):
    plain = write(tmp_path / "plain")
    assert plain["mean_jct"] == plain["jct"]["all"]["mean"] is not None
    assert "resource_utilization" not in plain and "fairness" not in plain
    cap = Resources(cores=8.0, mem=32.0, disk=4.0)
    summary = write(tmp_path / "a", task_log=usage_log(), capacity_total=cap, fairness_window=5.0)
    assert read_summary(tmp_path / "a") == summary
    assert (tmp_path / "a" / "jobs.csv").read_bytes() == (tmp_path / "plain" / "jobs.csv").read_bytes()
    want = utilization_by_resource(usage_log(), cap, summary["makespan"])
    ru = summary["resource_utilization"]
    assert list(ru) == ["cores", "mem", "disk", "net"] and ru["net"] is None
    assert ru["cores"] == pytest.approx(want["cores"], abs=1e-6) and ru["mem"] == pytest.approx(want["mem"])
    fair = summary["fairness"]
    assert list(fair) == ["window", "windows", "mean", "min", "max"] and fair["window"] == 5.0
    assert fair["windows"] >= 1 and 0 < fair["min"] <= fair["mean"] <= fair["max"] <= 1.0
    # Identical inputs, the task log in another order: identical bytes.
    write(tmp_path / "b", task_log=usage_log()[::-1], capacity_total=cap, fairness_window=5.0)
    for name in ("jobs.csv", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert write(tmp_path / "c", task_log=usage_log(), capacity_total=cap)["fairness"]["window"] == 60.0
    console = Console(record=True, width=300)
    console.print(format_summary_table(summary))
    text = " ".join(console.export_text().split())
    assert "makespan 14.5 replay s" in text and "Jain's index" in text and "utilization cores" in text


def test_a_run_with_a_task_log_reports_the_busiest_resource_as_its_utilization(tmp_path):
    # One 10 s task holding half the cores and all the disk of a one-machine cluster, over a 10 s run.
    from aviary.common.resources import Resources
    from aviary.common.results import JobRecord, TaskRecord, write_results

    log = [TaskRecord(0, 0.0, 10.0, Resources(8, 16, 1.0, 0.0))]
    summary = write_results(
        tmp_path, [JobRecord(0, "short", 1, 0.0, 0.0, 10.0, "drf")], policy="drf", runtime="sim", nodes=1,
        slots=16, wall_seconds=0.0, task_seconds=10.0, task_log=log, capacity_total=Resources(16, 64, 1, 1),
    )  # fmt: skip
    assert summary["resource_utilization"] == {"cores": 0.5, "mem": 0.25, "disk": 1.0, "net": 0.0}
    assert summary["utilization"] == 1.0


def test_slo_metrics_by_hand():
    from aviary.common.results import DEADLINE_SLACK, slo_metrics

    recs = [
        JobRecord(0, "short", 2, 0.0, 0.0, 10.0),  # accepted, deadline 10: met exactly
        JobRecord(1, "short", 2, 5.0, 6.0, 20.0),  # accepted, deadline 12: missed (15)
        JobRecord(2, "short", 1, 1.0, 2.0, 4.0),  # noreserve, deadline 3 + slack: met
        JobRecord(3, "short", 1, 2.0),  # noreserve, unfinished: missed
        JobRecord(4, "long", 3, 0.0, 1.0, 6.0),  # best effort: 6
        JobRecord(5, "short", 1, 3.0, 3.0, 5.0),  # no class (best effort): 2
        JobRecord(6, "short", 1, 3.0),  # best effort, unfinished: not in the mean
    ]
    slo = {
        0: ("accepted", 10.0),
        1: ("accepted", 12.0),
        2: ("noreserve", 3.0 - DEADLINE_SLACK / 2),
        3: ("noreserve", 100.0),
        4: ("be", None),
        6: ("be", None),
    }
    got = slo_metrics(recs, slo)
    assert got == {
        "slo_jobs": {"all": 4, "accepted": 2, "no_reservation": 2},
        "slo_attainment": {"all": 0.5, "accepted": 0.5, "no_reservation": 0.5},
        "be_mean_latency": 4.0,
    }
    # Only accepted jobs: no_reservation is None; no finished best-effort job: None.
    only = slo_metrics(recs[:2] + recs[6:], {0: ("accepted", 10.0), 1: ("accepted", 20.0)})
    assert only["slo_attainment"] == {"all": 1.0, "accepted": 1.0, "no_reservation": None}
    assert only["be_mean_latency"] is None
    # No SLO job (no class, best effort only, or a class without a deadline): no metrics.
    assert slo_metrics(recs, {}) == {} == slo_metrics(recs, {4: ("be", None), 0: ("accepted", None)})


def test_summary_has_slo_metrics_only_for_workloads_with_slo_jobs(tmp_path):
    recs = [JobRecord(0, "short", 1, 0.0, 0.0, 5.0), JobRecord(1, "short", 1, 1.0, 1.0, 3.0)]
    common = {"policy": "p", "runtime": "sim", "nodes": 1, "slots": 1, "wall_seconds": 0.0}
    plain = write_results(tmp_path / "plain", recs, **common)
    assert not {"slo_attainment", "slo_jobs", "be_mean_latency"} & set(plain)
    be_only = write_results(tmp_path / "be", recs, **common, slo={0: ("be", None), 1: ("be", None)})
    assert be_only == plain
    summary = write_results(tmp_path / "slo", recs, **common, slo={0: ("noreserve", 4.0), 1: ("be", None)})
    assert summary["slo_attainment"] == {"all": 0.0, "accepted": None, "no_reservation": 0.0}
    assert summary["be_mean_latency"] == 2.0 and summary["slo_jobs"]["all"] == 1
    assert read_summary(tmp_path / "slo") == summary
    assert (tmp_path / "slo" / "jobs.csv").read_bytes() == (tmp_path / "plain" / "jobs.csv").read_bytes()
