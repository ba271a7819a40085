"""``aviary sweep``: a grid of simulated replays, one folder per cell, resumable, locally and on Dask."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from aviary.experiments.tables import num, spread
from aviary.launch.cli.main import main
from aviary.launch.sweep.run import cell_done, dask_distributed, run_cell, write_cell
from aviary.launch.sweep.spec import load_sweep

ROOT = Path(__file__).resolve().parent.parent
PACKING = ROOT / "experiments" / "sweeps" / "packing_sim.toml"

TINY = """\
name = "tiny"
baseline = "drf"

[replay]
workload = "tpch"
tpch_mix = "50g"
jobs = 12
nodes = 6
seed = 0

[grid]
load = [0.8, "batch"]
policy = ["drf", "tetris"]
"""


def toml_text(data: dict) -> str:
    """A spec as TOML (top-level strings, then tables of scalars and lists)."""

    def value(v: object) -> str:
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v) if isinstance(v, str) else repr(v)

    lines = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for table, items in data.items():
        if isinstance(items, dict):
            lines += ["", f"[{table}]", *(f"{k} = {value(v)}" for k, v in items.items())]
    return "\n".join(lines) + "\n"


def mtimes(out: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in out.glob("*/summary.json")}


def ran(err: str) -> tuple[int, int]:
    """(cells run, already done) from the sweep's closing line."""
    found = re.search(r"^sweep \S+: (\d+) cells run, (\d+) already done", err, re.M)
    assert found, err
    return int(found.group(1)), int(found.group(2))


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny sweep run once locally on 2 workers; its folder."""
    folder = tmp_path_factory.mktemp("local")
    spec = folder / "tiny.toml"
    spec.write_text(TINY)
    assert main(["sweep", str(spec), "--out", str(folder / "out"), "--workers", "2", "--quiet"]) == 0
    return folder / "out"


def test_local_sweep_writes_a_folder_per_cell_and_the_tables(local_sweep: Path) -> None:
    names = {"drf,load=0.8", "tetris,load=0.8", "drf,load=batch", "tetris,load=batch"}
    assert {p.name for p in local_sweep.iterdir() if p.is_dir()} == names
    for name in names:
        summary = json.loads((local_sweep / name / "summary.json").read_text())
        assert summary["finished"] == summary["jobs"] == 12
        assert summary["extra"]["sweep"]["cell"] == name
        assert "--runtime" in summary["extra"]["sweep"]["flags"]
    rows = list(csv.DictReader((local_sweep / "sweep.csv").open()))
    assert [(r["load"], r["policy"]) for r in rows] == [
        ("0.8", "drf"),
        ("0.8", "tetris"),
        ("batch", "drf"),
        ("batch", "tetris"),
    ]
    assert all(float(r["mean_jct"]) > 0 and float(r["makespan"]) > 0 for r in rows)
    assert "all_p99" in rows[0] and "utilization" in rows[0]
    norm = list(csv.DictReader((local_sweep / "normalized.csv").open()))
    assert [(r["load"], r["policy"]) for r in norm] == [("0.8", "tetris"), ("batch", "tetris")]
    drf, tetris = rows[0], rows[1]
    assert float(norm[0]["mean_jct"]) == pytest.approx(float(tetris["mean_jct"]) / float(drf["mean_jct"]))
    md = (local_sweep / "sweep.md").read_text()
    assert "| load | policy |" in md and "Normalized to drf" in md
    assert (local_sweep / "normalized.png").stat().st_size > 10_000


def test_rerun_skips_done_cells_and_runs_a_missing_one(
    local_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    before = mtimes(local_sweep)
    capsys.readouterr()
    assert main(["sweep", str(spec), "--out", str(local_sweep), "--quiet"]) == 0
    assert ran(capsys.readouterr().err) == (0, 4)
    assert mtimes(local_sweep) == before
    gone = local_sweep / "tetris,load=batch"
    (gone / "summary.json").unlink()  # a cell cut short: jobs.csv without summary.json
    assert main(["sweep", str(spec), "--out", str(local_sweep), "--quiet", "--workers", "1"]) == 0
    assert ran(capsys.readouterr().err) == (1, 3)
    after = mtimes(local_sweep)
    assert {k: v for k, v in after.items() if k != gone.name} == {
        k: v for k, v in before.items() if k != gone.name
    }
    assert gone.name in after


def test_a_stale_or_interrupted_summary_is_not_done(local_sweep: Path, tmp_path: Path) -> None:
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    sweep = load_sweep(spec, local_sweep)
    cell = sweep.cells[0]
    assert cell_done(local_sweep / cell.name, cell)
    copy = tmp_path / cell.name
    copy.mkdir()
    (copy / "jobs.csv").write_text((local_sweep / cell.name / "jobs.csv").read_text())
    summary = json.loads((local_sweep / cell.name / "summary.json").read_text())
    summary["extra"]["interrupted"] = True
    (copy / "summary.json").write_text(json.dumps(summary))
    assert not cell_done(copy, cell)
    summary["extra"]["interrupted"] = False
    summary["extra"]["sweep"]["flags"] = [*cell.flags, "--nodes", "7"]  # other parameters
    (copy / "summary.json").write_text(json.dumps(summary))
    assert not cell_done(copy, cell)


def test_interrupted_sweep_resumes_with_only_the_missing_cells(tmp_path: Path) -> None:
    spec = tmp_path / "four.toml"
    spec.write_text(TINY.replace("12", "40"))  # 4 cells of ~5 s: Ctrl-C lands while the second runs
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "aviary.launch.cli",
        "sweep",
        str(spec),
        "--out",
        str(out),
        "--workers",
        "1",
    ]
    scratch = tmp_path / "scratch"  # the system's temporary folder for the sweep and its workers
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("*/summary.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    # The running cell is killed at once (its results would be dropped): the command is back within 3 s
    # (1.2 s measured on an idle machine), its scratch folders gone.
    assert time.monotonic() - sent < 3.0
    assert proc.returncode == 130, err
    assert "interrupted by SIGINT" in err
    assert list(scratch.iterdir()) == []
    sweep = load_sweep(spec, out)
    done = [c.name for c in sweep.cells if cell_done(out / c.name, c)]
    assert 1 <= len(done) < len(sweep.cells)
    # no half-done cell: every folder there holds a finished cell
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(done)
    before = mtimes(out)
    again = subprocess.run([*cmd, "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert ran(again.stderr) == (len(sweep.cells) - len(done), len(done))
    assert {k: v for k, v in mtimes(out).items() if k in done} == before
    assert all(cell_done(out / c.name, c) for c in sweep.cells)


BAD = [
    ("[replay]\nnodez = 3\n", "line 2: field 'replay.nodez': not a flag of 'aviary replay'"),
    (
        "[replay]\njobs = 10\nnodes = 0\n",
        "line 3: field 'replay.nodes': argument --nodes: must be at least 1",
    ),
    ("[grid]\npolicy = 'drf'\n", "line 2: field 'grid.policy': expected a non-empty list"),
    (
        "[grid]\npolicy = ['drf', 'nosuch']\n",
        "line 2: field 'grid.policy': argument --policy: unknown policy 'nosuch'",
    ),
    ("[replay]\nout = 'x'\n", "line 2: field 'replay.out': not in a sweep"),
    ("baseline = 'cs'\n[grid]\npolicy = ['drf']\n", "line 1: field 'baseline': 'cs' is not a value"),
    ("figure = 'f.gif'\n", "line 1: field 'figure'"),
    ("colour = 1\n", "line 1: field 'colour': not a key of a sweep spec"),
    ("[replay]\nnodes = [\n", "not valid TOML"),
    ("[replay]\nworkload = 'tpch'\n[grid]\nload = [0.8]\nbatch = [true]\n", "cell load=0.8,batch=true"),
    ("[grid]\npolicy = ['drf', 'drf']\n", "a value is listed twice"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_spec_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"aviary sweep: error: {spec}: ")
    assert message in err
    assert not (tmp_path / "out").exists()


def test_sweep_on_a_dask_cluster_gives_the_local_results(
    local_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    distributed = dask_distributed()
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    out = tmp_path / "on-dask"
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        assert main(["sweep", str(spec), "--out", str(out), "--cluster", cluster.scheduler_address]) == 0
    assert ran(capsys.readouterr().err) == (4, 0)
    cells = sorted(p.name for p in local_sweep.iterdir() if p.is_dir())
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == cells
    for name in cells:
        assert (out / name / "jobs.csv").read_bytes() == (local_sweep / name / "jobs.csv").read_bytes()
    assert (out / "normalized.csv").read_text() == (local_sweep / "normalized.csv").read_text()


def test_an_unreachable_cluster_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from aviary.launch.sweep import run as sweep

    monkeypatch.setattr(sweep, "CONNECT_TIMEOUT", "1s")  # nothing listens there: no need to wait 10 s
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--cluster", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--cluster tcp://127.0.0.1:9: cannot reach" in err


def test_the_packing_spec_is_the_packing_script(tmp_path: Path) -> None:
    """experiments/sweeps/packing_sim.toml holds experiments/packing_sim.py's grid and flags, and its cells
    (here a small version: fewer jobs and nodes, two loads, two policies) give the script's results."""
    from aviary.experiments import dag_sweep
    from aviary.experiments.packing_sim import SWEEP

    data = tomllib.loads(PACKING.read_text())
    assert data["replay"] == {"jobs": SWEEP.jobs, "nodes": SWEEP.nodes}
    assert data["grid"]["seed"] == list(SWEEP.seeds)
    assert data["grid"]["workload"] == list(SWEEP.workloads)
    assert [str(x) for x in data["grid"]["load"]] == list(SWEEP.loads)
    assert data["grid"]["policy"] == list(SWEEP.policies) and data["baseline"] == SWEEP.baseline
    data["replay"].update(jobs=15, nodes=8, tpch_mix="50g")  # one input size: small runs
    data["grid"].update(workload=["tpch"], load=[1.0, "batch"], policy=["drf", "tetris"], seed=[0])
    spec = tmp_path / "packing_small.toml"
    spec.write_text(toml_text(data))
    out = tmp_path / "sweep"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    script = dag_sweep.Sweep(
        name=str(tmp_path / "script"),  # an absolute name: the script's results go there
        title="",
        intro="",
        workloads=("tpch",),
        loads=("1.0", "batch"),
        policies=("drf", "tetris"),
        baseline="drf",
        flags=["--tpch-mix", "50g"],
        jobs=15,
        nodes=8,
    )
    rows = {r["cell"]: r for r in csv.DictReader((out / "sweep.csv").open())}
    for load in script.loads:
        for policy in script.policies:
            theirs = dag_sweep.run_one(script, ("tpch", load, policy, 0), force=False)
            cell = f"{policy},workload=tpch,load={load},seed=0"
            assert (out / cell / "jobs.csv").read_bytes() == (
                script.out / f"tpch-{load}-{policy}-seed0" / "jobs.csv"
            ).read_bytes()
            assert float(rows[cell]["mean_jct"]) == theirs["mean_jct"]
            assert float(rows[cell]["makespan"]) == theirs["makespan"]


