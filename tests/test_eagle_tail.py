"""``experiments/eagle_tail.py``'s controls over seeds: each ratio to Hawk taken within a seed, the median
over the seeds [min, max], rows with fewer seeds marked; one seed gives the table ``hawk_eagle_sim.md``
quotes (no *seeds* column). Saved runs are faked in a temporary folder (no simulation)."""

from __future__ import annotations

import json

import pytest

from aviary.experiments import eagle_tail as et


def fake(out, policy, nodes, arrivals, seed, p50, p90, p99, share=0.5, variant=""):
    run = {"load": None if arrivals == "trace" else 0.59, "short": {"p50": p50, "p90": p90, "p99": p99}}
    run |= {"short_secs_in_short_partition": share, "unfinished_short": 0}
    (out / f"{et.run_name(policy, nodes, arrivals, variant, seed)}.json").write_text(json.dumps(run))


@pytest.fixture
def out(tmp_path, monkeypatch):
    monkeypatch.setattr(et, "OUT", tmp_path)
    return tmp_path


def rows(lines):
    return {r[0]: r[1:] for r in ([c.strip() for c in line.split("|")[1:-1]] for line in lines[2:]) if r}


def test_seed_zero_keeps_its_old_run_names_and_other_seeds_get_a_suffix():
    assert et.run_name("eagle", 8000, "trace") == "eagle-8000-trace"
    assert et.run_name("eagle", 8000, "trace", "sp21", 0) == "eagle-sp21-8000-trace"
    assert et.run_name("hawk", 5000, "poisson", seed=2) == "hawk-5000-poisson-s2"


def test_controls_are_medians_of_ratios_within_each_seed_with_their_range(out):
    # Eagle / Hawk within each seed: p50 100/200, 400/200, 200/200; p90 1000/100, 100/400, 300/300;
    # p99 2000/1000 in every seed.
    runs = [((100, 1000), (200, 100)), ((400, 100), (200, 400)), ((200, 300), (200, 300))]
    for seed, ((e50, e90), (h50, h90)) in enumerate(runs):
        fake(out, "eagle", 8000, "trace", seed, e50, e90, 2000, share=0.97 if seed == 2 else 0.99)
        fake(out, "hawk", 8000, "trace", seed, h50, h90, 1000)
    lines = et.controls_table((0, 1, 2))
    table = rows(lines[: lines.index("")])
    eagle = table["eagle, 8,000"]
    assert eagle[:4] == ["trace", "200 [100, 400]", "300 [100, 1,000]", "2,000"]
    assert eagle[4:7] == ["1.00 [0.50, 2.00]", "1.00 [0.25, 10.00]", "2.00"]
    assert eagle[7:] == ["99 % [97 %, 99 %]", "3"]
    assert table["hawk, 8,000"][4:7] == ["1.00", "1.00", "1.00"]
    # The seeds disagree on the better policy at p50 and p90 (ratios both sides of 1), not at p99.
    note = lines[lines.index("") + 1]
    assert "eagle, 8,000 (trace) p50 (0.50-2.00)" in note and "p90 (0.25-10.00)" in note
    assert "p99" not in note


def test_a_row_with_fewer_seeds_is_marked_and_ratios_need_hawk_in_the_same_seed(out):
    for seed in (0, 1):
        fake(out, "eagle-nosss", 5000, "trace", seed, 50, 500, 900)
    fake(out, "hawk", 5000, "trace", 0, 100, 1000, 1000)
    table = rows(et.controls_table((0, 1, 2))[:4])
    # Only seed 0 has Hawk: the row is seed 0's, marked.
    assert table["eagle-nosss, 5,000"][4:] == ["0.50", "0.50", "0.90", "50 %", "**1** (seed 0 only)"]
    assert table["hawk, 5,000"][-1] == "**1** (seed 0 only)"


def test_one_seed_is_the_table_hawk_eagle_sim_quotes(out):
    fake(out, "eagle", 8000, "poisson", 0, 100, 605, 5353, share=0.49)
    fake(out, "hawk", 8000, "poisson", 0, 145, 3168, 8261, share=0.44)
    fake(out, "eagle", 8000, "poisson", 1, 1, 1, 1)  # another seed: not in a seed-0 table
    lines = et.controls_table()
    assert lines[1] == "|" + "---|" * 9 and lines[-1] == ""
    assert lines[2] == "| eagle, 8,000 | Poisson, load 0.59 | 100 | 605 | 5,353 | 0.69 | 0.19 | 0.65 | 49 % |"
