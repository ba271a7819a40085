"""A replay that dies keeps what it finished: each job's record goes to the results folder's journal as
it finishes (common/journal.py), and a folder whose run never reached its end is read from it as a partial
run. Replays (simulated and real) are killed with SIGKILL at random points; every job the replay's own
progress line counted more than a second before the kill must be in the journal, and every record there
must be the job's true one."""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import psutil
import pytest

from aviary.common.journal import JOURNAL, Journal, RecordWriter, has_records, read_journal
from aviary.common.results import (
    ResultsError,
    journal_summary,
    partial_note,
    read_jobs,
    read_summary,
    rebuild_results,
    write_results,
)
from aviary.launch.flags.spec import ReplaySpec, UsageError

FINISHED = re.compile(r"([\d,]+)/([\d,]+) jobs finished")


def us(x: float | None) -> float | None:
    """Seconds to the microsecond, as jobs.csv and the journal have them."""
    return None if x is None else float(f"{x:.6f}")


GONE = 2**31 - 1
"""A process id no process has (above any pid_max): the journal's writer is dead."""


def start_line(**over: object) -> dict:
    return {
        "policy": "sparrow",
        "runtime": "sim",
        "nodes": 2,
        "slots": 1,
        "jobs": 4,
        "tasks": 6,
        "pid": GONE,
        **over,
    }


def job(job_id: int, finish: float, cls: str = "short", wall: float = 0.5) -> dict:
    return {
        "kind": "job",
        "job_id": job_id,
        "class": cls,
        "tasks": 2,
        "submit": 1.0,
        "first_start": 1.25,
        "finish": finish,
        "work": 3.0,
        "wall": wall,
    }


def write_journal(folder: Path, *records: dict, tail: bytes = b"", pid: int = GONE) -> Path:
    """A journal as a run writes it: the start line, then ``records``, then ``tail`` (a cut line)."""
    with Journal(folder, start_line(pid=pid), sync=False) as journal:
        for r in records:
            journal.writer.write(json.dumps(r) + "\n")
    with open(journal.path, "ab") as f:
        f.write(tail)
    return journal.path


# --- the writer and the reader --------------------------------------------------------------------------


def test_the_writer_writes_on_its_clock_and_close_writes_the_rest(tmp_path):
    w = RecordWriter(tmp_path / "r.jsonl", every=0.2)
    w.write("a\n")
    w.poll()  # due at once: the first write
    assert (tmp_path / "r.jsonl").read_text() == "a\n"
    w.write("b\n")
    w.poll()  # not yet due: buffered
    assert (tmp_path / "r.jsonl").read_text() == "a\n"
    time.sleep(0.25)
    w.poll()
    assert (tmp_path / "r.jsonl").read_text() == "a\nb\n"
    w.write("c\n")
    w.close()
    w.close()
    assert (tmp_path / "r.jsonl").read_text() == "a\nb\nc\n" and w.written == 3 and w.error is None


def test_a_cut_last_line_is_dropped_and_reported_and_a_bad_middle_line_is_an_error(tmp_path):
    path = write_journal(tmp_path / "a", job(3, 2.0), job(1, 2.5), tail=b'{"kind":"job","job_id":2,"cla')
    j = read_journal(path.parent)
    assert [x.job_id for x in j.jobs] == [3, 1] and j.end is None
    assert j.dropped == "line 4: a partial last line of 29 bytes (dropped)"
    summary = journal_summary(path.parent)
    assert summary["finished"] == 2 and summary["jobs"] == 4 and summary["unfinished_count"] == 2
    note = partial_note(summary)
    assert note is not None and note.startswith("cut short") and "2 of 4 jobs finished" in note
    assert note.endswith("a partial last line was dropped") and "\n" not in note

    text = path.read_text().splitlines()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / JOURNAL).write_text("\n".join([text[0], "{not json", text[1]]) + "\n")
    with pytest.raises(Exception, match=r"b/journal.jsonl:2: not a journal record"):
        read_journal(tmp_path / "b")
    bad = job(5, 2.0)
    bad["finish"] = "soon"
    write_journal(tmp_path / "c", bad)
    with pytest.raises(ResultsError, match=r"c/journal.jsonl:2: field 'finish': expected int or float"):
        read_summary(tmp_path / "c")
    write_journal(tmp_path / "d", job(5, 2.0), job(5, 3.0))
    with pytest.raises(ResultsError, match=r"d/journal.jsonl:3: field 'job_id': job 5 twice"):
        read_jobs(tmp_path / "d")


