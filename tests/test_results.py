"""Results files: percentiles, jobs.csv and summary.json round trip, agree, and are written atomically."""

import json
from dataclasses import replace

import pytest
from rich.console import Console

from aviary.common.results import (
    JOBS_HEADER,
    JobRecord,
    ResultsError,
    format_summary_table,
    jct_stats,
    percentile,
    read_jobs,
    read_summary,
    write_results,
)


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
    assert lines[0] == ",".join(JOBS_HEADER) == "job_id,class,tasks,submit,first_start,finish,jct,policy"
    assert lines[1] == "0,long,1,0.000000,0.100000,1.000000,1.000000,sparrow"
    assert lines[21] == "20,short,2,10.000000,,,,sparrow"
    assert lines[22] == "21,long,1,10.500000,11.000000,,,sparrow"


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
    with pytest.raises(ResultsError, match=r"jobs\.csv:2: field 'submit': not a number"):
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
    assert "messages/task" in text and "steals 2" in text
