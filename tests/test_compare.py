"""aviary compare: percentiles normalized to the first run, n/a for empty classes, runs of one workload
only (or labelled as not), a figure in the format of its extension."""

import json
import struct

import pytest
from rich.console import Console

from aviary.common.results import JobRecord, write_results
from aviary.launch.cli.main import main
from aviary.launch.results.compare import CompareError, compare, comparison_figure, load_comparison


def run(out, policy, jcts_short, jcts_long=()):
    recs = [JobRecord(i, "short", 1, 0.0, 0.0, j) for i, j in enumerate(jcts_short)]
    recs += [JobRecord(len(recs) + i, "long", 1, 0.0, 0.0, j) for i, j in enumerate(jcts_long)]
    write_results(out, recs, policy=policy, runtime="sim", nodes=2, slots=1, wall_seconds=0.1)
    return out


def render(table) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def test_ratios_against_the_first_run(tmp_path):
    base = run(tmp_path / "sparrow", "sparrow", [1.0] * 10, [10.0] * 10)
    hawk = run(tmp_path / "hawk", "hawk", [0.5] * 10, [20.0] * 10)
    eagle = run(tmp_path / "eagle", "eagle", [0.25] * 10)  # no long jobs
    table, comp = compare([base, hawk, eagle])
    assert comp.labels == ["sparrow", "hawk", "eagle"]
    assert comp.policies == ["sparrow", "hawk", "eagle"]
    assert comp.base == {
        "short": {"p50": 1.0, "p90": 1.0, "p99": 1.0},
        "long": {"p50": 10.0, "p90": 10.0, "p99": 10.0},
    }
    assert comp.ratios["hawk"] == {
        "short": {"p50": 0.5, "p90": 0.5, "p99": 0.5},
        "long": {"p50": 2.0, "p90": 2.0, "p99": 2.0},
    }
    assert comp.ratios["eagle"]["short"]["p99"] == 0.25
    assert comp.ratios["eagle"]["long"] == {"p50": None, "p90": None, "p99": None}
    text = render(table)
    assert "0.50" in text and "2.00" in text and "0.25" in text and "n/a" in text
    assert "10.000" in text  # the baseline's raw values


def test_missing_base_class_is_na(tmp_path):
    base = run(tmp_path / "a", "sparrow", [1.0, 2.0])
    other = run(tmp_path / "b", "hawk", [1.0, 2.0], [3.0])
    table, comp = compare([base, other])
    assert comp.base["long"]["p50"] is None and comp.ratios["b"]["long"]["p50"] is None
    assert comp.ratios["b"]["short"]["p50"] == 1.0
    assert "n/a" in render(table)


