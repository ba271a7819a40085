"""docs/plugins.md's commands, run as the page writes them: the tutorial from ``aviary policy new`` to a
compared run, and the multi-resource example replayed on the TPC-H DAGs."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "plugins.md"
BIN = Path(sys.executable).parent


def block(marker: str, language: str) -> str:
    """The fenced block of ``language`` that follows the HTML comment ``<!-- marker`` on the page."""
    found = re.search(rf"<!-- {marker}[^\n]*-->\n```{language}\n(.*?)```", PAGE.read_text(), re.S)
    assert found, f"docs/plugins.md has no {language} block after <!-- {marker} -->"
    return found.group(1)


def test_the_tutorial_runs_as_written(tmp_path):
    commands = [line for line in block("tutorial", "bash").splitlines() if line.strip()]
    assert commands[0].startswith("aviary policy new my-sched") and len(commands) == 8
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    try:
        for line in commands:
            argv = shlex.split(line)
            if argv[:3] == ["pip", "install", "-e"]:  # this machine's pip builds with the venv's setuptools
                argv = [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--no-deps",
                    "--no-build-isolation",
                    "-e",
                ]
                argv += shlex.split(line)[3:]
            run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert run.returncode == 0, (line, run.stdout[-2000:], run.stderr[-2000:])
        for name, runtime in (("my-sched", "sim"), ("sparrow", "sim"), ("my-sched-real", "real")):
            summary = json.loads((tmp_path / "results" / name / "summary.json").read_text())
            assert summary["runtime"] == runtime and summary["finished"] == summary["jobs"]
        assert (tmp_path / "report.html").stat().st_size > 10_000
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", "aviary-my-sched"], check=False)


def test_the_multiresource_example_replays_the_tpch_dags(tmp_path):
    (tmp_path / "fewest.py").write_text(block("packing-example", "python"))
    out = tmp_path / "run"
    flags = ["--policy", "fewest.py:POLICY", "--workload", "tpch", "--runtime", "sim", "--jobs", "20"]
    run = subprocess.run(
        [sys.executable, "-m", "aviary.launch.cli", "replay", *flags, "--nodes", "8", "--out", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "fewest-first" and summary["finished"] == 20
    assert summary["workload"]["policy"]["params"]["contention"] == "fluid"  # the layer's nodes