@pytest.mark.parametrize("script", ["packing_sim", "carbyne_sim", "graphene_sim"])
def test_each_dag_script_s_spec_holds_its_grid_and_flags(script: str) -> None:
    """The specs of experiments/sweeps/ hold their scripts' grids, shared flags and baselines, so that
    `aviary sweep` runs the same cells (the packing test above runs some: same jobs.csv, byte for byte)."""
    import importlib

    sweep = importlib.import_module(f"aviary.experiments.{script}").SWEEP
    data = tomllib.loads((ROOT / "experiments" / "sweeps" / f"{script}.toml").read_text())
    flags = dict(zip(sweep.flags[::2], sweep.flags[1::2], strict=True))
    replay = {"jobs": sweep.jobs, "nodes": sweep.nodes}
    if "--capacity" in flags:
        replay["capacity"] = flags.pop("--capacity")
    assert data["replay"] == replay and not flags
    assert data["grid"]["workload"] == list(sweep.workloads)
    assert [str(x) for x in data["grid"]["load"]] == list(sweep.loads)
    assert data["grid"]["policy"] == list(sweep.policies) and data["baseline"] == sweep.baseline
    assert data["grid"]["seed"] == list(sweep.seeds)


def test_the_knob_spec_holds_packing_sim_s_knob_cells() -> None:
    """experiments/sweeps/packing_knob.toml is `packing_sim --knob`: DRF and Tetris at each fairness knob,
    TPC-H at load 1.0, the packing sweep's shared flags."""
    from aviary.experiments.packing_sim import KNOB, SWEEP

    data = tomllib.loads((ROOT / "experiments" / "sweeps" / "packing_knob.toml").read_text())
    shared = {"jobs": SWEEP.jobs, "nodes": SWEEP.nodes, "workload": "tpch", "load": 1.0}
    assert data["replay"] == shared and data["baseline"] == "drf"
    policies = ["drf", *(f"tetris:fair_fraction={f}" for f in KNOB)]
    assert data["grid"] == {"policy": policies, "seed": list(SWEEP.seeds)}


