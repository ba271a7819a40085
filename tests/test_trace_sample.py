"""``aviary trace sample``: time window, priority band, class, size; seeded; the header says how."""

from __future__ import annotations

from pathlib import Path

import pytest

from aviary.common.trace import format_job, read_trace
from aviary.launch.cli.main import main


def test_filters_and_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.tr"
    src.write_text(
        "".join(
            f"{t} {n} 5 {' '.join(['5'] * n)} prio={t % 12} class={t % 4}\n"
            for t in range(200)
            for n in (1, 3)
        )
        + "300 2 1 1 1\n"
    )
    out = tmp_path / "s.tr"
    argv = ["trace", "sample", str(src), "--out", str(out), "--from", "10", "--until", "100"]
    assert main([*argv, "--priority", "2:5", "--class", "1,2", "--min-tasks", "2"]) == 0
    got = read_trace(out)
    assert got and all(
        10 <= j.submit < 100 and 2 <= (j.priority or 0) <= 5 and j.sched_class in (1, 2) for j in got
    )
    assert all(j.tasks == 3 for j in got)
    assert "# sampled: aviary trace sample" in out.read_text().splitlines()[1]
    assert main([*argv, "--fraction", "0.3", "--seed", "4"]) == 0
    first = [format_job(j) for j in read_trace(out)]
    assert main([*argv, "--fraction", "0.3", "--seed", "4"]) == 0
    assert [format_job(j) for j in read_trace(out)] == first and 20 < len(first) < 90
    assert main(["trace", "sample", str(src), "--out", str(out), "--priority", "0:11"]) == 0
    assert len(read_trace(out)) == 400  # the job without prio= fails a priority filter
    assert main(["trace", "sample", str(src), "--out", str(out), "--priority", "5:2"]) == 2
    assert capsys.readouterr().err.strip().endswith("argument --priority: LO must be <= HI, got '5:2'")
