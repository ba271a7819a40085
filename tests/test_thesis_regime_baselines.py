"""The baselines' cells of thesis_regime (centralized LWL and its Hawk controls; Eagle, Hawk and DLWL+SRPT on
a seeded random sample of the jobs) have the flags they say and run at a tiny size (~2 s)."""

from __future__ import annotations

import json

from aviary.experiments.thesis_regime import cells as tr


def test_the_baselines_cells_say_what_they_are():
    assert tr.arr_load("load0.95-j2000") == 0.95 and tr.arr_jobs("load0.95-j2000") == 2000
    assert tr.arr_load("trace") is None and tr.arr_jobs("load0.95") is None
    flags = tr.cell_flags("dlwl", tr.DLWL_NODES, f"load0.95-j{tr.DLWL_JOBS}", seed=2)
    assert flags[flags.index("--policy") + 1] == "dlwl" and flags[flags.index("--nodes") + 1] == "2500"
    assert flags[flags.index("--jobs") + 1] == "2000" and flags[flags.index("--sample") + 1] == "random"
    assert flags[flags.index("--seed") + 1] == "2" and flags[flags.index("--load") + 1] == "0.95"
    control = tr.cell_flags("hawk-nopartition-nosteal", 12_500, "trace")
    assert control[control.index("--policy") + 1] == "hawk-nopartition" and "--steal-attempts" in control
    assert tr.cell_flags("lwl", 12_500, "trace")[:4] == ["--runtime", "sim", "--policy", "lwl"]
    every = [cell for group in tr.BASELINES.values() for cell in group]
    assert not set(every) & {cell for group in tr.GROUPS.values() for cell in group}


def test_a_dlwl_cell_runs_on_a_random_sample_of_the_jobs(tmp_path):
    s = tr.run_cell("dlwl", 20, "load0.95-j12", out=tmp_path, seed=1)
    assert s["finished"] == 12 and s["messages"]["QueueReport"] > 0
    assert "--sample" in s["extra"]["cell_flags"]
    derived = json.loads((tmp_path / "dlwl-20-load0.95-j12-s1" / "derived.json").read_text())
    assert derived["peak_window_load"] is None and derived["short"]["wait"]["p50"] is not None