def test_png_is_written(tmp_path):
    base = run(tmp_path / "a", "sparrow", [1.0, 2.0, 3.0], [10.0])
    other = run(tmp_path / "b", "hawk", [0.5, 1.0, 2.0])
    png = tmp_path / "plots" / "cmp.png"
    compare([base, other], png=png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 1000


def test_duplicate_folder_names_get_full_paths(tmp_path):
    a = run(tmp_path / "x" / "run", "sparrow", [1.0])
    b = run(tmp_path / "y" / "run", "hawk", [2.0])
    _, comp = compare([a, b])
    assert comp.labels == [str(a), str(b)]


def test_errors_are_one_line(tmp_path):
    good = run(tmp_path / "good", "sparrow", [1.0])
    (tmp_path / "empty").mkdir()
    with pytest.raises(CompareError) as info:
        compare([good, tmp_path / "empty"])
    assert "summary.json: not found" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(CompareError, match="at least one"):
        compare([])
    with pytest.raises(CompareError, match="at least two"):
        compare([good], png=tmp_path / "one.png")
    table, comp = compare([good])  # a single run is still a table of raw values
    assert comp.ratios == {} and "1.000" in render(table)


def folder(out, policy, jcts):
    """A results folder whose job ``i`` (all short, submitted at 0) takes ``jcts[i]``; None: unfinished."""
    recs = [JobRecord(i, "short", 1, 0.0, 0.0, j) for i, j in jcts.items()]
    write_results(out, recs, policy=policy, runtime="sim", nodes=2, slots=1, wall_seconds=0.1)
    return out


def test_factor_of_improvement_percentiles(tmp_path):
    base = folder(tmp_path / "drf", "drf", {0: 2.0, 1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0, 5: 2.0, 6: 9.0})
    # Job 5 did not finish in the other run and job 6 is not in it; job 7 is not in the baseline.
    other = folder(tmp_path / "carbyne", "carbyne",
                   {0: 1.0, 1: 2.0, 2: 4.0, 3: 0.5, 4: 2.0, 5: None, 7: 1.0})  # fmt: skip
    table, comp = compare([base, other])
    assert comp.factors["carbyne"] == [0.5, 1.0, 1.0, 2.0, 4.0]  # baseline JCT / run JCT
    st = comp.foi["carbyne"]
    assert st.count == 5 and st.note == ""
    assert st.p10 == pytest.approx(0.7)  # h = 0.4: 0.5 + 0.4 * 0.5
    assert st.p50 == 1.0
    assert st.p90 == pytest.approx(3.2)  # h = 3.6: 2 + 0.6 * 2
    assert st.mean == pytest.approx(1.7)
    # Makespan 9 -> 4 and mean JCT 21/7 -> 10.5/6 (over each run's own finished jobs).
    assert comp.totals[0] == {"makespan": 9.0, "mean_jct": 3.0}
    assert comp.total_ratios["carbyne"]["makespan"] == pytest.approx(4 / 9)
    assert comp.total_ratios["carbyne"]["mean_jct"] == pytest.approx(1.75 / 3.0)
    text = render(table)
    assert "FoI" in text and "0.70" in text and "3.20" in text and "1.70" in text
    assert "makespan" in text and "0.44" in text


def test_factor_of_improvement_without_common_jobs_or_jobs_csv(tmp_path):
    base = folder(tmp_path / "a", "drf", {0: 1.0, 1: 2.0})
    disjoint = folder(tmp_path / "b", "tetris", {10: 1.0, 11: 2.0})
    unfinished = folder(tmp_path / "c", "sjf", {0: None, 1: None})
    bare = folder(tmp_path / "d", "graphene", {0: 1.0})
    (bare / "jobs.csv").unlink()  # a summary committed alone
    table, comp = compare([base, disjoint, unfinished, bare])
    assert comp.factors["b"] == [] and comp.foi["b"].count == 0 and comp.foi["b"].note == "no common jobs"
    assert comp.foi["c"].note == "no common jobs" and comp.foi["c"].p50 is None
    assert comp.foi["d"].note == "no jobs.csv in d"
    assert comp.total_ratios["c"]["mean_jct"] is None  # nothing finished
    text = render(table)
    assert "no common jobs" in text and "no jobs.csv in d" in text
    compare([base, disjoint], png=tmp_path / "bars-only.png")  # no factors: the bar chart alone
    assert (tmp_path / "bars-only.png").read_bytes()[:4] == b"\x89PNG"


def test_png_has_the_factor_cdf(tmp_path):
    base = folder(tmp_path / "a", "drf", {i: 1.0 + i for i in range(20)})
    other = folder(tmp_path / "b", "carbyne", {i: 1.0 + (i * 7) % 13 for i in range(20)})
    png = tmp_path / "cmp.png"
    compare([base, other], png=png)
    from matplotlib.image import imread

    height, width = imread(png).shape[:2]
    assert width > 2 * height > 2000  # two panels side by side, at print resolution
    assert png_dpi(png) == pytest.approx(300, abs=0.5)


def png_dpi(path) -> float:
    """The resolution a PNG's pHYs chunk states (pixels per metre -> per inch)."""
    data = path.read_bytes()
    at = data.index(b"pHYs")
    x, _y, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1  # metres
    return x * 0.0254


def test_the_figure_format_follows_the_extension(tmp_path):
    base = run(tmp_path / "a", "sparrow", [1.0, 2.0, 3.0], [10.0])
    other = run(tmp_path / "b", "hawk", [0.5, 1.0, 2.0], [5.0])
    magic = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}
    for ext, start in magic.items():
        path = tmp_path / f"cmp.{ext.upper() if ext == 'pdf' else ext}"  # the case does not matter
        compare([base, other], path)
        assert path.read_bytes().startswith(start), ext
    assert b"<svg" in (tmp_path / "cmp.svg").read_bytes()[:1000]
    with pytest.raises(CompareError) as info:
        compare([base, other], tmp_path / "cmp.jpg")
    assert (
        str(info.value)
        == f"{tmp_path / 'cmp.jpg'}: figure format '.jpg' not supported (name it .png, .pdf or .svg)"
    )
    assert not (tmp_path / "cmp.jpg").exists()


def test_the_figure_marks_missing_values_and_uses_a_log_axis_for_wide_ratios(tmp_path):
    base = run(tmp_path / "a", "sparrow", [1.0] * 5, [10.0] * 5)
    narrow = run(tmp_path / "b", "hawk", [0.5] * 5)  # no long jobs: three ratios missing
    fig = comparison_figure(load_comparison([base, narrow]))
    bars = fig.axes[0]
    assert bars.get_yscale() == "linear"
    assert [t.get_text() for t in bars.texts] == ["n/a"] * 3  # long p50/p90/p99, not zero-height bars
    assert fig.get_suptitle() == (  # the baseline; these folders have no workload record
        "Job completion time of each run / a (sparrow)'s (below 1 is better)\nworkload not recorded"
    )
    wide = run(tmp_path / "c", "eagle", [0.01] * 5, [10.0] * 5)  # short 0.01, makespan 1: span 100
    fig = comparison_figure(load_comparison([base, wide]))
    assert fig.axes[0].get_yscale() == "log"
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "1" in ticks and not any("10^" in t for t in ticks)  # plain numbers on the log axis