def test_a_cut_run_reads_as_partial_everywhere_and_rebuilds_its_files(tmp_path):
    from aviary.api import Run, rebuild
    from aviary.launch.replay.folder import check_folder
    from aviary.launch.results.compare import load_comparison
    from aviary.launch.sweep.run import cell_done
    from aviary.launch.sweep.spec import Cell

    run = tmp_path / "cut"
    write_journal(run, job(0, 2.0, wall=0.5), job(2, 4.0, "long", wall=1.5))
    assert has_records(run) and not (run / "summary.json").exists()
    with pytest.raises(UsageError, match=r"holds another run.s results \(journal.jsonl\)"):
        check_folder(run, force=False)
    with pytest.warns(UserWarning, match="cut short .*: 2 of 4 jobs finished, the last 1.5 s into the run"):
        loaded = Run.load(run)
    assert loaded.summary["jct"]["all"]["count"] == 2 and loaded.summary["jct"]["all"]["p50"] == 2.0
    assert loaded.summary["utilization"] == pytest.approx(6.0 / (2 * 1 * 3.0))  # work / (slots x makespan)
    assert [r.job_id for r in loaded.jobs] == [0, 2] and loaded.jobs[1].jct == 3.0
    cell = Cell("cut", {}, ["--runtime", "sim"])
    assert not cell_done(run, cell)  # a sweep never takes a killed cell for done

    whole = tmp_path / "whole"
    write_results(whole, read_jobs(run), policy="sparrow", runtime="sim", nodes=2, slots=1, wall_seconds=1.0)
    comp = load_comparison([whole, run])
    assert [w for w in comp.warnings if w.startswith("cut: cut short")], comp.warnings

    rebuilt = rebuild(run)
    assert rebuilt.summary == json.loads((run / "summary.json").read_text())
    assert rebuilt.summary["extra"]["interrupted_by"] == "cut" and rebuilt.partial == partial_note(
        journal_summary(run)
    )
    assert (run / "jobs.csv").read_text().splitlines()[1:] == [
        "0,short,2,1.000000,1.250000,2.000000,1.000000,sparrow",
        "2,long,2,1.000000,1.250000,4.000000,3.000000,sparrow",
    ]
    assert not cell_done(run, cell)
    with pytest.raises(ResultsError, match="exists already"):
        rebuild_results(run)

    live = tmp_path / "live"
    write_journal(live, job(0, 2.0), pid=os.getpid())  # its writer (this process) still runs
    note = partial_note(read_summary(live))
    assert note == "still running: 1 of 4 jobs finished so far (read from its journal, journal.jsonl)"
    with pytest.raises(ResultsError, match="still running"):
        rebuild_results(live)

    empty = tmp_path / "empty"
    write_journal(empty)  # killed before any job finished: nothing to protect
    assert not has_records(empty)
    check_folder(empty, force=False)


def test_report_says_a_run_is_partial_and_rebuilds_it(tmp_path, capsys):
    from aviary.launch.results.report import write_report

    run = tmp_path / "cut"
    write_journal(run, job(0, 2.0), job(1, 3.0), tail=b'{"kind":"jo')
    page = write_report([run], tmp_path / "r.html")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"aviary report: {run}: cut short"), err
    assert "a partial last line was dropped; rebuilt jobs.csv and summary.json from it" in err[0]
    assert "partial run" in page.read_text() and (run / "summary.json").is_file()