def test_dry_run_lists_the_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and all(line.startswith("to run ~") for line in lines[:4])
    assert "--policy tetris" in lines[1] and "--batch" in lines[2]
    assert lines[4].startswith("4 of 4 cells to run: about ")
    assert not (tmp_path / "o").exists()


def test_estimates_come_from_the_cells_of_the_same_setting_then_of_the_policy() -> None:
    from aviary.launch.sweep.estimate import Estimates
    from aviary.launch.sweep.spec import Cell

    def cell(policy: str, load: float, seed: int) -> Cell:
        return Cell(f"{policy},{load},{seed}", {"policy": policy, "load": load, "seed": seed}, [])

    est = Estimates()
    assert est.guess(cell("drf", 0.8, 0)) is None and est.left([cell("drf", 0.8, 0)], 2) is None
    est.record(cell("drf", 0.8, 0), 10.0)
    est.record(cell("drf", 0.8, 1), 20.0)
    est.record(cell("drf", 1.0, 0), 40.0)
    est.record(cell("tetris", 0.8, 0), 2.0)
    assert est.guess(cell("drf", 0.8, 2)) == 15.0  # the other seeds of its setting
    assert est.guess(cell("drf", 0.9, 0)) == pytest.approx(70 / 3)  # the policy's cells
    assert est.guess(cell("sjf", 0.8, 0)) == 18.0  # any cell
    assert est.left([cell("drf", 0.8, 2), cell("tetris", 0.8, 1)], 2) == pytest.approx(8.5)


def test_a_dry_run_shows_the_time_done_cells_took_and_estimates_the_rest_from_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    sweep = load_sweep(spec, tmp_path / "o")
    first = sweep.cells[0]
    write_cell(sweep.out / first.name, run_cell(first))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--dry-run", "--workers", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    took = json.loads((sweep.out / first.name / "summary.json").read_text())["wall_seconds"]
    assert lines[0].startswith(f"done    {took:>7.0f} s")
    assert lines[4].startswith("3 of 4 cells to run: about ") and "on 1 worker " in lines[4]