# Runs through the CLI on the simulator: small (20 jobs) and fast.
SIM = ["replay", "--runtime", "sim", "--jobs", "20", "--start", "6000", "--nodes", "10", "--slots", "2",
       "--load", "0.8", "--quiet"]  # fmt: skip


def replay(tmp_path, name, *flags):
    out = tmp_path / name
    assert main([*SIM, *flags, "--out", str(out)]) == 0
    return out


def test_compare_refuses_runs_of_different_workloads_in_one_line(tmp_path, capsys):
    a = replay(tmp_path, "a", "--seed", "1")
    b = replay(tmp_path, "b", "--seed", "2")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--plot", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err == (
        "aviary compare: error: runs differ in workload: seed 1 (a) vs 2 (b) (--force compares them anyway)\n"
    )
    assert not (tmp_path / "x.png").exists()
    # The first difference is named: another start is another set of trace jobs.
    c = replay(tmp_path, "c", "--seed", "1", "--start", "7000")
    capsys.readouterr()
    assert main(["compare", str(a), str(c)]) == 2
    assert (
        "runs differ in workload: trace jobs (indices) 6000-6019 (a) vs 7000-7019 (c)"
        in capsys.readouterr().err
    )


def test_compare_accepts_other_policies_and_parameters_on_the_same_workload(tmp_path, capsys):
    a = replay(tmp_path, "a", "--seed", "1")
    b = replay(tmp_path, "b", "--seed", "1", "--policy", "sparrow", "--probe-ratio", "3")
    c = replay(tmp_path, "c", "--seed", "1", "--policy", "hawk")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), str(c)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "workloads differ" not in captured.out
    assert "google_10k.tr: 20 jobs [6000-6019], load 0.8" in captured.out.replace("\n", " ")


def test_compare_with_force_labels_the_table_and_the_figure(tmp_path, capsys):
    a = replay(tmp_path, "a", "--seed", "1")
    b = replay(tmp_path, "b", "--seed", "2")
    capsys.readouterr()
    fig = tmp_path / "forced.svg"
    assert main(["compare", str(a), str(b), "--force", "--plot", str(fig)]) == 0
    captured = capsys.readouterr()
    note = "workloads differ (compared anyway, --force): seed 1 (a) vs 2 (b); also submit times"
    assert captured.err == f"aviary compare: warning: {note}\n"
    assert "workloads differ (compared anyway, --force)" in captured.out
    assert fig.read_bytes().startswith(b"<?xml")
    _, comp = compare([a, b], force=True)  # the figure written is this one
    assert comp.differs[0] == ("seed", "seed 1 (a) vs 2 (b)")
    title = comparison_figure(comp).get_suptitle()
    assert title.startswith(note) and "Job completion time of each run / a (sparrow)'s" in title


def test_folders_without_a_workload_record_are_compared_with_a_warning(tmp_path, capsys):
    a = replay(tmp_path, "a", "--seed", "1")
    b = replay(tmp_path, "b", "--seed", "2")
    summary = json.loads((b / "summary.json").read_text())
    del summary["workload"]  # as written before the record existed
    (b / "summary.json").write_text(json.dumps(summary))
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--png", str(tmp_path / "old.png")]) == 0  # --png: the old name
    err = capsys.readouterr().err
    assert err == (
        "aviary compare: warning: b: no workload record (written before aviary kept one): its workload "
        "cannot be checked\n"
    )
    assert (tmp_path / "old.png").read_bytes()[:4] == b"\x89PNG"


def test_an_interrupted_run_is_compared_with_a_warning(tmp_path):
    base = run(tmp_path / "a", "sparrow", [1.0, 2.0])
    recs = [JobRecord(0, "short", 1, 0.0, 0.0, 1.0), JobRecord(1, "short", 1, 0.0)]
    write_results(tmp_path / "b", recs, policy="hawk", runtime="sim", nodes=2, slots=1, wall_seconds=0.1,
                  extra={"interrupted": True, "interrupted_by": "SIGINT"})  # fmt: skip
    _, comp = compare([base, tmp_path / "b"])
    assert "b: interrupted, only 1 of its 2 jobs finished" in comp.warnings