def test_a_replay_journals_every_job_and_ends_its_journal_after_its_results(tmp_path):
    from aviary.launch.replay.resolve import setup_replay
    from aviary.launch.replay.run import run_replay

    out = tmp_path / "run"
    summary = run_replay(setup_replay(ReplaySpec(runtime="sim", jobs=40, nodes=8, out=out)), quiet=True)
    j = read_journal(out)
    assert j.end is not None and j.end["finished"] == 40 and j.dropped is None
    assert j.start["jobs"] == 40 and j.start["workload"] == summary["workload"]
    assert [r.job_id for r in read_jobs(out)] == list(range(40))  # jobs.csv: by job id, as ever
    finishes = {r.job_id: r.finish for r in read_jobs(out)}
    assert {x.job_id: x.finish for x in j.jobs} == finishes  # to the microsecond, as jobs.csv
    assert [x.finish for x in j.jobs] == sorted(x.finish for x in j.jobs)  # in the order they finished
    assert partial_note(read_summary(out)) is None


def test_a_job_line_is_json_with_the_frontend_s_exact_times_and_its_slo(tmp_path):
    from aviary.common.frontend import FrontendCore, round_robin
    from aviary.common.journal import job_line
    from aviary.common.model import JobSpec

    slo = JobSpec(1, 0.2, [1 / 3], 0.4, False, deadline=2.5, slo="accepted")
    jobs = [JobSpec(0, 0.1, [0.3, 0.7], 0.5, False), slo]
    fe = FrontendCore("fe", jobs, round_robin(["s"]))
    for job_id, finish in ((1, 0.9 + 1e-12), (0, 1.0)):
        fe.times[job_id].submit, fe.times[job_id].finish = jobs[job_id].submit, finish
        fe.finish_order.append(job_id)
    with Journal(tmp_path, start_line(jobs=2), sync=False) as journal:
        journal.note(fe)
    j = read_journal(tmp_path)
    assert [(x.job_id, x.finish, x.first_start, x.slo, x.deadline) for x in j.jobs] == [
        (1, 0.9, None, "accepted", 2.5),  # to the microsecond, as jobs.csv has it
        (0, 1.0, None, None, None),
    ]
    assert j.jobs[0].work == 0.333333 and j.jobs[1].work == 1.0
    assert json.loads(job_line(fe, 0, "0.5"))["wall"] == 0.5


# --- killed replays -------------------------------------------------------------------------------------