def test_the_spec_folder_names_the_results(tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "x.toml"
    spec.parent.mkdir()
    spec.write_text('out = "../results/x"\n' + TINY.replace('name = "tiny"\n', ""))
    sweep = load_sweep(spec)
    assert sweep.out == spec.parent / "../results/x" and sweep.name == "x"
    assert os.path.basename(load_sweep(spec, tmp_path / "o").out) == "o"


# --- the probe-based scripts' specs: small versions against the scripts' own run functions -------------

SPECS = ROOT / "experiments" / "sweeps"
SAMPLE = ["--jobs", "30", "--start", "3000"]
"""A small slice of the bundled sample with short and long jobs (the small versions' cells)."""


def small_sweep(tmp_path: Path, name: str, replay: dict, grid: dict) -> tuple[dict, Path]:
    """The spec ``experiments/sweeps/<name>.toml`` with ``replay`` and ``grid`` overriding some of its
    flags and axes (written to ``tmp_path/specs/<name>.toml``), run by ``aviary sweep`` on 2 workers into
    ``tmp_path/<name>/``; (its data, its folder)."""
    data = tomllib.loads((SPECS / f"{name}.toml").read_text())
    data["replay"].update(replay)
    data["grid"].update(grid)
    if data.get("baseline") not in data["grid"].get("policy", []):
        data.pop("baseline", None)
    spec = tmp_path / "specs" / f"{name}.toml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(toml_text(data))
    out = tmp_path / name
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    sweep = load_sweep(spec, out)
    assert all(cell_done(out / c.name, c) for c in sweep.cells)
    return data, out


def same_jobs(a: Path, b: Path) -> None:
    assert (a / "jobs.csv").read_bytes() == (b / "jobs.csv").read_bytes(), (a, b)
    assert len((a / "jobs.csv").read_text().splitlines()) > 5  # a header and some jobs


def test_the_hawk_eagle_specs_are_the_hawk_eagle_script(tmp_path: Path) -> None:
    """experiments/sweeps/hawk_eagle_sim*.toml hold hawk_eagle_sim.py's grids (default sizes, the README's
    lighter loads, its seeds; the ablations, seed 0) and flags; small versions (30 jobs of the sample, 20
    nodes) give the jobs.csv of the script's run_one, byte for byte, seed by seed."""
    from aviary.experiments import hawk_eagle_sim as he

    main_spec = tomllib.loads((SPECS / "hawk_eagle_sim.toml").read_text())
    assert main_spec["grid"]["nodes"] == list(he.NODES)
    assert main_spec["grid"]["policy"] == [he.spec_policy(p) for p in he.POLICIES]
    assert main_spec["grid"]["seed"] == list(he.SEEDS)
    assert main_spec["replay"] == {"schedulers": 10, "load": "trace"}
    light = tomllib.loads((SPECS / "hawk_eagle_sim_light.toml").read_text())
    assert light["grid"]["nodes"] == [12500, 16000, 25000] and light["replay"] == main_spec["replay"]
    assert light["grid"]["seed"] == list(he.SEEDS)
    abl = tomllib.loads((SPECS / "hawk_eagle_sim_ablations.toml").read_text())
    assert abl["grid"]["policy"] == [*he.HAWK_ABLATIONS, *he.EAGLE_ABLATIONS]
    assert abl["replay"] == {**main_spec["replay"], "seed": 0}
    small = {"jobs": 30, "start": 3000}
    _, out = small_sweep(tmp_path, "hawk_eagle_sim", small, {"nodes": [20], "seed": [0, 2]})
    _, abl_out = small_sweep(
        tmp_path,
        "hawk_eagle_sim_ablations",
        small,
        {"nodes": [20], "policy": ["hawk-nosteal", "eagle-nosss"]},
    )
    ablations = ("hawk-nosteal", "eagle-nosss")
    for policy in [*he.POLICIES, *ablations]:
        for seed in (0,) if policy in ablations else (0, 2):
            theirs = tmp_path / "script" / he.run_name(policy, 20, seed)
            he.run_one(policy, 20, theirs, SAMPLE, seed)
            cell = f"{he.spec_policy(policy).replace(':', '+')},nodes=20"
            same_jobs(abl_out / cell if policy in ablations else out / f"{cell},seed={seed}", theirs)


@pytest.fixture
def small_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Scripts' ``--from-sweep`` read the specs of ``tmp_path/specs/`` (small versions) instead of
    experiments/sweeps/."""
    from aviary.experiments import sweep_cells

    monkeypatch.setattr(sweep_cells, "SPECS", tmp_path / "specs")
    sweep_cells.sweep.cache_clear()
    sweep_cells.done_cells.cache_clear()
    yield tmp_path
    sweep_cells.sweep.cache_clear()
    sweep_cells.done_cells.cache_clear()


def test_hawk_eagle_tables_from_the_sweep_cells(small_specs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hawk_eagle_sim --from-sweep DIR` builds its tables from the sweep's cell folders
    (DIR/<spec name>/<cell>/): the ratios are those of the cells' summaries, taken within a seed, their
    median over the seeds [min, max]; a size with fewer seeds says so."""
    from aviary.experiments import hawk_eagle_sim as he

    tmp_path = root = small_specs
    monkeypatch.setattr(he, "SPECS", ("hawk_eagle_sim",))
    monkeypatch.setattr(he, "FROM_SWEEP", None)
    small_sweep(root, "hawk_eagle_sim", {"jobs": 60, "start": 3000}, {"nodes": [20, 30]})
    # size 30: seed 1 only, the others' cells missing
    for cell in (root / "hawk_eagle_sim").glob("*,nodes=30,seed=[02]"):
        (cell / "summary.json").unlink()
    assert he.main(["--from-sweep", str(root), "--nodes", "20", "30", "--results", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "hawk_eagle_sim.md").read_text()

    def run(policy: str, nodes: int, seed: int) -> dict:
        return json.loads(
            (root / "hawk_eagle_sim" / f"{policy},nodes={nodes},seed={seed}" / "summary.json").read_text()
        )

    fig25 = md.split("### Hawk normalized to Sparrow")[1].split("###")[0]
    for nodes, seeds, mark in ((20, he.SEEDS, "| 3 |"), (30, (1,), "| **1** (seed 1 only) |")):
        want = [
            run("hawk", nodes, s)["jct"]["long"]["p50"] / run("sparrow", nodes, s)["jct"]["long"]["p50"]
            for s in seeds
        ]
        row = next(ln for ln in fig25.splitlines() if ln.startswith(f"| {nodes} |"))
        assert row.split(" | ")[5] == he.over_seeds(want) and row.endswith(mark), row
    assert "[" in next(ln for ln in fig25.splitlines() if ln.startswith("| 20 |"))  # the seeds differ
    assert "from the cells of `aviary sweep" in md
    assert (tmp_path / "r" / "hawk_eagle_sim.png").stat().st_size > 10_000


def test_the_kairos_specs_are_the_kairos_script(tmp_path: Path) -> None:
    """experiments/sweeps/kairos_sim*.toml hold kairos_sim's grid, its Poisson controls (the load that
    goes with each size) and flags; small versions (its first 30 jobs, 20 nodes) give the jobs.csv of the
    script's run(), byte for byte."""
    from aviary.experiments.kairos_sim import cells as ks

    kairos = "kairos:" + ",".join(
        f"{ks.KAIROS[i][2:].replace('-', '_')}={ks.KAIROS[i + 1]}" for i in range(0, len(ks.KAIROS), 2)
    )
    variants = {kairos: ("kairos", ks.KAIROS), "eagle:schedulers=10": ("eagle", ks.BASELINE_FLAGS)}
    data = tomllib.loads((SPECS / "kairos_sim.toml").read_text())
    assert data["grid"] == {
        "nodes": [5000, 5500, 6500, 8000],
        "policy": list(variants),
        "seed": list(ks.SEEDS),
    }
    assert data["replay"] == {"load": "trace", "time_scale": 1, "task_scale": 1}
    for n in ks.CONTROL_NODES:
        control = tomllib.loads((SPECS / f"kairos_sim_poisson_{n}.toml").read_text())
        assert (
            control["replay"]["load"] == float(f"{ks.mean_load(n):.4f}") and control["replay"]["nodes"] == n
        )
        assert control["grid"] == {"policy": list(variants), "seed": list(ks.SEEDS)}
    small = {"jobs": 30, "start": 0}
    _, out = small_sweep(tmp_path, "kairos_sim", small, {"nodes": [20], "seed": [0]})
    _, poisson = small_sweep(tmp_path, "kairos_sim_poisson_8000", {**small, "nodes": 20}, {"seed": [0]})
    for value, (policy, extra) in variants.items():
        ks.run(policy, 20, tmp_path / "script", extra, 0, 30)
        same_jobs(
            out / f"{value.replace(':', '+').replace(',', '+')},nodes=20,seed=0",
            tmp_path / "script" / f"{policy}-20",
        )
        ks.run(policy, 20, tmp_path / "script", extra, 0, 30, load=ks.mean_load(8000))
        same_jobs(
            poisson / f"{value.replace(':', '+').replace(',', '+')},seed=0",
            tmp_path / "script" / f"{policy}-20-poisson",
        )


def test_the_thesis_regime_specs_are_the_thesis_regime_script(tmp_path: Path) -> None:
    """experiments/sweeps/thesis_regime_*.toml hold thesis_regime's groups of cells (every cell of
    GROUPS with each of its seeds, once) and flags; small versions (30 jobs of the sample, 20 nodes, some
    policies and seeds) give the jobs.csv of the script's run_cell, byte for byte, seed by seed. (The
    shuffled group's trace is the script's shuffled copy, not committed: its spec is checked to name that
    file; its flags are the poisson group's with that trace.)"""
    from aviary.experiments.thesis_regime import cells as tr
    from aviary.launch.sweep.spec import shown

    def arrivals(values: dict, base: dict) -> str:
        load = values.get("load", base.get("load"))
        return "trace" if load == "trace" else f"{prefix}{float(load):.2f}"

    label = {tr.spec_policy(v): v for v in tr.VARIANTS}
    cells = []
    for name in ("trace", "poisson", "shuffled", "kairos", "kairos_poisson", "table32"):
        sweep = load_sweep(SPECS / f"thesis_regime_{name}.toml")
        prefix = "shuffled" if name == "shuffled" else "load"
        if name == "shuffled":
            assert (SPECS / sweep.base["trace"]).resolve() == tr.SHUFFLED.resolve()
        for c in sweep.cells:
            nodes = int(c.values.get("nodes", sweep.base.get("nodes")))
            assert "--schedulers" in c.flags and "--time-scale" in c.flags and "--task-scale" in c.flags
            assert "seed" not in sweep.base
            cells.append(
                (label[shown(c.values["policy"])], nodes, arrivals(c.values, sweep.base), c.values["seed"])
            )
    every = [(*cell, seed) for group in tr.GROUPS.values() for cell in group for seed in tr.SEEDS]
    assert sorted(cells) == sorted(every) and len(set(cells)) == len(cells)
    small = {"jobs": 30, "start": 3000}
    small_20 = {**small, "nodes": 20}
    runs = {  # some cells of each group (thesis_regime_kairos_poisson's are Kairos variants at load 0.95)
        "trace": (
            small,
            {
                "nodes": [20],
                "policy": [tr.spec_policy(v) for v in ("hawk", "eagle", "kairos")],
                "seed": [0, 2],
            },
        ),
        "poisson": (small_20, {"load": [0.95], "policy": [tr.spec_policy("hawk-general")], "seed": [0, 1]}),
        "kairos": (
            small_20,
            {"policy": [tr.spec_policy(v) for v in ("kairos-w100", "kairos-random")], "seed": [1]},
        ),
        "table32": (small_20, {"load": [0.95], "seed": [0]}),
    }
    for name, (replay, grid) in runs.items():
        _, out = small_sweep(tmp_path, f"thesis_regime_{name}", replay, grid)
        sweep = load_sweep(tmp_path / "specs" / f"thesis_regime_{name}.toml", out)
        prefix = "load"
        for c in sweep.cells:
            lab, arr, seed = (
                label[shown(c.values["policy"])],
                arrivals(c.values, sweep.base),
                c.values["seed"],
            )
            tr.run_cell(lab, 20, arr, out=tmp_path / "script", extra=SAMPLE, seed=seed)
            same_jobs(out / c.name, tmp_path / "script" / tr.cell_name(lab, 20, arr, seed))


def test_the_tetrisched_specs_are_the_tetrisched_script(tmp_path: Path) -> None:
    """experiments/sweeps/tetrisched_sim*.toml hold tetrisched_sim.py's grid (every cell of grid(), once)
    and flags; small versions (8 jobs, some cells) give the jobs.csv of the script's run_cell, byte for
    byte."""
    from aviary.experiments import tetrisched_sim as ts
    from aviary.launch.sweep.spec import shown

    def cell_of(values: dict, base: dict) -> ts.Cell:
        both = {**base, **values}
        slack = both.get("gshet")
        return ts.Cell(
            both["policy"],
            round(float(both["misestimate"][0]) - 1, 2),
            float(both.get("plan_ahead", ts.DEFAULT_PLAN_AHEAD)),
            both["seed"],
            None if slack is None else tuple(map(float, slack.removeprefix("slack=").split(":"))),
        )

    names = ("", "_plan_ahead", "_slack")
    cells = []
    for name in names:
        sweep = load_sweep(SPECS / f"tetrisched_sim{name}.toml")
        assert {k: sweep.base[k] for k in ("workload", "nodes", "load", "jobs")} == {
            "workload": "gshet",
            "nodes": ts.NODES,
            "load": float(ts.LOAD),
            "jobs": ts.JOBS,
        }
        cells += [cell_of(c.values, sweep.base) for c in sweep.cells]
    grid = ts.grid(ts.GRID_SEEDS)
    assert sorted(map(str, cells)) == sorted(map(str, grid)) and len(set(cells)) == len(cells)
    small = {
        "": {"misestimate": [[0.5, 0.5], [1, 1]], "policy": ["tetrisched", "rayon-cs"], "seed": [0]},
        "_plan_ahead": {"plan_ahead": [24], "seed": [2]},
        "_slack": {"policy": ["tetrisched-nh"], "seed": [1]},
    }
    for name, grid in small.items():
        _, out = small_sweep(tmp_path, f"tetrisched_sim{name}", {"jobs": 8}, grid)
        sweep = load_sweep(tmp_path / "specs" / f"tetrisched_sim{name}.toml", out)
        for c in sweep.cells:
            cell = cell_of({k: v for k, v in c.values.items()}, sweep.base)
            ts.run_cell(cell, 8, True, root=tmp_path / "script")
            same_jobs(out / c.name, tmp_path / "script" / cell.folder)
            assert shown(c.values["policy"]) == cell.policy


def md_row(md: str, start: str) -> list[str]:
    """The cells of the first table row of ``md`` that starts with ``start``."""
    row = next(ln for ln in md.splitlines() if ln.startswith(start))
    return [c.strip() for c in row.strip("|").split("|")]


def test_kairos_report_from_the_sweep_cells(small_specs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kairos_sim --from-sweep DIR` builds its report from the sweep's cells: each size's ratios are
    those of that size's Kairos and Eagle cells, the control is the Poisson spec's cells, and the
    instrumented runs (not sweep cells) are said to be absent."""
    from aviary.experiments.kairos_sim import cells as ks
    from aviary.experiments.kairos_sim.main import main

    root = small_specs
    monkeypatch.setattr(ks, "FROM_SWEEP", None)
    monkeypatch.setattr(ks, "SPECS", ("kairos_sim", "kairos_sim_poisson_8000"))
    monkeypatch.setattr(ks, "CONTROL_NODES", (20,))
    small = {"jobs": 30, "start": 3000}  # short and long jobs
    small_sweep(root, "kairos_sim", small, {"nodes": [10, 20], "seed": [0]})
    control = {**small, "nodes": 20, "load": round(ks.mean_load(20), 4)}
    small_sweep(root, "kairos_sim_poisson_8000", control, {"seed": [0]})
    out = root / "r"
    assert main(["--from-sweep", str(root), "--nodes", "10", "20", "--out", str(out)]) == 0
    md = (out / "kairos_sim.md").read_text()

    def summary(spec: str, cell: str) -> dict:
        return json.loads((root / spec / cell / "summary.json").read_text())

    kairos = ks.spec_policy("kairos").replace(":", "+").replace(",", "+")
    ratios = set()
    for n in (10, 20):
        k = summary("kairos_sim", f"{kairos},nodes={n},seed=0")
        e = summary("kairos_sim", f"eagle+schedulers=10,nodes={n},seed=0")
        want = k["jct"]["long"]["p50"] / e["jct"]["long"]["p50"]
        row = md_row(md, f"| {n:,} |")
        long_row = md_row(md, f"| {n:,} | {row[1]} | {row[2]} | long |")
        assert long_row[4] == f"{want:.2f}"
        assert long_row[7] == " / ".join(f"{k['jct']['long'][p]:,.0f}" for p in ks.PCTS)
        ratios.add(long_row[4])
    assert len(ratios) == 2  # the two sizes' cells differ: a wrong lookup would show
    k = summary("kairos_sim_poisson_8000", f"{kairos},seed=0")
    e = summary("kairos_sim_poisson_8000", "eagle+schedulers=10,seed=0")
    assert "### Control: Poisson arrivals" in md
    row = md_row(md, "| long |")
    assert row[1] == f"{k['jct']['long']['p50'] / e['jct']['long']['p50']:.2f}"
    assert row[4] == " / ".join(f"{k['jct']['long'][p]:,.0f}" for p in ks.PCTS)  # not the trace cell's
    assert "instrumented run: absent" in md
    assert "then `python -m aviary.experiments.kairos_sim --from-sweep" in md
    assert (out / "kairos_sim.png").stat().st_size > 10_000


def test_thesis_regime_reports_from_the_sweep_cells(
    small_specs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`thesis_regime --from-sweep DIR` builds its reports from the sweep's cells: each setting's ratios
    are those of that setting's cells (the sample's arrival times on two sizes, Poisson arrivals), taken
    within a seed, their median over the seeds [min, max]; a setting with fewer seeds says so, in the
    tables and the claims' lines; the peak-load column is derive() of the cells' jobs.csv, and the
    instrumented runs are said to be absent."""
    from aviary.experiments.tables import num, over_seeds
    from aviary.experiments.thesis_regime import cells as tr
    from aviary.experiments.thesis_regime.main import main
    from aviary.experiments.thesis_regime.report import arrivals_label

    root = small_specs
    monkeypatch.setattr(tr, "FROM_SWEEP", None)
    monkeypatch.setattr(tr, "SPECS", ("thesis_regime_trace", "thesis_regime_poisson"))
    monkeypatch.setattr(tr, "SHUFFLED_SPECS", ())
    monkeypatch.setattr(tr, "TRACE_NODES", (10, 20))  # the reports' settings, small
    monkeypatch.setattr(tr, "POISSON_NODES", 20)
    monkeypatch.setattr(tr, "ANATOMY", (("kairos", 20, "trace"),))
    small = {"jobs": 30, "start": 3000}
    policies = [tr.spec_policy(v) for v in ("sparrow", "hawk")]
    small_sweep(root, "thesis_regime_trace", small, {"nodes": [10, 20], "policy": policies})
    small_sweep(root, "thesis_regime_poisson", {**small, "nodes": 20}, {"load": [0.95], "policy": policies})
    # 10 nodes: seed 1 only, the others' cells missing
    for cell in (root / "thesis_regime_trace").glob("*,nodes=10,seed=[02]"):
        (cell / "summary.json").unlink()
    assert main(["--from-sweep", str(root), "--results", str(root / "r")]) == 0
    md = (root / "r" / "thesis_regime.md").read_text()
    section = md.split("## Hawk normalized to Sparrow")[1].split("##")[0]
    raw_section = md.split("## Raw job completion times")[1]
    hawk = tr.spec_policy("hawk").replace(":", "+")
    shown = set()
    for spec, cell, nodes, arr, seeds in (
        ("thesis_regime_trace", ",nodes=10", 10, "trace", (1,)),
        ("thesis_regime_trace", ",nodes=20", 20, "trace", tr.SEEDS),
        ("thesis_regime_poisson", ",load=0.95", 20, "load0.95", tr.SEEDS),
    ):
        runs = {
            seed: [
                json.loads((root / spec / f"{p}{cell},seed={seed}" / "summary.json").read_text())
                for p in (hawk, "sparrow")
            ]
            for seed in seeds
        }
        row = md_row(section, f"| {arrivals_label(nodes, arr)} |")
        want = [h["jct"]["long"]["p50"] / s["jct"]["long"]["p50"] for h, s in runs.values()]
        assert row[5] == over_seeds(want), (nodes, arr)
        assert row[-1] == ("3" if len(seeds) == 3 else "**1** (seed 1 only)")
        derived = {
            seed: tr.derive(root / spec / f"{hawk}{cell},seed={seed}" / "jobs.csv", nodes, arr)
            for seed in seeds
        }
        assert row[1] == over_seeds([d["peak_window_load"] for d in derived.values()])
        for seed, (h, _) in runs.items():
            raw = md_row(raw_section, f"| {arrivals_label(nodes, arr)} | hawk | {seed} |")
            assert raw[3] == " / ".join(num(h["jct"]["short"][q]) for q in tr.PCT)
            assert raw[5] == " / ".join(num(derived[seed]["short"]["wait"][q]) for q in tr.PCT)
            shown.add(tuple(raw[3:6]))
    assert len(shown) == 7  # the settings' and seeds' cells differ: a wrong lookup would show
    assert "[" in md_row(section, f"| {arrivals_label(20, 'trace')} |")[5]  # the seeds differ
    assert "trace 0.01k (" in md and "; **seed 1 only**)" in md  # the claims' lines say so too
    assert "Every seed agrees" in section or "The seeds disagree" in section
    assert "Generated from the cells of `aviary sweep" in md
    kairos_md = (root / "r" / "kairos_regime.md").read_text()
    assert "absent (no `experiments/results/thesis_regime/kairos-20-trace/anatomy.json`" in kairos_md


def test_tetrisched_report_from_the_sweep_cells(small_specs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tetrisched_sim --from-sweep DIR` builds its report from the sweep's cells: each estimate error's
    and plan-ahead's entries are the median [min, max] (each seed's) of its cells over the seeds
    (plan-ahead 96 s: the (a) spec's TetriSched at X = 0; 24 s: the (b) spec's cells)."""
    from aviary.experiments import tetrisched_sim as ts

    root = small_specs
    monkeypatch.setattr(ts, "FROM_SWEEP", None)
    monkeypatch.setattr(ts, "SPECS", ("tetrisched_sim", "tetrisched_sim_plan_ahead"))
    grid = {"misestimate": [[0.5, 0.5], [1, 1]], "policy": ["tetrisched", "rayon-cs"]}
    small = {"jobs": 18, "nodes": 18}  # busy enough for the cells to differ
    seeds = (0, 1)
    small_sweep(root, "tetrisched_sim", small, {**grid, "seed": list(seeds)})
    small_sweep(root, "tetrisched_sim_plan_ahead", small, {"plan_ahead": [24], "seed": list(seeds)})
    argv = ["--from-sweep", str(root), "--results", str(root / "r"), "--grid-seeds", "0,1"]
    assert ts.main(argv) == 0
    md = (root / "r" / "tetrisched_sim.md").read_text()

    def over_seeds(spec: str, cell: str, key: str) -> str:
        runs = [json.loads((root / spec / f"{cell},seed={s}" / "summary.json").read_text()) for s in seeds]
        got = [r["be_mean_latency"] if key == "latency" else 100 * r["slo_attainment"]["all"] for r in runs]
        assert len(got) == 2 and None not in got
        return spread(got, "{:.0f}", each=True)

    latency = md.split("best-effort mean latency (s), median [min, max] (each seed's) over seeds 0, 1")[1]
    shown = set()
    for policy in ("tetrisched", "rayon-cs"):
        row = md_row(latency, f"| {policy} |")
        for col, factor in ((1, "0.5+0.5"), (3, "1+1")):
            assert row[col] == over_seeds("tetrisched_sim", f"{policy},misestimate={factor}", "latency")
            shown.add(row[col])
        assert row[2] == row[4] == row[5] == "—"  # cells not run
    plan = md.split("## (b) Plan-ahead")[1].split("##")[0]
    for pa, spec, cell in (
        ("24", "tetrisched_sim_plan_ahead", "tetrisched,plan_ahead=24"),
        ("96", "tetrisched_sim", "tetrisched,misestimate=1+1"),
    ):
        row = md_row(plan, f"| {pa} |")
        assert row[1] == over_seeds(spec, cell, "slo") and row[4] == over_seeds(spec, cell, "latency"), pa
        shown.add(row[4])
    assert len(shown) == 5  # the cells differ: a wrong lookup would show
    assert all("/" in value for value in shown)  # two seeds each
    assert "Generated from the cells of `aviary sweep" in md


def test_dag_report_from_the_sweep_cells(small_specs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`packing_sim --from-sweep DIR` (dag_sweep's harness, which carbyne_sim and graphene_sim share)
    builds its report from the sweep's cells: each policy's mean JCT and makespan, and their ratios to
    DRF, are those of its cell at its load."""
    from aviary.experiments import packing_sim as ps

    root = small_specs
    monkeypatch.setattr(ps.SWEEP, "from_sweep", None)
    grid = {"workload": ["tpch"], "load": [1.0, "batch"], "policy": ["drf", "tetris"], "seed": [0]}
    small_sweep(root, "packing_sim", {"jobs": 15, "nodes": 8, "tpch_mix": "50g"}, grid)
    argv = ["--from-sweep", str(root), "--results", str(root / "r"), "--workloads", "tpch", "--loads",
            "1.0", "batch", "--policies", "drf", "tetris", "--jobs", "15", "--nodes", "8",
            "--seeds", "0"]  # fmt: skip
    assert ps.run(argv) == 0
    md = (root / "r" / "packing_sim.md").read_text()
    shown = set()
    for load in ("1.0", "batch"):
        section = md.split(f"## tpch, load {load}")[1].split("##")[0]
        base = json.loads(
            (root / "packing_sim" / f"drf,workload=tpch,load={load},seed=0" / "summary.json").read_text()
        )
        run = json.loads(
            (root / "packing_sim" / f"tetris,workload=tpch,load={load},seed=0" / "summary.json").read_text()
        )
        row = md_row(section, "| tetris |")
        assert row[2] == num(run["makespan"]) and row[4] == num(run["mean_jct"], 1), load
        assert row[5] == f"{run['mean_jct'] / base['mean_jct']:.2f}", load
        shown.add(row[4])
    assert len(shown) == 2  # the loads' cells differ: a wrong lookup would show


def test_every_report_run_is_one_cell_of_the_committed_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --from-sweep, each run the scripts' reports read maps to a cell of experiments/sweeps/ (as if
    every cell were finished), a different one for each run: the lookups match the specs as committed."""
    from aviary.experiments import hawk_eagle_sim as he
    from aviary.experiments import sweep_cells
    from aviary.experiments import tetrisched_sim as ts
    from aviary.experiments.kairos_sim import cells as ks
    from aviary.experiments.thesis_regime import cells as tr

    monkeypatch.setattr(sweep_cells, "cell_done", lambda folder, cell: True)
    sweep_cells.sweep.cache_clear()
    sweep_cells.done_cells.cache_clear()
    for module in (he, ks, tr, ts):
        monkeypatch.setattr(module, "FROM_SWEEP", tmp_path)
    found = [
        he.folder(p, n, s) for p in he.POLICIES for n in (*he.NODES, 12500, 16000, 25000) for s in he.SEEDS
    ]
    found += [he.folder(p, 8000) for p in (*he.HAWK_ABLATIONS, *he.EAGLE_ABLATIONS) if p not in he.POLICIES]
    found += [ks.folder(tmp_path, p, n) for p in ("kairos", "eagle") for n in (5000, 5500, 6500, 8000)]
    found += [
        ks.folder(tmp_path, p, n, ks.mean_load(n)) for p in ("kairos", "eagle") for n in ks.CONTROL_NODES
    ]
    found += [tr.folder(*cell) for group in tr.GROUPS.values() for cell in group]
    found += [ts.folder(cell) for cell in ts.grid(ts.GRID_SEEDS)]
    sweep_cells.sweep.cache_clear()
    sweep_cells.done_cells.cache_clear()
    assert None not in found
    assert len(set(found)) == len(found) == 16 * 3 + 12 * 3 + 6 + 8 + 4 + 69 + 99


PLUGINS = """\
name = "plugins"
baseline = "sparrow"

[replay]
jobs = 20
nodes = 6

[grid]
policy = ["sparrow", "p2c:choices=1", "p2c", "mine/rr.py:POLICY"]
"""
"""Built-in, installed (examples/p2c, one variant with a parameter of its own) and from a file beside the
spec (its path relative to the spec's folder)."""


def _plugin_spec(tmp_path: Path) -> Path:
    from aviary.launch.cli.plugins import new_policy

    new_policy("rr", "distributed", tmp_path / "made")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "rr.py").write_text((tmp_path / "made" / "rr" / "rr" / "__init__.py").read_text())
    spec = tmp_path / "plugins.toml"
    spec.write_text(PLUGINS)
    return spec


def test_a_sweep_of_plugins_runs_and_normalizes_them_to_a_builtin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _plugin_spec(tmp_path)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    assert ran(capsys.readouterr().err) == (4, 0)
    by_cell = {p.name: json.loads((p / "summary.json").read_text()) for p in out.iterdir() if p.is_dir()}
    assert sorted(s["policy"] for s in by_cell.values()) == ["p2c", "p2c", "rr", "sparrow"]
    assert all(s["finished"] == 20 for s in by_cell.values())
    choices = sorted(
        s["workload"]["policy"]["params"].get("choices") for s in by_cell.values() if s["policy"] == "p2c"
    )
    assert choices == [1, 2]
    assert (out / "normalized.csv").read_text().count("\n") >= 4  # a row per plug-in cell


def test_a_dask_worker_without_the_plugin_is_refused_before_any_cell_then_one_with_it_runs_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module importable here only (on this process's path), not on the workers: one line naming the
    worker, the policy and the module, before any cell runs; the installed example runs on them."""
    (tmp_path / "onlyhere").mkdir()
    lines = [
        "from dataclasses import replace",
        "from aviary_p2c import POLICY as P2C",
        "POLICY = replace(P2C, name='x')",
    ]
    (tmp_path / "onlyhere" / "here_only.py").write_text("\n".join(lines) + "\n")
    missing = tmp_path / "missing.toml"
    missing.write_text('[replay]\njobs = 10\nnodes = 4\n[grid]\npolicy = ["here_only:POLICY"]\n')
    good = tmp_path / "good.toml"
    good.write_text('[replay]\njobs = 10\nnodes = 4\n[grid]\npolicy = ["p2c", "p2c:choices=3"]\n')
    distributed = dask_distributed()
    with distributed.LocalCluster(
        n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address
        monkeypatch.syspath_prepend(str(tmp_path / "onlyhere"))  # here, after the workers started
        assert main(["sweep", str(missing), "--out", str(tmp_path / "m"), "--cluster", address]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert "aviary sweep: error: Dask worker tcp://" in err
        assert "policy 'here_only:POLICY': no module named 'here_only' on " in err
        assert not any((tmp_path / "m").glob("*/summary.json"))
        assert main(["sweep", str(good), "--out", str(tmp_path / "g"), "--cluster", address, "--quiet"]) == 0
    assert ran(capsys.readouterr().err) == (2, 0)
