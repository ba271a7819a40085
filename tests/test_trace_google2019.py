"""``aviary trace convert google-2019`` on events generated from the v3 schema
(``clusterdata_trace_format_v3.proto``) for jobs whose truth is known (:mod:`aviary.common.traces.fake2019`):
JSON lines and flattened CSV, gzipped or not, shuffled out of time order, give back exactly those jobs
(``after=`` their ``start_after_collection_ids``), alloc sets skipped; open jobs dropped or cut; a bad
row is one line (exit 2) or skipped and counted."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aviary.common.trace import TraceError, format_job, iter_trace
from aviary.common.traces.fake2011 import TrueJob, TrueTask, expected
from aviary.common.traces.fake2019 import event_records, random_jobs_2019, shuffled, write_csv, write_json
from aviary.common.traces.google2011 import EVICT, FAIL, KILL, LOST, WINDOW_START
from aviary.common.traces.google2019 import Counts2019, convert_2019
from aviary.common.traces.rows import BadRows
from aviary.launch.cli.main import main


def truth(jobs: list[TrueJob]) -> list[str]:
    return [format_job(expected(j)) for j in sorted(jobs, key=lambda j: (j.submit_us, j.jid))]


def converted(*inputs: Path, **kw: object) -> list[str]:
    got = convert_2019(list(inputs), **kw)  # type: ignore[arg-type]
    return [format_job(j) for j in sorted(got, key=lambda j: (j.submit, int(j.name or 0)))]


@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[TrueJob], int]:
    """300 jobs' events, shuffled, in four exports: JSON lines gzipped (INT64 as strings), JSON lines
    plain (INT64 as numbers), CSV gzipped (ids by commas) and CSV plain (ids as a JSON list)."""
    folder = tmp_path_factory.mktemp("g2019")
    rng = random.Random(11)
    jobs = list(random_jobs_2019(rng, 300))
    records = list(shuffled(event_records(jobs, rng), rng, window=10**9))
    allocs = sum(1 for is_job, r in records if is_job and r["collection_type"] == 1 and r["type"] == 0)
    q = len(records) // 4
    write_json(folder / "collection_events-000.json.gz", folder / "instance_events-000.json.gz", records[:q])
    write_json(
        folder / "collection_events-001.json",
        folder / "instance_events-001.json",
        records[q : 2 * q],
        int_strings=False,
    )
    write_csv(
        folder / "collection_events-002.csv.gz", folder / "instance_events-002.csv.gz", records[2 * q : 3 * q]
    )
    write_csv(
        folder / "collection_events-003.csv",
        folder / "instance_events-003.csv",
        records[3 * q :],
        after_as_json=True,
    )
    return folder, jobs, allocs


def test_convert_gives_back_the_true_jobs_in_submit_order(
    cell: tuple[Path, list[TrueJob], int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, jobs, allocs = cell
    assert allocs > 0 and any(j.after for j in jobs)
    out = tmp_path / "g.tr"
    argv = [
        "trace",
        "convert",
        "google-2019",
        str(folder),
        "--out",
        str(out),
        "--quiet",
        "--sort-buffer",
        "97",
    ]
    assert main(argv) == 0
    got = [format_job(j) for j in iter_trace(out)]
    # in submit order (ties: any order), and exactly the true jobs
    assert [j.submit for j in iter_trace(out)] == sorted(j.submit for j in iter_trace(out))
    assert sorted(got) == sorted(truth(jobs))
    text = capsys.readouterr().out
    assert "300 jobs" in text and f"alloc sets skipped: {allocs}" in text and "sort runs" in text
    assert "# converted from Google ClusterData2019" in out.read_text().splitlines()[1]


def test_the_files_may_come_in_any_order_and_any_format(cell: tuple[Path, list[TrueJob], int]) -> None:
    folder, jobs, _ = cell
    files = sorted(folder.iterdir(), reverse=True)
    assert converted(*files, sort_buffer=13) == truth(jobs)
    counts = Counts2019()
    assert converted(folder, counts=counts) == truth(jobs)  # all in memory: no run spilled
    assert counts.sort_runs == 0 and counts.queue_enable_rows > 0 and counts.alloc_instance_rows_skipped > 0


def test_tables_are_found_by_name(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("")
    with pytest.raises(TraceError, match=r"x.json: not a collection_events or instance_events file"):
        list(convert_2019([tmp_path / "x.json"]))
    (tmp_path / "collection_events.json").write_text("")
    with pytest.raises(TraceError, match=r"no instance_events file"):
        list(convert_2019([tmp_path]))


def _rows(path: Path) -> list[str]:
    return (
        gzip.decompress(path.read_bytes()).decode() if path.name.endswith(".gz") else path.read_text()
    ).splitlines()


def _write(path: Path, rows: list[str]) -> None:
    text = "".join(r + "\n" for r in rows)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)


def test_open_jobs_are_dropped_or_cut(tmp_path: Path) -> None:
    rng = random.Random(5)
    jobs = list(random_jobs_2019(rng, 30))
    last = max(jobs, key=lambda j: j.submit_us)
    records = [
        (c, r) for c, r in event_records(jobs, rng) if not (r["collection_id"] == last.jid and r["type"] == 6)
    ]  # the last job never FINISHes, nor do its instances
    write_json(tmp_path / "collection_events.json", tmp_path / "instance_events.json", records)
    counts = Counts2019()
    got = list(convert_2019([tmp_path], counts=counts))
    assert counts.jobs_open_dropped == 1 and len(got) == len(jobs) - 1
    counts = Counts2019()
    cut = {j.name: j for j in convert_2019([tmp_path], open_jobs="cut", counts=counts)}
    assert counts.jobs_open_cut == 1 and len(cut) == len(jobs)
    job = cut[str(last.jid)]
    assert job.submit == last.submit_us / 1e6 and job.tasks == len(last.tasks)


def test_a_job_from_before_the_window_and_events_after_it(tmp_path: Path) -> None:
    end = WINDOW_START + 5_000_000
    col = [
        {"time": "0", "type": "0", "collection_id": "1", "scheduling_class": "2", "priority": "200"},
        {"time": str(end), "type": "6", "collection_id": "1"},
        {"time": str(2**63 - 1), "type": "6", "collection_id": "2"},  # after the window: not an end
        {"time": "601000000", "type": "0", "collection_id": "2", "start_after_collection_ids": ["1"]},
    ]
    inst = [
        {
            "time": "0",
            "type": "0",
            "collection_id": "1",
            "instance_index": "0",
            "resource_request": {"cpus": 0.5},
        },
        {"time": "0", "type": "3", "collection_id": "1", "instance_index": "0", "machine_id": "3"},
        {"time": str(end), "type": "6", "collection_id": "1", "instance_index": "0"},
        {"time": "601000000", "type": "0", "collection_id": "2", "instance_index": "0"},
        {"time": "601000001", "type": "3", "collection_id": "2", "instance_index": "0"},
    ]
    _write(tmp_path / "collection_events.json", [json.dumps(r) for r in col])
    _write(tmp_path / "instance_events.json", [json.dumps(r) for r in inst])
    counts = Counts2019()
    assert list(convert_2019([tmp_path], counts=counts)) == [] and counts.jobs_open_dropped == 2
    one, two = sorted(convert_2019([tmp_path], open_jobs="cut"), key=lambda j: j.submit)
    assert (one.submit, one.durations, one.cpu, one.mem, one.priority, one.sched_class) == (
        600.0,
        [5.0],
        0.5,
        None,
        200,  # the collection's priority: its instance gives none
        2,
    )
    # still running: cut at the trace's last timestamp (job 1's end)
    assert (two.submit, two.after, two.durations) == (601.0, ("1",), [3.999999])


def test_bad_row_is_one_line_or_skipped(
    cell: tuple[Path, list[TrueJob], int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _, _ = cell
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in folder.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    part = bad / "instance_events-000.json.gz"
    rows = _rows(part)
    row = json.loads(rows[2])
    row["resource_request"] = {"cpus": "lots"}
    rows[2] = json.dumps(row)
    _write(part, rows)
    out = tmp_path / "o.tr"
    assert main(["trace", "convert", "google-2019", str(bad), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"aviary trace: error: {part}:3: field 'resource_request.cpus': not a number: 'lots'"
    assert not out.exists() and not list(tmp_path.glob(".o.tr*"))
    csv_part = bad / "instance_events-003.csv"
    rows = _rows(csv_part)
    rows[4] = rows[4].replace(",", ",x", 1)  # time,type -> time,xtype
    rows.insert(7, "{not json, nor enough fields}")
    _write(csv_part, rows)
    json_part = bad / "collection_events-001.json"
    _write(json_part, [*_rows(json_part), "{not json", "[1, 2]"])
    argv = ["trace", "convert", "google-2019", str(bad), "--out", str(out), "--quiet", "--skip-bad"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "bad rows skipped: 5 (3 in 'row', 1 in 'resource_request.cpus', 1 in 'type')" in text
    with pytest.raises(TraceError, match=r"instance_events-003.csv:5: field 'type': not an integer: 'x"):
        list(convert_2019([bad / "collection_events-003.csv", csv_part], bad=BadRows()))
    _write(csv_part, ["time,type,collection_id", "1,0,1"])
    with pytest.raises(
        TraceError, match=r"instance_events-003.csv:1: field 'instance_index': not in the header"
    ):
        list(convert_2019([bad / "collection_events-003.csv", csv_part], bad=BadRows(skip=True)))


attempt = st.tuples(st.sampled_from((EVICT, FAIL, KILL, LOST)), st.integers(0, 10**7))
task = st.builds(
    TrueTask,
    duration_us=st.integers(0, 10**9),
    cpu=st.floats(0, 1).map(lambda x: round(x, 4)),
    mem=st.floats(0, 1).map(lambda x: round(x, 4)),
    priority=st.integers(0, 450),
    redo=st.lists(attempt, max_size=3).map(tuple),
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 10**7), st.lists(task, min_size=1, max_size=4), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    st.randoms(use_true_random=False),
)
def test_random_event_sequences(
    tmp_path_factory: pytest.TempPathFactory,
    drawn: list[tuple[int, list[TrueTask], bool]],
    rng: random.Random,
) -> None:
    """Any jobs (zero-length attempts and jobs submitted at one microsecond included), their events in
    any order, split between JSON lines and CSV: the true jobs come back."""
    t = WINDOW_START
    jobs: list[TrueJob] = []
    for k, (gap, tasks, waits) in enumerate(drawn):
        t += gap
        after = (jobs[-1].jid,) if waits and jobs else ()
        jobs.append(TrueJob(jid=k + 1, submit_us=t, sched_class=k % 4, tasks=tuple(tasks), after=after))
    records = list(shuffled(event_records(jobs, rng, alloc_sets=0.3), rng))
    folder = tmp_path_factory.mktemp("h")
    cut = rng.randrange(len(records) + 1)
    write_json(folder / "collection_events.json", folder / "instance_events.json", records[:cut], level=1)
    write_csv(folder / "collection_events.csv", folder / "instance_events.csv", records[cut:], level=1)
    assert converted(folder, sort_buffer=rng.randint(1, 50)) == truth(jobs)


def test_the_replay_keeps_gangs_and_submits_each_job_at_its_own_time(tmp_path: Path) -> None:
    """``gang=1`` reaches ``JobSpec.gang`` (both builders of the flat replay); ``after=`` is kept in the
    file only: a job waiting for another is submitted at its own time (docs/traces.md)."""
    from aviary.common.trace import read_trace
    from aviary.common.workload import build_workload, stream_workload

    trace = tmp_path / "t.tr"
    trace.write_text("0 2 5 5 5 gang=1 job=1\n1 1 3 3 job=2 after=1\n2 1 4 4\n")
    kw: dict[str, object] = {"keep_arrivals": True, "scale_tasks": False}
    built = build_workload(read_trace(trace), **kw)  # type: ignore[arg-type]
    streamed = list(stream_workload(trace, **kw))  # type: ignore[arg-type]
    for specs in (built, streamed):
        assert [(s.submit, s.gang) for s in specs] == [(0.0, True), (1.0, False), (2.0, False)]
