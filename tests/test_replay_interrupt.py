"""Never lose a run: SIGINT or SIGTERM during a replay (real processes or the simulator) stops it cleanly
and still writes jobs.csv and summary.json for what finished, marked as interrupted, with the jobs left
listed; the command exits 130 (SIGINT) or 143 (SIGTERM) and leaves no process behind."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from aviary.launch.flags.spec import ReplaySpec
from aviary.launch.replay.progress import StopSignals
from aviary.launch.replay.resolve import setup_replay
from aviary.launch.replay.run import run_replay


def check_partial(out: Path, reason: str) -> dict:
    """The results of an interrupted replay: valid, marked, the unfinished jobs listed."""
    summary = json.loads((out / "summary.json").read_text())
    rows = list(csv.DictReader(line for line in (out / "jobs.csv").open() if not line.startswith("#")))
    assert summary["extra"]["interrupted"] is True and summary["extra"]["interrupted_by"] == reason
    assert any(p.startswith(f"interrupted by {reason}") for p in summary["extra"]["problems"])
    assert len(rows) == summary["jobs"]
    finish = next(k for k in rows[0] if k.startswith("finish"))  # finish, or with its unit
    finished = [r for r in rows if r[finish]]
    assert summary["finished"] == len(finished) < summary["jobs"]
    assert summary["unfinished_count"] == summary["jobs"] - summary["finished"]
    unfinished = {int(r["job_id"]) for r in rows if not r[finish]}
    assert set(summary["unfinished"]) <= unfinished and summary["unfinished"]
    return summary


def processes_of(out: Path) -> list[psutil.Process]:
    """Live processes whose command line names a file under ``out`` (the testbed's)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(out) in part for part in p.info["cmdline"] or ()):
                found.append(p)
        except psutil.Error:
            pass
    return found


@pytest.mark.integration
@pytest.mark.parametrize(
    ("sig", "status"),
    # SIGTERM's real twin is slow: its handler is the simulated replay's (tested below), its real run SIGINT's
    [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow)],
)
def test_a_signal_during_a_real_replay_keeps_what_finished(tmp_path, sig, status):
    out = tmp_path / "run"
    flags = ["--jobs", "100", "--nodes", "4", "--slots", "2", "--duration", "30s", "--quiet"]
    replay = subprocess.Popen(
        [sys.executable, "-m", "aviary.launch.cli", "replay", *flags, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        cluster = out / "testbed" / "cluster.toml"
        deadline = time.monotonic() + 60
        while not cluster.exists() and replay.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert replay.poll() is None, replay.communicate()[0]
        time.sleep(6)  # the processes register (a few seconds), then jobs run
        replay.send_signal(sig)
        output, _ = replay.communicate(timeout=60)
    finally:
        if replay.poll() is None:
            replay.kill()
            replay.communicate()
    assert replay.returncode == status, output
    assert "Traceback" not in output
    assert f"interrupted by {sig.name}: partial results" in output
    summary = check_partial(out, sig.name)
    assert summary["jobs"] == 100 and summary["runtime"] == "real"
    assert summary["counters"].get("tasks_launched", 0) >= summary["counters"].get("tasks_finished", 0)
    left = processes_of(out)
    for p in left:
        p.kill()
    assert not left, [p.info["cmdline"] for p in left]


@pytest.mark.parametrize(
    ("sig", "raised"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, SystemExit)]
)
def test_a_signal_during_a_simulated_replay_keeps_what_finished(tmp_path, sig, raised):
    spec = ReplaySpec(runtime="sim", nodes=5000, keep_arrivals=True, out=tmp_path / "sim")
    setup = setup_replay(spec)  # the whole sample: about a minute of simulation
    timer = threading.Timer(1.0, os.kill, (os.getpid(), sig))
    previous = {s: signal.getsignal(s) for s in StopSignals.SIGNALS}
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(raised) as caught:
            run_replay(setup, quiet=True)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20  # it stopped, it did not run to the end
    if raised is SystemExit:
        assert caught.value.code == 143  # type: ignore[union-attr]
    assert {s: signal.getsignal(s) for s in StopSignals.SIGNALS} == previous  # handlers restored
    summary = check_partial(tmp_path / "sim", sig.name)
    assert summary["jobs"] == 10000 and summary["extra"]["virtual_seconds"] > 0


def test_a_second_signal_stops_at_once():
    before = signal.getsignal(signal.SIGINT)  # not always Python's default: an earlier event loop may own it
    with StopSignals(raise_first=False) as stop:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stop.reason == "SIGINT"  # recorded, nothing raised: the replay ends in order
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
    assert signal.getsignal(signal.SIGINT) is before
