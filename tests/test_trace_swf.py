"""``aviary trace convert swf``: SWF files (18 fields, ``;`` header) whose true jobs are known give back
exactly those jobs; statuses and missing values (-1) as the format defines them; a bad line is one line."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from aviary.common.trace import TraceJob, format_job, read_trace
from aviary.common.traces.swf import SwfCounts, convert_swf
from aviary.launch.cli.main import main


def swf_line(
    number: int,
    submit: int,
    run: int,
    procs: int,
    status: int = 1,
    queue: int = -1,
    after: int = -1,
    req: bool = False,
) -> str:
    alloc = -1 if req else procs
    fields = [
        number,
        submit,
        3,
        run,
        alloc,
        -1,
        -1,
        procs,
        run * 2,
        -1,
        status,
        7,
        1,
        -1,
        queue,
        -1,
        after,
        -1,
    ]
    return " ".join(map(str, fields))


def test_known_jobs_come_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(5)
    lines, truth, t = ["; Version: 2.2", "; Computer: generated", ";"], [], 0
    for k in range(1, 201):
        t += rng.randint(0, 50)
        run, procs = rng.randint(0, 10_000), rng.choice((1, 2, 4, 16, 64))
        queue, after = rng.choice((-1, 0, 3)), (k - 1 if k > 1 and rng.random() < 0.2 else -1)
        lines.append(swf_line(k, t, run, procs, rng.choice((0, 1)), queue, after, req=rng.random() < 0.3))
        truth.append(
            TraceJob(
                0,
                t,
                [float(run)] * procs,
                run,
                sched_class=None if queue < 0 else queue,
                name=str(k),
                after=() if after < 0 else (str(after),),
                gang=procs > 1,
            )
        )
    src = tmp_path / "log.swf.gz"
    src.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    out = tmp_path / "log.tr"
    assert main(["trace", "convert", "swf", str(src), "--out", str(out), "--quiet"]) == 0
    assert [format_job(j) for j in read_trace(out)] == [format_job(j) for j in truth]
    assert "200 jobs" in capsys.readouterr().out


def test_status_and_missing_values(tmp_path: Path) -> None:
    src = tmp_path / "s.swf"
    src.write_text(
        "\n".join(
            [
                swf_line(1, 0, 100, 2, status=5),  # cancelled after running: kept
                swf_line(2, 1, 0, 2, status=5),  # cancelled before it ran: dropped
                swf_line(3, 2, -1, 2),  # no run time: dropped
                swf_line(4, 3, 10, 2, status=2),  # a partial execution line: skipped
                swf_line(5, 4, 10, -1),  # no processors at all: dropped
            ]
        )
        + "\n"
    )
    counts = SwfCounts()
    assert [j.name for j in convert_swf(src, counts=counts)] == ["1"]
    assert sum(counts.dropped.values()) == 4


def test_bad_line_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "b.swf"
    src.write_text(
        swf_line(1, 0, 10, 1) + "\n" + swf_line(2, 5, 10, 1).replace(" 10 ", " x ", 1) + "\n1 2 3\n"
    )
    out = tmp_path / "o.tr"
    assert main(["trace", "convert", "swf", str(src), "--out", str(out), "--quiet"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"aviary trace: error: {src}:2: field 'run time': not a number: 'x'"
    )
    assert main(["trace", "convert", "swf", str(src), "--out", str(out), "--quiet", "--skip-bad"]) == 0
    assert "bad rows skipped: 2" in capsys.readouterr().out
    assert len(read_trace(out)) == 1