def dag_replay(tmp_path, name, *flags):
    out = tmp_path / name
    assert main(["replay", "--runtime", "sim", "--quiet", *flags, "--out", str(out)]) == 0
    return out


def test_a_dag_workload_is_compared_by_its_family_figures_without_a_short_long_split(tmp_path, capsys):
    """TPC-H defines no short/long classes (the Google trace's cutoff means nothing there): one class,
    all; then makespan, each resource's utilization and Jain's index, higher-is-better marked; the same
    as JSON with the ratios the table shows."""
    common = ["--workload", "tpch", "--jobs", "12", "--nodes", "8"]
    dag_replay(tmp_path, "drf", "--policy", "drf", *common)
    dag_replay(tmp_path, "tetris", "--policy", "tetris", *common)
    comp = load_comparison([tmp_path / "drf", tmp_path / "tetris"])
    assert comp.classes == ("all",) and list(comp.base) == ["all"]
    text = " ".join(render(compare([tmp_path / "drf", tmp_path / "tetris"])[0]).split())
    assert "short" not in text and "long" not in text
    assert "utilization disk ↑" in text and "Jain's index ↑" in text
    capsys.readouterr()  # the replays' and the table's output
    assert main(["compare", str(tmp_path / "drf"), str(tmp_path / "tetris"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {(r["class"], r["figure"]): r for r in data["rows"]}
    assert [k for k in rows if k[1] in ("p50", "p90", "p99")] == [
        ("all", "p50"),
        ("all", "p90"),
        ("all", "p99"),
    ]
    drf, tetris = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("drf", "tetris"))
    disk = rows["all", "utilization disk"]
    assert disk["higher_is_better"] and disk["base"] == drf["resource_utilization"]["disk"]
    assert disk["ratios"]["tetris"] == pytest.approx(tetris["resource_utilization"]["disk"] / disk["base"])
    mean = rows["all", "mean_jct"]
    assert not mean["higher_is_better"] and mean["ratios"]["tetris"] == pytest.approx(
        tetris["mean_jct"] / drf["mean_jct"]
    )
    assert data["baseline"] == "drf" and data["factors_of_improvement"]["tetris"]["count"] == 12
    # Utilization over time: 100 windows of the makespan that average to each resource's utilization.
    series = drf["utilization_over_time"]
    assert len(series["t"]) == len(series["disk"]) == 100 and series["t"][-1] == pytest.approx(
        drf["makespan"]
    )
    assert sum(series["disk"]) / 100 == pytest.approx(drf["resource_utilization"]["disk"], rel=0.02)
    usage = comparison_figure(comp).axes[3]
    assert usage.get_ylabel() == "utilization (% of capacity)"
    labelled = [line.get_label() for line in usage.get_lines() if not line.get_label().startswith("_")]
    assert labelled[:2] == ["drf", "tetris"] and "disk" in labelled


def test_slo_runs_are_compared_by_attainment_and_the_figure_has_each_run_s_jct_cdf(tmp_path):
    common = ["--workload", "gshet", "--jobs", "12", "--nodes", "10"]
    dirs = [dag_replay(tmp_path, "ts", "--policy", "tetrisched", *common),
            dag_replay(tmp_path, "ng", "--policy", "tetrisched-ng", *common)]  # fmt: skip
    text = " ".join(render(compare(dirs)[0]).split())  # the table: attainment, latency, solver time
    assert "SLO attainment accepted ↑" in text and "best-effort mean latency" in text
    assert "solver time per cycle p50" in text and "short" not in text
    comp = load_comparison(dirs)
    fig = comparison_figure(comp)
    labels = [ax.get_xlabel() for ax in fig.axes]
    assert labels[1] == "job completion time (replay s, log scale)" and fig.axes[1].get_xscale() == "log"
    assert labels[2].startswith("factor of improvement") and labels[3] == "replay time (s)"
    assert fig.axes[4].get_ylabel().startswith("SLO attainment")
    jct_lines = fig.axes[1].get_lines()
    assert [line.get_label() for line in jct_lines] == ["ts (tetrisched)", "ng (tetrisched-ng)"]
    assert len(jct_lines[0].get_xdata()) == 13  # 12 jobs and the start of the step
    heights = [round(p.get_height(), 3) for p in fig.axes[4].patches]
    ts = json.loads((tmp_path / "ts" / "summary.json").read_text())["slo_attainment"]
    assert heights[:3] == [round(100 * ts[k], 3) for k in ("all", "accepted", "no_reservation")]
    png = tmp_path / "slo.png"
    compare(dirs, png)
    from matplotlib.image import imread

    pixels = imread(png)
    height, width = pixels.shape[:2]
    assert width > 5 * height  # five panels side by side
    assert (pixels[..., :3] < 0.9).any(axis=-1).mean() > 0.02  # not blank: ink on more than 2 % of it
