"""The experiment scripts (and the simulated benchmarks) run, at a tiny size, in the build a user gets
(the compiled cores where scripts/setup.sh built them, as in CI), and the ones that drive the cores
hardest once in pure Python too: a failure only one build shows (TetriSched's benchmark's once) cannot
land. Each writes to a folder of the test's own, never over the committed results. (The benchmarks
``central_policies tetrisched``, ``wire codec``, ``simulator_speed compare`` and ``agreement``, the
experiments ``eagle_tail``, ``kairos_analysis`` and the sweeps have tests of their own; the experiments
and benchmarks on real processes, docker or the wire: ``test_experiments_real_tiny.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = [
    "--workloads",
    "tpch",
    "--loads",
    "0.9",
    "--jobs",
    "4",
    "--nodes",
    "8",
    "--seeds",
    "0",
    "--workers",
    "1",
]


def experiment(name: str, *args: str, pure: bool = False) -> str:
    """``python -m aviary.experiments.NAME ARGS``'s output; ``name`` ``benchmarks.QUESTION [WHAT]``:
    ``python -m aviary.benchmarks.QUESTION [WHAT] ARGS`` (a benchmark's command as its page names it)."""
    env = {k: v for k, v in os.environ.items() if k != "AVIARY_PURE_PYTHON"}
    if pure:
        env["AVIARY_PURE_PYTHON"] = "1"
    module, *what = name.split()
    cmd = [
        sys.executable,
        "-m",
        f"aviary.{module if '.' in module else 'experiments.' + module}",
        *what,
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def rows(text: str, first: str) -> list[list[str]]:
    """The cells of the Markdown table rows that start with ``| first``."""
    return [
        [c.strip() for c in line.split("|")[1:-1]]
        for line in text.splitlines()
        if line.startswith(f"| {first}")
    ]


@pytest.mark.parametrize(
    ("name", "policies", "pure"),
    [
        ("packing_sim", ["drf", "tetris"], False),
        ("packing_sim", ["drf", "tetris"], True),
        ("carbyne_sim", ["drf", "carbyne"], False),
        ("graphene_sim", ["cs", "graphene"], False),
    ],
    ids=["packing_sim", "packing_sim-pure-python", "carbyne_sim", "graphene_sim"],
)
def test_a_dag_comparison_runs_its_cells_and_reports_each_policy(tmp_path, name, policies, pure):
    experiment(
        name, *TINY, "--policies", *policies, "--results", str(tmp_path), "--runs", str(tmp_path), pure=pure
    )
    report = (tmp_path / f"{name}.md").read_text()
    for policy in policies:  # the baseline first, its ratios 1; every job of every cell finished
        (row,) = rows(report, policy + " ")
        assert row[1] == "4/4" and float(row[2].replace(",", "")) > 0, row
    (base,) = rows(report, policies[0] + " ")
    assert base[3] == base[5] == base[7] == "1.00"
    cells = sorted(p.name for p in (tmp_path / name).iterdir())
    assert cells == sorted(f"tpch-0.9-{p}-seed0" for p in policies)  # under --runs, not the committed ones


@pytest.mark.parametrize("pure", [False, True], ids=["default-build", "pure-python"])
def test_bench_packing_times_each_policy_per_placed_task(pure):
    out = experiment(
        "benchmarks.central_policies packing", "--policies", "tetris", "carbyne", "--workloads", "tpch",
        "--nodes", "100", "--jobs", "4", pure=pure,
    )  # fmt: skip
    got = {r[4]: r for r in rows(out, "tpch")}
    assert sorted(got) == ["carbyne", "tetris"]
    assert got["tetris"][6].startswith("1.00")  # the reference divides by itself
    for row in got.values():
        assert int(row[3].replace(",", "")) > 0 and float(row[5].replace(",", "")) > 0


def test_bench_packing_refuses_a_selection_that_matches_no_cell():
    cmd = [sys.executable, "-m", "aviary.benchmarks.central_policies", "packing", "--workloads", "tpch"]
    cmd += ["--nodes", "7"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no cell matches" in done.stderr.splitlines()[-1]


@pytest.mark.parametrize("pure", [False, True], ids=["default-build", "pure-python"])
def test_bench_sim_replays_the_first_jobs_of_the_sample(pure):
    out = experiment(
        "benchmarks.simulator_speed sample", "--jobs", "30", "--nodes", "50", "--quiet", pure=pure
    )
    assert "jobs finished    30/30" in out


def test_kairos_real_on_the_simulator_alone_over_three_workload_seeds(tmp_path):
    experiment("kairos_real", "--runtimes", "sim", "--jobs", "10", "--no-sweep", "--out", str(tmp_path))
    for suffix in ("", "-s2", "-s3"):  # seed 1 keeps the names runs had before seeds
        for policy in ("fifo", "kairos", "kairos-random", "kairos-sum"):
            summary = json.loads(Path(tmp_path / f"sim-{policy}{suffix}" / "summary.json").read_text())
            assert summary["runtime"] == "sim" and summary["finished"] == summary["jobs"] == 10
    traces = [(tmp_path / f"table41{s}.tr").read_text() for s in ("", "-s2", "-s3")]
    assert len(set(traces)) == 3  # each seed draws its own jobs
    report = (tmp_path / "kairos_real.md").read_text()
    assert "## Over workload seeds 1, 2, 3" in report
    (fifo,) = rows(report.split("## Over workload seeds")[1], "FIFO (sim)")
    assert fifo[1] == "3" and fifo[4] == fifo[5] == "1.00" and fifo[-1] == "30/30"


COMMITTED = Path(__file__).resolve().parent.parent / "experiments" / "results"


def test_a_committed_report_regenerates_byte_for_byte_from_its_committed_runs(tmp_path):
    """packing_sim's report of its committed runs, written elsewhere, is the committed report (every cell
    of its default grid is committed, so nothing runs; carbyne_sim's and hawk_eagle_sim's regenerate the
    same way, in 6 and 5-30 s)."""
    experiment("packing_sim", "--workers", "1", "--results", str(tmp_path))
    assert (tmp_path / "packing_sim.md").read_text() == (COMMITTED / "packing_sim.md").read_text()


def test_thesis_regime_reports_regenerate_byte_for_byte_from_the_committed_cells(tmp_path):
    """Its cells' summary.json and derived.json are committed, so both reports come back to the digit."""
    experiment("thesis_regime", "--report-only", "--results", str(tmp_path))
    for name in ("thesis_regime.md", "kairos_regime.md"):
        assert (tmp_path / name).read_text() == (COMMITTED / name).read_text(), name


def test_kairos_sim_report_regenerates_its_ratios_from_the_committed_summaries(tmp_path):
    """The ratios, seeds and claims of kairos_sim.md come back from the committed summary.json files (the
    measurements need the runs' jobs.csv, which is not committed; the instrumented runs' measure.json is,
    so nothing runs)."""
    import shutil

    runs = COMMITTED / "kairos_sim"
    for saved in [*runs.glob("*/summary.json"), *runs.glob("*/measure.json")]:  # measure: instrumented runs
        (tmp_path / saved.parent.name).mkdir(exist_ok=True)
        shutil.copyfile(saved, tmp_path / saved.parent.name / saved.name)
    experiment("kairos_sim", "--report-only", "--out", str(tmp_path))
    got, want = ((f / "kairos_sim.md").read_text().splitlines() for f in (tmp_path, runs))
    cut = want.index("## Measurements")
    assert got[3:cut] == want[3:cut] and got[0] == want[0]  # line 3: the command, with this --out