class Replay:
    """``aviary replay`` in a child process whose progress lines are read, each with the time it came."""

    def __init__(self, flags: list[str], out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aviary.launch.cli", "replay", *flags, "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[tuple[float, int]] = []  # (when read, jobs finished)
        self.text: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.text.append(line)
            if m := FINISHED.search(line):
                self.lines.append((time.monotonic(), int(m.group(1).replace(",", ""))))

    def wait_for(self, finished: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not (self.lines and self.lines[-1][1] >= finished):
            assert self.proc.poll() is None, "".join(self.text)
            assert time.monotonic() < deadline, "".join(self.text)
            time.sleep(0.02)

    def kill(self) -> float:
        killed = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.reader.join(timeout=10)
        return killed

    def check(self, killed: float, after: float) -> list:
        """The journal holds every job counted by a progress line read over a second before the kill
        (``after`` seconds after its first progress line counted a finished job)."""
        j = read_journal(self.out)
        assert j.end is None, "the replay ran to its end before the kill"
        counted = max((n for when, n in self.lines if when <= killed - 1.0), default=0)
        assert len(j.jobs) >= counted, (after, len(j.jobs), counted, self.lines[-5:], j.dropped)
        assert counted > 0, f"no progress line a second before the kill ({after:.2f} s after the first)"
        note = partial_note(read_summary(self.out))
        assert note is not None and note.startswith("cut short") and f"{len(j.jobs)} of " in note
        return j.jobs


KILLS = [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)]
"""Kill points per runtime: one in the default suite, more in the slow set (each a random one)."""


@pytest.mark.parametrize("kill", KILLS)
def test_a_simulated_replay_killed_at_a_random_point_keeps_every_job_it_finished(tmp_path, kill):
    from aviary.launch.drivers.sim import simulate
    from aviary.launch.replay.resolve import setup_replay

    after = random.uniform(1.2, 3.0)  # seconds after its first progress line
    flags = ["--runtime", "sim", "--nodes", "5000", "--keep-arrivals", "--progress-every", "0.1"]
    replay = Replay(flags, tmp_path / "killed")
    try:
        replay.wait_for(1, timeout=60)
        time.sleep(after)
    finally:
        killed = replay.kill()
    jobs = replay.check(killed, after)
    # The same replay in this process, to as far as the killed one got: the records are its own.
    setup = setup_replay(ReplaySpec(runtime="sim", nodes=5000, keep_arrivals=True, out=tmp_path / "ref"))

    def enough(fe, now):
        if fe.finished >= len(jobs):
            raise KeyboardInterrupt

    ref = simulate(setup.cluster, setup.jobs, progress=enough, interruptible=True).frontend
    assert [x.job_id for x in jobs] == ref.finish_order[: len(jobs)], f"killed {after:.2f} s after"
    for x in jobs:
        t, spec = ref.times[x.job_id], ref.by_id[x.job_id]
        assert (x.submit, x.first_start, x.finish) == (us(t.submit), us(t.first_start), us(t.finish)), x
        assert (x.cls, x.tasks, x.work) == (spec.cls, spec.tasks, us(math.fsum(spec.durations))), x


@pytest.mark.integration
@pytest.mark.parametrize("kill", KILLS)
def test_a_real_replay_killed_at_a_random_point_keeps_every_job_it_finished(tmp_path, kill):
    from aviary.launch.replay.provenance import workload_record
    from aviary.launch.replay.resolve import setup_replay

    after = random.uniform(1.2, 3.0)  # seconds after its first finished job
    out = tmp_path / "killed"
    spec = ReplaySpec(jobs=100, nodes=4, slots=2, duration=20.0, out=tmp_path / "ref")
    flags = ["--jobs", "100", "--nodes", "4", "--slots", "2", "--duration", "20s", "--progress-every", "0.1"]
    replay = Replay(flags, out)
    try:
        replay.wait_for(1, timeout=90)
        time.sleep(after)
    finally:
        killed = replay.kill()
    jobs = replay.check(killed, after)
    # Nothing invented: each record is a job of this workload, with times its tasks allow.
    setup = setup_replay(spec, quiet=True)
    same = json.loads(json.dumps(workload_record(setup)))
    assert read_journal(out).start["workload"]["jobs"] == same["jobs"]  # the same jobs, by their digests
    by_id = {j.job_id: j for j in setup.jobs}
    for x in jobs:
        spec_job = by_id[x.job_id]
        assert (x.cls, x.tasks, x.work) == (spec_job.cls, spec_job.tasks, us(math.fsum(spec_job.durations)))
        assert spec_job.submit - 1e-6 <= x.submit <= x.first_start <= x.finish, x
        assert x.finish - x.first_start >= max(spec_job.durations) - 0.005, x  # a task never ends early
    # The testbed's processes went away with it (they get SIGTERM when their launcher dies).
    deadline = time.monotonic() + 10
    while (left := _processes_of(out)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for p in left:
        p.kill()
    assert not left


def _processes_of(out: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(out) in part for part in p.info["cmdline"] or ()):
                found.append(p)
        except psutil.Error:
            pass
    return found


def test_no_warning_for_a_whole_run(tmp_path):
    from aviary.api import Run

    write_results(tmp_path, [], policy="p", runtime="sim", nodes=1, slots=1, wall_seconds=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Run.load(tmp_path).partial is None
