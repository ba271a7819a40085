"""No run is lost (issue 25): a replay without --out gets a folder of its own and results/latest points at
it; an --out holding another run's results is refused unless --force; result files follow the umask."""

from __future__ import annotations

import json
import os
import stat

from aviary.launch.cli.main import main

FLAGS = ["replay", "--runtime", "sim", "--nodes", "4", "--jobs", "5", "--quiet"]


def test_two_replays_with_the_defaults_keep_both_runs_and_latest_points_at_the_second(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--seed", "1"]) == 0
    assert main([*FLAGS, "--seed", "2"]) == 0
    runs = sorted(p for p in (tmp_path / "results").iterdir() if not p.is_symlink())
    assert len(runs) == 2 and all(p.name.startswith("google-sparrow-sim-") for p in runs)
    seeds = [json.loads((p / "summary.json").read_text())["extra"]["seed"] for p in runs]
    assert sorted(seeds) == [1, 2]
    latest = tmp_path / "results" / "latest"
    assert latest.is_symlink() and not os.path.isabs(os.readlink(latest))
    assert json.loads((latest / "summary.json").read_text())["extra"]["seed"] == 2


def test_an_out_holding_another_run_is_refused_in_one_line_unless_forced(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*FLAGS, "--out", str(out)]) == 0
    before = (out / "jobs.csv").read_bytes()
    capsys.readouterr()
    assert main([*FLAGS, "--seed", "3", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"aviary replay: error: --out {out}: holds another run's results (summary.json, jobs.csv); give a "
        "new folder, leave --out out for one of its own, or --force to replace them"
    ]
    assert (out / "jobs.csv").read_bytes() == before
    assert main([*FLAGS, "--seed", "3", "--out", str(out), "--force"]) == 0
    assert json.loads((out / "summary.json").read_text())["extra"]["seed"] == 3


def test_result_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        assert main([*FLAGS, "--out", str(tmp_path / "run")]) == 0
    finally:
        os.umask(old)
    for name in ("jobs.csv", "summary.json"):
        assert stat.S_IMODE((tmp_path / "run" / name).stat().st_mode) == 0o644
